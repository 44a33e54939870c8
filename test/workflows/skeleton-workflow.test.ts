import { NativeConnection, type Worker } from '@temporalio/worker';
import type { Database } from '../../engine/platform/database';
import { newId } from '../../engine/platform/ids';
import { createTemporalWorker } from '../../workers/temporal-worker';
import {
  createTestAccount,
  createTestApp,
  temporalAddress,
  type TestAccount,
  type TestApp,
} from '../support/test-app';
import { createTestDatabase } from '../support/test-database';

/** The walking skeleton: API → PostgreSQL → Temporal → worker → isolated-vm → PostgreSQL → API. */
describe('a stored starter → basic → ender workflow runs on Temporal', () => {
  const taskQueue = `skeleton-${newId('worker').slice(5, 15)}`;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let t: TestApp;
  let account: TestAccount;
  let connection: NativeConnection;
  let worker: Worker;
  let running: Promise<void>;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    t = await createTestApp(db, { taskQueue });
    account = await createTestAccount(db);
    connection = await NativeConnection.connect({ address: temporalAddress() });
    worker = await createTemporalWorker({
      db,
      connection,
      client: t.temporal,
      namespace: 'default',
      taskQueue,
      publicUrl: 'http://pas.test',
    });
    running = worker.run();
  }, 120_000);

  afterAll(async () => {
    worker.shutdown();
    await running;
    await connection.close();
    await t.close();
    await database.drop();
  });

  const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
    t.app.inject({ method, url, payload, headers: { authorization: account.bearer } });

  async function storeWorkflow(script: string): Promise<{ id: string; workers: Array<{ id: string }> }> {
    const starter = newId('worker');
    const basic = newId('worker');
    const ender = newId('worker');
    const res = await call('POST', '/v2/workflows', {
      name: 'Sum positions',
      workers: [
        { id: starter, name: 'Start', type: 'STARTER', next: [basic] },
        { id: basic, name: 'Sum', type: 'BASIC', script, script_inputs: { scale: 2 }, next: [ender] },
        { id: ender, name: 'End', type: 'ENDER' },
      ],
    });
    expect(res.statusCode).toBe(200);
    return res.json().workflow;
  }

  async function pollUntilEnded(workflowId: string, executionId: string) {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const res = await call(
        'GET',
        `/v2/workflows/${workflowId}/workflow_executions?workflow_execution_id=${executionId}`,
      );
      expect(res.statusCode).toBe(200);
      const execution = res.json().workflow_execution;
      if (execution.run_status !== 'RUNNING') return execution;
      if (Date.now() > deadline) throw new Error('the run did not end in 90 s');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  test('SUCCEEDED with the ender holding the script result, recorded in PostgreSQL and Temporal', async () => {
    const workflow = await storeWorkflow(`
      function main(args) {
        const values = args.inputs.values;
        console.log('summing', values.length, 'values');
        return { total: values.reduce((a, b) => a + b, 0) * args.script_inputs.scale, workspace: args.workspace };
      }
    `);
    const run = await call('POST', `/v2/workflows/${workflow.id}/run`, {
      parameters: { values: [1, 2, 3.5] },
    });
    expect(run.statusCode).toBe(202);
    const started = run.json().workflow_execution;
    expect(started).toMatchObject({
      run_status: 'RUNNING',
      status: 'OK',
      trigger: 'API',
      workflow_id: workflow.id,
    });
    expect(started.id).toMatch(/^wfex_[A-Za-z0-9]{25}$/);

    const ended = await pollUntilEnded(workflow.id, started.id);
    expect(ended).toMatchObject({
      run_status: 'SUCCEEDED',
      status: 'COMPLETED',
      ender_worker_id: workflow.workers[2]!.id,
    });
    expect(ended.duration).toBeGreaterThan(0);
    expect(ended.ender_worker_execution_id).toMatch(/^wkex_/);

    const enderRes = await call(
      'GET',
      `/v2/workflows/worker_executions?worker_execution_id=${ended.ender_worker_execution_id}`,
    );
    expect(enderRes.statusCode).toBe(200);
    expect(enderRes.json().worker_execution).toMatchObject({
      status: 'COMPLETED',
      worker_type: 'ENDER',
      result: { total: 13, workspace: 'main' },
    });

    const list = await call(
      'GET',
      `/v2/workflows/${workflow.id}/worker_executions?workflow_execution_id=${started.id}`,
    );
    expect(
      list
        .json()
        .worker_executions.map((w: { execution: { worker_type: string } }) => w.execution.worker_type),
    ).toEqual(['STARTER', 'BASIC', 'ENDER']);
    const basic = await db('worker_executions')
      .where({ workflow_execution_id: started.id, worker_type: 'BASIC' })
      .first();
    expect(basic.logs).toEqual([expect.objectContaining({ level: 'info', message: 'summing 3 values' })]);
    expect(basic.cpu_time).toBeGreaterThan(0);

    // The execution id is the Temporal workflow id, findable by its search attributes.
    // The records close before the Temporal run does: wait for its result, then describe it.
    await t.temporal.workflow.getHandle(started.id).result();
    const description = await t.temporal.workflow.getHandle(started.id).describe();
    expect(description.status.name).toBe('COMPLETED');
    expect(description.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value])).toEqual(
      expect.arrayContaining([
        ['PasRunStatus', 'SUCCEEDED'],
        ['PasWorkflowId', workflow.id],
        ['PasExecutionId', started.id],
      ]),
    );

    const [audit] = await db('audit_logs').where({ entity_id: started.id });
    expect(audit).toMatchObject({ operation: 'EXECUTE', entity_type: 'WorkflowExecution', source: 'API' });
  });

  test('a failing script ends the run FAILED, with the legacy status COMPLETED', async () => {
    const workflow = await storeWorkflow(`function main() { throw new Error('bad input'); }`);
    const run = await call('POST', `/v2/workflows/${workflow.id}/run`, { parameters: {} });
    const ended = await pollUntilEnded(workflow.id, run.json().workflow_execution.id);
    expect(ended).toMatchObject({
      run_status: 'FAILED',
      status: 'COMPLETED',
      ender_worker_execution_id: null,
    });
    const basic = await db('worker_executions')
      .where({ workflow_execution_id: run.json().workflow_execution.id, worker_type: 'BASIC' })
      .first();
    expect(basic.status).toBe('ERROR');
    expect(basic.error_message).toMatch(/bad input/);
  });

  test('run validation: parameters required, unknown workflow 404, other account 404', async () => {
    const workflow = await storeWorkflow('function main(args) { return {}; }');
    const missing = await call('POST', `/v2/workflows/${workflow.id}/run`, {});
    expect(missing.statusCode).toBe(400);
    expect(
      (await call('POST', `/v2/workflows/wrkf_AAAAAAAAAAAAAAAAAAAAAAAAA/run`, { parameters: {} })).statusCode,
    ).toBe(404);
    const other = await createTestAccount(db);
    const res = await t.app.inject({
      method: 'POST',
      url: `/v2/workflows/${workflow.id}/run`,
      payload: { parameters: {} },
      headers: { authorization: other.bearer },
    });
    expect(res.statusCode).toBe(404);
  });

  test('an invalid definition is refused with 400', async () => {
    const starter = newId('worker');
    const res = await call('POST', '/v2/workflows', {
      name: 'no ender',
      workers: [
        { id: starter, name: 'Start', type: 'STARTER', next: [starter] },
        { id: newId('worker'), name: 'Lonely', type: 'ENDER' },
      ],
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/cycle/);
  });
});
