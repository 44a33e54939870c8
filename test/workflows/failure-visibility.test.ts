import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { startHarness, type WorkflowHarness, workerId } from './workflow-harness';
import { startedRun } from '../support/temporal-runs';

/**
 * A run that ends FAILED is red in the Temporal UI: its Temporal workflow fails with a
 * non-retryable ApplicationFailure naming the worker, its worker execution and the script's message,
 * once the records are closed; what the API says of the run does not change.
 */
describe('failed runs fail their Temporal workflow', () => {
  let h: WorkflowHarness;

  beforeAll(async () => {
    h = await startHarness({ worker: true });
  }, 120_000);
  afterAll(() => h.close());

  /** What `handle.result()` rejects with, as the Temporal failure the UI shows. */
  async function temporalFailure(executionId: string): Promise<ApplicationFailure> {
    const error = await (await startedRun(h.t.temporal, executionId)).result().then(
      () => null,
      (rejected: unknown) => rejected,
    );
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const cause = (error as WorkflowFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    return cause as ApplicationFailure;
  }

  async function eventTypes(executionId: string): Promise<string[]> {
    const history = await h.t.temporal.workflow.getHandle(executionId).fetchHistory();
    return (history.events ?? []).map((event) =>
      event.activityTaskScheduledEventAttributes
        ? `scheduled ${event.activityTaskScheduledEventAttributes.activityType?.name}`
        : event.activityTaskCompletedEventAttributes
          ? 'completed'
          : event.workflowExecutionFailedEventAttributes
            ? 'workflow failed'
            : event.workflowExecutionCompletedEventAttributes
              ? 'workflow completed'
              : '',
    );
  }

  test('a script that throws: FAILED in the API as before, FAILED in Temporal with the worker, its execution and the message', async () => {
    const [s, b, e] = [workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Breaks midway',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [b] },
        {
          id: b,
          name: 'Load prices',
          type: 'BASIC',
          script: 'function main() { throw new Error("no prices for 20240101"); }',
          next: [e],
        },
        { id: e, name: 'E', type: 'ENDER' },
      ],
    });
    const started = await h.run(workflow.id);
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    // The records say what the interface says, as they did before.
    expect(ended).toMatchObject({
      run_status: 'FAILED',
      status: 'COMPLETED',
      ender_worker_execution_id: null,
      resume: { failure: { worker_id: b, parallel_index: -1 } },
    });
    const steps = await h.call(
      'GET',
      `/v2/workflows/${workflow.id}/worker_executions?workflow_execution_id=${started.id}`,
    );
    expect(
      steps
        .json()
        .worker_executions.map((w: { execution: { worker_id: string; status: string } }) => [
          w.execution.worker_id,
          w.execution.status,
        ]),
    ).toEqual([
      [s, 'COMPLETED'],
      [b, 'ERROR'],
    ]);
    const failedStep = (ended.resume as { failure: { worker_execution_id: string } }).failure
      .worker_execution_id;
    expect(failedStep).toMatch(/^wkex_/);

    const failure = await temporalFailure(started.id);
    expect(failure.type).toBe('WorkerFailed');
    expect(failure.nonRetryable).toBe(true);
    const step = await h.workerExecution(failedStep);
    expect(step).toMatchObject({ worker_id: b, status: 'ERROR' });
    expect(step.error_message).toMatch(/^script: no prices for 20240101/);
    expect(failure.message).toBe(
      `Worker Load prices (${b}; worker execution ${failedStep}) failed: ${step.error_message}`,
    );
    const description = await h.t.temporal.workflow.getHandle(started.id).describe();
    expect(description.status.name).toBe('FAILED');
    expect(description.searchAttributes.PasRunStatus).toEqual(['FAILED']);
    expect(description.memo).toMatchObject({ run_status: 'FAILED' });
    // Records first: finishRun completed before the workflow failed.
    const events = (await eventTypes(started.id)).filter(Boolean);
    expect(events.slice(-3)).toEqual(['scheduled finishRun', 'completed', 'workflow failed']);

    // Its own history replays on the code that wrote it.
    const history = await h.t.temporal.workflow.getHandle(started.id).fetchHistory();
    await Worker.runReplayHistory(
      { workflowsPath: require.resolve('../../workers/workflows/index') },
      history,
    );
  });

  test('a failure in a FORKER branch names the branch', async () => {
    const [s, f, b, j, e] = [workerId(), workerId(), workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'One bad branch',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [f] },
        { id: f, name: 'F', type: 'FORKER', next: [b] },
        {
          id: b,
          name: 'Per item',
          type: 'BASIC',
          script:
            'function main(args) { if (args.inputs === "b") throw new Error("item b broke"); return 1; }',
          next: [j],
        },
        { id: j, name: 'J', type: 'BARRIER', next: [e] },
        { id: e, name: 'E', type: 'ENDER' },
      ],
    });
    const started = await h.run(workflow.id, { items: ['a', 'b', 'c'] });
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    expect(ended).toMatchObject({
      run_status: 'FAILED',
      resume: { failure: { worker_id: b, parallel_index: 1 } },
    });
    const failedStep = (ended.resume as { failure: { worker_execution_id: string } }).failure
      .worker_execution_id;
    const failure = await temporalFailure(started.id);
    const step = await h.workerExecution(failedStep);
    expect(step.error_message).toMatch(/^script: item b broke/);
    expect(failure.message).toBe(
      `Worker Per item (${b}, branch 1; worker execution ${failedStep}) failed: ${step.error_message}`,
    );
    expect((await h.t.temporal.workflow.getHandle(started.id).describe()).status.name).toBe('FAILED');
  });

  test('a run that succeeds still completes in Temporal', async () => {
    const [s, e] = [workerId(), workerId()];
    const workflow = await h.store({
      name: 'Fine',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [e] },
        { id: e, name: 'E', type: 'ENDER', script: 'function main() { return 1; }' },
      ],
    });
    const started = await h.run(workflow.id);
    const handle = await startedRun(h.t.temporal, started.id);
    await expect(handle.result()).resolves.toMatchObject({ runStatus: 'SUCCEEDED' });
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  });
});
