import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import {
  commonView,
  createEntity,
  deleteEntity,
  type EntityKind,
  type EntityRecord,
  findEntity,
  updateEntity,
} from '../store/entity-store';
import { InvalidInput, NotFound } from '../platform/errors';
import { isId } from '../platform/ids';
import { findIntegration, INTEGRATION_ID_PREFIX } from '../kinds/integration';
import { readWorkerTemplate, WORKER_TEMPLATE } from '../kinds/worker-template';
import type { Trigger } from './execution-records';
import { parseScheduleConfig } from './schedule-config';
import { scriptInputProblem } from './script-inputs';
import {
  parseDefinition,
  storedWorkers,
  type WorkerNode,
  type WorkerNodeRequest,
  type WorkflowPlan,
} from './workflow-definition';
import { isPlainObject } from '../platform/plain-object';
import { findNamedIntegration } from '../integrations/outbound-calls';
import { checkMailbox } from '../integrations/smtp-send';

export const TRIGGER_TYPES = ['MANUAL', 'API', 'TIME_BASED', 'FILE_RECEIVED'] as const satisfies Trigger[];

export interface WorkflowGui {
  offset_x: number;
  offset_y: number;
  zoom: number;
}

const DEFAULT_GUI: WorkflowGui = { offset_x: 0, offset_y: 0, zoom: 1 };

/**
 * Workflows are entities of kind `workflow` (the generic table gives lists, the query language and
 * keyset paging); `body` holds the definition and the trigger settings.
 */
export const WORKFLOW: EntityKind = {
  kind: 'workflow',
  entityType: 'Workflow',
  noun: 'workflow',
  scope: 'workspace',
  idPrefix: 'workflow',
  idField: 'id',
  hasDate: false,
  listOmit: ['workers'],
  // Inline scripts can make a definition large; the trail keeps its digest, as for template scripts.
  auditDigest: ['workers'],
  view: (record: EntityRecord) => ({
    ...commonView(record),
    status: record.body.status ?? 'OK',
    trigger_type: record.body.trigger_type ?? 'MANUAL',
    trigger_config: record.body.trigger_config ?? {},
    trigger_enabled: record.body.trigger_enabled ?? false,
    starter_worker_id: record.body.starter_worker_id ?? null,
    gui: record.body.gui ?? DEFAULT_GUI,
    on_failure: record.body.on_failure ?? null,
    workers: storedWorkers(record.body.workers),
    workspace: record.workspace,
  }),
};

/** A stored workflow, typed, as the engine runs it. */
export interface StoredWorkflow {
  id: string;
  accountId: string;
  workspace: string;
  name: string;
  triggerType: Trigger;
  triggerConfig: Record<string, unknown>;
  triggerEnabled: boolean;
  workers: WorkerNode[];
  record: EntityRecord;
}

/**
 * A workflow request as the route's schema (WorkflowCreate, WorkflowUpdate in api/schemas/workflow.ts)
 * accepted it: every field's shape is the schema's. Null means "not given" (Python clients send None).
 */
export interface WorkflowInput {
  name?: string | null;
  description?: string | null;
  tags?: string | readonly string[] | null;
  workspace?: string;
  trigger_type?: Trigger | null;
  trigger_config?: Record<string, unknown> | null;
  trigger_enabled?: boolean | null;
  gui?: { offset_x?: number | null; offset_y?: number | null; zoom?: number | null } | null;
  on_failure?: { integration: string; to?: string[] } | { workflow_id: string } | null;
  workers?: readonly WorkerNodeRequest[] | null;
}

/** A create request: its schema requires the name and the workers. */
export type WorkflowCreateInput = WorkflowInput & { name: string; workers: readonly WorkerNodeRequest[] };

/** Where a failed run's alert goes: an HTTP or SMTP integration, or a handler workflow. */
export type OnFailure = { integration: string; to?: string[] } | { workflow_id: string };

/**
 * `on_failure` as stored: the integration resolved to its id (a name is accepted), and checked to
 * be an HTTP or SMTP one of the account (SMTP needing `to`), or a handler workflow of the same
 * workspace other than the workflow itself. `null` clears it. The shape is the schema's; what is
 * checked here needs stored state, or the integration's type.
 */
async function checkOnFailure(
  db: Database,
  accountId: string,
  workspace: string | undefined,
  selfId: string | null,
  value: NonNullable<WorkflowInput['on_failure']> | null,
): Promise<OnFailure | null> {
  if (value === null) return null;
  if ('integration' in value) {
    const integration = await findNamedIntegration(db, accountId, value.integration).catch(
      (error: unknown) => {
        if (error instanceof NotFound) {
          throw new InvalidInput(
            `on_failure.integration: integration ${value.integration} not found in this account.`,
          );
        }
        throw error;
      },
    );
    const type = (integration.body.type as string | undefined) ?? 'WEBHOOK';
    if (type !== 'HTTP' && type !== 'SMTP') {
      throw new InvalidInput(
        `on_failure.integration must be an HTTP or SMTP integration; ${integration.name} is ${type}.`,
      );
    }
    if (type === 'HTTP') {
      if (value.to !== undefined) {
        throw new InvalidInput(
          'on_failure.to is for an SMTP integration; an HTTP one posts to its base_url.',
        );
      }
      return { integration: integration.id };
    }
    const to = value.to;
    if (to === undefined || to.length === 0) {
      throw new InvalidInput('on_failure.to is required for an SMTP integration: the addresses to alert.');
    }
    to.forEach((address, index) => checkMailbox(`on_failure.to[${index}]`, address));
    return { integration: integration.id, to };
  }
  const id = value.workflow_id;
  if (id === selfId)
    throw new InvalidInput(
      'on_failure.workflow_id must be another workflow: a workflow cannot handle its own failure.',
    );
  try {
    await findEntity(db, accountId, WORKFLOW, id, workspace);
  } catch (error) {
    if (error instanceof NotFound) {
      throw new InvalidInput(`on_failure.workflow_id: workflow ${id} not found in this workspace.`);
    }
    throw error;
  }
  return { workflow_id: id };
}

/**
 * What a trigger type needs in `trigger_config`, checked on the body as it will be stored: a PUT may
 * change the type or the config alone. TIME_BASED: `{cron, timezone}` (see schedule-config.ts).
 */
function checkTriggerSettings(body: Record<string, unknown>): Record<string, unknown> {
  if (body.trigger_type === 'TIME_BASED') {
    return { ...body, trigger_config: parseScheduleConfig(body.trigger_config) };
  }
  return body;
}

/**
 * FILE_RECEIVED: `{integration_id: 'intg_…'}`, an integration of the account (any workspace may
 * subscribe; integrations are account-scoped). Checked on every store, like the other trigger
 * settings; deleting an integration is refused while a workflow names it.
 */
async function checkIntegrationTrigger(
  db: Database,
  accountId: string,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  if (body.trigger_type !== 'FILE_RECEIVED') return body;
  const id = isPlainObject(body.trigger_config) ? body.trigger_config.integration_id : undefined;
  if (typeof id !== 'string' || !isId(INTEGRATION_ID_PREFIX, id)) {
    throw new InvalidInput(
      'trigger_config.integration_id is required for FILE_RECEIVED: the id (intg_…) of an integration of the account.',
    );
  }
  try {
    await findIntegration(db, accountId, id);
  } catch (error) {
    if (error instanceof NotFound) {
      throw new InvalidInput(`trigger_config.integration_id: integration ${id} not found in this account.`);
    }
    throw error;
  }
  return body;
}

/** The view's position and zoom: what the request sets, the defaults for what it leaves out or nulls. */
function guiOf(value: NonNullable<WorkflowInput['gui']>): WorkflowGui {
  return {
    offset_x: value.offset_x ?? DEFAULT_GUI.offset_x,
    offset_y: value.offset_y ?? DEFAULT_GUI.offset_y,
    zoom: value.zoom ?? DEFAULT_GUI.zoom,
  };
}

/**
 * The graph (see workflow-definition.ts), then what needs the database: every template must be one
 * the account can see, and each worker's script_inputs must fit its template's form_inputs.
 */
export async function checkDefinition(
  db: Database,
  accountId: string,
  raw: readonly WorkerNodeRequest[],
): Promise<{ workers: WorkerNode[]; plan: WorkflowPlan }> {
  const definition = parseDefinition(raw);
  const templateIds = [...new Set(definition.workers.flatMap((w) => (w.template_id ? [w.template_id] : [])))];
  const templates = new Map(
    await Promise.all(
      templateIds.map(async (id) => {
        try {
          return [id, readWorkerTemplate(await findEntity(db, accountId, WORKER_TEMPLATE, id))] as const;
        } catch (error) {
          if (error instanceof NotFound) throw new InvalidInput(`Unknown worker template ${id}.`);
          throw error;
        }
      }),
    ),
  );
  for (const worker of definition.workers) {
    if (!worker.template_id) continue;
    const template = templates.get(worker.template_id)!;
    const problem = scriptInputProblem(template.formInputs, worker.script_inputs, {
      requireMandatory: worker.type !== 'STARTER',
      allowUnknown: false,
    });
    if (problem !== null) {
      throw new InvalidInput(`Worker ${worker.id} (template ${template.id}): ${problem}.`);
    }
  }
  return definition;
}

function readWorkflow(record: EntityRecord): StoredWorkflow {
  const view = WORKFLOW.view(record);
  return {
    id: record.id,
    accountId: record.accountId,
    workspace: record.workspace!,
    name: record.name,
    triggerType: view.trigger_type as Trigger,
    triggerConfig: view.trigger_config as Record<string, unknown>,
    triggerEnabled: view.trigger_enabled as boolean,
    workers: view.workers as WorkerNode[],
    record,
  };
}

export function workflowView(workflow: StoredWorkflow | EntityRecord): Record<string, unknown> {
  return WORKFLOW.view('record' in workflow ? workflow.record : workflow);
}

/** The body fields a request sets; null, like leaving a field out, keeps the stored value. */
function bodyChanges(input: WorkflowInput): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  if (input.trigger_type != null) changes.trigger_type = input.trigger_type;
  if (input.trigger_config != null) changes.trigger_config = input.trigger_config;
  if (input.trigger_enabled != null) changes.trigger_enabled = input.trigger_enabled;
  if (input.gui != null) changes.gui = guiOf(input.gui);
  return changes;
}

export async function createWorkflow(
  db: Database,
  actor: Actor,
  input: WorkflowCreateInput,
): Promise<StoredWorkflow> {
  const { workers, plan } = await checkDefinition(db, actor.principal.accountId, input.workers);
  const onFailure =
    input.on_failure === undefined
      ? null
      : await checkOnFailure(db, actor.principal.accountId, input.workspace, null, input.on_failure);
  const record = await createEntity(db, actor, WORKFLOW, {
    workspace: input.workspace,
    name: input.name,
    description: input.description,
    tags: input.tags,
    body: await checkIntegrationTrigger(
      db,
      actor.principal.accountId,
      checkTriggerSettings({
        status: 'OK',
        trigger_type: 'MANUAL',
        trigger_config: {},
        trigger_enabled: false,
        gui: DEFAULT_GUI,
        ...bodyChanges(input),
        on_failure: onFailure,
        starter_worker_id: plan.starterId,
        workers,
      }),
    ),
  });
  return readWorkflow(record);
}

/**
 * Every field optional; what is left out (or null) keeps its stored value. New `workers` replace the
 * whole definition. Runs already started keep the definition they were started with.
 */
export async function updateWorkflow(
  db: Database,
  actor: Actor,
  id: string,
  input: WorkflowInput,
): Promise<StoredWorkflow> {
  const definition =
    input.workers === undefined || input.workers === null
      ? null
      : await checkDefinition(db, actor.principal.accountId, input.workers);
  const changes = bodyChanges(input);
  if (input.on_failure !== undefined) {
    changes.on_failure = await checkOnFailure(
      db,
      actor.principal.accountId,
      input.workspace,
      id,
      input.on_failure,
    );
  }
  const record = await updateEntity(db, actor, WORKFLOW, id, input.workspace, async (current) => ({
    name: input.name ?? undefined,
    description: input.description,
    tags: input.tags ?? undefined,
    body: await checkIntegrationTrigger(
      db,
      actor.principal.accountId,
      checkTriggerSettings({
        ...current.body,
        ...changes,
        ...(definition ? { workers: definition.workers, starter_worker_id: definition.plan.starterId } : {}),
      }),
    ),
  }));
  return readWorkflow(record);
}

export async function deleteWorkflow(
  db: Database,
  actor: Actor,
  id: string,
  workspace: unknown,
): Promise<{ deleted: true; id: string; name: string }> {
  const record = await deleteEntity(db, actor, WORKFLOW, id, workspace);
  return { deleted: true, id: record.id, name: record.name };
}

/** Another account's workflow, or one in another workspace, is simply not found. */
export async function findWorkflow(
  db: Database,
  accountId: string,
  id: string,
  workspace?: unknown,
): Promise<StoredWorkflow> {
  return readWorkflow(await findEntity(db, accountId, WORKFLOW, id, workspace));
}
