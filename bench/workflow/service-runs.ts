/**
 * The workflow bench's service runs: the three-worker workflow stored through the API, run with
 * POST /run and timed to Temporal's completion, to the client's poll or to a GET holding
 * `wait_seconds`; then the DB's times of each run and where its time went.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { Database } from '../../engine/platform/database';
import { newId } from '../../engine/platform/ids';
import type { BareSample } from './bare-runs';
import type { Api } from './start-services';

const RUN_TIMEOUT_MS = 60_000;

/** One service run as the client saw it; the DB times are filled in afterwards. */
export interface ServiceSample {
  executionId: string;
  /** Date.now() when the request left: the DB's `ended_at` are wall-clock times of the same host. */
  wallStart: number;
  acceptedMs: number;
  observedMs: number;
  polls: number;
  enderDoneMs: number;
  runClosedMs: number;
}

export type ServiceRun = (n: number, wait?: boolean) => Promise<ServiceSample>;
/** A service run timed like a bare workflow, to `handle.result()`. */
export type TemporalRun = (n: number) => Promise<BareSample>;

/** Stores the three-worker workflow (STARTER → BASIC → ENDER) every service run runs; its id. */
export async function storeBenchWorkflow(api: Api): Promise<string> {
  const [s, b, e] = [newId('worker'), newId('worker'), newId('worker')];
  const stored = await api('POST', '/workflows', {
    name: 'Bench: three workers',
    workers: [
      {
        id: s,
        name: 'Start',
        type: 'STARTER',
        script: 'function main(args) { return { n: (args.script_inputs.n ?? 0) + 1 }; }',
        next: [b],
      },
      {
        id: b,
        name: 'Double',
        type: 'BASIC',
        script: 'function main(args) { return { n: args.inputs.n * 2 }; }',
        next: [e],
      },
      {
        id: e,
        name: 'End',
        type: 'ENDER',
        script: 'function main(args) { return { n: args.inputs.n + 1, done: true }; }',
      },
    ],
  });
  if (stored.status !== 200)
    throw new Error(`storing the workflow answered ${stored.status}: ${stored.body}`);
  return (JSON.parse(stored.body) as { workflow: { id: string } }).workflow.id;
}

/**
 * POST /run, then `handle.result()` on the run's own Temporal workflow (its id is the run's
 * `wfex_…` id): the service's clock stopped where the bare one stops, at Temporal's completion.
 */
export function serviceTemporalRunner(api: Api, client: Client, workflowId: string): TemporalRun {
  return async (n) => {
    const t0 = performance.now();
    const run = await api('POST', `/workflows/${workflowId}/run`, { parameters: { n } });
    const startedMs = performance.now() - t0;
    if (run.status !== 202) throw new Error(`run answered ${run.status}: ${run.body}`);
    const executionId = (JSON.parse(run.body) as { workflow_execution: { id: string } }).workflow_execution
      .id;
    // The 202 comes once the run is durable, and Temporal's start goes on behind it: a not-found
    // right after it is that moment, so ask again at once rather than count it a failure. The clock
    // keeps running.
    for (;;) {
      try {
        await client.workflow.getHandle(executionId).result();
        break;
      } catch (error) {
        if ((error as Error).name !== 'WorkflowNotFoundError') throw error;
        await sleep(1);
      }
    }
    return { startedMs, resultMs: performance.now() - t0, workflowId: executionId };
  };
}

/** POST /run, then poll every pollMs until the run leaves RUNNING; it must be SUCCEEDED. */
export function serviceRunner(api: Api, workflowId: string, pollMs: number): ServiceRun {
  return async (n, wait = false) => {
    const wallStart = Date.now();
    const t0 = performance.now();
    const run = await api('POST', `/workflows/${workflowId}/run`, { parameters: { n } });
    const acceptedMs = performance.now() - t0;
    if (run.status !== 202) throw new Error(`run answered ${run.status}: ${run.body}`);
    const executionId = (JSON.parse(run.body) as { workflow_execution: { id: string } }).workflow_execution
      .id;
    let polls = 0;
    for (;;) {
      // Polling: a GET every pollMs. Waiting: GETs with wait_seconds, each held until the run ends.
      if (!wait) await sleep(pollMs);
      polls += 1;
      const poll = await api(
        'GET',
        `/workflows/${workflowId}/workflow_executions?workflow_execution_id=${executionId}` +
          (wait ? '&wait_seconds=30' : ''),
      );
      if (poll.status !== 200) throw new Error(`poll answered ${poll.status}: ${poll.body}`);
      const status = (JSON.parse(poll.body) as { workflow_execution: { run_status: string } })
        .workflow_execution.run_status;
      if (status === 'RUNNING') {
        if (performance.now() - t0 > RUN_TIMEOUT_MS) throw new Error(`run ${executionId} is still RUNNING`);
        continue;
      }
      if (status !== 'SUCCEEDED') throw new Error(`run ${executionId} ended ${status}`);
      const observedMs = performance.now() - t0;
      return { executionId, wallStart, acceptedMs, observedMs, polls, enderDoneMs: NaN, runClosedMs: NaN };
    }
  };
}

/** The ENDER's and the run's `ended_at`, relative to when each request left. */
export async function withDbTimes(db: Database, samples: ServiceSample[]): Promise<ServiceSample[]> {
  const rows = (await db('workflow_executions as we')
    .join('worker_executions as wk', 'wk.id', 'we.ender_worker_execution_id')
    .whereIn(
      'we.id',
      samples.map((sample) => sample.executionId),
    )
    .select('we.id', 'we.ended_at as run_ended_at', 'wk.ended_at as ender_ended_at')) as Array<{
    id: string;
    run_ended_at: Date;
    ender_ended_at: Date;
  }>;
  const byId = new Map(rows.map((row) => [row.id, row]));
  return samples.map((sample) => {
    const row = byId.get(sample.executionId);
    if (!row) throw new Error(`run ${sample.executionId} has no ENDER execution`);
    return {
      ...sample,
      enderDoneMs: row.ender_ended_at.getTime() - sample.wallStart,
      runClosedMs: row.run_ended_at.getTime() - sample.wallStart,
    };
  });
}

/** Where the runs' time went, from the worker executions' `started_at` and `ended_at`. */
export async function breakdown(db: Database, samples: ServiceSample[]): Promise<Map<string, number[]>> {
  const rows = (await db('worker_executions')
    .whereIn(
      'workflow_execution_id',
      samples.map((sample) => sample.executionId),
    )
    .select('workflow_execution_id', 'worker_type', 'started_at', 'ended_at')) as Array<{
    workflow_execution_id: string;
    worker_type: string;
    started_at: Date;
    ended_at: Date;
  }>;
  const segments = new Map<string, number[]>();
  const add = (label: string, value: number) => segments.set(label, [...(segments.get(label) ?? []), value]);
  for (const sample of samples) {
    const at = (type: string, field: 'started_at' | 'ended_at') => {
      const found = rows.find(
        (row) => row.workflow_execution_id === sample.executionId && row.worker_type === type,
      );
      if (!found) throw new Error(`run ${sample.executionId} has no ${type} execution`);
      return found[field].getTime() - sample.wallStart;
    };
    add('request → 202 answered (run recorded; Temporal start behind the reply)', sample.acceptedMs);
    add('request → STARTER started_at', at('STARTER', 'started_at'));
    add('STARTER started → ended (script, DB)', at('STARTER', 'ended_at') - at('STARTER', 'started_at'));
    add(
      'STARTER ended → BASIC started (Temporal hop)',
      at('BASIC', 'started_at') - at('STARTER', 'ended_at'),
    );
    add('BASIC started → ended (script, DB)', at('BASIC', 'ended_at') - at('BASIC', 'started_at'));
    add('BASIC ended → ENDER started (Temporal hop)', at('ENDER', 'started_at') - at('BASIC', 'ended_at'));
    add('ENDER started → ended (script, DB)', at('ENDER', 'ended_at') - at('ENDER', 'started_at'));
    add('ENDER ended → run ended_at (finishRun activity)', sample.runClosedMs - at('ENDER', 'ended_at'));
    add('run ended_at → SUCCEEDED seen (polling)', sample.observedMs - sample.runClosedMs);
  }
  return segments;
}
