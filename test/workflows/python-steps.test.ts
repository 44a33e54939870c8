import { registry } from '../../engine/platform/metrics';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { publishBuiltinTemplates, builtinTemplateId } from '../../engine/worker-templates/builtin-templates';
import { scheduleIdOf } from '../../engine/workflows/workflow-schedules';
import { createTestAccount, type TestAccount } from '../support/test-app';
import { type Execution, startHarness, type WorkflowHarness, workerId } from './workflow-harness';

/**
 * Python steps in real workflows: a real Temporal worker, real bubblewrap sandboxes, real
 * virtualenvs built by pip from the package index (kept under .venvs/ between runs), real
 * PostgreSQL. JavaScript and Python steps mix in one run; the SDK reaches the run's account only.
 */

/** The shared real data, read in place (never copied into the repository). */
const MARKET = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'market');
const SERIES = ['AAPL', 'JPM', 'XOM'];

type WorkerSpec = Record<string, unknown> & { type: string };

describe('Python steps in workflows', () => {
  let h: WorkflowHarness;
  let other: TestAccount;

  beforeAll(async () => {
    h = await startHarness({
      worker: true,
      environmentBuilder: true,
      sandboxLimits: { timeoutMs: 30_000, memoryLimitMb: 128 },
    });
    other = await createTestAccount(h.db);
    await publishBuiltinTemplates(h.db);
  }, 120_000);
  afterAll(() => h.close());

  async function chain(name: string, workers: WorkerSpec[], who?: TestAccount) {
    const ids = [workerId(), ...workers.map(() => workerId()), workerId()];
    const nodes = [
      { id: ids[0], name: 'Start', type: 'STARTER', next: [ids[1]] },
      ...workers.map((worker, i) => ({
        id: ids[i + 1],
        name: `Step ${i + 1}`,
        ...worker,
        next: [ids[i + 2]],
      })),
      { id: ids[ids.length - 1], name: 'End', type: 'ENDER' },
    ];
    return { workflow: await h.store({ name, workers: nodes }, who), ids };
  }

  async function runToEnd(
    workflowId: string,
    parameters: object = {},
    who?: TestAccount,
  ): Promise<Execution> {
    const started = await h.run(workflowId, parameters, who);
    return h.pollUntilEnded(workflowId, started.id, who);
  }

  async function stepOf(execution: Execution, worker: string) {
    const rows = (await h
      .db('worker_executions')
      .where({ workflow_execution_id: execution.id, worker_id: worker })
      .select('id')) as Array<{ id: string }>;
    return h.workerExecution(rows[0]!.id);
  }

  async function publish(body: object, who?: TestAccount) {
    const res = await h.call('POST', '/v2/worker_templates', body, who);
    if (res.statusCode !== 200) throw new Error(`publish: ${res.statusCode} ${res.body}`);
    return res.json().worker_template as Record<string, unknown> & { id: string };
  }

  async function untilSettled(id: string): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 300_000;
    for (;;) {
      const res = await h.call('GET', `/v2/worker_templates/${id}`);
      const template = res.json().worker_template;
      if (template.container_status !== 'PENDING') return template;
      if (Date.now() > deadline) throw new Error(`template ${id} stayed PENDING`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  test('metrics (issue 32): runs by trigger and status, steps by runtime and outcome, a Python limit kill', async () => {
    const read = async (name: string, labels: Record<string, string>, series = name) => {
      const { values } = await registry.getSingleMetric(name)!.get();
      const found = values.find(
        (v) =>
          ((v as { metricName?: string }).metricName ?? name) === series &&
          Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l),
      );
      return found?.value ?? 0;
    };
    const snapshot = async () => ({
      started: await read('pas_runs_started_total', { trigger: 'API' }),
      succeeded: await read('pas_runs_finished_total', { trigger: 'API', status: 'SUCCEEDED' }),
      failed: await read('pas_runs_finished_total', { trigger: 'API', status: 'FAILED' }),
      runSeconds: await read(
        'pas_run_duration_seconds',
        { trigger: 'API', status: 'FAILED' },
        'pas_run_duration_seconds_count',
      ),
      jsCompleted: await read(
        'pas_step_duration_seconds',
        { runtime: 'javascript', outcome: 'completed' },
        'pas_step_duration_seconds_count',
      ),
      pythonError: await read(
        'pas_step_duration_seconds',
        { runtime: 'python', outcome: 'error' },
        'pas_step_duration_seconds_count',
      ),
      pythonTimeout: await read('pas_sandbox_limit_kills_total', { runtime: 'python', limit: 'timeout' }),
    });
    const before = await snapshot();
    const slow = await publish({
      name: 'Too slow (Python)',
      script_runtime: 'python3.11',
      script_entry_point: 'main',
      timeout_seconds: 1,
      script: ['import time', '', 'def main(args):', '    time.sleep(5)', '    return 1'].join('\n'),
    });
    const ok = await chain('Metrics ok', [{ type: 'BASIC', script: 'function main() { return 1 }' }]);
    const failing = await chain('Metrics limit', [{ type: 'BASIC', template_id: slow.id }]);
    expect((await runToEnd(ok.workflow.id)).run_status).toBe('SUCCEEDED');
    expect((await runToEnd(failing.workflow.id)).run_status).toBe('FAILED');
    const after = await snapshot();
    expect({
      started: after.started - before.started,
      succeeded: after.succeeded - before.succeeded,
      failed: after.failed - before.failed,
      runSeconds: after.runSeconds - before.runSeconds,
      pythonError: after.pythonError - before.pythonError,
      pythonTimeout: after.pythonTimeout - before.pythonTimeout,
    }).toEqual({ started: 2, succeeded: 1, failed: 1, runSeconds: 1, pythonError: 1, pythonTimeout: 1 });
    // The script step of the run that succeeded (a STARTER or ENDER without a script runs none).
    expect(after.jsCompleted - before.jsCompleted).toBe(1);
    const text = await registry.metrics();
    // Counted where a template's environment is built (or found built): worker-templates tests build them.
    expect(text).toContain('# TYPE pas_python_environment_builds_total counter');
  });

  test('JavaScript and Python steps mix in one run: same arguments, results passed on, logs kept', async () => {
    const template = await publish({
      name: 'Double (Python)',
      script_runtime: 'python3.11',
      script_entry_point: 'double',
      script: [
        'def double(args):',
        '    print("inputs", args["inputs"])',
        '    keys = sorted(args)',
        '    return {"doubled": [x * 2 for x in args["inputs"]["values"]], "keys": keys,',
        '            "factor": args["script_inputs"]["factor"]}',
      ].join('\n'),
      form_inputs: [{ id: 'factor', type: 'number', default: 3 }],
    });
    expect(template).toMatchObject({
      script_runtime: 'python3.11',
      container_status: 'SUCCESS',
      requirements: [],
    });
    const { workflow, ids } = await chain('Mixed', [
      {
        type: 'BASIC',
        script: 'function main(args) { return { values: args.script_inputs.values } }',
        script_inputs: { values: [1, 2, 3] },
      },
      { type: 'BASIC', template_id: template.id },
      {
        type: 'BASIC',
        script_runtime: 'python3.11',
        script: 'def main(args):\n    return sum(args["inputs"]["doubled"]) * args["inputs"]["factor"]\n',
      },
      {
        type: 'BASIC',
        script: 'function main(args) { return { total: args.inputs, kind: typeof args.inputs } }',
      },
    ]);
    const stored = workflow.workers.find((w) => w.id === ids[3]) as Record<string, unknown>;
    expect(stored.script_runtime).toBe('python3.11');
    const execution = await runToEnd(workflow.id);
    expect(execution.run_status).toBe('SUCCEEDED');
    const python = await stepOf(execution, ids[2]!);
    expect(python.status).toBe('COMPLETED');
    expect(python.result).toMatchObject({ doubled: [2, 4, 6], factor: 3 });
    // The same arguments object a JavaScript script receives.
    expect((python.result as { keys: string[] }).keys).toEqual(
      [
        'inputs',
        'inputs_info',
        'parallel_info',
        'parameters',
        'script_inputs',
        'worker_execution_id',
        'worker_id',
        'worker_type',
        'workflow_execution_id',
        'workflow_id',
        'workspace',
      ].sort(),
    );
    expect(python.logs).toEqual([
      expect.objectContaining({ level: 'info', message: "inputs {'values': [1, 2, 3]}" }),
    ]);
    const last = await stepOf(execution, ids[4]!);
    expect(last.result).toEqual({ total: 36, kind: 'number' });
  }, 120_000);

  test('a webhook starts a run whose Python STARTER reads the posted body, then a JavaScript step', async () => {
    const integration = await h.call('POST', '/v2/integrations', { name: 'Python feed', type: 'WEBHOOK' });
    expect(integration.statusCode).toBe(200);
    const [s, j, e] = [workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Python webhook',
      trigger_type: 'FILE_RECEIVED',
      trigger_config: { integration_id: integration.json().integration.id },
      trigger_enabled: true,
      workers: [
        {
          id: s,
          name: 'Start',
          type: 'STARTER',
          script_runtime: 'python3.11',
          script:
            'def main(args):\n    body = args["script_inputs"]["body"]\n    return {"orders": len(body["orders"]), "total": sum(o["qty"] for o in body["orders"])}\n',
          next: [j],
        },
        {
          id: j,
          name: 'Double',
          type: 'BASIC',
          script: 'function main(args) { return { ...args.inputs, double: args.inputs.total * 2 } }',
          next: [e],
        },
        { id: e, name: 'End', type: 'ENDER' },
      ],
    });
    const posted = await h.t.app.inject({
      method: 'POST',
      url: `/v2/integrations/${integration.json().integration.id as string}/webhook?key=${h.account.key.auth_token}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ orders: [{ qty: 2 }, { qty: 5 }] }),
    });
    expect(posted.statusCode).toBeLessThan(300);
    const deadline = Date.now() + 60_000;
    let ended: Execution | undefined;
    while (!ended) {
      const list = await h.call('GET', `/v2/workflows/${workflow.id}/workflow_executions?page_size=10`);
      ended = (list.json().workflow_executions as Execution[]).find((run) => run.run_status !== 'RUNNING');
      if (Date.now() > deadline) throw new Error('the webhook run did not end');
      if (!ended) await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(ended.run_status).toBe('SUCCEEDED');
    const ender = await h.workerExecution(ended.ender_worker_execution_id!);
    expect(ender.result).toEqual({ orders: 2, total: 7, double: 14 });
  }, 120_000);

  test('a schedule’s firing runs a workflow with a Python step', async () => {
    const [s, p, e] = [workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Python schedule',
      trigger_type: 'TIME_BASED',
      // Never due on its own within the test: the schedule is fired by hand.
      trigger_config: { cron: '0 0 1 1 *', timezone: 'UTC' },
      trigger_enabled: true,
      workers: [
        { id: s, name: 'Start', type: 'STARTER', next: [p] },
        {
          id: p,
          name: 'Python',
          type: 'BASIC',
          script_runtime: 'python3.11',
          script:
            'import sys\n\ndef main(args):\n    return {"python": sys.version_info[:2], "type": args["worker_type"]}\n',
          next: [e],
        },
        { id: e, name: 'End', type: 'ENDER' },
      ],
    });
    await h.t.temporal.schedule.getHandle(scheduleIdOf(workflow.id)).trigger();
    const deadline = Date.now() + 60_000;
    let ended: Execution | undefined;
    while (!ended) {
      const list = await h.call('GET', `/v2/workflows/${workflow.id}/workflow_executions?page_size=10`);
      ended = (list.json().workflow_executions as Execution[]).find((run) => run.run_status !== 'RUNNING');
      if (Date.now() > deadline) throw new Error('the scheduled run did not end');
      if (!ended) await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(ended).toMatchObject({ run_status: 'SUCCEEDED', trigger: 'TIME_BASED' });
    expect((await h.workerExecution(ended.ender_worker_execution_id!)).result).toEqual({
      python: [3, 11],
      type: 'BASIC',
    });
    await h.t.temporal.schedule.getHandle(scheduleIdOf(workflow.id)).delete();
  }, 120_000);

  test('a Python error fails its step with the error and its line', async () => {
    const { workflow, ids } = await chain('Fails', [
      { type: 'BASIC', script_runtime: 'python3.11', script: 'def main(args):\n    return 1 / 0\n' },
    ]);
    const execution = await runToEnd(workflow.id);
    expect(execution.run_status).toBe('FAILED');
    const step = await stepOf(execution, ids[1]!);
    expect(step.status).toBe('ERROR');
    expect(step.error_message).toBe('script: ZeroDivisionError: division by zero (worker.py:2)');
  }, 60_000);

  test('other runtimes are refused with a 400 naming the accepted ones; requirements are checked', async () => {
    for (const runtime of ['python3.12', 'python3', 'ruby']) {
      const res = await h.call('POST', '/v2/worker_templates', {
        name: 'x',
        script: 'x',
        script_runtime: runtime,
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(/javascript, typescript, python3\.11/);
    }
    const bad = [
      [{ script_runtime: 'javascript', requirements: ['numpy==2.2.6'] }, /for Python templates/],
      [{ script_runtime: 'python3.11', requirements: ['--index-url=http://evil'] }, /requirement specifier/],
      [{ script_runtime: 'python3.11', requirements: ['git+https://x/y.git'] }, /requirement specifier/],
      [{ script_runtime: 'python3.11', requirements: ['numpy==1', 'NumPy==2'] }, /listed twice/],
      [{ script_runtime: 'python3.11', requirements: 'numpy' }, /list|array/],
      [{ script_runtime: 'python3.11', script_entry_point: '$main' }, /Python function name/],
    ] as const;
    for (const [fields, message] of bad) {
      const res = await h.call('POST', '/v2/worker_templates', {
        name: 'x',
        script: 'def main(a): pass',
        ...fields,
      });
      expect([res.statusCode, res.json().message]).toEqual([400, expect.stringMatching(message)]);
    }
    const inline = await h.call('POST', '/v2/workflows', {
      name: 'Bad runtime',
      workers: [{ id: workerId(), name: 'S', type: 'STARTER', script_runtime: 'python2.7', script: 'x' }],
    });
    expect(inline.statusCode).toBe(400);
    expect(inline.json().message).toMatch(/javascript or python3\.11/);
  });

  test('a template whose environment fails to build is ERROR with the log’s tail, and its step fails clearly', async () => {
    const template = await publish({
      name: 'Broken environment',
      script_runtime: 'python3.11',
      requirements: ['pas-no-such-distribution-x7q==0.0.1'],
      script: 'def main(args):\n    return 1\n',
    });
    expect(template.container_status).toBe('PENDING');
    const settled = await untilSettled(template.id);
    expect(settled.container_status).toBe('ERROR');
    expect((settled.environment as { build_log_tail: string }).build_log_tail).toMatch(
      /pas-no-such-distribution-x7q/,
    );
    const { workflow, ids } = await chain('Not ready', [{ type: 'BASIC', template_id: template.id }]);
    const execution = await runToEnd(workflow.id);
    const step = await stepOf(execution, ids[1]!);
    expect(step.status).toBe('ERROR');
    expect(step.error_message).toMatch(/Python environment failed to build \(container_status ERROR\)/);
  }, 300_000);

  test('the pandas/numpy built-in publishes through PENDING to SUCCESS and computes statistics of a real price datastore', async () => {
    const text = await readFile(path.join(MARKET, 'us_stocks_daily.csv'), 'utf8');
    const [header, ...lines] = text.trim().split('\n');
    const columns = header!.split(',');
    const picks = SERIES.map((name) => columns.indexOf(name));
    const rows = lines
      .filter((line) => line.startsWith('2022-'))
      .map((line) => line.split(','))
      .map((cells) => [cells[0]!, ...picks.map((i) => Number(cells[i]))]);
    const datastore = await h.call('POST', '/v2/datastores', {
      name: 'Prices 2022',
      date: '20221230',
      data: [['date', ...SERIES], ...rows],
    });
    expect(datastore.statusCode).toBe(200);
    const datastoreId = datastore.json().datastore.id as string;

    const id = builtinTemplateId('python-return-statistics');
    const settled = await untilSettled(id);
    expect(settled).toMatchObject({
      container_status: 'SUCCESS',
      script_runtime: 'python3.11',
      builtin: true,
    });
    expect((settled.environment as { build_log_tail: string }).build_log_tail).toMatch(/numpy==2\.2\.6/);

    const { workflow, ids } = await chain('Statistics', [
      { type: 'BASIC', template_id: id, script_inputs: { datastore_id: datastoreId, risk_free_rate: 0.02 } },
    ]);
    const execution = await runToEnd(workflow.id);
    const step = await stepOf(execution, ids[1]!);
    expect([step.status, step.error_message]).toEqual(['COMPLETED', null]);
    const result = step.result as {
      statistics: Array<{
        series: string;
        observations: number;
        annualised_mean: number;
        annualised_volatility: number;
        sharpe_ratio: number;
        max_drawdown: number;
      }>;
      correlation: Record<string, Record<string, number>>;
      first_date: string;
    };
    // An oracle computed here, independently of pandas.
    for (const [k, name] of SERIES.entries()) {
      const prices = rows.map((row) => row[k + 1] as number);
      const returns = prices.slice(1).map((p, i) => Math.log(p / prices[i]!));
      const mean = returns.reduce((a, b) => a + b, 0) / returns.length;
      const variance = returns.reduce((a, r) => a + (r - mean) ** 2, 0) / (returns.length - 1);
      let peak = -Infinity;
      let drawdown = 0;
      for (const p of prices) {
        peak = Math.max(peak, p);
        drawdown = Math.min(drawdown, p / peak - 1);
      }
      const stats = result.statistics.find((s) => s.series === name)!;
      expect(stats.observations).toBe(returns.length);
      expect(stats.annualised_mean).toBeCloseTo(mean * 252, 10);
      expect(stats.annualised_volatility).toBeCloseTo(Math.sqrt(variance * 252), 10);
      expect(stats.sharpe_ratio).toBeCloseTo((mean * 252 - 0.02) / Math.sqrt(variance * 252), 8);
      expect(stats.max_drawdown).toBeCloseTo(drawdown, 10);
      expect(result.correlation[name]![name]).toBeCloseTo(1, 12);
    }
    expect(result.first_date).toBe(rows[0]![0]);
  }, 600_000);

  test('the Python custom-script built-in runs the code input with numpy and pandas', async () => {
    const id = builtinTemplateId('python-custom-script');
    expect(await untilSettled(id)).toMatchObject({ container_status: 'SUCCESS' });
    const code = [
      'frame = pd.DataFrame({"x": inputs["values"]})',
      'return {"mean": float(np.mean(frame["x"])), "scaled": (frame["x"] * params["k"]).tolist()}',
    ].join('\n');
    const { workflow, ids } = await chain('Custom Python', [
      { type: 'BASIC', script: 'function main() { return { values: [1, 2, 3, 6] } }' },
      { type: 'BASIC', template_id: id, script_inputs: { code, params: { k: 10 } } },
      { type: 'BASIC', template_id: id, script_inputs: { code: 'return (' } },
    ]);
    const execution = await runToEnd(workflow.id);
    expect((await stepOf(execution, ids[2]!)).result).toEqual({ mean: 3, scaled: [10, 20, 30, 60] });
    expect((await stepOf(execution, ids[3]!)).error_message).toMatch(/The code does not compile/);
  }, 600_000);

  test('republishing with the same requirements keeps SUCCESS; other requirements go PENDING again', async () => {
    const requirements = ['tzdata==2026.6'];
    const template = await publish({
      name: 'Zones',
      script_runtime: 'python3.11',
      requirements,
      script: 'def main(a):\n    import tzdata\n    return 1\n',
    });
    expect(template.container_status).toBe('PENDING');
    expect((await untilSettled(template.id)).container_status).toBe('SUCCESS');
    const same = await h.call('PUT', `/v2/worker_templates/${template.id}`, {
      description: 'again',
      requirements: [...requirements],
    });
    expect(same.json().worker_template.container_status).toBe('SUCCESS');
    const changed = await h.call('PUT', `/v2/worker_templates/${template.id}`, {
      requirements: ['tzdata==2026.6', 'pytz==2026.6'],
    });
    expect(changed.json().worker_template.container_status).toBe('PENDING');
    expect((await untilSettled(template.id)).container_status).toBe('SUCCESS');
  }, 600_000);

  test('retry from the failed Python step: earlier steps reused, the Python step runs again', async () => {
    const flag = `python-ready-${Date.now()}`;
    const { workflow, ids } = await chain('Retry Python', [
      {
        type: 'BASIC',
        script_runtime: 'python3.11',
        script: 'import random\n\ndef main(args):\n    return {"draw": random.random()}\n',
      },
      {
        type: 'BASIC',
        script_runtime: 'python3.11',
        script: [
          'def main(args):',
          `    found = sdk.listDatastores({"query": {"filters": [["name", "=", "${flag}"]]}})`,
          '    if not found["datastores"]:',
          '        raise RuntimeError("not ready")',
          '    return dict(args["inputs"], ready=True)',
        ].join('\n'),
      },
    ]);
    const failed = await runToEnd(workflow.id);
    expect(failed.run_status).toBe('FAILED');
    const first = await stepOf(failed, ids[1]!);
    expect((await stepOf(failed, ids[2]!)).error_message).toMatch(/RuntimeError: not ready \(worker\.py:4\)/);
    expect((await h.call('POST', '/v2/datastores', { name: flag, data: [['x']] })).statusCode).toBe(200);
    const res = await h.call(
      'POST',
      `/v2/workflows/${workflow.id}/workflow_executions/${failed.id}/retry`,
      {},
    );
    expect(res.statusCode).toBe(202);
    const ended = await h.pollUntilEnded(workflow.id, res.json().workflow_execution.id);
    expect(ended.run_status).toBe('SUCCEEDED');
    const ender = await h.workerExecution(ended.ender_worker_execution_id!);
    expect(ender.result).toEqual({ ...(first.result as object), ready: true });
  }, 120_000);

  test('the Python SDK acts in the run’s account and workspace only, audited as WORKER', async () => {
    const foreign = await h.call(
      'POST',
      '/v2/portfolios',
      { name: 'Theirs', date: '20221228', securities: [] },
      other,
    );
    expect(foreign.statusCode).toBe(200);
    const foreignId = foreign.json().portfolio.id as string;
    const script = [
      'from pas_sdk import SdkError',
      'def main(args):',
      '    made = sdk.createPortfolio({"name": "From Python", "date": "20221228", "securities": [], "workspace": "elsewhere"})',
      '    out = {"made": made["id"], "workspace": made["workspace"]}',
      '    try:',
      `        sdk.retrievePortfolio("${foreignId}")`,
      '        out["foreign"] = "read"',
      '    except SdkError as error:',
      '        out["foreign"] = str(error)',
      `    listed = sdk.listPortfolios({"query": {"filters": [["id", "=", "${foreignId}"]]}})`,
      '    out["listed"] = len(listed["portfolios"])',
      '    try:',
      `        sdk.deletePortfolio("${foreignId}")`,
      '        out["deleted"] = True',
      '    except SdkError as error:',
      '        out["deleted"] = str(error)',
      '    return out',
    ].join('\n');
    const { workflow, ids } = await chain('SDK', [{ type: 'BASIC', script_runtime: 'python3.11', script }]);
    const execution = await runToEnd(workflow.id);
    const step = await stepOf(execution, ids[1]!);
    expect(step.error_message).toBeNull();
    const result = step.result as Record<string, unknown>;
    expect(result.workspace).toBe(execution.workspace ?? 'main');
    expect(result.foreign).toMatch(/not found/i);
    expect(result.listed).toBe(0);
    expect(result.deleted).toMatch(/not found/i);
    const theirs = await h.call('GET', `/v2/portfolios/${foreignId}`, undefined, other);
    expect(theirs.statusCode).toBe(200);
    const trail = await h
      .db('audit_logs')
      .where({ entity_id: result.made as string })
      .select('operation', 'source', 'account_id');
    expect(trail).toEqual([{ operation: 'CREATE', source: 'WORKER', account_id: h.account.accountId }]);
  }, 120_000);
});
