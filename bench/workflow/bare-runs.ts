/**
 * The workflow bench's baselines: a bare Temporal workflow (bench/workflow/bare-workflow.ts) of three
 * local or three regular no-op activities, started with the client or eagerly in its worker's process,
 * and awaited with handle.result().
 */
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import type { bareLocalWorkflow, bareWorkflow } from './bare-workflow';
import type { WorkerHost } from './worker-host';

export interface BareSample {
  startedMs: number;
  resultMs: number;
  /** The Temporal workflow's id (the run's `wfex_…` id for the service). */
  workflowId?: string;
  /** When the bare local-activity workflow's first activity ran (epoch ms). */
  firstStepAt?: number;
  /** Whether Temporal started it eagerly (the eager bare workflow). */
  eagerly?: boolean;
}

export type BareRun = () => Promise<BareSample>;

/** Starts a bare workflow (local or regular activities) and awaits its result. */
export function bareRunner(
  client: Client,
  bareTaskQueue: string,
  suffix: string,
  kind: 'bareWorkflow' | 'bareLocalWorkflow',
): BareRun {
  let bareCount = 0;
  return async () => {
    const t0 = performance.now();
    const handle = await client.workflow.start<typeof bareWorkflow | typeof bareLocalWorkflow>(kind, {
      taskQueue: bareTaskQueue,
      workflowId: `bench-${kind}-${suffix}-${(bareCount += 1)}`,
    });
    const startedMs = performance.now() - t0;
    const result: unknown = await handle.result();
    const resultMs = performance.now() - t0;
    if (kind === 'bareWorkflow' && result !== 3)
      throw new Error(`the bare workflow returned ${String(result)}`);
    if (kind === 'bareLocalWorkflow') {
      if (!Array.isArray(result) || result.length !== 3) throw new Error('the bare workflow ran no 3 steps');
      return { startedMs, resultMs, workflowId: handle.workflowId, firstStepAt: result[0] as number };
    }
    return { startedMs, resultMs };
  };
}

/**
 * The bare local-activity workflow started eagerly in its worker's process (asked by this process
 * over IPC, as our API hands a run to a worker through PostgreSQL), awaited from here.
 */
export function eagerBareRunner(host: WorkerHost, client: Client, suffix: string): BareRun {
  let count = 0;
  return async () => {
    const workflowId = `bench-eager-${suffix}-${(count += 1)}`;
    const t0 = performance.now();
    const eagerly = await host.startEagerBare(workflowId);
    const startedMs = performance.now() - t0;
    const result: unknown = await client.workflow.getHandle(workflowId).result();
    const resultMs = performance.now() - t0;
    if (!Array.isArray(result) || result.length !== 3) throw new Error('the bare workflow ran no 3 steps');
    return { startedMs, resultMs, workflowId, firstStepAt: result[0] as number, eagerly };
  };
}
