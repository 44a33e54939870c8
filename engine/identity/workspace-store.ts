import { readOneAudited, readPageAudited, recordAudit } from '../store/audit-trail';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { Conflict, InvalidInput, NotFound } from '../platform/errors';
import {
  checkPageSize,
  decodePageToken,
  encodePageToken,
  epochSeconds,
  likePrefix,
} from '../store/page-token';
import { checkStorableFields } from '../store/storable-json';

export interface Workspace {
  name: string;
  description: string | null;
  created: number;
  updated: number;
  version: string;
}

interface WorkspaceRow {
  account_id: string;
  name: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
  version: number;
}

export const DEFAULT_WORKSPACE = 'main';

function toWorkspace(row: WorkspaceRow): Workspace {
  return {
    name: row.name,
    description: row.description,
    created: epochSeconds(row.created_at)!,
    updated: epochSeconds(row.updated_at)!,
    version: String(row.version),
  };
}

/** Every account starts with its `main` workspace, the default of every workspace-bound entity. */
export async function createDefaultWorkspace(db: Database, accountId: string): Promise<void> {
  const now = new Date();
  await db('workspaces')
    .insert({
      account_id: accountId,
      name: DEFAULT_WORKSPACE,
      description: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict(['account_id', 'name'])
    .ignore();
}

/**
 * A workspace request as the route's schema accepted it (a workspace name, a description up to 500
 * characters); only text PostgreSQL cannot store (an unpaired surrogate) is checked here.
 */
export interface WorkspaceInput {
  name: string;
  description?: string | null;
}

export async function createWorkspace(db: Database, actor: Actor, input: WorkspaceInput): Promise<Workspace> {
  const { name } = input;
  const description = input.description ?? null;
  checkStorableFields({ name, description });
  return db.transaction(async (trx) => {
    const now = new Date();
    const [row] = (await trx('workspaces')
      .insert({ account_id: actor.principal.accountId, name, description, created_at: now, updated_at: now })
      .onConflict(['account_id', 'name'])
      .ignore()
      .returning('*')) as WorkspaceRow[];
    if (!row) throw new Conflict(`Workspace ${name} already exists.`);
    const workspace = toWorkspace(row);
    await recordAudit(trx, actor, {
      operation: 'CREATE',
      activity: `Created workspace ${name}`,
      entityId: name,
      entityType: 'Workspace',
      entityName: name,
      workspace: name,
      after: { ...workspace },
    });
    return workspace;
  });
}

async function findRow(db: Database, accountId: string, name: string): Promise<WorkspaceRow> {
  const row = (await db('workspaces').where({ account_id: accountId, name }).first()) as
    WorkspaceRow | undefined;
  if (!row) throw new NotFound(`Workspace ${name} not found.`);
  return row;
}

/** Finds a workspace and writes its VIEW record in the same statement (one round trip). */
export async function getWorkspace(db: Database, actor: Actor, name: string): Promise<Workspace> {
  const row = await readOneAudited<WorkspaceRow>(
    db,
    // A workspace is named by its name: it is the record's id, name and workspace alike.
    db('workspaces')
      .select('*', 'name as id', 'name as workspace')
      .where({ account_id: actor.principal.accountId, name }),
    actor,
    { entityType: 'Workspace', activityPrefix: 'Viewed workspace ' },
  );
  if (!row) throw new NotFound(`Workspace ${name} not found.`);
  return toWorkspace(row);
}

export async function listWorkspaces(
  db: Database,
  actor: Actor,
  input: { query?: string | null; pageSize?: number; pageToken?: string | null },
): Promise<{ workspaces: Workspace[]; next_page_token: string | null }> {
  const pageSize = checkPageSize(input.pageSize);
  const cursor = decodePageToken(input.pageToken);
  const q = db<WorkspaceRow>('workspaces').where({ account_id: actor.principal.accountId });
  if (input.query) q.whereRaw(`name LIKE ? ESCAPE '\\'`, [likePrefix(input.query)]);
  if (cursor) {
    q.whereRaw('(created_at, name) < (?, ?)', [new Date(cursor.createdAtMs), cursor.key]);
  }
  // The page and its VIEW record (the names listed) in one statement.
  const rows = await readPageAudited<WorkspaceRow>(
    db,
    q
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'name', order: 'desc' },
      ])
      .limit(pageSize + 1),
    actor,
    { entityType: 'Workspace', noun: 'workspaces', workspace: null, pageSize, idColumn: 'name' },
  );
  const page = rows.slice(0, pageSize);
  const last = page[page.length - 1];
  const next =
    rows.length > pageSize && last
      ? encodePageToken({ createdAtMs: last.created_at.getTime(), key: last.name })
      : null;
  return { workspaces: page.map(toWorkspace), next_page_token: next };
}

export async function updateWorkspace(
  db: Database,
  actor: Actor,
  name: string,
  input: WorkspaceInput,
): Promise<Workspace> {
  if (input.name !== name) throw new InvalidInput('Workspace name cannot be changed.');
  const description = input.description ?? null;
  checkStorableFields({ description });
  return db.transaction(async (trx) => {
    const before = toWorkspace(await findRow(trx, actor.principal.accountId, name));
    const changes: Record<string, unknown> = { updated_at: new Date(), version: trx.raw('version + 1') };
    if (input.description !== undefined) changes.description = description;
    const [row] = (await trx('workspaces')
      .where({ account_id: actor.principal.accountId, name })
      .update(changes)
      .returning('*')) as WorkspaceRow[];
    if (!row) throw new NotFound(`Workspace ${name} not found.`);
    const after = toWorkspace(row);
    await recordAudit(trx, actor, {
      operation: 'UPDATE',
      activity: `Updated workspace ${name}`,
      entityId: name,
      entityType: 'Workspace',
      entityName: name,
      workspace: name,
      before: { ...before },
      after: { ...after },
    });
    return after;
  });
}

/** Deleting a workspace keeps the objects inside it: they stay reachable by their workspace name. */
export async function deleteWorkspace(
  db: Database,
  actor: Actor,
  name: string,
): Promise<{ deleted: boolean; name: string }> {
  if (name === DEFAULT_WORKSPACE) throw new InvalidInput('The main workspace cannot be deleted.');
  return db.transaction(async (trx) => {
    const before = toWorkspace(await findRow(trx, actor.principal.accountId, name));
    await trx('workspaces').where({ account_id: actor.principal.accountId, name }).delete();
    await recordAudit(trx, actor, {
      operation: 'DELETE',
      activity: `Deleted workspace ${name}`,
      entityId: name,
      entityType: 'Workspace',
      entityName: name,
      workspace: name,
      before: { ...before },
    });
    return { deleted: true, name };
  });
}
