import { createAccount } from '../../engine/identity/account-store';
import type { Database } from '../../engine/platform/database';
import { newId } from '../../engine/platform/ids';
import {
  beginStep,
  endStepClosingRun,
  endWorkerExecution,
  endWorkflowExecution,
  insertWorkflowExecution,
  type WorkflowExecutionRow,
} from '../../engine/workflows/execution-records';
import { createTestDatabase } from '../support/test-database';

/** The records' own rules, which the runs rely on but cannot easily provoke (lost attempts, races). */
describe('execution records', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let accountId: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    ({ accountId } = await createAccount(db, {
      name: 'Records',
      ownerEmail: `records-${newId('worker')}@example.com`,
    }));
  });
  afterAll(() => database.drop());

  const [s, b, e] = [newId('worker'), newId('worker'), newId('worker')];

  async function execution(): Promise<WorkflowExecutionRow> {
    return insertWorkflowExecution(db, {
      accountId,
      workflowId: newId('workflow'),
      workflowName: 'Records',
      workspace: 'main',
      trigger: 'API',
      startedWorkerId: s,
      enderWorkerId: null,
      parameters: {},
      userId: 'user_x',
      credentialId: 'sid_x',
      credentialType: 'API_KEY',
    });
  }

  const begin = (
    run: WorkflowExecutionRow,
    workerId: string,
    parallelIndex: number,
    inputIds: string[] = [],
  ) =>
    beginStep(db, {
      executionId: run.id,
      workerId,
      workerName: workerId === s ? 'S' : 'B',
      workerType: workerId === s ? 'STARTER' : workerId === e ? 'ENDER' : 'BASIC',
      parallelIndex,
      inputParams: {},
      inputIds,
      templateId: null,
    });

  const completed = {
    status: 'COMPLETED' as const,
    errorMessage: null,
    cpuTimeSeconds: 0.01,
    durationSeconds: 0.5,
    logs: [],
  };

  test('a retried step finds its row: ended, it is handed back; still running, it starts again', async () => {
    const run = await execution();
    const first = await begin(run, s, -1);
    expect(first.fresh).toBe(true);
    const again = await begin(run, s, -1);
    expect(again).toMatchObject({ fresh: false, row: { id: first.row!.id, status: 'RUNNING' } });
    expect(await endWorkerExecution(db, first.row!.id, { ...completed, result: { n: 1 } })).toBe(true);
    const afterEnd = await begin(run, s, -1);
    expect(afterEnd).toMatchObject({
      fresh: false,
      row: { id: first.row!.id, status: 'COMPLETED', result: { n: 1 } },
    });
    expect(await db('worker_executions').where({ workflow_execution_id: run.id })).toHaveLength(1);
  });

  test('a failed run closes what still runs, keeps the failing step its reason, and ends only once', async () => {
    const run = await execution();
    const starter = await begin(run, s, -1);
    await endWorkerExecution(db, starter.row!.id, { ...completed, result: { items: [1, 2] } });
    const branch0 = await begin(run, b, 0);
    const branch1 = await begin(run, b, 1);
    const ended = await endWorkflowExecution(db, run.id, {
      runStatus: 'FAILED',
      enderWorkerExecutionId: null,
      failure: {
        workerId: b,
        parallelIndex: 1,
        workerExecutionId: null,
        message: 'The worker could not be run: lost',
      },
    });
    expect(ended).toMatchObject({
      run_status: 'FAILED',
      ender_worker_execution_id: null,
      total_execution_time: expect.any(Number),
    });
    expect(ended.resume).toEqual({
      worker_executions: { total: 3, completed: 1, error: 2, running: 0 },
      workers: [
        expect.objectContaining({ worker_id: s, executions: 1, completed: 1, error: 0 }),
        expect.objectContaining({ worker_id: b, executions: 2, completed: 0, error: 2 }),
      ],
      parallel_index_max: 1,
      failure: {
        worker_id: b,
        parallel_index: 1,
        worker_execution_id: null,
        message: 'The worker could not be run: lost',
      },
      ender_result_bytes: null,
    });
    const rows = await db('worker_executions')
      .whereIn('id', [branch0.row!.id, branch1.row!.id])
      .orderBy('parallel_index');
    expect(rows.map((row) => [row.status, row.error_message])).toEqual([
      ['ERROR', `Stopped: the run failed at worker ${b}.`],
      ['ERROR', 'The worker could not be run: lost'],
    ]);
    // A branch that finishes late does not reopen its row, and closing again changes nothing.
    expect(await endWorkerExecution(db, branch0.row!.id, { ...completed, result: 1 })).toBe(false);
    const again = await endWorkflowExecution(db, run.id, {
      runStatus: 'SUCCEEDED',
      enderWorkerExecutionId: null,
    });
    expect(again).toMatchObject({ run_status: 'FAILED', version: ended.version });
  });

  test("a step's start reads its run and only this run's results; an ended run gets no new step", async () => {
    const run = await execution();
    const other = await execution();
    const starter = await begin(run, s, -1);
    await endWorkerExecution(db, starter.row!.id, { ...completed, result: { n: 1 } });
    const elsewhere = await begin(other, s, -1);
    await endWorkerExecution(db, elsewhere.row!.id, { ...completed, result: { n: 2 } });
    const next = await begin(run, b, -1, [starter.row!.id, elsewhere.row!.id]);
    expect(next.execution).toMatchObject({ id: run.id, run_status: 'RUNNING' });
    expect(next.execution!.created_at).toBeInstanceOf(Date);
    expect(next.fresh).toBe(true);
    expect([...next.results]).toEqual([[starter.row!.id, { n: 1 }]]);
    await endWorkflowExecution(db, run.id, { runStatus: 'FAILED', enderWorkerExecutionId: null });
    const late = await begin(run, e, -1);
    expect(late).toMatchObject({ fresh: false, row: null, execution: { run_status: 'FAILED' } });
  });

  test('the ENDER ends and closes its run as a separate end and close would, once', async () => {
    const run = await execution();
    const starter = await begin(run, s, -1);
    await endWorkerExecution(db, starter.row!.id, { ...completed, result: { n: 1 } });
    const ender = await begin(run, e, -1);
    const measures = { cpuTimeSeconds: 0.02, durationSeconds: 0.25, logs: [] };
    const closed = await endStepClosingRun(db, run.id, ender.row!.id, {
      result: { done: true },
      ...measures,
    });
    expect(closed.ended).toBe(true);
    expect(closed.run).toMatchObject({
      run_status: 'SUCCEEDED',
      ender_worker_execution_id: ender.row!.id,
      ender_worker_id: e,
      total_execution_time: 0.75,
      real_execution_time: 0.03,
    });
    expect(closed.run.duration).toEqual(expect.any(Number));
    expect(closed.run.resume).toEqual({
      worker_executions: { total: 2, completed: 2, error: 0, running: 0 },
      workers: [
        expect.objectContaining({ worker_id: s, executions: 1, completed: 1 }),
        expect.objectContaining({ worker_id: e, executions: 1, completed: 1 }),
      ],
      parallel_index_max: -1,
      failure: null,
      ender_result_bytes: Buffer.byteLength(JSON.stringify({ done: true })),
    });
    // A retry (the process died before Temporal heard back) changes nothing.
    const again = await endStepClosingRun(db, run.id, ender.row!.id, { result: { other: 1 }, ...measures });
    expect(again.ended).toBe(false);
    expect(again.run).toMatchObject({ run_status: 'SUCCEEDED', version: closed.run.version });
    expect((await db('worker_executions').where({ id: ender.row!.id }).first()).result).toEqual({
      done: true,
    });
  });
});
