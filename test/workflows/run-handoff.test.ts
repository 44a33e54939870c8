import { setTimeout as sleep } from 'node:timers/promises';
import { runStartsEager } from '../../engine/platform/metrics';
import { connectionOf, ListenConnection } from '../../engine/platform/listen-connection';
import { dispatchHandedOff } from '../../engine/workflows/run-dispatcher';
import {
  handoffConnection,
  RUN_START_CHANNEL,
  refreshWorkersListen,
} from '../../engine/workflows/run-handoff';
import type { InterpreterInput } from '../../engine/workflows/run-input';
import type { WorkflowRunner } from '../../engine/workflows/workflow-runner';
import { temporalWorkflowRunner } from '../../engine/workflows/temporal-workflow-runner';
import { startHarness, type WorkflowHarness, workerId } from './workflow-harness';

/**
 * Issue 33: a run's start handed to a listening worker, which starts it with Temporal's eager start
 * (engine/workflows/run-handoff.ts). The API's and the worker's runners are watched, so who started
 * a run is seen, not inferred from timing.
 */
const eagerStarts = async () => (await runStartsEager.get()).values[0]?.value ?? 0;

describe('run starts handed to a worker', () => {
  let h: WorkflowHarness;
  const apiStarts: string[] = [];
  const workerStarts: string[] = [];
  const watched =
    (starts: string[]) =>
    (runner: WorkflowRunner): WorkflowRunner => ({
      ...runner,
      async start(input: InterpreterInput) {
        starts.push(input.executionId);
        return runner.start(input);
      },
    });

  beforeAll(async () => {
    h = await startHarness({
      worker: true,
      handoff: true,
      runner: watched(apiStarts),
      handoffRunner: watched(workerStarts),
    });
    const deadline = Date.now() + 10_000;
    while (!h.handoff!.active || !(await refreshWorkersListen(h.db))) {
      if (Date.now() > deadline) throw new Error('the handoff did not start listening');
      await sleep(20);
    }
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  const twoSteps = () => {
    const [s, e] = [workerId(), workerId()];
    return {
      name: 'Two steps',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [e] },
        {
          id: e,
          name: 'E',
          type: 'ENDER',
          script: 'function main(args) { return { n: args.inputs.n + 1 }; }',
        },
      ],
    };
  };

  test('a run goes to the listening worker, which starts it eagerly; the API does not start it', async () => {
    const workflow = await h.store(twoSteps());
    const before = await eagerStarts();
    const started = await h.run(workflow.id, { n: 1 });
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    expect(ended.run_status).toBe('SUCCEEDED');
    expect(workerStarts).toContain(started.id);
    expect(workerStarts.filter((id) => id === started.id)).toHaveLength(1);
    expect(apiStarts).not.toContain(started.id);
    // Temporal answered the start with the run's first workflow task (eagerlyStarted).
    expect(await eagerStarts()).toBe(before + 1);
    expect(await h.db('workflow_run_outbox').where({ execution_id: started.id })).toEqual([]);
    // Past the hold, the API's fallback finds the run started and does nothing.
    await sleep(400);
    expect(apiStarts).not.toContain(started.id);
  });

  test('a retry of a failed run is handed off too', async () => {
    const [s, e] = [workerId(), workerId()];
    const workflow = await h.store({
      name: 'Fails once',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [e] },
        {
          id: e,
          name: 'E',
          type: 'ENDER',
          script: 'function main(args) { if (args.inputs.fail) throw new Error("no"); return 1; }',
        },
      ],
    });
    const failed = await h.run(workflow.id, { fail: true });
    expect((await h.pollUntilEnded(workflow.id, failed.id)).run_status).toBe('FAILED');
    const res = await h.call('POST', `/v2/workflows/${workflow.id}/workflow_executions/${failed.id}/retry`);
    expect(res.statusCode).toBe(202);
    const retry = res.json().workflow_execution;
    await h.pollUntilEnded(workflow.id, retry.id);
    expect(workerStarts).toContain(retry.id);
    expect(apiStarts).not.toContain(retry.id);
  });

  test('a handed-off row no worker claims is started by the API once its hold is over', async () => {
    // A second listener that hears every notice and never claims: the probe sees workers, and the
    // real one is stopped for this test (a notice lost, a worker gone after the probe's read).
    const silent = new ListenConnection(handoffConnection(connectionOf(h.db)), RUN_START_CHANNEL, {
      notified: () => undefined,
      up: () => undefined,
      down: () => undefined,
    });
    try {
      const deadline = Date.now() + 10_000;
      while (!silent.active) {
        if (Date.now() > deadline) throw new Error('the silent listener did not start');
        await sleep(20);
      }
      await h.handoff!.close();
      expect(await refreshWorkersListen(h.db)).toBe(true);
      const workflow = await h.store(twoSteps());

      // Unclaimed: once its hold is over, the API that wrote it starts it.
      const fallen = await h.run(workflow.id, { n: 2 });
      expect(apiStarts).not.toContain(fallen.id);
      const [row] = await h.db('workflow_run_outbox').where({ execution_id: fallen.id });
      expect(row).toMatchObject({ handoff: true, attempts: 1 });
      expect((await h.pollUntilEnded(workflow.id, fallen.id)).run_status).toBe('SUCCEEDED');
      expect(apiStarts.filter((id) => id === fallen.id)).toHaveLength(1);
      expect(workerStarts).not.toContain(fallen.id);

      // Two claimants at once (two workers hearing the same notice): one starts it, the other and
      // the API's fallback find it taken.
      const raced = await h.run(workflow.id, { n: 3 });
      const claimants: string[] = [];
      const plain = watched(claimants)(temporalWorkflowRunner(h.t.temporal, h.taskQueue));
      const outcomes = await Promise.all([
        dispatchHandedOff(h.db, plain, raced.id),
        dispatchHandedOff(h.db, plain, raced.id),
      ]);
      expect(outcomes.sort()).toEqual(['skipped', 'started']);
      expect(claimants).toEqual([raced.id]);
      expect((await h.pollUntilEnded(workflow.id, raced.id)).run_status).toBe('SUCCEEDED');
      await sleep(400);
      expect(apiStarts).not.toContain(raced.id);
      expect(await dispatchHandedOff(h.db, plain, raced.id)).toBe('skipped');
    } finally {
      await silent.close();
    }
  });
});
