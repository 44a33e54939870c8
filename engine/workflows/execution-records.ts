import { runDuration, runsFinished, runsStarted } from '../platform/metrics';
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { CredentialType } from '../platform/principal';
import type { Database } from '../platform/database';
import { NotFound } from '../platform/errors';
import { newId } from '../platform/ids';
import { epochSeconds } from '../store/page-token';
import type { EntityRow } from '../store/entity-store';
import { SYSTEM_ACCOUNT_ID } from '../identity/system-account';
import { runPrepared } from '../platform/prepared-statements';
import type { WorkerNode, WorkerType, WorkflowPlan } from './workflow-definition';

export type RunStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED';
export type Trigger = 'MANUAL' | 'API' | 'TIME_BASED' | 'FILE_RECEIVED';
export type WorkerStatus = 'RUNNING' | 'COMPLETED' | 'ERROR';

export interface WorkflowExecutionRow {
  id: string;
  account_id: string;
  workflow_id: string;
  workflow_name: string;
  workspace: string;
  trigger: Trigger;
  run_status: RunStatus;
  started_worker_id: string | null;
  ender_worker_id: string | null;
  ender_worker_execution_id: string | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
  duration: number | null;
  real_execution_time: number | null;
  total_execution_time: number | null;
  resume: Record<string, unknown> | null;
  parameters: Record<string, unknown>;
  /** Who started the run: the worker's SDK calls act for them (audited as source WORKER). */
  user_id: string | null;
  credential_id: string | null;
  credential_type: CredentialType | null;
  /** The run_definitions row the run started with; null for runs recorded before they were kept. */
  definition_sha256: string | null;
  /** The FAILED execution this one re-runs from its failed step; null for a plain run. */
  retry_of: string | null;
  version: number;
}

/** What a run executes: the definition's workers and the plan derived from them. */
export interface RunDefinition {
  workers: WorkerNode[];
  plan: WorkflowPlan;
}

export interface WorkerExecutionRow {
  id: string;
  account_id: string;
  workflow_execution_id: string;
  workflow_id: string;
  workflow_name: string;
  worker_id: string;
  worker_name: string;
  worker_type: WorkerType;
  trigger: Trigger;
  status: WorkerStatus;
  parallel_index: number;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
  duration: number | null;
  cpu_time: number | null;
  result: unknown;
  input_params: Record<string, unknown> | null;
  logs: unknown;
  error_message: string | null;
  /** In a retry: the failed execution's worker execution whose recorded outcome this step reuses. */
  reused_from: string | null;
  version: number;
}

export function workflowExecutionView(row: WorkflowExecutionRow, withResume = false) {
  return {
    id: row.id,
    run_status: row.run_status,
    // Legacy field kept for old clients: OK while running, COMPLETED once ended in any way.
    status: row.run_status === 'RUNNING' ? 'OK' : 'COMPLETED',
    workflow_id: row.workflow_id,
    workflow_name: row.workflow_name,
    trigger: row.trigger,
    workspace: row.workspace,
    started_worker_id: row.started_worker_id,
    ender_worker_id: row.ender_worker_id,
    ender_worker_execution_id: row.ender_worker_execution_id,
    created: epochSeconds(row.created_at)!,
    updated: epochSeconds(row.updated_at)!,
    started: epochSeconds(row.started_at),
    ended: epochSeconds(row.ended_at),
    duration: row.duration,
    real_execution_time: row.real_execution_time,
    total_execution_time: row.total_execution_time,
    resume: withResume ? row.resume : null,
    retry_of: row.retry_of,
    version: String(row.version),
  };
}

export function workerExecutionView(row: WorkerExecutionRow, withResult: boolean) {
  return {
    id: row.id,
    status: row.status,
    worker_id: row.worker_id,
    worker_name: row.worker_name,
    worker_type: row.worker_type,
    workflow_execution_id: row.workflow_execution_id,
    workflow_id: row.workflow_id,
    workflow_name: row.workflow_name,
    trigger: row.trigger,
    parallel_index: row.parallel_index,
    created: epochSeconds(row.created_at)!,
    updated: epochSeconds(row.updated_at)!,
    started: epochSeconds(row.started_at),
    ended: epochSeconds(row.ended_at),
    duration: row.duration,
    cpu_time: row.cpu_time,
    result: withResult ? row.result : undefined,
    input_params: row.input_params,
    error_message: row.error_message,
    logs: withResult ? ((row.logs as unknown[] | null) ?? []) : undefined,
    reused_from: row.reused_from,
    version: String(row.version),
  };
}

export interface NewWorkflowExecution {
  accountId: string;
  workflowId: string;
  workflowName: string;
  workspace: string;
  trigger: Trigger;
  startedWorkerId: string;
  enderWorkerId: string | null;
  parameters: Record<string, unknown>;
  userId: string;
  credentialId: string;
  credentialType: CredentialType;
  /** A caller that may retry (a scheduled launch) passes its own id; the default is a fresh one. */
  executionId?: string;
  /** What the run executes (kept so a retry runs the same version); every run passes it. */
  definition?: RunDefinition;
  retryOf?: string;
}

/** The rows a new execution is made of: its definition (stored once per content) and itself. */
function newExecutionRows(input: NewWorkflowExecution): {
  definition: { sha256: string; definition: string } | null;
  execution: Record<string, unknown> & { id: string };
} {
  const now = new Date();
  const definition = input.definition ? runDefinitionRow(input.definition) : null;
  return {
    definition,
    execution: {
      id: input.executionId ?? newId('workflowExecution'),
      account_id: input.accountId,
      workflow_id: input.workflowId,
      workflow_name: input.workflowName,
      workspace: input.workspace,
      trigger: input.trigger,
      run_status: 'RUNNING',
      started_worker_id: input.startedWorkerId,
      ender_worker_id: input.enderWorkerId,
      parameters: JSON.stringify(input.parameters),
      user_id: input.userId,
      credential_id: input.credentialId,
      credential_type: input.credentialType,
      definition_sha256: definition?.sha256 ?? null,
      retry_of: input.retryOf ?? null,
      created_at: now,
      updated_at: now,
      started_at: now,
    },
  };
}

export async function insertWorkflowExecution(
  db: Database,
  input: NewWorkflowExecution,
): Promise<WorkflowExecutionRow> {
  const rows = newExecutionRows(input);
  if (rows.definition) {
    await db('run_definitions').insert(rows.definition).onConflict('sha256').ignore();
  }
  const [row] = (await db('workflow_executions')
    .insert(rows.execution)
    .returning('*')) as WorkflowExecutionRow[];
  runsStarted.inc({ trigger: input.trigger });
  return row!;
}

/**
 * Records a new execution and the rows that go with it (`alongside(executionId)`: its audit entry,
 * its start request) in one statement: data-modifying CTEs, so all of it commits or none does, as
 * in a transaction, in one round trip instead of one per row plus BEGIN and COMMIT.
 */
export async function insertWorkflowExecutionWith(
  db: Database,
  input: NewWorkflowExecution,
  alongside: (executionId: string) => Knex.QueryBuilder[],
): Promise<WorkflowExecutionRow> {
  const rows = newExecutionRows(input);
  let query = db.queryBuilder();
  if (rows.definition) {
    query = query.with(
      'run_definition',
      db('run_definitions').insert(rows.definition).onConflict('sha256').ignore(),
    );
  }
  alongside(rows.execution.id).forEach((insert, index) => {
    query = query.with(`alongside_${index}`, insert);
  });
  const [row] = (await query
    .with('execution', db('workflow_executions').insert(rows.execution).returning('*'))
    .select('*')
    .from('execution')) as WorkflowExecutionRow[];
  runsStarted.inc({ trigger: input.trigger });
  return row!;
}

/** JSON with object keys sorted: one text per value, whichever order its keys came in (jsonb's, say). */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * A run definition's row, keyed by the SHA-256 of its canonical JSON (so a retry, which reads it back
 * from jsonb, finds the same row); stored once, since its inserts ignore a conflict.
 */
function runDefinitionRow(definition: RunDefinition): { sha256: string; definition: string } {
  const json = canonicalJson(definition);
  return { sha256: createHash('sha256').update(json).digest('hex'), definition: json };
}

/** The definition a run started with; null for a run recorded before definitions were kept. */
export async function runDefinitionOf(
  db: Database,
  execution: WorkflowExecutionRow,
): Promise<RunDefinition | null> {
  if (execution.definition_sha256 === null) return null;
  const row = (await db('run_definitions').where({ sha256: execution.definition_sha256 }).first()) as
    { definition: RunDefinition } | undefined;
  return row?.definition ?? null;
}

export async function findWorkflowExecution(
  db: Database,
  accountId: string,
  id: string,
): Promise<WorkflowExecutionRow> {
  const row = (await db('workflow_executions').where({ id, account_id: accountId }).first()) as
    WorkflowExecutionRow | undefined;
  if (!row) throw new NotFound(`Workflow execution ${id} not found.`);
  return row;
}

export async function findWorkerExecution(
  db: Database,
  accountId: string,
  id: string,
): Promise<WorkerExecutionRow> {
  const row = (await db('worker_executions').where({ id, account_id: accountId }).first()) as
    WorkerExecutionRow | undefined;
  if (!row) throw new NotFound(`Worker execution ${id} not found.`);
  return row;
}

const TIMESTAMPS = ['created_at', 'updated_at', 'started_at', 'ended_at'];

/** A row as `to_jsonb` wrote it, its timestamps (ISO text there) back to Dates, as pg parses them. */
function fromJsonb<T>(row: Record<string, unknown> | null): T | null {
  if (row === null) return null;
  for (const column of TIMESTAMPS) {
    const value = row[column];
    if (typeof value === 'string') row[column] = new Date(value);
  }
  return row as T;
}

/** What a step needs to start, read and written by `beginStep` in one statement. */
export interface StepStart {
  /** The run's row; null when the database has no such run. */
  execution: WorkflowExecutionRow | null;
  /** The step's row: created by this statement (`fresh`), or found again (a retried attempt). */
  row: WorkerExecutionRow | null;
  fresh: boolean;
  /** The stored results of this run's worker executions named as inputs, by id. */
  results: Map<string, unknown>;
  /** The worker's template (the account's own, else a built-in); null when absent or not asked. */
  template: EntityRow | null;
}

/**
 * A step's start in one statement (one round trip): the run's row, the step's row created (only
 * while the run is RUNNING; a retried attempt finds its row instead, through the unique
 * (execution, worker, branch) key), the results its input is made of (this run's only), and its
 * template. Everything is read in the statement's snapshot, so a found row is the one a retry left.
 */
export async function beginStep(
  db: Database,
  input: {
    executionId: string;
    workerId: string;
    workerName: string;
    workerType: WorkerType;
    parallelIndex: number;
    inputParams: Record<string, unknown>;
    inputIds: string[];
    templateId: string | null;
  },
): Promise<StepStart> {
  const now = new Date();
  const key = [input.executionId, input.workerId, input.parallelIndex];
  const rows = (await runPrepared(
    db,
    db.raw(
      `WITH execution AS (SELECT * FROM workflow_executions WHERE id = ?),
       inserted AS (
         INSERT INTO worker_executions (id, account_id, workflow_execution_id, workflow_id, workflow_name,
           worker_id, worker_name, worker_type, trigger, status, parallel_index, input_params,
           created_at, updated_at, started_at)
         SELECT ?, e.account_id, e.id, e.workflow_id, e.workflow_name, ?, ?, ?, e.trigger, 'RUNNING',
           ?::int, ?::jsonb, ?::timestamptz, ?::timestamptz, ?::timestamptz
           FROM execution e WHERE e.run_status = 'RUNNING'
         ON CONFLICT (workflow_execution_id, worker_id, parallel_index) DO NOTHING
         RETURNING *
       )
       SELECT
         (SELECT to_jsonb(e) FROM execution e) AS execution,
         (SELECT to_jsonb(i) FROM inserted i) AS inserted,
         (SELECT to_jsonb(w) FROM worker_executions w
           WHERE w.workflow_execution_id = ? AND w.worker_id = ? AND w.parallel_index = ?::int) AS existing,
         (SELECT coalesce(jsonb_object_agg(r.id, r.result), '{}'::jsonb) FROM worker_executions r
           WHERE r.id = ANY(?::text[]) AND r.workflow_execution_id = ?) AS results,
         (SELECT to_jsonb(t) FROM entities t, execution e
           WHERE t.kind = 'worker_template' AND t.id = ?::text AND t.account_id IN (e.account_id, ?)
           ORDER BY t.account_id = e.account_id DESC LIMIT 1) AS template`,
      [
        input.executionId,
        newId('workerExecution'),
        input.workerId,
        input.workerName,
        input.workerType,
        input.parallelIndex,
        JSON.stringify(input.inputParams),
        now,
        now,
        now,
        ...key,
        input.inputIds,
        input.executionId,
        input.templateId,
        SYSTEM_ACCOUNT_ID,
      ],
    ),
  )) as Array<{
    execution: Record<string, unknown> | null;
    inserted: Record<string, unknown> | null;
    existing: Record<string, unknown> | null;
    results: Record<string, unknown>;
    template: Record<string, unknown> | null;
  }>;
  const found = rows[0]!;
  const inserted = fromJsonb<WorkerExecutionRow>(found.inserted);
  return {
    execution: fromJsonb<WorkflowExecutionRow>(found.execution),
    row: inserted ?? fromJsonb<WorkerExecutionRow>(found.existing),
    fresh: inserted !== null,
    results: new Map(Object.entries(found.results)),
    template: fromJsonb<EntityRow>(found.template),
  };
}

/** A found-again step row whose attempt died mid-script: this attempt starts the script again. */
export async function restartWorkerExecution(db: Database, id: string): Promise<void> {
  const now = new Date();
  await db('worker_executions')
    .where({ id, status: 'RUNNING' })
    .update({ started_at: now, updated_at: now, version: db.raw('version + 1') });
}

/**
 * Records how a worker run ended. Only a RUNNING row changes: once a run has failed, the rows of
 * its other branches were closed by `endWorkflowExecution`, and a late result must not reopen them.
 */
export async function endWorkerExecution(
  db: Database,
  id: string,
  outcome: {
    status: 'COMPLETED' | 'ERROR';
    result: unknown;
    errorMessage: string | null;
    cpuTimeSeconds: number;
    durationSeconds: number;
    logs: unknown;
  },
): Promise<boolean> {
  const now = new Date();
  const updated = await db('worker_executions')
    .where({ id, status: 'RUNNING' })
    .update({
      status: outcome.status,
      result: JSON.stringify(outcome.result ?? null),
      error_message: outcome.errorMessage,
      cpu_time: outcome.cpuTimeSeconds,
      duration: outcome.durationSeconds,
      logs: JSON.stringify(outcome.logs ?? []),
      ended_at: now,
      updated_at: now,
      version: db.raw('version + 1'),
    });
  return updated > 0;
}

/** Why a run failed, as the interpreter saw it. */
export interface RunFailure {
  /** Null when the run stopped outside any worker (cancelled in Temporal, never started). */
  workerId: string | null;
  parallelIndex: number;
  workerExecutionId: string | null;
  message: string;
}

/**
 * The `resume` of a run (`with_resume=True`): counts per status, one line per worker, the failure
 * if any, and the size of the ender's result, so a client can judge a run without reading every
 * worker execution.
 */
function summarise(
  rows: WorkerExecutionRow[],
  failure: RunFailure | null,
  enderResultBytes: number | null,
): Record<string, unknown> {
  const counts = { total: rows.length, completed: 0, error: 0, running: 0 };
  const workers = new Map<
    string,
    {
      worker_id: string;
      worker_name: string;
      worker_type: string;
      executions: number;
      completed: number;
      error: number;
      duration: number;
      cpu_time: number;
    }
  >();
  for (const row of rows) {
    counts[row.status.toLowerCase() as 'completed' | 'error' | 'running'] += 1;
    const line = workers.get(row.worker_id) ?? {
      worker_id: row.worker_id,
      worker_name: row.worker_name,
      worker_type: row.worker_type,
      executions: 0,
      completed: 0,
      error: 0,
      duration: 0,
      cpu_time: 0,
    };
    line.executions += 1;
    if (row.status === 'COMPLETED') line.completed += 1;
    if (row.status === 'ERROR') line.error += 1;
    line.duration += row.duration ?? 0;
    line.cpu_time += row.cpu_time ?? 0;
    workers.set(row.worker_id, line);
  }
  return {
    worker_executions: counts,
    workers: [...workers.values()],
    parallel_index_max: rows.reduce((max, row) => Math.max(max, row.parallel_index), -1),
    failure: failure && {
      worker_id: failure.workerId,
      parallel_index: failure.parallelIndex,
      worker_execution_id: failure.workerExecutionId,
      message: failure.message,
    },
    ender_result_bytes: enderResultBytes,
  };
}

/** The close's columns, from the run's worker executions as they end it (ordered as created). */
function closeColumns(
  db: Database | Knex.Transaction,
  execution: Pick<WorkflowExecutionRow, 'started_at' | 'created_at' | 'ender_worker_id'>,
  rows: WorkerExecutionRow[],
  outcome: { runStatus: 'SUCCEEDED' | 'FAILED'; enderWorkerExecutionId: string | null },
  failure: RunFailure | null,
  now: Date,
) {
  // A run that failed in its Ender still names that Ender's execution: clients read its error there.
  const ender = outcome.enderWorkerExecutionId
    ? rows.find((row) => row.id === outcome.enderWorkerExecutionId)
    : rows.find((row) => row.worker_type === 'ENDER');
  const total = rows.reduce((sum, row) => sum + (row.duration ?? 0), 0);
  const cpu = rows.reduce((sum, row) => sum + (row.cpu_time ?? 0), 0);
  const enderBytes = ender ? Buffer.byteLength(JSON.stringify(ender.result ?? null), 'utf8') : null;
  return {
    run_status: outcome.runStatus,
    ender_worker_execution_id: ender?.id ?? null,
    // With several ENDERs the one the run reached is known only now.
    ender_worker_id: ender?.worker_id ?? execution.ender_worker_id,
    ended_at: now,
    updated_at: now,
    duration: (now.getTime() - (execution.started_at ?? execution.created_at).getTime()) / 1000,
    real_execution_time: cpu,
    total_execution_time: total,
    resume: JSON.stringify(summarise(rows, failure, enderBytes)),
    version: db.raw('version + 1'),
  };
}

/** Counted once the end has committed, and only by the close that ended the run. */
function countFinished(row: WorkflowExecutionRow): void {
  const labels = { trigger: row.trigger, status: row.run_status };
  runsFinished.inc(labels);
  if (row.duration !== null && row.duration !== undefined) runDuration.observe(labels, row.duration);
}

/**
 * Closes a run: status, wall-clock duration, the sums of its worker executions and the resume. A
 * failed run also closes the worker executions still RUNNING (branches stopped, or an attempt
 * lost with its worker), so nothing of an ended run reads RUNNING.
 */
export async function endWorkflowExecution(
  db: Database,
  id: string,
  outcome: {
    runStatus: 'SUCCEEDED' | 'FAILED';
    enderWorkerExecutionId: string | null;
    failure?: RunFailure | null;
  },
): Promise<WorkflowExecutionRow> {
  let ended: WorkflowExecutionRow | null = null;
  const row = await db.transaction(async (trx) => {
    const execution = (await trx('workflow_executions').where({ id }).forUpdate().first()) as
      WorkflowExecutionRow | undefined;
    if (!execution) throw new NotFound(`Workflow execution ${id} not found.`);
    // A replayed or retried close must not rewrite an ended run.
    if (execution.run_status !== 'RUNNING') return execution;
    const now = new Date();
    const failure = outcome.failure ?? null;
    if (outcome.runStatus === 'FAILED') {
      const close = (message: string) => ({
        status: 'ERROR',
        error_message: trx.raw('coalesce(error_message, ?)', [message]),
        result: JSON.stringify({ error: message }),
        ended_at: now,
        updated_at: now,
        duration: trx.raw('extract(epoch from (?::timestamptz - started_at))::float8', [now]),
        version: trx.raw('version + 1'),
      });
      const running = () => trx('worker_executions').where({ workflow_execution_id: id, status: 'RUNNING' });
      // The worker that failed (its attempts lost, say) keeps the reason; the others were stopped.
      if (failure?.workerId) {
        await running()
          .where({ worker_id: failure.workerId, parallel_index: failure.parallelIndex })
          .update(close(failure.message));
      }
      await running().update(
        close(
          failure?.workerId
            ? `Stopped: the run failed at worker ${failure.workerId}.`
            : 'Stopped: the run failed.',
        ),
      );
    }
    const rows = (await trx('worker_executions')
      .where({ workflow_execution_id: id })
      .orderBy([{ column: 'created_at' }, { column: 'parallel_index' }])) as WorkerExecutionRow[];
    const [row] = (await trx('workflow_executions')
      .where({ id })
      .update(closeColumns(trx, execution, rows, outcome, failure, now))
      .returning('*')) as WorkflowExecutionRow[];
    ended = row!;
    return row!;
  });
  if (ended !== null) countFinished(row);
  return row;
}

/**
 * The main path's ENDER ending COMPLETED and closing its run SUCCEEDED, in two statements where a
 * separate end and close take six: its row ends (only if still RUNNING) in the statement that reads
 * what the close sums (every worker execution of the run, results left out but the ENDER's), then
 * the run closes if it is still RUNNING. No lock is needed: no other step of the run can be running
 * (branches end at their BARRIER before the run goes on), and a close that came first (a run
 * cancelled meanwhile) wins, as the conditional update leaves it alone. Answers whether this call
 * ended the step, and the run's row as it stands.
 */
export async function endStepClosingRun(
  db: Database,
  executionId: string,
  workerExecutionId: string,
  outcome: {
    result: unknown;
    cpuTimeSeconds: number;
    durationSeconds: number;
    logs: unknown;
  },
): Promise<{ ended: boolean; run: WorkflowExecutionRow }> {
  const now = new Date();
  const columns =
    'id, worker_id, worker_name, worker_type, status, parallel_index, created_at, duration, cpu_time';
  const rows = (await runPrepared(
    db,
    db.raw(
      `WITH ended AS (
         UPDATE worker_executions SET status = 'COMPLETED', result = ?::jsonb, error_message = NULL,
           cpu_time = ?::float8, duration = ?::float8, logs = ?::jsonb, ended_at = ?::timestamptz,
           updated_at = ?::timestamptz, version = version + 1
         WHERE id = ? AND status = 'RUNNING'
         RETURNING ${columns}, result
       )
       SELECT ${columns}, CASE WHEN id = ? THEN result END AS result, false AS ended
         FROM worker_executions WHERE workflow_execution_id = ? AND id NOT IN (SELECT id FROM ended)
       UNION ALL SELECT *, true AS ended FROM ended
       ORDER BY created_at, parallel_index`,
      [
        JSON.stringify(outcome.result ?? null),
        outcome.cpuTimeSeconds,
        outcome.durationSeconds,
        JSON.stringify(outcome.logs ?? []),
        now,
        now,
        workerExecutionId,
        workerExecutionId,
        executionId,
      ],
    ),
  )) as Array<WorkerExecutionRow & { ended: boolean }>;
  const ended = rows.some((row) => row.ended);
  const closedAt = new Date();
  // The run's start is read in the update itself: its duration is computed there.
  const [run] = (await db('workflow_executions')
    .where({ id: executionId, run_status: 'RUNNING' })
    .update({
      ...closeColumns(
        db,
        { started_at: closedAt, created_at: closedAt, ender_worker_id: null },
        rows,
        { runStatus: 'SUCCEEDED', enderWorkerExecutionId: workerExecutionId },
        null,
        closedAt,
      ),
      ender_worker_id: db.raw('coalesce(?, ender_worker_id)', [
        rows.find((row) => row.id === workerExecutionId)?.worker_id ?? null,
      ]),
      duration: db.raw('extract(epoch from (?::timestamptz - coalesce(started_at, created_at)))::float8', [
        closedAt,
      ]),
    })
    .returning('*')) as WorkflowExecutionRow[];
  if (run) {
    countFinished(run);
    return { ended, run };
  }
  const current = (await db('workflow_executions').where({ id: executionId }).first()) as
    WorkflowExecutionRow | undefined;
  if (!current) throw new NotFound(`Workflow execution ${executionId} not found.`);
  return { ended, run: current };
}
