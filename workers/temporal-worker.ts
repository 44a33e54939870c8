import { type NativeConnection, Worker } from '@temporalio/worker';
import type { Database } from '../engine/db/database';
import { createWorkerActivities } from './activities/worker-activities';

/** A Temporal Worker polling `taskQueue` with the interpreter workflow and its activities. */
export async function createTemporalWorker(options: {
  db: Database;
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
}): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowsPath: require.resolve('./workflows/interpreter-workflow'),
    activities: createWorkerActivities(options.db),
    // Workers share the host with the sandbox isolates; keep concurrency within 2 cores.
    maxConcurrentActivityTaskExecutions: 8,
  });
}
