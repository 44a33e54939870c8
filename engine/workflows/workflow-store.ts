import { type Actor, recordAudit } from '../audit/audit-trail';
import type { Database } from '../db/database';
import { InvalidInput, NotFound } from '../errors';
import { newId } from '../ids';
import { epochSeconds } from '../lists/page-token';
import { DEFAULT_WORKSPACE } from '../workspaces/workspace-store';
import { executionOrder, type WorkerNode } from './workflow-definition';

export interface StoredWorkflow {
  id: string;
  account_id: string;
  workspace: string;
  name: string;
  description: string | null;
  tags: string[];
  status: string;
  trigger_type: string;
  trigger_config: Record<string, unknown>;
  trigger_enabled: boolean;
  starter_worker_id: string | null;
  gui: Record<string, unknown> | null;
  workers: WorkerNode[];
  created_at: Date;
  updated_at: Date;
  version: number;
}

export function workflowView(row: StoredWorkflow) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    tags: row.tags,
    status: row.status,
    trigger_type: row.trigger_type,
    trigger_config: row.trigger_config,
    trigger_enabled: row.trigger_enabled,
    starter_worker_id: row.starter_worker_id,
    gui: row.gui,
    workers: row.workers,
    workspace: row.workspace,
    created: epochSeconds(row.created_at)!,
    updated: epochSeconds(row.updated_at)!,
    version: String(row.version),
  };
}

export async function createWorkflow(
  db: Database,
  actor: Actor,
  input: { name: string; description?: string | null; workspace?: string; workers: WorkerNode[] },
): Promise<StoredWorkflow> {
  if (!input.name || input.name.length > 200)
    throw new InvalidInput('name is required, 1 to 200 characters.');
  const order = executionOrder(input.workers);
  const now = new Date();
  return db.transaction(async (trx) => {
    const [row] = (await trx('workflows')
      .insert({
        id: newId('workflow'),
        account_id: actor.principal.accountId,
        workspace: input.workspace ?? DEFAULT_WORKSPACE,
        name: input.name,
        description: input.description ?? null,
        starter_worker_id: order[0]!.id,
        workers: JSON.stringify(input.workers),
        created_at: now,
        updated_at: now,
      })
      .returning('*')) as StoredWorkflow[];
    await recordAudit(trx, actor, {
      operation: 'CREATE',
      activity: `Created workflow ${row!.name}`,
      entityId: row!.id,
      entityType: 'Workflow',
      entityName: row!.name,
      workspace: row!.workspace,
      after: workflowView(row!),
    });
    return row!;
  });
}

/** Another account's workflow, or one in another workspace, is simply not found. */
export async function findWorkflow(
  db: Database,
  accountId: string,
  id: string,
  workspace: string = DEFAULT_WORKSPACE,
): Promise<StoredWorkflow> {
  const row = (await db('workflows').where({ id, account_id: accountId, workspace }).first()) as
    StoredWorkflow | undefined;
  if (!row) throw new NotFound(`Workflow ${id} not found.`);
  return row;
}
