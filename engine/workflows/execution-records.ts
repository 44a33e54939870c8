import type { Database } from '../db/database';
import { NotFound } from '../errors';
import { newId } from '../ids';
import { epochSeconds } from '../lists/page-token';
import type { WorkerType } from './workflow-definition';

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
  version: number;
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
    duration: row.duration,
    real_execution_time: row.real_execution_time,
    total_execution_time: row.total_execution_time,
    resume: withResume ? row.resume : null,
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
    created: epochSeconds(row.created_at)!,
    updated: epochSeconds(row.updated_at)!,
    started: epochSeconds(row.started_at),
    duration: row.duration,
    cpu_time: row.cpu_time,
    result: withResult ? row.result : undefined,
    input_params: row.input_params,
    version: String(row.version),
  };
}

export async function insertWorkflowExecution(
  db: Database,
  input: {
    accountId: string;
    workflowId: string;
    workflowName: string;
    workspace: string;
    trigger: Trigger;
    startedWorkerId: string;
    enderWorkerId: string;
    parameters: Record<string, unknown>;
  },
): Promise<WorkflowExecutionRow> {
  const now = new Date();
  const [row] = (await db('workflow_executions')
    .insert({
      id: newId('workflowExecution'),
      account_id: input.accountId,
      workflow_id: input.workflowId,
      workflow_name: input.workflowName,
      workspace: input.workspace,
      trigger: input.trigger,
      run_status: 'RUNNING',
      started_worker_id: input.startedWorkerId,
      ender_worker_id: input.enderWorkerId,
      parameters: JSON.stringify(input.parameters),
      created_at: now,
      updated_at: now,
      started_at: now,
    })
    .returning('*')) as WorkflowExecutionRow[];
  return row!;
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

/**
 * Creates (or, when Temporal retries the activity, finds again) the row of one worker run.
 * The unique (execution, worker, branch) key makes a retry reuse its row instead of duplicating it.
 */
export async function beginWorkerExecution(
  db: Database,
  input: {
    execution: WorkflowExecutionRow;
    workerId: string;
    workerName: string;
    workerType: WorkerType;
    parallelIndex: number;
    inputParams: Record<string, unknown>;
  },
): Promise<WorkerExecutionRow> {
  const now = new Date();
  const [row] = (await db('worker_executions')
    .insert({
      id: newId('workerExecution'),
      account_id: input.execution.account_id,
      workflow_execution_id: input.execution.id,
      workflow_id: input.execution.workflow_id,
      workflow_name: input.execution.workflow_name,
      worker_id: input.workerId,
      worker_name: input.workerName,
      worker_type: input.workerType,
      trigger: input.execution.trigger,
      status: 'RUNNING',
      parallel_index: input.parallelIndex,
      input_params: JSON.stringify(input.inputParams),
      created_at: now,
      updated_at: now,
      started_at: now,
    })
    .onConflict(['workflow_execution_id', 'worker_id', 'parallel_index'])
    .merge({
      status: 'RUNNING',
      started_at: now,
      updated_at: now,
      version: db.raw('worker_executions.version + 1'),
    })
    .returning('*')) as WorkerExecutionRow[];
  return row!;
}

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
): Promise<void> {
  const now = new Date();
  await db('worker_executions')
    .where({ id })
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
}

/** Closes a run: status, wall-clock duration, and the sums of its worker executions. */
export async function endWorkflowExecution(
  db: Database,
  id: string,
  outcome: { runStatus: 'SUCCEEDED' | 'FAILED'; enderWorkerExecutionId: string | null },
): Promise<WorkflowExecutionRow> {
  return db.transaction(async (trx) => {
    const execution = (await trx('workflow_executions').where({ id }).forUpdate().first()) as
      WorkflowExecutionRow | undefined;
    if (!execution) throw new NotFound(`Workflow execution ${id} not found.`);
    // A replayed or retried close must not rewrite an ended run.
    if (execution.run_status !== 'RUNNING') return execution;
    const totals = (await trx('worker_executions')
      .where({ workflow_execution_id: id })
      .select(
        trx.raw('coalesce(sum(duration), 0)::float8 as total'),
        trx.raw('coalesce(sum(cpu_time), 0)::float8 as cpu'),
      )
      .first()) as { total: number; cpu: number };
    const now = new Date();
    const [row] = (await trx('workflow_executions')
      .where({ id })
      .update({
        run_status: outcome.runStatus,
        ender_worker_execution_id: outcome.enderWorkerExecutionId,
        ended_at: now,
        updated_at: now,
        duration: (now.getTime() - (execution.started_at ?? execution.created_at).getTime()) / 1000,
        real_execution_time: totals.cpu,
        total_execution_time: totals.total,
        version: trx.raw('version + 1'),
      })
      .returning('*')) as WorkflowExecutionRow[];
    return row!;
  });
}
