import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  type LocalActivityOptions,
  patched,
  proxyActivities,
  proxyLocalActivities,
  upsertMemo,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { RunFailure } from '../../engine/workflows/execution-records';
import type {
  FinishRunInput,
  InputRef,
  InterpreterInput,
  ParallelInfo,
  RunWorkerOutput,
} from '../../engine/workflows/run-input';
import type { WorkerNode } from '../../engine/workflows/workflow-definition';
import type { WorkerActivities } from '../activities/worker-activities';

// Infrastructure failures (database, a lost worker) are retried with backoff; a script that
// fails is not: the activity reports it as a result and the run ends FAILED.
const ACTIVITY_OPTIONS = {
  startToCloseTimeout: '15 minutes',
  // How long a dead worker process goes unnoticed before its step is retried elsewhere (the
  // SDK-call journal makes the rerun safe). runWorker beats every 5 s and scripts run off the event
  // loop (isolated-vm), so 20 s leaves room for a slow database round trip without false alarms.
  heartbeatTimeout: '20 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 20,
  },
} as const;

/**
 * Short steps (input.localSteps) run as local activities, in the workflow task: no task round trip
 * between consecutive ones. No heartbeat: a lost worker shows as the workflow task timing out, and
 * the task, with the step, runs again on another worker (the SDK-call journal makes that safe).
 * Backoffs longer than localRetryThreshold wait on a timer rather than inside the task.
 */
const LOCAL_STEP_OPTIONS: LocalActivityOptions = {
  startToCloseTimeout: '2 minutes',
  localRetryThreshold: '10 seconds',
  retry: ACTIVITY_OPTIONS.retry,
};

// Closing the records is what makes a run leave RUNNING: retried until the database answers
// (no maximumAttempts: unlimited).
const { finishRun } = proxyActivities<WorkerActivities>({
  startToCloseTimeout: ACTIVITY_OPTIONS.startToCloseTimeout,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

// A search attribute key is plain data ({name, type}); written out so this file imports only the SDK.
const RUN_STATUS = { name: 'PasRunStatus', type: 'KEYWORD' } as const;
const NOT_FORKED: ParallelInfo = { index: -1, length: -1 };
/** Patch marker: from this version on, the main path's ENDER step closes the run's records. */
const ENDER_CLOSES_RUN = 'ender-closes-run';
/**
 * Patch marker: from this version on, a run that ends FAILED fails its Temporal workflow too (FAILED,
 * red, in the Temporal UI), once its records are closed. Runs written by older code
 * completed instead, and replay doing so.
 */
const FAILED_RUN_FAILS = 'failed-run-fails-workflow';
/** Patch marker: from this version on, the steps named in input.localSteps run as local activities. */
const LOCAL_STEPS = 'local-steps';
/** `ApplicationFailure` types of a failed run: a worker's own failure, or a stop outside any worker. */
const WORKER_FAILED = 'WorkerFailed';
const RUN_FAILED = 'RunFailed';

/** A worker that failed for good; it ends the run wherever it happens, branches included. */
class WorkerFailed extends Error {
  constructor(readonly failure: RunFailure) {
    super(failure.message);
  }
}

/**
 * Runs any stored workflow definition passed as input (see engine/workflows/workflow-definition.ts):
 * one activity per worker execution, `<worker>#<parallel_index>` (a local activity for a short step,
 * input.localSteps), following the edges from the
 * STARTER to an ENDER. A FORKER's branches run in parallel and meet at its BARRIER; a CONDITIONAL
 * picks one way on. The run ends FAILED as soon as a worker fails for good (the other branches are
 * cancelled), and it always ends: the spec lets a failed run stay RUNNING, we never do. A FAILED run
 * closes its records first, then fails the Temporal workflow with an ApplicationFailure.
 * Deterministic: no I/O, no clock, no randomness; inputs and results travel by id.
 */
export async function interpreterWorkflow(input: InterpreterInput): Promise<FinishRunInput> {
  return interpret(input, patched);
}

/**
 * The interpreter every new run starts (INTERPRETER_WORKFLOW): `interpreterWorkflow`'s code with
 * every patch it carries taken, so a run records no patch markers. Each marker is a command and a
 * `TemporalChangeVersion` search-attribute upsert in the run's first workflow task, which cost
 * about 10 ms per run (bench/workflow.bench.ts). Runs started by older code keep their own type,
 * `interpreterWorkflow`, whose patches still choose what their histories did when they replay.
 */
export async function interpreterWorkflowV2(input: InterpreterInput): Promise<FinishRunInput> {
  return interpret(input, () => true);
}

/** The interpreter; `patched` answers whether the run takes a change made since runs began. */
async function interpret(
  input: InterpreterInput,
  patched: (patchId: string) => boolean,
): Promise<FinishRunInput> {
  const byId = new Map(input.workers.map((worker) => [worker.id, worker]));
  const node = (id: string): WorkerNode => byId.get(id)!;
  const localSteps = new Set(input.localSteps ?? []);

  async function runWorker(
    worker: WorkerNode,
    parallel: ParallelInfo,
    inputs: InputRef,
  ): Promise<RunWorkerOutput> {
    const step = `${worker.id}#${parallel.index}`;
    // Behind a patch marker too: a run started with localSteps that an older worker (a fleet being
    // upgraded) began with regular activities goes on with them when a newer worker replays it.
    const local = localSteps.has(worker.id) && patched(LOCAL_STEPS);
    const { runWorker: runWorkerActivity } = local
      ? proxyLocalActivities<WorkerActivities>({ ...LOCAL_STEP_OPTIONS, summary: step })
      : proxyActivities<WorkerActivities>({ ...ACTIVITY_OPTIONS, activityId: step });
    // The main path's ENDER closes the run itself (one round trip fewer than a separate finishRun).
    // Behind a patch marker, so runs whose history was written by older code still replay.
    const closesRun = worker.type === 'ENDER' && parallel.index < 0 && patched(ENDER_CLOSES_RUN);
    let output: RunWorkerOutput;
    try {
      output = await runWorkerActivity({
        executionId: input.executionId,
        worker,
        parallel,
        inputs,
        ...(closesRun ? { closesRun } : {}),
      });
    } catch (error) {
      // Retries exhausted (or a non-retryable failure): the step failed for good.
      if (error instanceof ActivityFailure && !isCancellation(error)) {
        throw new WorkerFailed({
          workerId: worker.id,
          parallelIndex: parallel.index,
          workerExecutionId: null,
          message: `The worker could not be run: ${error.cause?.message ?? error.message}`,
        });
      }
      throw error;
    }
    if (output.status === 'ERROR') {
      throw new WorkerFailed({
        workerId: worker.id,
        parallelIndex: parallel.index,
        workerExecutionId: output.workerExecutionId,
        message: output.errorMessage ?? 'The worker failed.',
      });
    }
    return output;
  }

  /**
   * Walks from `startId` until an ENDER (returning its worker execution id) or, inside a branch,
   * until the BARRIER (returning what the branch hands to it).
   */
  async function walk(
    startId: string,
    parallel: ParallelInfo,
    start: InputRef,
  ): Promise<{ ender: string; closed?: 'SUCCEEDED' | 'FAILED' } | { branchOutput: InputRef }> {
    let worker = node(startId);
    let inputs = start;
    for (;;) {
      if (worker.type === 'BARRIER' && parallel.index >= 0) return { branchOutput: inputs };
      const output = await runWorker(worker, parallel, inputs);
      const produced: InputRef = {
        kind: 'result',
        workerExecutionId: output.workerExecutionId,
        workerId: worker.id,
        item: null,
      };
      switch (worker.type) {
        case 'ENDER':
          return output.runStatus
            ? { ender: output.workerExecutionId, closed: output.runStatus }
            : { ender: output.workerExecutionId };
        case 'CONDITIONAL':
          // The CONDITIONAL only routes: the worker it picks receives the CONDITIONAL's own input.
          worker = node((output.condition ? worker.next_true! : worker.next_false!)[0]!);
          break;
        case 'FORKER': {
          const branches = await fork(worker, output);
          worker = node(input.plan.barrierOf[worker.id]!);
          inputs = { kind: 'join', parts: branches };
          break;
        }
        default:
          inputs = produced;
          worker = node(worker.next[0]!);
      }
    }
  }

  /** Runs one branch per item of the FORKER's list; the first failure cancels the rest. */
  async function fork(forker: WorkerNode, output: RunWorkerOutput): Promise<InputRef[]> {
    const length = output.branchCount ?? 0;
    const scope = new CancellationScope();
    const branches = scope.run(() =>
      Promise.all(
        Array.from({ length }, async (_, index) => {
          const end = await walk(
            forker.next[0]!,
            { index, length },
            { kind: 'result', workerExecutionId: output.workerExecutionId, workerId: forker.id, item: index },
          );
          if ('ender' in end) throw new Error(`branch ${index} of ${forker.id} reached an ENDER`);
          return end.branchOutput;
        }),
      ),
    );
    try {
      return await branches;
    } catch (error) {
      scope.cancel();
      throw error;
    }
  }

  let outcome: FinishRunInput;
  /** Set when the ENDER's step already closed the run's records. */
  let closed: 'SUCCEEDED' | 'FAILED' | undefined;
  try {
    const end = await walk(input.plan.starterId, NOT_FORKED, { kind: 'none' });
    if (!('ender' in end)) throw new Error('the run left its branches without a BARRIER');
    closed = end.closed;
    outcome = {
      executionId: input.executionId,
      runStatus: 'SUCCEEDED',
      enderWorkerExecutionId: end.ender,
      failure: null,
    };
  } catch (error) {
    const failure: RunFailure =
      error instanceof WorkerFailed
        ? error.failure
        : {
            workerId: null,
            parallelIndex: -1,
            workerExecutionId: null,
            message: isCancellation(error)
              ? 'The run was cancelled in Temporal.'
              : `The run stopped: ${error instanceof Error ? error.message : String(error)}`,
          };
    outcome = { executionId: input.executionId, runStatus: 'FAILED', enderWorkerExecutionId: null, failure };
  }
  // Even a run cancelled from the Temporal UI closes its records (CANCELED is never written). The
  // status the records end with is the one reported (a run closed earlier keeps its own).
  if (closed === undefined) {
    const recorded = await CancellationScope.nonCancellable(() => finishRun(outcome));
    // Older worker code answered nothing: then the outcome is what was recorded.
    if (recorded === 'SUCCEEDED' || recorded === 'FAILED') closed = recorded;
  }
  if (closed !== undefined && closed !== outcome.runStatus) {
    outcome = { ...outcome, runStatus: closed, failure: closed === 'SUCCEEDED' ? null : outcome.failure };
  }
  upsertSearchAttributes([{ key: RUN_STATUS, value: outcome.runStatus }]);
  upsertMemo({ run_status: outcome.runStatus });
  if (outcome.runStatus === 'FAILED' && patched(FAILED_RUN_FAILS)) {
    throw failureOf(outcome, (id) => byId.get(id)?.name ?? id);
  }
  return outcome;
}

/**
 * What the Temporal UI shows for a failed run: the worker, its worker execution and the script's
 * message; `details` holds the run's outcome as the records have it. Non-retryable: a rerun is a
 * new execution (POST .../retry), never Temporal re-running this one.
 */
function failureOf(outcome: FinishRunInput, nameOf: (workerId: string) => string): ApplicationFailure {
  const failure = outcome.failure;
  if (!failure?.workerId) {
    return ApplicationFailure.create({
      type: RUN_FAILED,
      message: failure?.message ?? 'The run failed.',
      nonRetryable: true,
      details: [outcome],
    });
  }
  const branch = failure.parallelIndex >= 0 ? `, branch ${failure.parallelIndex}` : '';
  const where = failure.workerExecutionId
    ? `worker execution ${failure.workerExecutionId}`
    : 'no worker execution recorded';
  return ApplicationFailure.create({
    type: WORKER_FAILED,
    message: `Worker ${nameOf(failure.workerId)} (${failure.workerId}${branch}; ${where}) failed: ${failure.message}`,
    nonRetryable: true,
    details: [outcome],
  });
}
