import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { connectDatabase, type Database } from '../../engine/platform/database';
import { randomAlphanumeric } from '../../engine/platform/ids';
import { scheduledExecutionId } from '../../engine/workflows/workflow-schedules';
import {
  appProcess,
  COMPOSE_VARIABLES,
  environmentOf,
  prometheusTargets,
  service,
  temporalServerEnvironment,
} from '../support/compose-topology';
import { imagePath, Podman, prepareImage, startImageDeployment } from '../support/container-image';
import { dashboardMetricNames } from '../support/dashboard';
import { pas } from '../support/pas-cli';
import {
  EXPECTED_SCENARIOS,
  MARKET_DATA,
  PYPI_CLIENTS,
  runClientScenarios,
  SCENARIO_ENDERS,
} from '../support/pypi-clients';
import {
  groupMembers as groupOf,
  type ManagedProcess,
  startTopology,
  type Topology,
} from '../support/topology';

const run = promisify(execFile);

/**
 * The production topology of docker-compose.yml, run for real as processes (test/support/topology.ts):
 * the Temporal server at the pinned version on PostgreSQL, 2 api and 2 worker processes started with
 * the compose commands, nginx with the compose site in front. Every HTTP request goes through nginx;
 * what proves "once" (rows, audit records, Temporal's own view of the runs) is read from the service's
 * database and the Temporal frontend directly. One topology for the file: it takes about a minute to
 * start. `npm test` runs this file after the other suites (`npm run test:topology`).
 */
describe('the compose topology as processes', () => {
  let t: Topology;
  let db: Database;
  let temporal: Client;
  let temporalConnection: Connection;
  /** A workflow that fires every minute from the start of the file to its end, through every fault. */
  let scheduled: { id: string; since: number };

  beforeAll(async () => {
    t = await startTopology();
    db = connectDatabase(t.databaseUrl, 2);
    temporalConnection = await Connection.connect({ address: t.temporalAddress });
    temporal = new Client({ connection: temporalConnection, namespace: 'default' });
    const stored = await call('POST', '/v2/workflows', {
      name: 'Every minute',
      trigger_type: 'TIME_BASED',
      trigger_config: { cron: '* * * * *', timezone: 'UTC' },
      trigger_enabled: true,
      workers: twoSteps('function main() { return { tick: true }; }'),
    });
    expect(stored.status).toBe(200);
    scheduled = { id: stored.body.workflow.id, since: Date.now() };
  }, 30 * 60_000);

  afterAll(async () => {
    await temporalConnection?.close().catch(() => undefined);
    await db?.destroy();
    await t?.stop();
  }, 120_000);

  interface Answer {
    status: number;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: any;
  }

  async function call(method: string, url: string, body?: unknown): Promise<Answer> {
    const response = await fetch(`${t.baseUrl}${url}`, {
      method,
      headers: {
        authorization: t.account.bearer,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON (an nginx error page)
    }
    return { status: response.status, body: parsed };
  }

  const workerId = () => `wrkr_${randomAlphanumeric(25)}`;

  function twoSteps(ender: string, extra: object = {}) {
    const [s, e] = [workerId(), workerId()];
    return [
      { id: s, name: 'Start', type: 'STARTER', next: [e], ...extra },
      { id: e, name: 'End', type: 'ENDER', script: ender },
    ];
  }

  async function store(body: object): Promise<string> {
    const res = await call('POST', '/v2/workflows', body);
    if (res.status !== 200) throw new Error(`store: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.workflow.id;
  }

  async function startRun(workflowId: string, parameters: object = {}): Promise<string> {
    const res = await call('POST', `/v2/workflows/${workflowId}/run`, { parameters });
    if (res.status !== 202) throw new Error(`run: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.workflow_execution.id;
  }

  /** Waits (the API's wait_seconds) until the run leaves RUNNING. */
  async function ended(workflowId: string, executionId: string, ms = 120_000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const res = await call(
        'GET',
        `/v2/workflows/${workflowId}/workflow_executions?workflow_execution_id=${executionId}&wait_seconds=10`,
      );
      if (res.status !== 200) throw new Error(`poll: ${res.status} ${JSON.stringify(res.body)}`);
      if (res.body.workflow_execution.run_status !== 'RUNNING') return res.body.workflow_execution;
      if (Date.now() > deadline) throw new Error(`run ${executionId} did not end within ${ms} ms`);
    }
  }

  async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(200);
    }
  }

  /** Pids in the process group of `proc` (npm and node). */
  const groupMembers = (proc: ManagedProcess) => groupOf(proc.pid());

  function environOf(pid: number): Record<string, string> {
    return Object.fromEntries(
      readFileSync(`/proc/${pid}/environ`, 'utf8')
        .split('\0')
        .filter((line) => line.includes('='))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
  }

  /** nginx's access log (the wrapper's format): when, what, the answer and which upstream(s). */
  function accessLog(): Array<{ at: number; method: string; uri: string; status: number; upstream: string }> {
    return readFileSync(path.join(t.runDir, 'nginx', 'access.log'), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => {
        const [at, method, uri, status, ...upstream] = line.split(' ');
        return {
          at: Number(at) * 1000,
          method: method!,
          uri: uri!,
          status: Number(status),
          upstream: upstream.join(' '),
        };
      });
  }

  /** Until nginx has passed a request to `api` again (after a restart) and it answered 2xx. */
  async function rejoined(api: ManagedProcess, since: number): Promise<void> {
    const port = t.ports.api[t.apis.indexOf(api)]!;
    await until(
      `${api.name} to serve through nginx again`,
      async () => {
        await call('GET', '/v2/health_check');
        return accessLog().some(
          (line) => line.at >= since && line.status === 200 && line.upstream.endsWith(`127.0.0.1:${port}`),
        )
          ? true
          : undefined;
      },
      60_000,
    );
  }

  test('it runs what docker-compose.yml says: the pinned server, the compose commands and environments', async () => {
    const { stdout } = await run(t.serverBinary, ['--version']);
    expect(stdout).toContain(t.version);
    expect(t.version).toBe(/^temporalio\/server:(.+)$/.exec(service(t.compose, 'temporal').image!)![1]);
    // The cluster runs the compose settings: its shard count, and each process its compose environment.
    const { stdout: cluster } = await run(t.cliPath, [
      'operator',
      'cluster',
      'describe',
      '--address',
      t.temporalAddress,
      '-o',
      'json',
    ]);
    expect(JSON.parse(cluster)).toMatchObject({
      historyShardCount: Number(environOf(t.temporal.pid()).NUM_HISTORY_SHARDS),
      persistenceStore: 'postgres12',
      visibilityStore: 'postgres12',
    });
    expect(environOf(t.temporal.pid())).toMatchObject(
      temporalServerEnvironment(t.compose, t.ports, environOf(t.temporal.pid()).DYNAMIC_CONFIG_FILE_PATH!)
        .env,
    );
    expect(
      Object.keys(environmentOf(service(t.compose, 'temporal'))).every(
        (key) => key in environOf(t.temporal.pid()),
      ),
    ).toBe(true);
    for (const [kind, procs, entry] of [
      ['api', t.apis, 'api/server.ts'],
      ['worker', t.workers, 'workers/worker.ts'],
    ] as const) {
      for (const [i, proc] of procs.entries()) {
        const members = groupMembers(proc);
        const node = members.find((member) => member.cmdline.includes(entry));
        expect({ name: proc.name, found: node !== undefined }).toEqual({ name: proc.name, found: true });
        const expected = appProcess(t.compose, kind, t.ports, i);
        expect(expected.command).toEqual(['npm', 'run', kind === 'api' ? 'start:api' : 'start:worker']);
        expect(environOf(node!.pid)).toMatchObject(expected.env);
        expect(Object.keys(environmentOf(service(t.compose, kind))).sort()).toEqual(
          Object.keys(expected.env)
            .filter((key) => key in environmentOf(service(t.compose, kind)))
            .sort(),
        );
      }
    }
  });

  test('the admin-tools jobs are safe to run again on a running cluster (compose runs them on every start)', async () => {
    await t.runAdminJob('temporal-schema');
    await t.runAdminJob('temporal-setup');
  });

  test("the real clients' scenarios pass through the load balancer", async () => {
    for (const args of [
      [path.join(MARKET_DATA, 'sp500_index_1990_2022.csv')],
      [path.join(MARKET_DATA, 'us_stocks_daily.csv'), '--column', 'AAPL', 'JPM'],
    ]) {
      const imported = pas(t.databaseUrl, 'market', 'import', ...args);
      expect({ status: imported.status, stderr: imported.status === 0 ? '' : imported.stderr }).toEqual({
        status: 0,
        stderr: '',
      });
    }
    expect((await call('POST', '/v2/workspaces', { name: 'clients' })).status).toBe(200);
    const ok = await store({
      name: 'client ok',
      workspace: 'clients',
      workers: twoSteps(SCENARIO_ENDERS.ok),
    });
    const fail = await store({
      name: 'client fail',
      workspace: 'clients',
      workers: twoSteps(SCENARIO_ENDERS.fail),
    });
    const reportIds = await Promise.all(
      PYPI_CLIENTS.map(async () => {
        const report = await call('POST', '/v2/reports', {
          name: 'Client report',
          workspace: 'clients',
          data: [],
        });
        expect(report.status).toBe(200);
        return report.body.report.id as string;
      }),
    );
    await Promise.all(
      PYPI_CLIENTS.map(async (client, i) => {
        const { results, stderr } = await runClientScenarios(client, {
          baseUrl: t.baseUrl,
          sid: t.account.sid,
          token: t.account.token,
          workflowOk: ok,
          workflowFail: fail,
          reportId: reportIds[i]!,
        });
        const failures = results.filter((result) => !result.ok).map((r) => `${r.name}: ${String(r.detail)}`);
        expect({ client: client.name, failures, stderr: failures.length ? stderr : '' }).toEqual({
          client: client.name,
          failures: [],
          stderr: '',
        });
        expect(results.map((result) => result.name)).toEqual(EXPECTED_SCENARIOS);
      }),
    );
  }, 300_000);

  test('a webhook starts its workflow once, with two api and two worker processes', async () => {
    const integration = await call('POST', '/v2/integrations', { name: 'Orders feed', type: 'WEBHOOK' });
    expect(integration.status).toBe(200);
    const integrationId = integration.body.integration.id as string;
    const workflowId = await store({
      name: 'On order',
      trigger_type: 'FILE_RECEIVED',
      trigger_config: { integration_id: integrationId },
      trigger_enabled: true,
      workers: twoSteps('function main(args) { return { got: args.inputs }; }', {
        script: 'function main(args) { return args.script_inputs.body; }',
      }),
    });
    const posted = await call('POST', `/v2/integrations/${integrationId}/webhook`, { order: 42 });
    expect(posted.status).toBe(200);
    expect(posted.body.message).toBe('Payload received and stored; started 1 workflow execution(s).');
    const executions = await until('the webhook run', async () => {
      const res = await call('GET', `/v2/workflows/${workflowId}/workflow_executions?page_size=100`);
      return res.body.workflow_executions?.length > 0 ? res.body.workflow_executions : undefined;
    });
    const done = await ended(workflowId, executions[0].id);
    expect(done).toMatchObject({ run_status: 'SUCCEEDED', trigger: 'FILE_RECEIVED' });
    await sleep(2_000);
    const rows = await db('workflow_executions').where({ workflow_id: workflowId });
    expect(rows).toHaveLength(1);
    const temporalRuns = await countTemporal(`PasWorkflowId = "${workflowId}"`);
    expect(temporalRuns).toBe(1);
  });

  test('kill -9 of the worker process running a script: the run completes SUCCEEDED on the other, each effect once', async () => {
    const portfolioName = 'Durable book (topology)';
    const flagName = 'go-topology';
    // Creates a portfolio, then reads until the test raises a flag: mid-script for as long as needed.
    const template = await call('POST', '/v2/worker_templates', {
      name: 'Durable step',
      timeout_seconds: 60,
      script: `
        async function main() {
          const made = await sdk.createPortfolio({ name: '${portfolioName}', securities: [{ id: 'p1', symbol: 'AAPL', quantity: 10 }] });
          for (;;) {
            const flags = await sdk.listDatastores({ query: { filters: [['name', '=', '${flagName}']] } });
            if (flags.datastores.length > 0) break;
          }
          return { portfolio: made.id, name: made.name };
        }`,
    });
    expect(template.status).toBe(200);
    const [s, m, e] = [workerId(), workerId(), workerId()];
    const workflowId = await store({
      name: 'Durable (topology)',
      workers: [
        { id: s, name: 'Start', type: 'STARTER', next: [m] },
        {
          id: m,
          name: 'Create and wait',
          type: 'BASIC',
          template_id: template.body.worker_template.id,
          next: [e],
        },
        { id: e, name: 'End', type: 'ENDER' },
      ],
    });
    const executionId = await startRun(workflowId);
    const portfolios = () =>
      db('entities').where({ account_id: t.account.accountId, kind: 'portfolio', name: portfolioName });
    await until('the script to create its portfolio', async () => {
      const step = await db('worker_executions')
        .where({ workflow_execution_id: executionId, worker_id: m, status: 'RUNNING' })
        .first();
      return step && (await portfolios()).length === 1 ? true : undefined;
    });

    // Which process runs it: Temporal names the worker that took the activity (`pid@host`).
    const identity = await until('the activity to be taken', async () => {
      const { raw } = await temporal.workflow.getHandle(executionId).describe();
      return (
        raw.pendingActivities?.find((activity) => activity.lastWorkerIdentity)?.lastWorkerIdentity ??
        undefined
      );
    });
    const pid = Number(identity.split('@')[0]);
    const victim = t.workers.find((proc) => groupMembers(proc).some((member) => member.pid === pid))!;
    expect(victim).toBeDefined();
    const survivor = t.workers.find((proc) => proc !== victim)!;
    await victim.kill('SIGKILL');
    expect(victim.lastExit()).toBe('SIGKILL');

    const [step] = await db('worker_executions').where({ workflow_execution_id: executionId, worker_id: m });
    expect(step.status).toBe('RUNNING');
    expect((await call('POST', '/v2/datastores', { name: flagName, data: [['x'], [1]] })).status).toBe(200);

    // Retried on the survivor after the heartbeat timeout (20 s) and the first backoff.
    const done = await ended(workflowId, executionId, 120_000);
    expect(done.run_status).toBe('SUCCEEDED');
    const made = await portfolios();
    expect(made).toHaveLength(1);
    const steps = await db('worker_executions').where({ workflow_execution_id: executionId, worker_id: m });
    expect(steps.map((row) => [row.id, row.status])).toEqual([[step.id, 'COMPLETED']]);
    const creates = await db('audit_logs').where({
      workflow_execution_id: executionId,
      operation: 'CREATE',
      entity_type: 'Portfolio',
    });
    expect(creates).toHaveLength(1);
    // The attempt that completed ran on the other process.
    // The records close before the Temporal run does: wait for it, then read its history.
    await temporal.workflow
      .getHandle(executionId)
      .result()
      .catch(() => undefined);
    const history = await temporal.workflow.getHandle(executionId).fetchHistory();
    const startedBy = (history.events ?? [])
      .map((event) => event.activityTaskStartedEventAttributes?.identity)
      .filter((who): who is string => !!who);
    const survivorPids = groupMembers(survivor).map((member) => String(member.pid));
    expect(survivorPids).toContain(startedBy.at(-1)!.split('@')[0]);

    await victim.start();
  }, 240_000);

  interface Outcome {
    method: string;
    start: number;
    end: number;
    status: number;
    id?: string;
    error?: string;
  }

  /**
   * `loops` clients, each sending one request after another through nginx while `during` runs (and
   * `tailMs` longer): creates (POST), and with `reads`, every other request a read of an acknowledged one.
   */
  async function underLoad(
    options: { loops: number; reads: boolean; tailMs?: number },
    during: () => Promise<void>,
  ) {
    const outcomes: Outcome[] = [];
    const acknowledged: string[] = [];
    let stop = false;
    const loop = async (n: number) => {
      for (let i = 0; !stop; i++) {
        const read = options.reads && i % 2 === 1 && acknowledged.length > 0;
        const start = Date.now();
        const outcome: Outcome = { method: read ? 'GET' : 'POST', start, end: 0, status: 0 };
        try {
          const res = read
            ? await call(
                'GET',
                `/v2/datastores/${acknowledged[Math.floor(Math.random() * acknowledged.length)]}`,
              )
            : await call('POST', '/v2/datastores', { name: `load-${n}-${i}`, data: [['n'], [i]] });
          outcome.status = res.status;
          if (!read && res.status === 200) {
            outcome.id = res.body.datastore.id;
            acknowledged.push(outcome.id!);
          }
        } catch (error) {
          outcome.error = (error as Error).message;
        }
        outcome.end = Date.now();
        outcomes.push(outcome);
      }
    };
    const loops = Array.from({ length: options.loops }, (_, n) => loop(n));
    try {
      await sleep(1_000);
      await during();
      await sleep(options.tailMs ?? 1_000);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    // No acknowledged write is lost: each reads back through nginx.
    const missing: string[] = [];
    for (const id of acknowledged) {
      if ((await call('GET', `/v2/datastores/${id}`)).status !== 200) missing.push(id);
    }
    expect(missing).toEqual([]);
    const rows = await db('entities')
      .where({ account_id: t.account.accountId, kind: 'datastore' })
      .whereIn('id', acknowledged);
    expect(rows).toHaveLength(acknowledged.length);
    return { outcomes, acknowledged };
  }

  /** A request in flight at the kill may fail (nginx never resends a POST that reached a replica). */
  const KILL_WINDOW_MS = 1_000;

  test(`kill -9 of an api process under write load: no acknowledged write lost, 5xx only for requests in flight at the kill (window ${KILL_WINDOW_MS} ms), it rejoins after a restart`, async () => {
    const victim = t.apis[0]!;
    let killedAt = 0;
    const { outcomes, acknowledged } = await underLoad(
      { loops: 4, reads: false, tailMs: 3_000 },
      async () => {
        killedAt = Date.now();
        await victim.kill('SIGKILL');
      },
    );
    expect(acknowledged.length).toBeGreaterThan(20);
    const failed = outcomes.filter((outcome) => outcome.status < 200 || outcome.status >= 300);
    // Each failure is nginx's 502 for a request sent before the kill (or within the window after it)
    // and still open when the replica died.
    const outside = failed.filter(
      (outcome) =>
        !(outcome.status === 502 && outcome.start <= killedAt + KILL_WINDOW_MS && outcome.end >= killedAt),
    );
    expect({ killedAt, outside }).toEqual({ killedAt, outside: [] });
    expect(failed.length).toBeLessThanOrEqual(4);

    const restartedAt = Date.now();
    await victim.start();
    await rejoined(victim, restartedAt);
  }, 180_000);

  test('a rolling restart of both api processes (SIGTERM, one after the other) under load fails no request', async () => {
    const { outcomes, acknowledged } = await underLoad({ loops: 4, reads: true }, async () => {
      for (const api of t.apis) {
        // The SIGTERM reaches node through npm; it drains, exits 0, and npm with it.
        await api.terminate(30_000);
        expect(api.lastExit()).toBe('exit 0');
        const restartedAt = Date.now();
        await api.start();
        await rejoined(api, restartedAt);
      }
    });
    expect(acknowledged.length).toBeGreaterThan(20);
    expect(outcomes.filter((outcome) => outcome.method === 'GET').length).toBeGreaterThan(20);
    expect(outcomes.filter((outcome) => outcome.status !== 200)).toEqual([]);
  }, 240_000);

  test('the Temporal server restarted mid-run: every accepted run completes, once', async () => {
    const flagName = 'temporal-is-back';
    // A records its effect, then waits for the flag: provably mid-run while the server is down.
    const stepA = `async function main(args) {
        await sdk.createDatastore({ name: 'effect-' + args.workflow_execution_id + '-a', data: [['x'], [1]] });
        for (;;) {
          const flags = await sdk.listDatastores({ query: { filters: [['name', '=', '${flagName}']] } });
          if (flags.datastores.length > 0) return { step: 'a' };
        }
      }`;
    const stepB = `async function main(args) {
        await sdk.createDatastore({ name: 'effect-' + args.workflow_execution_id + '-b', data: [['x'], [1]] });
        return { step: 'b' };
      }`;
    const [s, a, b, e] = [workerId(), workerId(), workerId(), workerId()];
    const workflowId = await store({
      name: 'Across a Temporal restart',
      workers: [
        { id: s, name: 'Start', type: 'STARTER', next: [a] },
        { id: a, name: 'A', type: 'BASIC', script: stepA, next: [b] },
        { id: b, name: 'B', type: 'BASIC', script: stepB, next: [e] },
        { id: e, name: 'End', type: 'ENDER' },
      ],
    });
    const effects = (id: string, step: string) =>
      db('entities').where({
        account_id: t.account.accountId,
        kind: 'datastore',
        name: `effect-${id}-${step}`,
      });
    const accepted: string[] = [];
    for (let i = 0; i < 3; i++) accepted.push(await startRun(workflowId));
    await until('the first runs to be in step A', async () => {
      for (const id of accepted) if ((await effects(id, 'a')).length === 0) return undefined;
      return true;
    });
    await t.temporal.terminate(60_000);
    expect(t.temporal.lastExit()).toBe('exit 0');
    // Accepted while the server is down: they wait in the run outbox.
    for (let i = 0; i < 3; i++) accepted.push(await startRun(workflowId));
    await t.temporal.start();
    expect((await call('POST', '/v2/datastores', { name: flagName, data: [['x'], [1]] })).status).toBe(200);

    for (const id of accepted) expect((await ended(workflowId, id, 180_000)).run_status).toBe('SUCCEEDED');
    const rows = await db('workflow_executions').where({ workflow_id: workflowId });
    expect(rows.map((row) => row.id).sort()).toEqual([...accepted].sort());
    for (const id of accepted) {
      for (const step of ['a', 'b']) {
        expect({ id, step, count: (await effects(id, step)).length }).toEqual({ id, step, count: 1 });
      }
      const steps = await db('worker_executions').where({ workflow_execution_id: id });
      expect(steps.map((row) => row.status)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED']);
      expect(
        await until(`${id} in Temporal`, async () =>
          (await countTemporal(`WorkflowId = "${id}"`)) === 1 ? 1 : undefined,
        ),
      ).toBe(1);
    }
  }, 300_000);

  test('Prometheus, as monitoring/prometheus.yml scrapes it: both api replicas, both workers and the Temporal server answer, and the counters move', async () => {
    const targets = prometheusTargets(t.ports);
    expect(targets.map((target) => target.job).sort()).toEqual(
      ['pas-api', 'pas-api', 'pas-worker', 'pas-worker', 'temporal'].sort(),
    );
    /** Σ of every sample of `name` (all labels) at each target. */
    const scrape = async () =>
      Promise.all(
        targets.map(async ({ job, url }) => {
          const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
          expect({ url, status: res.status }).toEqual({ url, status: 200 });
          return { job, url, text: await res.text() };
        }),
      );
    const total = (text: string, name: string) =>
      text
        .split('\n')
        .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    const before = await scrape();
    // A step allowed longer than 10 s runs as a regular activity (engine/workflows/local-steps.ts):
    // its schedule-to-start latency is one of the dashboard's Temporal series.
    const template = await call('POST', '/v2/worker_templates', {
      name: 'Scraped step',
      script: 'function main() { return { n: 1 }; }',
      timeout_seconds: 60,
    });
    expect(template.status).toBe(200);
    const [s, b, e] = [workerId(), workerId(), workerId()];
    const workflow = await store({
      name: 'Scraped',
      workers: [
        { id: s, name: 'Start', type: 'STARTER', next: [b] },
        { id: b, name: 'Step', type: 'BASIC', template_id: template.body.worker_template.id, next: [e] },
        { id: e, name: 'End', type: 'ENDER' },
      ],
    });
    for (let i = 0; i < 6; i++) expect((await call('GET', '/v2/workspaces')).status).toBe(200);
    // One after another, so that each API replica has read whether workers listen (its first run
    // request starts the read) before the last ones: those are handed to a worker (eager start).
    const runs: string[] = [];
    for (let i = 0; i < 4; i++) runs.push(await startRun(workflow));
    for (const id of runs) expect((await ended(workflow, id)).run_status).toBe('SUCCEEDED');
    const after = await scrape();
    const moved = (job: string, name: string) =>
      after
        .filter((a) => a.job === job)
        .map((a) => total(a.text, name) - total(before.find((b) => b.url === a.url)!.text, name));
    // nginx sends the requests round-robin: both replicas answered some.
    expect(moved('pas-api', 'pas_http_request_duration_seconds_count').every((n) => n > 0)).toBe(true);
    expect(moved('pas-worker', 'pas_runs_finished_total').reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(
      2,
    );
    expect(
      moved('pas-worker', 'pas_step_duration_seconds_count').reduce((a, b) => a + b, 0),
    ).toBeGreaterThanOrEqual(2);
    // Runs handed to a worker started eagerly: Temporal answered their start with the first task.
    expect(
      moved('pas-worker', 'pas_run_starts_eager_total').reduce((a, b) => a + b, 0),
    ).toBeGreaterThanOrEqual(1);
    for (const worker of after.filter((a) => a.job === 'pas-worker')) {
      expect(worker.text).toMatch(/^temporal_worker_task_slots_available\{/m);
      expect(worker.text).toContain('process="worker"');
    }
    // Every Temporal SDK series the dashboard graphs is in a worker's scrape, now that runs have run.
    const workerText = after
      .filter((a) => a.job === 'pas-worker')
      .map((a) => a.text)
      .join('\n');
    const temporalSeries = dashboardMetricNames().filter((name) => name.startsWith('temporal_'));
    expect(temporalSeries.length).toBeGreaterThanOrEqual(4);
    expect(temporalSeries.filter((name) => !new RegExp(`^${name}[{ ]`, 'm').test(workerText))).toEqual([]);
    const server = after.find((a) => a.job === 'temporal')!;
    expect(server.text).toMatch(/^# TYPE \w+ (counter|histogram|gauge)/m);
  });

  test('`temporal workflow list` against the cluster shows the runs, a failed run as Failed', async () => {
    const ok = await store({
      name: 'Listed ok',
      workers: twoSteps('function main() { return { fine: true }; }'),
    });
    const bad = await store({
      name: 'Listed failing',
      workers: twoSteps('function main() { throw new Error("no"); }'),
    });
    const okRun = await startRun(ok);
    const badRun = await startRun(bad);
    expect((await ended(ok, okRun)).run_status).toBe('SUCCEEDED');
    expect((await ended(bad, badRun)).run_status).toBe('FAILED');
    const list = async () =>
      (
        await run(
          t.cliPath,
          ['workflow', 'list', '--address', t.temporalAddress, '--namespace', 'default', '--limit', '1000'],
          {
            maxBuffer: 16 * 1024 * 1024,
          },
        )
      ).stdout.split('\n');
    // The service records a run's end before its Temporal workflow closes, and visibility follows.
    const lines = await until('both runs closed in the list', async () => {
      const all = await list();
      const shown = [okRun, badRun].map((id) => all.find((line) => line.includes(id)));
      return shown.every((line) => line !== undefined && !/^\s*Running\s/.test(line)) ? all : undefined;
    });
    expect(lines.find((line) => line.includes(badRun))).toMatch(/^\s*Failed\s/);
    expect(lines.find((line) => line.includes(okRun))).toMatch(/^\s*Completed\s/);
  });

  const podman = new Podman();
  test(
    `the image's migrate, api and worker, ${imagePath(podman).how}, join the cluster and serve`,
    async () => {
      // The image of test/deploy/image.test.ts (its layers are cached by then), pointed at this cluster's
      // PostgreSQL and Temporal server. Its worker polls a queue of its own, so a run the container API
      // starts can only have run on the container worker.
      const image = await prepareImage(podman, 'localhost/portfolio-analytics-service:test');
      const taskQueue = `image-${randomAlphanumeric(10)}`;
      const deployment = await startImageDeployment(image.runtime, {
        databaseUrl: t.databaseUrl,
        temporalAddress: t.temporalAddress,
        taskQueue,
        // The cluster's .env: the node shares its rate limits (counted in PostgreSQL) with the others.
        variables: COMPOSE_VARIABLES,
      });
      try {
        const direct = async (method: string, url: string, body?: unknown) => {
          const response = await fetch(`${deployment.apiUrl}${url}`, {
            method,
            headers: {
              authorization: t.account.bearer,
              ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          // eslint-disable-next-line @typescript-eslint/no-explicit-any
          return { status: response.status, body: (await response.json()) as any };
        };
        const health = await direct('GET', '/v2/health_check');
        expect({ status: health.status, dependencies: health.body.dependencies }).toMatchObject({
          status: 200,
          dependencies: { database: { status: 'up' }, temporal: { status: 'up' }, workers: { status: 'up' } },
        });
        // The account the topology made (same database) works on the container API.
        const stored = await direct('POST', '/v2/workflows', {
          name: 'From the image',
          workers: twoSteps('function main(args) { return { image: true }; }'),
        });
        expect(stored.status).toBe(200);
        const workflowId = stored.body.workflow.id as string;
        const started = await direct('POST', `/v2/workflows/${workflowId}/run`, { parameters: {} });
        expect(started.status).toBe(202);
        const executionId = started.body.workflow_execution.id as string;
        // Read back through nginx: the container API and the process replicas share one database.
        expect((await ended(workflowId, executionId)).run_status).toBe('SUCCEEDED');
        const described = await temporal.workflow.getHandle(executionId).describe();
        expect(described.taskQueue).toBe(taskQueue);
      } finally {
        await deployment.stop();
        await image.close();
      }
    },
    20 * 60_000,
  );

  test('the schedule fired exactly once per tick all along, with two worker and two api processes', async () => {
    const handle = temporal.schedule.getHandle(`schedule-${scheduled.id}`);
    // At least one tick, however quickly the tests above ran.
    await until(
      'a tick',
      async () => ((await handle.describe()).info.numActionsTaken > 0 ? true : undefined),
      75_000,
    );
    await sleep(5_000);
    const lastTick = Math.floor((Date.now() - 5_000) / 60_000) * 60_000;
    const ticks = Math.floor(lastTick / 60_000) - Math.floor(scheduled.since / 60_000);
    const description = await handle.describe();
    const actions = description.info.recentActions.filter(
      (action) => action.scheduledAt.getTime() <= lastTick,
    );
    expect({
      taken: description.info.numActionsTaken >= ticks,
      skipped: description.info.numActionsSkippedOverlap,
      missed: description.info.numActionsMissedCatchupWindow,
    }).toEqual({ taken: true, skipped: 0, missed: 0 });
    expect(new Set(actions.map((action) => action.scheduledAt.getTime())).size).toBe(actions.length);
    // Each firing made exactly one run, and no run came from anywhere else.
    for (const action of actions) {
      const executionId = scheduledExecutionId(action.action.workflow.workflowId);
      const done = await ended(scheduled.id, executionId);
      expect({ tick: action.scheduledAt, status: done.run_status, trigger: done.trigger }).toEqual({
        tick: action.scheduledAt,
        status: 'SUCCEEDED',
        trigger: 'TIME_BASED',
      });
    }
    const rows = await db('workflow_executions').where({ workflow_id: scheduled.id });
    expect(rows.length).toBe(description.info.numActionsTaken);
  }, 120_000);

  async function countTemporal(query: string): Promise<number> {
    const { count } = await temporal.workflow.count(query);
    return count;
  }
});
