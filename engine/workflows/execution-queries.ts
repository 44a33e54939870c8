import type { Database } from '../platform/database';
import { checkWorkspaceName } from '../store/entity-fields';
import { InvalidInput, NotFound } from '../platform/errors';
import { isId } from '../platform/ids';
import { decodeKeysetToken, encodeKeysetToken, epochSeconds, PAGE_SIZE_MAX } from '../store/page-token';
import {
  findWorkerExecution,
  findWorkflowExecution,
  type WorkerExecutionRow,
  type WorkflowExecutionRow,
  workflowExecutionView,
} from './execution-records';
import { findWorkflow } from './workflow-store';
import { parsePeriod } from '../store/period';

/**
 * The reads behind the executions API. They look executions up by workflow id, account and
 * workspace rather than through the stored workflow, so a client polling a run keeps its answer
 * even when the workflow is deleted meanwhile. Polls are not audited: a client reads every two
 * seconds, and the run itself already wrote its EXECUTE record.
 */

function pageSize(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 10;
  const size = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(size) || size < 1 || size > PAGE_SIZE_MAX) {
    throw new InvalidInput(`page_size must be an integer from 1 to ${PAGE_SIZE_MAX}.`);
  }
  return size;
}

/** One execution of the workflow in that workspace; another workflow's or workspace's is not found. */
export async function workflowExecutionOf(
  db: Database,
  accountId: string,
  workflowId: string,
  executionId: string,
  workspace: unknown,
): Promise<WorkflowExecutionRow> {
  // Built only when thrown: an Error's stack trace costs more than the read on this polled path.
  const notFound = () => new NotFound(`Workflow execution ${executionId} not found.`);
  if (!isId('workflowExecution', executionId)) throw notFound();
  const row = await findWorkflowExecution(db, accountId, executionId);
  if (row.workflow_id !== workflowId || row.workspace !== checkWorkspaceName(workspace)) throw notFound();
  return row;
}

const ORDER = '-created,-id';

/**
 * Most recent first, keyset paging on (created, id); `worker_id` keeps runs that ran that worker.
 * Listing needs the workflow itself (an unknown id is a 404, as for every resource).
 */
export async function listWorkflowExecutions(
  db: Database,
  accountId: string,
  workflowId: string,
  request: {
    workspace?: unknown;
    workerId?: string;
    withResume: boolean;
    pageSize?: string;
    pageToken?: string;
  },
) {
  await findWorkflow(db, accountId, workflowId, request.workspace);
  return listRuns(db, accountId, { ...request, workflowId });
}

const RUN_STATUSES = ['RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED'];
const TRIGGERS = ['MANUAL', 'API', 'TIME_BASED', 'FILE_RECEIVED'];

/**
 * The runs of a workspace, most recent first (keyset paging on (created, id)), narrowed by any of:
 * workflow, `run_status`, trigger, a period on `created` (`start`, `end`, `date_time` as for every
 * list) and a worker the run involved. The account-wide list the web console pages through.
 */
export async function listRuns(
  db: Database,
  accountId: string,
  request: {
    workspace?: unknown;
    workflowId?: string;
    runStatus?: string;
    trigger?: string;
    start?: string;
    end?: string;
    dateTime?: string;
    workerId?: string;
    withResume: boolean;
    pageSize?: string;
    pageToken?: string;
  },
) {
  const size = pageSize(request.pageSize);
  const cursor = decodeKeysetToken(request.pageToken, ORDER, 2);
  const period = parsePeriod({ start: request.start, end: request.end, dateTime: request.dateTime });
  const q = db('workflow_executions as e')
    .where({ 'e.account_id': accountId })
    .where('e.workspace', checkWorkspaceName(request.workspace))
    .select(
      'e.*',
      db.raw('((extract(epoch from e.created_at) * 1000000)::bigint)::text as __c0'),
      db.raw('to_jsonb(e.id)::text as __c1'),
    );
  if (request.workflowId) q.where('e.workflow_id', request.workflowId);
  if (request.runStatus) {
    if (!RUN_STATUSES.includes(request.runStatus)) {
      throw new InvalidInput(`run_status must be one of ${RUN_STATUSES.join(', ')}.`);
    }
    q.where('e.run_status', request.runStatus);
  }
  if (request.trigger) {
    if (!TRIGGERS.includes(request.trigger))
      throw new InvalidInput(`trigger must be one of ${TRIGGERS.join(', ')}.`);
    q.where('e.trigger', request.trigger);
  }
  if (period?.start) q.where('e.created_at', '>=', period.start.instant);
  if (period?.end) q.where('e.created_at', '<=', period.end.instant);
  if (request.workerId) {
    q.whereExists(
      db('worker_executions as w')
        .select(db.raw('1'))
        .whereRaw('w.workflow_execution_id = e.id')
        .where('w.worker_id', request.workerId),
    );
  }
  if (cursor) {
    const micros = cursor[0]!;
    const id: unknown = JSON.parse(cursor[1]!);
    if (!/^\d{1,18}$/.test(micros) || typeof id !== 'string') {
      throw new InvalidInput(
        'Invalid page_token: pass the next_page_token of the previous response unchanged.',
      );
    }
    q.whereRaw('((extract(epoch from e.created_at) * 1000000)::bigint, e.id) < (?::bigint, ?)', [micros, id]);
  }
  const rows = (await q
    .orderBy([
      { column: 'e.created_at', order: 'desc' },
      { column: 'e.id', order: 'desc' },
    ])
    .limit(size + 1)) as Array<WorkflowExecutionRow & { __c0: string; __c1: string }>;
  const page = rows.slice(0, size);
  const last = page[page.length - 1];
  return {
    workflow_executions: page.map((row) => workflowExecutionView(row, request.withResume)),
    next_page_token:
      rows.length > size && last ? encodeKeysetToken({ order: ORDER, keys: [last.__c0, last.__c1] }) : null,
  };
}

/** A worker execution seen through a workflow's path: it must belong to that workflow and workspace. */
export async function workerExecutionOf(
  db: Database,
  accountId: string,
  workflowId: string | null,
  workerExecutionId: string,
  workspace: unknown,
): Promise<WorkerExecutionRow> {
  const notFound = () => new NotFound(`Worker execution ${workerExecutionId} not found.`);
  if (!isId('workerExecution', workerExecutionId)) throw notFound();
  const row = await findWorkerExecution(db, accountId, workerExecutionId);
  if (workflowId !== null && row.workflow_id !== workflowId) throw notFound();
  // Worker execution ids are unique in the account. The legacy client's `syncronous_retrieve` asks for
  // the Ender's execution by id alone, without the run's workspace: only a workspace that was given is checked.
  if (workspace === undefined) return row;
  const execution = await findWorkflowExecution(db, accountId, row.workflow_execution_id);
  if (execution.workspace !== checkWorkspaceName(workspace)) throw notFound();
  return row;
}

/**
 * The worker executions of a run in the interface's grouped shape: one element per execution,
 * saying whether it ran in a parallel branch.
 */
export async function groupedWorkerExecutions(
  db: Database,
  accountId: string,
  workflowId: string,
  workflowExecutionId: string,
  options: { workspace?: unknown; withResult: boolean },
) {
  const execution = await workflowExecutionOf(
    db,
    accountId,
    workflowId,
    workflowExecutionId,
    options.workspace,
  );
  const rows = (await db('worker_executions')
    .where({ account_id: accountId, workflow_execution_id: execution.id })
    // Grouped by worker, in the order the workers started; a worker's branches by parallel_index.
    .orderByRaw(
      'min(created_at) over (partition by worker_id), worker_id, parallel_index',
    )) as WorkerExecutionRow[];
  return {
    worker_executions: rows.map((row) => ({
      worker_id: row.worker_id,
      worker_name: row.worker_name,
      is_parallel_execution: row.parallel_index >= 0,
      execution: {
        id: row.id,
        worker_id: row.worker_id,
        worker_name: row.worker_name,
        worker_type: row.worker_type,
        status: row.status,
        created: epochSeconds(row.created_at)!,
        started: epochSeconds(row.started_at),
        ended: epochSeconds(row.ended_at),
        duration: row.duration,
        parallel_index: row.parallel_index,
        ...(options.withResult ? { result: row.result } : {}),
      },
    })),
    parallel_index_max: rows.reduce((max, row) => Math.max(max, row.parallel_index), -1),
  };
}
