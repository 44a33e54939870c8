import { Worker } from '@temporalio/worker';
import { LOCAL_STEP_MAX_SECONDS } from '../../engine/workflows/local-steps';
import { startHarness, stepsInHistory, type WorkflowHarness, workerId } from './workflow-harness';
import { startedRun } from '../support/temporal-runs';

/**
 * Short steps run as Temporal local activities, inside the workflow task: inline scripts, workers
 * without a script, and templates whose timeout_seconds is at most LOCAL_STEP_MAX_SECONDS. Longer
 * templates (or ones with the process's limit) stay regular activities with heartbeats.
 */
describe('short steps as local activities', () => {
  let h: WorkflowHarness;

  beforeAll(async () => {
    h = await startHarness({ worker: true });
  }, 120_000);
  afterAll(() => h.close());

  async function template(name: string, timeoutSeconds: number | null): Promise<string> {
    const res = await h.call('POST', '/v2/worker_templates', {
      name,
      script: 'function main(args) { return { n: (args.inputs && args.inputs.n || 0) + 1 }; }',
      ...(timeoutSeconds === null ? {} : { timeout_seconds: timeoutSeconds }),
    });
    expect(res.statusCode).toBe(200);
    return res.json().worker_template.id;
  }

  async function historyOf(executionId: string) {
    const handle = await startedRun(h.t.temporal, executionId);
    await handle.result();
    return handle.fetchHistory();
  }

  const workflowTasks = (history: Awaited<ReturnType<typeof historyOf>>) =>
    (history.events ?? []).filter((event) => event.workflowTaskCompletedEventAttributes).length;

  test('consecutive inline steps run in one workflow task, with no activity task round trip', async () => {
    const [s, a, b, e] = [workerId(), workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Inline chain',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [a] },
        {
          id: a,
          name: 'A',
          type: 'BASIC',
          script: 'function main(x) { return { n: x.inputs.n + 1 }; }',
          next: [b],
        },
        {
          id: b,
          name: 'B',
          type: 'BASIC',
          script: 'function main(x) { return { n: x.inputs.n * 2 }; }',
          next: [e],
        },
        { id: e, name: 'E', type: 'ENDER', script: 'function main(x) { return x.inputs; }' },
      ],
    });
    const started = await h.run(workflow.id, { n: 4 });
    const history = await historyOf(started.id);
    expect(stepsInHistory(history)).toEqual([
      { kind: 'local', step: `${s}#-1`, type: 'runWorker' },
      { kind: 'local', step: `${a}#-1`, type: 'runWorker' },
      { kind: 'local', step: `${b}#-1`, type: 'runWorker' },
      { kind: 'local', step: `${e}#-1`, type: 'runWorker' },
    ]);
    // Four steps, one workflow task: no Temporal round trip between them.
    expect(workflowTasks(history)).toBe(1);
    // Issue 33: a new run is interpreterWorkflowV2 and records no patch marker (nor the
    // TemporalChangeVersion upsert each one brings): its only markers are its four steps.
    const events = history.events ?? [];
    expect(events[0]!.workflowExecutionStartedEventAttributes!.workflowType!.name).toBe(
      'interpreterWorkflowV2',
    );
    const markers = events.flatMap((event) =>
      event.markerRecordedEventAttributes ? [event.markerRecordedEventAttributes.markerName] : [],
    );
    expect(markers).toEqual([
      'core_local_activity',
      'core_local_activity',
      'core_local_activity',
      'core_local_activity',
    ]);
    expect(events.filter((event) => event.upsertWorkflowSearchAttributesEventAttributes)).toHaveLength(1);
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    expect(ended.run_status).toBe('SUCCEEDED');
    expect((await h.workerExecution(ended.ender_worker_execution_id!)).result).toEqual({ n: 10 });
    // And the history replays on the code.
    await Worker.runReplayHistory(
      { workflowsPath: require.resolve('../../workers/workflows/index') },
      history,
    );
  });

  test(`templates: timeout_seconds up to ${LOCAL_STEP_MAX_SECONDS} run locally; longer, or the process's limit, as activities`, async () => {
    const short = await template('Five seconds', 5);
    const edge = await template('At the threshold', LOCAL_STEP_MAX_SECONDS);
    const long = await template('A minute', 60);
    const unset = await template('Process limit', null);
    const [s, t1, t2, t3, t4, e] = [workerId(), workerId(), workerId(), workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Mixed',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [t1] },
        { id: t1, name: 'T1', type: 'BASIC', template_id: short, next: [t2] },
        { id: t2, name: 'T2', type: 'BASIC', template_id: edge, next: [t3] },
        { id: t3, name: 'T3', type: 'BASIC', template_id: long, next: [t4] },
        { id: t4, name: 'T4', type: 'BASIC', template_id: unset, next: [e] },
        { id: e, name: 'E', type: 'ENDER' },
      ],
    });
    const started = await h.run(workflow.id, { n: 0 });
    const history = await historyOf(started.id);
    expect(stepsInHistory(history)).toEqual([
      { kind: 'local', step: `${s}#-1`, type: 'runWorker' },
      { kind: 'local', step: `${t1}#-1`, type: 'runWorker' },
      { kind: 'local', step: `${t2}#-1`, type: 'runWorker' },
      { kind: 'activity', step: `${t3}#-1`, type: 'runWorker' },
      { kind: 'activity', step: `${t4}#-1`, type: 'runWorker' },
      { kind: 'local', step: `${e}#-1`, type: 'runWorker' },
    ]);
    // A regular step is watched by heartbeats.
    const scheduled = (history.events ?? [])
      .map((event) => event.activityTaskScheduledEventAttributes)
      .filter((attributes) => attributes?.activityId === `${t3}#-1`);
    expect(Number(scheduled[0]!.heartbeatTimeout!.seconds)).toBe(20);
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    expect(ended.run_status).toBe('SUCCEEDED');
    expect((await h.workerExecution(ended.ender_worker_execution_id!)).result).toEqual({ n: 4 });
  });

  test('a failing local step fails the run as a failing activity does', async () => {
    const [s, b, e] = [workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Local failure',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [b] },
        {
          id: b,
          name: 'B',
          type: 'BASIC',
          script: 'function main() { throw new Error("nope"); }',
          next: [e],
        },
        { id: e, name: 'E', type: 'ENDER' },
      ],
    });
    const started = await h.run(workflow.id);
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    expect(ended).toMatchObject({
      run_status: 'FAILED',
      status: 'COMPLETED',
      resume: { failure: { worker_id: b } },
    });
    const handle = await startedRun(h.t.temporal, started.id);
    await expect(handle.result()).rejects.toThrow();
    expect((await handle.describe()).status.name).toBe('FAILED');
  });
});
