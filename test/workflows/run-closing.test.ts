import { type ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { startHarness, type WorkflowHarness, workerId } from './workflow-harness';
import { startedRun } from '../support/temporal-runs';

/**
 * Who closes a run's records: the main path's ENDER in its own step when it completes (one Temporal
 * round trip fewer), the separate finishRun activity when the run fails. Either way the records,
 * the search attribute and the workflow result agree.
 */
describe('closing a run', () => {
  let h: WorkflowHarness;

  beforeAll(async () => {
    h = await startHarness({ worker: true });
  }, 120_000);
  afterAll(() => h.close());

  /** Activities in history order: a regular one by its type, a local one (a marker) as `local`. */
  async function activityTypes(executionId: string): Promise<string[]> {
    const history = await h.t.temporal.workflow.getHandle(executionId).fetchHistory();
    return (history.events ?? [])
      .map(
        (event) =>
          event.activityTaskScheduledEventAttributes?.activityType?.name ??
          (event.markerRecordedEventAttributes?.markerName === 'core_local_activity' ? 'local' : null),
      )
      .filter((name): name is string => typeof name === 'string');
  }

  test('a run that reaches its ENDER is closed by the ENDER step: no finishRun activity', async () => {
    const [s, b, e] = [workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Closes at the end',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [b] },
        {
          id: b,
          name: 'B',
          type: 'BASIC',
          script: 'function main(a) { return { n: a.inputs.n + 1 }; }',
          next: [e],
        },
        { id: e, name: 'E', type: 'ENDER', script: 'function main(a) { return { n: a.inputs.n * 10 }; }' },
      ],
    });
    const started = await h.run(workflow.id, { n: 4 });
    const result = await (await startedRun(h.t.temporal, started.id)).result();
    expect(result).toMatchObject({ runStatus: 'SUCCEEDED', failure: null });
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    expect(ended).toMatchObject({ run_status: 'SUCCEEDED', status: 'COMPLETED' });
    expect(ended.ender_worker_execution_id).toBe(result.enderWorkerExecutionId);
    expect((await h.workerExecution(ended.ender_worker_execution_id!)).result).toEqual({ n: 50 });
    expect(ended.duration).toEqual(expect.any(Number));
    // Inline scripts and scriptless workers are short steps: local activities.
    expect(await activityTypes(started.id)).toEqual(['local', 'local', 'local']);
    const description = await h.t.temporal.workflow.getHandle(started.id).describe();
    expect(description.searchAttributes.PasRunStatus).toEqual(['SUCCEEDED']);
  });

  test('a failing run is closed by finishRun, and FAILED everywhere', async () => {
    const [s, e] = [workerId(), workerId()];
    const workflow = await h.store({
      name: 'Fails at the end',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [e] },
        { id: e, name: 'E', type: 'ENDER', script: 'function main() { throw new Error("no data"); }' },
      ],
    });
    const started = await h.run(workflow.id, {});
    const failed = await (await startedRun(h.t.temporal, started.id)).result().then(
      () => null,
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(WorkflowFailedError);
    // The Temporal failure carries the outcome the records were closed with.
    const cause = (failed as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.details).toEqual([
      expect.objectContaining({ runStatus: 'FAILED', failure: expect.objectContaining({ workerId: e }) }),
    ]);
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    // The run failed in its Ender, so it names that Ender's execution (the legacy client reads it).
    expect(ended).toMatchObject({
      run_status: 'FAILED',
      status: 'COMPLETED',
      ender_worker_execution_id: expect.stringMatching(/^wkex_/),
    });
    const ender = await h.workerExecution(ended.ender_worker_execution_id!);
    expect(ender).toMatchObject({ worker_id: e, worker_type: 'ENDER', status: 'ERROR' });
    expect(await activityTypes(started.id)).toEqual(['local', 'local', 'finishRun']);
    const description = await h.t.temporal.workflow.getHandle(started.id).describe();
    expect(description.searchAttributes.PasRunStatus).toEqual(['FAILED']);
  });
});
