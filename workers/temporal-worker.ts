import { type NativeConnection, Worker } from '@temporalio/worker';
import type { Database } from '../engine/db/database';
import type { SandboxLimits } from '../plugins/sandbox/script-sandbox';
import { createWorkerActivities } from './activities/worker-activities';

/** A Temporal Worker polling `taskQueue` with the interpreter workflow and its activities. */
export async function createTemporalWorker(options: {
  db: Database;
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** The service's base URL, for the absolute addresses in reports that scripts read or write. */
  publicUrl: string;
  sandboxLimits?: Partial<SandboxLimits>;
}): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowsPath: require.resolve('./workflows/interpreter-workflow'),
    activities: createWorkerActivities(options.db, {
      publicUrl: options.publicUrl,
      sandboxLimits: options.sandboxLimits,
    }),
    // Workers share the host with the sandbox isolates; keep concurrency within 2 cores.
    maxConcurrentActivityTaskExecutions: 8,
  });
}
