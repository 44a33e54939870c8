import { RunEndWaiter } from '../../engine/workflows/run-end-waiter';
import { startHarness, type WorkflowHarness, workerId } from './workflow-harness';

/**
 * Waiting for a run to end without polling (extension): GET …/workflow_executions with
 * workflow_execution_id and wait_seconds holds the request until the run leaves RUNNING or the time
 * runs out. A run's end notifies `pas_run_ended` from whichever process closed it.
 */
describe('waiting for a run to end (wait_seconds)', () => {
  let h: WorkflowHarness;

  beforeAll(async () => {
    h = await startHarness({ worker: true });
  }, 120_000);
  afterAll(() => h.close());

  /** A STARTER → BASIC → ENDER workflow whose BASIC spins for `ms` milliseconds. */
  async function slowWorkflow(ms: number) {
    const [s, b, e] = [workerId(), workerId(), workerId()];
    return h.store({
      name: `Takes ${ms} ms`,
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [b] },
        {
          id: b,
          name: 'Slow',
          type: 'BASIC',
          script: `function main(x) { const t = Date.now(); while (Date.now() - t < ${ms}) {} return 1; }`,
          timeout_seconds: 60,
          next: [e],
        },
        { id: e, name: 'E', type: 'ENDER' },
      ],
    });
  }

  const waitFor = (workflowId: string, executionId: string, seconds: string) =>
    h.call(
      'GET',
      `/v2/workflows/${workflowId}/workflow_executions?workflow_execution_id=${executionId}&wait_seconds=${seconds}`,
    );

  test('one request answers the ended run: it is held while the run is RUNNING', async () => {
    const workflow = await slowWorkflow(1500);
    const started = await h.run(workflow.id);
    expect(started.run_status).toBe('RUNNING');
    const res = await waitFor(workflow.id, started.id, '30');
    expect(res.statusCode).toBe(200);
    const execution = res.json().workflow_execution;
    expect(execution).toMatchObject({ id: started.id, run_status: 'SUCCEEDED' });
    // The same answer as a plain read now.
    const plain = await h.call(
      'GET',
      `/v2/workflows/${workflow.id}/workflow_executions?workflow_execution_id=${started.id}`,
    );
    expect(plain.json().workflow_execution).toEqual(execution);
  });

  test('when the time runs out first, the run is answered as it is: RUNNING', async () => {
    const workflow = await slowWorkflow(3000);
    const started = await h.run(workflow.id);
    const res = await waitFor(workflow.id, started.id, '1');
    expect(res.statusCode).toBe(200);
    expect(res.json().workflow_execution).toMatchObject({ id: started.id, run_status: 'RUNNING' });
    await h.pollUntilEnded(workflow.id, started.id);
  });

  test('an ended run, wait_seconds 0 and no wait_seconds answer at once, as before', async () => {
    const workflow = await slowWorkflow(0);
    const started = await h.run(workflow.id);
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    for (const seconds of ['0', '30']) {
      const res = await waitFor(workflow.id, started.id, seconds);
      expect(res.json().workflow_execution).toMatchObject({ run_status: ended.run_status });
    }
  });

  test.each(['31', '-1', '1.5', 'abc', '100'])('wait_seconds=%s is a 400 naming the range', async (value) => {
    const workflow = await slowWorkflow(0);
    const started = await h.run(workflow.id);
    const res = await waitFor(workflow.id, started.id, value);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      code: 400,
      message: 'wait_seconds must be a whole number of seconds from 0 to 30.',
    });
  });

  test('wait_seconds on a list (no workflow_execution_id) is a 400', async () => {
    const workflow = await slowWorkflow(0);
    const res = await h.call('GET', `/v2/workflows/${workflow.id}/workflow_executions?wait_seconds=5`);
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toBe('wait_seconds needs workflow_execution_id.');
  });

  test('another account waiting on the run gets a 404 at once, not the run', async () => {
    const workflow = await slowWorkflow(0);
    const started = await h.run(workflow.id);
    const { createTestAccount } = await import('../support/test-app');
    const other = await createTestAccount(h.db);
    const res = await h.call(
      'GET',
      `/v2/workflows/${workflow.id}/workflow_executions?workflow_execution_id=${started.id}&wait_seconds=30`,
      undefined,
      other,
    );
    expect(res.statusCode).toBe(404);
  });

  test('the notification wakes a waiter: a run leaving RUNNING in another connection notifies its id', async () => {
    const workflow = await slowWorkflow(0);
    const started = await h.run(workflow.id);
    await h.pollUntilEnded(workflow.id, started.id);
    // A RUNNING row of our own (an execution the test closes by hand, as any process may).
    const connection = (h.db.client as { config: { connection: string } }).config.connection;
    const waiter = new RunEndWaiter(connection);
    try {
      for (let i = 0; i < 100 && !waiter.active; i++) await new Promise((r) => setTimeout(r, 20));
      expect(waiter.active).toBe(true);
      await h.db('workflow_executions').where({ id: started.id }).update({ run_status: 'RUNNING' });
      const wait = waiter.subscribe(started.id);
      const other = waiter.subscribe('wfex_0000000000000000000000000');
      await h.db('workflow_executions').where({ id: started.id }).update({ run_status: 'SUCCEEDED' });
      expect(await wait.until(30_000)).toBe(true);
      // Only the run that ended is woken (the other returns at its recheck, unwoken).
      expect(await other.until(10)).toBe(false);
      wait.cancel();
      other.cancel();
    } finally {
      await waiter.close();
    }
    // Closed (the API stopping): a wait ends at once, unwoken, so it cannot hold the shutdown.
    expect(waiter.closing).toBe(true);
    const late = waiter.subscribe(started.id);
    expect(await late.until(30_000)).toBe(false);
    late.cancel();
  });

  test('a request waiting while the app stops answers the run as it is (RUNNING) instead of holding the stop', async () => {
    const { createTestApp } = await import('../support/test-app');
    const workflow = await slowWorkflow(3000);
    const started = await h.run(workflow.id);
    // A second app on the same database, stopped while one of its requests waits.
    const second = await createTestApp(h.db, { taskQueue: h.taskQueue });
    const waiting = second.app.inject({
      method: 'GET',
      url: `/v2/workflows/${workflow.id}/workflow_executions?workflow_execution_id=${started.id}&wait_seconds=30`,
      headers: { authorization: h.account.bearer },
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await second.close();
    const res = await waiting;
    expect(res.statusCode).toBe(200);
    expect(res.json().workflow_execution.run_status).toBe('RUNNING');
    await h.pollUntilEnded(workflow.id, started.id);
  });
});
