import { symbolHistories, symbolPrices } from '../market-data/symbols';
import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';
import { isPlainObject } from '../platform/plain-object';
import type { Actor, AuditSource, Principal } from '../platform/principal';
import {
  findWorkflowExecution,
  workerExecutionView,
  workflowExecutionView,
} from '../workflows/execution-records';
import { workerExecutionOf } from '../workflows/execution-queries';
import { runWorkflow } from '../workflows/run-workflow';
import type { WorkflowRunner } from '../workflows/workflow-runner';
import { WORKFLOW, workflowView } from '../workflows/workflow-store';
import { viewEntity } from '../store/entity-store';
import { entityMethod, NotOffered, queryMethod, sdkEntityClass } from './sdk-entities';
import { decodeWire, wireDateTime } from './sdk-wire';
import { cacheMethod, lockMethod } from './user-cache';

/**
 * `POST /v1/sdk_function`: the one endpoint of everysk-lib's SDK layer (`everysk.sdk`). Each call
 * names a class and a method, the object it is called on (`self_obj`) and its arguments
 * (`params`); this module answers it in-process, so the HTTP route (api/routes/sdk-function.ts)
 * and a worker step's script reach the same code. Every class or method it does not offer is a
 * 400 saying so and why: never a silent success.
 */

export interface SdkDependencies {
  db: Database;
  /** Starts runs (Workflow.run); null where none is at hand (a worker without a Temporal client). */
  workflows: WorkflowRunner | null;
  /** The service's base URL: reports show absolute addresses. */
  publicUrl: string;
}

export interface SdkRequest {
  class_name: string;
  method_name: string;
  self_obj: unknown;
  params: Record<string, unknown>;
}

/** Where the call comes from, for its audit records (the HTTP request, or a workflow's step). */
export interface SdkCallContext {
  ip?: string | null;
  userAgent?: string | null;
  workflow?: Actor['workflow'];
}

/** Classes of everysk-lib that this service does not offer, and why. */
export const NOT_OFFERED_CLASSES: Readonly<Record<string, string>> = {
  Workspace: 'not built yet: use /v2/workspaces',
  Secrets: 'platform-internal: secrets of the hosted platform',
  SecretsScript: 'platform-internal: secrets of the hosted platform',
  Script: 'platform-internal: the hosted platform’s script runner',
  WorkerBase: 'platform-internal: the hosted platform’s worker runtime',
  Expression: 'semantics undocumented',
  Compliance: 'semantics undocumented',
  Parser: 'semantics undocumented',
  Securities: 'a client-side object: nothing to call on the server',
  Security: 'a client-side object: nothing to call on the server',
};

/** Checks the request's shape (the decoded JSON body) and decodes its wire values. */
export function parseSdkRequest(body: unknown): SdkRequest & { rawParams: Record<string, unknown> } {
  if (!isPlainObject(body))
    throw new InvalidInput('The body must be a JSON object {class_name, method_name, self_obj, params}.');
  const { class_name: className, method_name: methodName } = body;
  if (typeof className !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,99}$/.test(className)) {
    throw new InvalidInput('class_name must name a class of the SDK.');
  }
  if (typeof methodName !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,99}$/.test(methodName)) {
    throw new InvalidInput('method_name must name a method of the SDK.');
  }
  const rawParams = body.params ?? {};
  if (!isPlainObject(rawParams)) throw new InvalidInput('params must be an object.');
  return {
    class_name: className,
    method_name: methodName,
    self_obj: decodeWire(body.self_obj ?? null),
    params: decodeWire(rawParams) as Record<string, unknown>,
    rawParams,
  };
}

async function workspaceOfWorkflow(
  db: Database,
  accountId: string,
  id: unknown,
): Promise<{ id: string; workspace: string | undefined }> {
  if (typeof id !== 'string' || id === '') throw new InvalidInput('Workflow.run needs the workflow id.');
  const row = (await db('entities')
    .where({ account_id: accountId, kind: WORKFLOW.kind, id })
    .first('workspace')) as { workspace: string | null } | undefined;
  return { id, workspace: row?.workspace ?? undefined };
}

/** An execution record in the SDK's names (its `created_on`/`updated_on`, `start_time`, …). */
function sdkRecord(view: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...view };
  for (const [from, to] of [
    ['created', 'created_on'],
    ['updated', 'updated_on'],
    ['started', 'start_time'],
    ['ended', 'end_time'],
  ] as const) {
    const value = view[from];
    delete out[from];
    if (typeof value === 'number') out[to] = wireDateTime(value);
  }
  if (out.resume === null) delete out.resume;
  return out;
}

async function workflowMethod(
  deps: SdkDependencies,
  actor: Actor,
  className: string,
  method: string,
  self: unknown,
  params: Record<string, unknown>,
) {
  const accountId = actor.principal.accountId;
  const selfDict = isPlainObject(self) ? self : {};
  if (className === 'Workflow' && method === 'run') {
    const parameters = params.parameters ?? {};
    if (!isPlainObject(parameters)) throw new InvalidInput('parameters must be an object.');
    if (deps.workflows === null) {
      throw new NotOffered(className, method, 'this worker has no connection to start runs with');
    }
    const { id, workspace } = await workspaceOfWorkflow(deps.db, accountId, selfDict.id);
    const execution = await runWorkflow(deps.db, deps.workflows, actor, {
      workflowId: id,
      workspace,
      trigger: actor.principal.credentialType === 'OAUTH2' ? 'MANUAL' : 'API',
      parameters,
    });
    return { workflow_execution: sdkRecord(workflowExecutionView(execution)) };
  }
  if (className === 'Workflow' && method === 'retrieve') {
    const id = params.entity_id;
    if (typeof id !== 'string' || id === '') throw new InvalidInput('entity_id must be a workflow id.');
    const row = (await deps
      .db('entities')
      .where({ account_id: accountId, kind: WORKFLOW.kind, id })
      .first('workspace')) as { workspace: string | null } | undefined;
    if (!row) return null;
    const record = await viewEntity(deps.db, actor, WORKFLOW, id, row.workspace ?? undefined);
    return sdkRecord(workflowView(record));
  }
  if (className === 'WorkflowExecution' && method === 'retrieve') {
    const id = params.entity_id;
    if (typeof id !== 'string') throw new InvalidInput('entity_id must be a workflow execution id.');
    try {
      return sdkRecord(workflowExecutionView(await findWorkflowExecution(deps.db, accountId, id)));
    } catch (error) {
      if ((error as { status?: number }).status === 404) return null;
      throw error;
    }
  }
  if (className === 'WorkerExecution' && method === 'retrieve') {
    const id = params.entity_id;
    if (typeof id !== 'string') throw new InvalidInput('entity_id must be a worker execution id.');
    let row;
    try {
      row = await workerExecutionOf(deps.db, accountId, null, id, undefined);
    } catch (error) {
      if ((error as { status?: number }).status === 404) return null;
      throw error;
    }
    const view = workerExecutionView(row, true) as Record<string, unknown>;
    // The SDK's Result: the step's status, its output as `data`, its log lines.
    view.result = {
      status: row.status === 'COMPLETED' ? 'OK' : 'ERROR',
      data: row.result ?? null,
      log: view.logs ?? [],
    };
    delete view.logs;
    return sdkRecord(view);
  }
  throw new NotOffered(className, method);
}

async function marketDataMethod(
  db: Database,
  accountId: string,
  method: string,
  self: unknown,
  params: Record<string, unknown>,
) {
  // Arguments may be set on the object (MarketData(ticker_list=…)) or passed to the method.
  const merged: Record<string, unknown> = { ...(isPlainObject(self) ? self : {}) };
  for (const [key, value] of Object.entries(params))
    if (value !== undefined && value !== null) merged[key] = value;
  if (method === 'get_historical') {
    for (const field of ['ticker_type', 'projection'] as const) {
      if (merged[field] !== undefined && merged[field] !== null) {
        throw new NotOffered('MarketData', `get_historical(${field}=…)`, 'semantics undocumented');
      }
    }
    if (merged.real_time === true)
      throw new NotOffered('MarketData', 'get_historical(real_time=True)', 'no real-time feed');
    const symbols = merged.ticker_list;
    const date = Array.isArray(merged.date) ? undefined : merged.date;
    if (
      merged.start_date === undefined &&
      merged.end_date === undefined &&
      date !== undefined &&
      date !== null
    ) {
      return symbolPrices(db, accountId, { symbols, date });
    }
    return symbolHistories(db, accountId, {
      symbols,
      start_date: merged.start_date,
      end_date: merged.end_date,
    });
  }
  throw new NotOffered(
    'MarketData',
    method,
    method === 'search'
      ? 'semantics undocumented: its datasets and paths are the hosted platform’s'
      : 'not built yet',
  );
}

/**
 * The in-process entry point: answers one decoded SDK call for `principal`, its audit records
 * naming `source` (SDK for the HTTP endpoint, WORKER for a workflow step's script).
 */
export async function callSdkFunction(
  deps: SdkDependencies,
  principal: Principal,
  body: unknown,
  source: AuditSource,
  context: SdkCallContext = {},
): Promise<unknown> {
  const request = parseSdkRequest(body);
  const actor: Actor = {
    principal,
    source,
    ip: context.ip ?? null,
    userAgent: context.userAgent ?? null,
    ...(context.workflow ? { workflow: context.workflow } : {}),
  };
  const { class_name: className, method_name: method, self_obj: self, params } = request;
  const entityClass = sdkEntityClass(className, deps.publicUrl);
  if (entityClass) return entityMethod(deps.db, actor, entityClass, method, self, params);
  switch (className) {
    case 'Query':
      return queryMethod(deps.db, actor, method, self, params, deps.publicUrl);
    case 'Workflow':
    case 'WorkflowExecution':
    case 'WorkerExecution':
      return workflowMethod(deps, actor, className, method, self, params);
    case 'MarketData':
      return marketDataMethod(deps.db, principal.accountId, method, self, params);
    case 'UserCache':
      return cacheMethod(deps.db, principal.accountId, method, self, params, request.rawParams);
    case 'UserLock':
      return lockMethod(deps.db, principal.accountId, method, self, params);
  }
  throw new NotOffered(
    className,
    method,
    NOT_OFFERED_CLASSES[className] ?? 'not a class of the SDK this service knows',
  );
}
