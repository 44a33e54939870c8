import type { Client } from '@temporalio/client';
import { type NativeConnection, Worker } from '@temporalio/worker';
import type { SimulationBackend } from '../calc';
import type { Database } from '../engine/platform/database';
import { temporalWorkflowRunner } from '../engine/workflows/temporal-workflow-runner';
import type { SandboxLimits } from '../plugins/sandbox/script-sandbox';
import { createTriggerActivities } from './activities/trigger-activities';
import { createWorkerActivities } from './activities/worker-activities';
import { temporalPlugins } from '../engine/platform/tracing';
import type { OutboundSettings } from '../engine/integrations/outbound-calls';

/**
 * A Temporal Worker polling `taskQueue` with the interpreter and scheduled-launcher workflows
 * (workflows/index.ts) and their activities.
 */
export async function createTemporalWorker(options: {
  db: Database;
  connection: NativeConnection;
  /**
   * A client of the same namespace: scheduled launches record and start runs through it. Without
   * one (a worker that only runs interpreter runs) a scheduled launch fails, saying why.
   */
  client?: Client;
  namespace: string;
  taskQueue: string;
  /** The service's base URL, for the absolute addresses in reports that scripts read or write. */
  publicUrl: string;
  sandboxLimits?: Partial<SandboxLimits>;
  /** Where scripts' calculations simulate; the caller owns it (and closes it after the worker). */
  simulation?: SimulationBackend;
  /** Where the Python templates' virtualenvs live. */
  pythonEnvironments?: string;
  /** Scripts' outbound calls and secrets: master keys and egress policy (none: no key, public only). */
  outbound?: OutboundSettings;
}): Promise<Worker> {
  const runner = options.client ? temporalWorkflowRunner(options.client, options.taskQueue) : null;
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowsPath: require.resolve('./workflows/index'),
    activities: {
      ...createWorkerActivities(options.db, {
        publicUrl: options.publicUrl,
        sandboxLimits: options.sandboxLimits,
        simulation: options.simulation,
        pythonEnvironments: options.pythonEnvironments,
        workflows: runner,
        outbound: options.outbound,
      }),
      ...createTriggerActivities(options.db, runner),
    },
    // Temporal's OpenTelemetry interceptors while tracing is on (engine/platform/tracing.ts).
    plugins: temporalPlugins(),
    // Workers share the host with the sandbox isolates; keep concurrency within 2 cores.
    maxConcurrentActivityTaskExecutions: 8,
  });
}
