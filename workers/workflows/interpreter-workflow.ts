import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { FinishRunInput, InterpreterInput, RunWorkerOutput } from '../../engine/workflows/run-input';
import type { WorkerActivities } from '../activities/worker-activities';

// Infrastructure failures (database, a lost worker) are retried with backoff; a script that
// fails is not: the activity reports it as a result and the run ends FAILED.
const ACTIVITY_OPTIONS = {
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '1 minute',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 20,
  },
} as const;

const { finishRun } = proxyActivities<WorkerActivities>(ACTIVITY_OPTIONS);

const RUN_STATUS = defineSearchAttributeKey('PasRunStatus', SearchAttributeType.KEYWORD);

/**
 * Runs any stored workflow definition passed as input: one activity per worker execution, in the
 * order of the edges from the starter to the ender. Deterministic: no I/O, no clock, no randomness.
 */
export async function interpreterWorkflow(input: InterpreterInput): Promise<FinishRunInput> {
  const byId = new Map(input.workers.map((worker) => [worker.id, worker]));
  let worker = input.workers.find((candidate) => candidate.type === 'STARTER');
  let previous: RunWorkerOutput | null = null;
  let outcome: FinishRunInput = {
    executionId: input.executionId,
    runStatus: 'FAILED',
    enderWorkerExecutionId: null,
  };
  while (worker) {
    // Activity id `<worker>#<parallel_index>` names the step in the Temporal UI.
    const { runWorker } = proxyActivities<WorkerActivities>({
      ...ACTIVITY_OPTIONS,
      activityId: `${worker.id}#-1`,
    });
    const result: RunWorkerOutput = await runWorker({
      executionId: input.executionId,
      worker,
      parallelIndex: -1,
      previousWorkerExecutionId: previous?.workerExecutionId ?? null,
    });
    if (result.status === 'ERROR') break;
    if (worker.type === 'ENDER') {
      outcome = {
        executionId: input.executionId,
        runStatus: 'SUCCEEDED',
        enderWorkerExecutionId: result.workerExecutionId,
      };
      break;
    }
    previous = result;
    const nextId: string | undefined = worker.next?.[0];
    worker = nextId === undefined ? undefined : byId.get(nextId);
  }
  await finishRun(outcome);
  upsertSearchAttributes([{ key: RUN_STATUS, value: outcome.runStatus }]);
  return outcome;
}
