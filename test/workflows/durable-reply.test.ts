import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { InterpreterInput } from '../../engine/workflows/run-input';
import { dispatchSoon, settleStartsBehindReplies } from '../../engine/workflows/run-workflow';
import type { WorkflowRunner } from '../../engine/workflows/workflow-runner';
import { startedRun } from '../support/temporal-runs';
import { startHarness, type WorkflowHarness, workerId } from './workflow-harness';

/**
 * Issue 33, item 2: a run's 202 comes as soon as the run is durable (its row, audit entry and start
 * request committed in one statement); Temporal's start goes on behind the reply. Here the runner's
 * start is held at a gate, so the order is seen rather than timed.
 */
describe('the 202 of a run comes once the run is durable, before Temporal has it', () => {
  let h: WorkflowHarness;
  const starts: string[] = [];
  let gate: Promise<void> = Promise.resolve();
  let openGate: () => void = () => undefined;
  const closeGate = () => {
    gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
  };
  const held = (runner: WorkflowRunner): WorkflowRunner => ({
    ...runner,
    async start(input: InterpreterInput) {
      starts.push(input.executionId);
      await gate;
      return runner.start(input);
    },
  });

  beforeAll(async () => {
    h = await startHarness({ worker: true, runner: held });
  }, 120_000);
  afterAll(async () => {
    openGate();
    await h?.close();
  });

  const twoSteps = (script: string) => {
    const [s, e] = [workerId(), workerId()];
    return {
      name: 'Two steps',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [e] },
        { id: e, name: 'E', type: 'ENDER', script },
      ],
    };
  };

  async function notInTemporal(executionId: string): Promise<boolean> {
    return h.t.temporal.workflow
      .getHandle(executionId)
      .describe()
      .then(
        () => false,
        (error: unknown) => error instanceof WorkflowNotFoundError,
      );
  }

  async function outboxRows(executionId: string): Promise<number> {
    const rows = await h.db('workflow_run_outbox').where({ execution_id: executionId });
    return rows.length;
  }

  async function untilOutboxEmpty(executionId: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while ((await outboxRows(executionId)) > 0) {
      if (Date.now() > deadline) throw new Error(`the outbox row of ${executionId} stayed`);
      await sleep(20);
    }
  }

  test('POST run: 202 with the run recorded, audited and its start request waiting, Temporal not asked to finish yet; then it runs once', async () => {
    const workflow = await h.store(twoSteps('function main(args) { return { n: args.inputs.n + 1 }; }'));
    closeGate();
    const started = await h.run(workflow.id, { n: 41 });
    expect(started).toMatchObject({ run_status: 'RUNNING' });
    // The start was handed on before the reply, and has not come back.
    expect(starts).toContain(started.id);
    expect(await notInTemporal(started.id)).toBe(true);
    // Durable: the row, its EXECUTE audit entry and its start request are committed.
    const row = await h.db('workflow_executions').where({ id: started.id }).first();
    expect(row).toMatchObject({ run_status: 'RUNNING' });
    const audited = await h.db('audit_logs').where({ entity_id: started.id, operation: 'EXECUTE' });
    expect(audited).toHaveLength(1);
    expect(await outboxRows(started.id)).toBe(1);
    // Our API knows the run while Temporal does not.
    const polled = await h.call(
      'GET',
      `/v2/workflows/${workflow.id}/workflow_executions?workflow_execution_id=${started.id}`,
    );
    expect(polled.statusCode).toBe(200);
    expect(polled.json().workflow_execution.run_status).toBe('RUNNING');

    openGate();
    const handle = await startedRun(h.t.temporal, started.id);
    await handle.result();
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    expect(ended.run_status).toBe('SUCCEEDED');
    expect((await h.workerExecution(ended.ender_worker_execution_id!)).result).toEqual({ n: 42 });
    await untilOutboxEmpty(started.id);
    expect(starts.filter((id) => id === started.id)).toHaveLength(1);
  });

  test('a retry answers the same way: 202 before Temporal has the new run', async () => {
    const workflow = await h.store(
      twoSteps('function main(args) { if (!args.inputs.ok) throw new Error("not yet"); return 1; }'),
    );
    const failed = await h.run(workflow.id, {});
    expect((await h.pollUntilEnded(workflow.id, failed.id)).run_status).toBe('FAILED');
    closeGate();
    const res = await h.call('POST', `/v2/workflows/${workflow.id}/workflow_executions/${failed.id}/retry`);
    expect(res.statusCode).toBe(202);
    const retry = res.json().workflow_execution;
    expect(retry).toMatchObject({ run_status: 'RUNNING', retry_of: failed.id });
    expect(starts).toContain(retry.id);
    expect(await notInTemporal(retry.id)).toBe(true);
    expect(await outboxRows(retry.id)).toBe(1);
    openGate();
    // It fails again (same parameters), but it ran: Temporal has it, and the records ended it.
    expect((await h.pollUntilEnded(workflow.id, retry.id)).run_status).toBe('FAILED');
    await untilOutboxEmpty(retry.id);
  });

  test('a stopping API waits for the starts behind its replies before it closes its Temporal connection', async () => {
    const workflow = await h.store(twoSteps('function main() { return 1; }'));
    closeGate();
    const started = await h.run(workflow.id, {});
    let settled = false;
    const settling = settleStartsBehindReplies().then(() => {
      settled = true;
    });
    await sleep(300);
    expect(settled).toBe(false);
    openGate();
    await settling;
    // Settled means Temporal answered: the run is there now, with no polling.
    expect(await notInTemporal(started.id)).toBe(false);
    expect((await h.pollUntilEnded(workflow.id, started.id)).run_status).toBe('SUCCEEDED');
  });

  test('behind the reply, the caller goes on before the start comes back; awaited, it waits for it', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const calls: string[] = [];
    const runner = {
      start: async (input: InterpreterInput) => {
        calls.push(input.executionId);
        await held;
      },
    } as unknown as WorkflowRunner;
    const input = (executionId: string) => ({ executionId }) as InterpreterInput;
    // No awaits on that path: the caller's promise settles in this turn, before any timer could fire.
    const behind = await Promise.race([
      dispatchSoon(h.db, runner, input('wfex_behind'), 'behind-reply').then(() => 'returned'),
      sleep(250).then(() => 'waited'),
    ]);
    expect(behind).toBe('returned');
    let awaitedReturned = false;
    const awaited = dispatchSoon(h.db, runner, input('wfex_awaited'), 'awaited').then(() => {
      awaitedReturned = true;
    });
    await sleep(50);
    expect(calls).toEqual(['wfex_behind', 'wfex_awaited']);
    expect(awaitedReturned).toBe(false);
    release();
    await awaited;
    expect(awaitedReturned).toBe(true);
    await settleStartsBehindReplies();
  });
});
