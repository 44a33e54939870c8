import type { Database } from '../../engine/platform/database';
import { endWorkflowExecution } from '../../engine/workflows/execution-records';

/**
 * The rule for runs that were RUNNING when the backup's snapshot was taken: they are marked FAILED,
 * with the reason below, and never resumed or started again by the restore. Their Temporal history
 * is not in the backup, so nothing knows which of their steps' effects (SDK writes, webhooks) were
 * made after the snapshot; starting them again on their own could make those effects twice. The
 * retry route re-runs such a run from where it stopped, copying the steps the backup holds as
 * COMPLETED, when an operator decides it should run. Their outbox rows (runs not yet handed to
 * Temporal) go with them.
 */
export function interruptedRunMessage(snapshotAt: string): string {
  return (
    `Interrupted by a restore: this run was in flight when the backup of ${snapshotAt} was taken, and ` +
    'runs are not resumed from a backup. Retry it (POST …/workflow_executions/:id/retry) to run its ' +
    'unfinished steps again.'
  );
}

/** Settles every RUNNING run of a freshly restored database; answers their ids. */
export async function settleInterruptedRuns(db: Database, snapshotAt: string): Promise<string[]> {
  const ids = (await db('workflow_executions')
    .where({ run_status: 'RUNNING' })
    .orderBy('id')
    .pluck('id')) as string[];
  const message = interruptedRunMessage(snapshotAt);
  for (const id of ids) {
    await endWorkflowExecution(db, id, {
      runStatus: 'FAILED',
      enderWorkerExecutionId: null,
      failure: { workerId: null, parallelIndex: 0, workerExecutionId: null, message },
    });
  }
  if (ids.length > 0) await db('workflow_run_outbox').whereIn('execution_id', ids).delete();
  return ids;
}
