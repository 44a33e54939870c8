import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import type { Database } from '../../engine/platform/database';
import { newId } from '../../engine/platform/ids';
import {
  createTestAccount,
  createTestApp,
  temporalAddress,
  type TestAccount,
  type TestApp,
} from '../support/test-app';
import { createTestDatabase } from '../support/test-database';
import { stepsInHistory, workerId } from './workflow-harness';

const ROOT = path.resolve(__dirname, '..', '..');
const FIXTURE = path.join('test', 'workflows', 'fixtures', 'worker-process.ts');

interface WorkerProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<void>;
}

/** A worker in a process of its own (fixtures/worker-process.ts), once it polls the task queue. */
async function startWorkerProcess(databaseUrl: string, taskQueue: string): Promise<WorkerProcess> {
  let output = '';
  const child = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', FIXTURE], {
    cwd: ROOT,
    env: {
      ...process.env,
      WORKER_DATABASE_URL: databaseUrl,
      WORKER_TEMPORAL_ADDRESS: temporalAddress(),
      WORKER_TASK_QUEUE: taskQueue,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 90_000;
  while (!output.includes('polling')) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`worker process exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`worker process did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, output: () => output, exited };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Kill and restart: the worker process dies (SIGKILL) in the middle of a script that already
 * created a portfolio; Temporal notices (a regular step by its missed heartbeat, 20 s; a short step,
 * a local activity, by its workflow task timing out, 10 s) and the step runs again on a new process,
 * which reruns the script (JavaScript or Python: a Python step's sandbox dies with its process). The
 * SDK-call journal answers the calls the dead process
 * made, so the portfolio exists once, its CREATE is audited once, and the step keeps one row.
 */
describe('durability: a worker process killed mid-script', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let t: TestApp;
  let account: TestAccount;
  const taskQueue = `durability-${newId('worker').slice(5, 17)}`;
  const processes: WorkerProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    t = await createTestApp(db, { taskQueue });
    account = await createTestAccount(db);
  }, 60_000);
  afterAll(async () => {
    for (const { child, exited } of processes) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    }
    await t.close();
    await database.drop();
  }, 60_000);

  const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
    t.app.inject({ method, url, payload, headers: { authorization: account.bearer } });

  /**
   * Runs Start → Middle → End where Middle creates a portfolio, then reads until the test raises a
   * flag (a datastore of that name): provably mid-script for as long as the test wants. Middle is
   * an inline script (a short step: a local activity) or a template allowed 60 s (a regular one).
   */
  async function killMidScript(
    kind: 'local' | 'activity',
    language: 'javascript' | 'python' = 'javascript',
    via: 'inline' | 'template' = kind === 'local' ? 'inline' : 'template',
  ) {
    const portfolioName = `Durable book ${kind} ${language} ${via}`;
    const flagName = `go-${kind}-${language}-${via}`;
    const python = [
      'def main(args):',
      `    made = sdk.createPortfolio({"name": "${portfolioName}", "securities": [{"id": "p1", "symbol": "AAPL", "quantity": 10}]})`,
      '    while True:',
      `        flags = sdk.listDatastores({"query": {"filters": [["name", "=", "${flagName}"]]}})`,
      '        if flags["datastores"]:',
      '            break',
      '    return {"portfolio": made["id"], "name": made["name"]}',
    ].join('\n');
    const javascript = `
            async function main() {
              const made = await sdk.createPortfolio({ name: '${portfolioName}', securities: [{ id: 'p1', symbol: 'AAPL', quantity: 10 }] });
              for (;;) {
                const flags = await sdk.listDatastores({ query: { filters: [['name', '=', '${flagName}']] } });
                if (flags.datastores.length > 0) break;
              }
              return { portfolio: made.id, name: made.name };
            }`;
    const script = language === 'python' ? python : javascript;
    // An inline Python script is a regular activity too (Python steps always are).
    let middle: Record<string, unknown> =
      language === 'python' ? { script, script_runtime: 'python3.11' } : { script };
    if (via === 'template') {
      const template = await call('POST', '/v2/worker_templates', {
        name: `Durable step ${language}`,
        script,
        timeout_seconds: 60,
        ...(language === 'python' ? { script_runtime: 'python3.11' } : {}),
      });
      expect(template.statusCode).toBe(200);
      middle = { template_id: template.json().worker_template.id };
    }
    const [s, m, e] = [workerId(), workerId(), workerId()];
    const stored = await call('POST', '/v2/workflows', {
      name: `Durable ${kind} ${language} ${via}`,
      workers: [
        { id: s, name: 'Start', type: 'STARTER', next: [m] },
        { id: m, name: 'Create and wait', type: 'BASIC', ...middle, next: [e] },
        { id: e, name: 'End', type: 'ENDER' },
      ],
    });
    expect(stored.statusCode).toBe(200);
    const workflowId = stored.json().workflow.id as string;

    const first = await startWorkerProcess(database.url, taskQueue);
    processes.push(first);
    const started = await call('POST', `/v2/workflows/${workflowId}/run`, { parameters: {} });
    expect(started.statusCode).toBe(202);
    const executionId = started.json().workflow_execution.id as string;

    // Mid-script: the step is RUNNING and its portfolio exists (committed with its journal row).
    const portfolios = () =>
      db('entities').where({ account_id: account.accountId, kind: 'portfolio', name: portfolioName });
    await until('the script to create its portfolio', async () => {
      const step = await db('worker_executions')
        .where({ workflow_execution_id: executionId, worker_id: m, status: 'RUNNING' })
        .first();
      return step && (await portfolios()).length === 1 ? true : undefined;
    });
    first.child.kill('SIGKILL');
    await first.exited;
    expect(first.child.signalCode).toBe('SIGKILL');
    const step = await db('worker_executions').where({ workflow_execution_id: executionId, worker_id: m });
    expect(step).toHaveLength(1);
    expect(step[0]!.status).toBe('RUNNING');
    const journaled = await db('sdk_calls').where({ worker_execution_id: step[0]!.id }).orderBy('seq');
    expect(journaled[0]).toMatchObject({ seq: 0, name: 'createPortfolio' });

    const second = await startWorkerProcess(database.url, taskQueue);
    processes.push(second);
    const flag = await call('POST', '/v2/datastores', { name: flagName, data: [['x'], [1]] });
    expect(flag.statusCode).toBe(200);

    // A regular step is retried after the heartbeat timeout (20 s) and the first backoff (1 s); a local
    // one when its workflow task times out (10 s) and runs again on the new process.
    const ended = await until(
      'the run to end',
      async () => {
        const row = await db('workflow_executions').where({ id: executionId }).first();
        return row.run_status === 'RUNNING' ? undefined : row;
      },
      90_000,
    );
    expect(ended.run_status).toBe('SUCCEEDED');

    const made = await portfolios();
    expect(made).toHaveLength(1);
    const ender = await call(
      'GET',
      `/v2/workflows/worker_executions?worker_execution_id=${ended.ender_worker_execution_id as string}`,
    );
    expect(ender.json().worker_execution.result).toEqual({ portfolio: made[0]!.id, name: portfolioName });

    const steps = await db('worker_executions').where({ workflow_execution_id: executionId, worker_id: m });
    expect(steps).toHaveLength(1);
    expect(steps[0]!.id).toBe(step[0]!.id);
    expect(steps[0]!.status).toBe('COMPLETED');
    // The second process reran the script: its logs say the dead one's calls were answered.
    expect(steps[0]!.logs).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          level: 'info',
          message: expect.stringMatching(/^\[sdk journal\] a retried attempt: \d+ SDK call\(s\) answered/),
        }),
      ]),
    );
    // An ended step needs no journal.
    expect(await db('sdk_calls').where({ worker_execution_id: steps[0]!.id })).toHaveLength(0);

    const creates = await db('audit_logs').where({
      workflow_execution_id: executionId,
      operation: 'CREATE',
      entity_type: 'Portfolio',
    });
    expect(creates).toHaveLength(1);
    expect(creates[0]).toMatchObject({ entity_id: made[0]!.id, source: 'WORKER' });

    // The step ran as the kind it was meant to be.
    // The records close before the Temporal run does: wait for it, then read its history.
    await t.temporal.workflow
      .getHandle(executionId)
      .result()
      .catch(() => undefined);
    const history = await t.temporal.workflow.getHandle(executionId).fetchHistory();
    const kinds = stepsInHistory(history).filter((step) => step.step === `${m}#-1`);
    expect(kinds.length).toBeGreaterThan(0);
    expect(new Set(kinds.map((step) => step.kind))).toEqual(new Set([kind]));
    second.child.kill('SIGTERM');
    await second.exited;
  }

  test('a short step (local activity): the run succeeds on a new process with one portfolio, one CREATE, one worker execution', async () => {
    await killMidScript('local');
  }, 240_000);

  test('a long step (regular activity with heartbeats): the same', async () => {
    await killMidScript('activity');
  }, 240_000);

  test('an inline Python step (a regular activity; its sandbox dies with the process): the same', async () => {
    await killMidScript('activity', 'python', 'inline');
  }, 240_000);

  test('a Python template step: the same', async () => {
    await killMidScript('activity', 'python', 'template');
  }, 240_000);
});
