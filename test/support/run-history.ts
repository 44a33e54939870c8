import type { Database } from '../../engine/platform/database';
import { newId, randomAlphanumeric } from '../../engine/platform/ids';

const DAY_MS = 86_400_000;

export const daysAgo = (days: number, now = Date.now()) => new Date(now - days * DAY_MS);

export interface SeededRun {
  id: string;
  stepIds: string[];
}

/**
 * A run as its records stand once it ran: the execution, `steps` worker executions and `calls` SDK
 * journal rows per step, written straight to the tables (the runs' own code paths are tested
 * elsewhere; these tests need many, old ones). `endedDaysAgo` null: still RUNNING.
 */
export async function seedRun(
  db: Database,
  accountId: string,
  options: {
    status: 'SUCCEEDED' | 'FAILED' | 'RUNNING';
    endedDaysAgo: number | null;
    startedDaysAgo?: number;
    retryOf?: string;
    steps?: number;
    calls?: number;
    stepStatus?: 'COMPLETED' | 'ERROR' | 'RUNNING';
  },
): Promise<SeededRun> {
  const id = newId('workflowExecution');
  const started = daysAgo(options.startedDaysAgo ?? options.endedDaysAgo ?? 0);
  const ended = options.endedDaysAgo === null ? null : daysAgo(options.endedDaysAgo);
  await db('workflow_executions').insert({
    id,
    account_id: accountId,
    workflow_id: 'wrkf_retention',
    workflow_name: 'Retention',
    workspace: 'main',
    trigger: 'API',
    run_status: options.status,
    created_at: started,
    updated_at: ended ?? started,
    started_at: started,
    ended_at: ended,
    duration: ended ? (ended.getTime() - started.getTime()) / 1000 : null,
    parameters: JSON.stringify({ n: 1 }),
    retry_of: options.retryOf ?? null,
  });
  const stepIds: string[] = [];
  for (let step = 0; step < (options.steps ?? 2); step += 1) {
    const stepId = newId('workerExecution');
    stepIds.push(stepId);
    await db('worker_executions').insert({
      id: stepId,
      account_id: accountId,
      workflow_execution_id: id,
      workflow_id: 'wrkf_retention',
      workflow_name: 'Retention',
      worker_id: `wrkr_step${step}`,
      worker_name: `Step ${step}`,
      worker_type: step === 0 ? 'STARTER' : 'BASIC',
      trigger: 'API',
      status: options.stepStatus ?? (options.status === 'RUNNING' ? 'RUNNING' : 'COMPLETED'),
      parallel_index: -1,
      created_at: started,
      updated_at: ended ?? started,
      started_at: started,
      ended_at: ended,
      result: JSON.stringify({ step }),
      input_params: JSON.stringify({}),
      logs: JSON.stringify([{ level: 'info', message: `step ${step}` }]),
    });
    for (let seq = 1; seq <= (options.calls ?? 1); seq += 1) {
      await db('sdk_calls').insert({
        worker_execution_id: stepId,
        seq,
        name: 'getPortfolio',
        args_sha256: 'ab'.repeat(32),
        // `json`: kept as written, key order and spacing included.
        result: `{"b": 1, "a": [${seq}]}`,
      });
    }
  }
  return { id, stepIds };
}

/** An integration entity, for webhook payloads to belong to. */
export async function seedIntegration(db: Database, accountId: string): Promise<string> {
  const id = newId('intg_');
  await db('entities').insert({
    account_id: accountId,
    kind: 'integration',
    id,
    workspace: 'main',
    name: `Hook ${id}`,
    body: JSON.stringify({ type: 'WEBHOOK' }),
    created_at: new Date(),
    updated_at: new Date(),
  });
  return id;
}

export async function seedPayload(
  db: Database,
  accountId: string,
  integrationId: string,
  receivedDaysAgo: number,
): Promise<string> {
  const id = 'whpl_' + randomAlphanumeric(25);
  const body = '{ "z": 1,  "a": "kept as sent" }';
  await db('webhook_payloads').insert({
    id,
    account_id: accountId,
    integration_id: integrationId,
    body,
    size: Buffer.byteLength(body),
    received_at: daysAgo(receivedDaysAgo),
  });
  return id;
}

/** Row counts of the run history tables. */
export async function historyCounts(db: Database): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of ['workflow_executions', 'worker_executions', 'sdk_calls', 'webhook_payloads']) {
    const [row] = (await db(table).count({ n: '*' })) as Array<{ n: string | number }>;
    counts[table] = Number(row!.n);
  }
  return counts;
}
