import path from 'node:path';
import { importMarketCsv } from '../../engine/market-data/csv-import';
import { builtinTemplateId, publishBuiltinTemplates } from '../../engine/worker-templates/builtin-templates';
import { SDK_FUNCTIONS } from '../../workers/activities/sdk-bridge';
import { type Execution, startHarness, type WorkflowHarness, workerId } from './workflow-harness';

/**
 * Each built-in worker template run in a real workflow (real Temporal worker, real isolates, real
 * PostgreSQL), and the per-template sandbox limits and publish-time TypeScript on the run path.
 */

/** The shared real data, read in place (never copied into the repository). */
const MARKET = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'market');
const DATE = '20221228';
const BOOK = [
  { id: 'p1', symbol: 'AAPL', quantity: 100 },
  { id: 'p2', symbol: 'JPM', quantity: 200 },
  { id: 'p3', symbol: 'XOM', quantity: 150 },
  { id: 'p4', symbol: 'WMT', quantity: 120 },
];

const id = (folder: string) => builtinTemplateId(folder);

type WorkerSpec = Record<string, unknown> & { type: string };

describe('built-in worker templates in workflows', () => {
  let h: WorkflowHarness;
  let portfolioId: string;

  beforeAll(async () => {
    // The defaults every template without limits of its own runs under: 64 MB and 10 s.
    h = await startHarness({ worker: true, sandboxLimits: { timeoutMs: 10_000, memoryLimitMb: 64 } });
    await publishBuiltinTemplates(h.db);
    await importMarketCsv(h.db, path.join(MARKET, 'sp500_index_1990_2022.csv'));
    await importMarketCsv(h.db, path.join(MARKET, 'us_stocks_daily.csv'), {
      columns: ['AAPL', 'JPM', 'XOM', 'WMT'],
    });
    const created = await h.call('POST', '/v2/portfolios', {
      name: 'Book',
      date: DATE,
      base_currency: 'USD',
      securities: BOOK,
    });
    expect(created.statusCode).toBe(200);
    portfolioId = created.json().portfolio.id;
  }, 180_000);
  afterAll(() => h.close());

  /** STARTER → the given workers in a line → ENDER, stored; returns the workflow and worker ids. */
  async function chain(name: string, workers: WorkerSpec[]) {
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
    const workflow = await h.store({ name, workers: nodes });
    return { workflowId: workflow.id, ids };
  }

  async function runToEnd(workflowId: string, parameters: object = {}): Promise<Execution> {
    const started = await h.run(workflowId, parameters);
    return h.pollUntilEnded(workflowId, started.id);
  }

  async function enderResult(execution: Execution): Promise<unknown> {
    // The failure (null on success) shows why in the diff when a run did not succeed.
    const failure = (execution.resume as { failure?: unknown } | null)?.failure ?? null;
    expect({ run_status: execution.run_status, failure }).toEqual({ run_status: 'SUCCEEDED', failure: null });
    return (await h.workerExecution(execution.ender_worker_execution_id!)).result;
  }

  /** The worker execution of one worker of a run. */
  async function executionOf(execution: Execution, worker: string) {
    return h
      .db('worker_executions')
      .where({ workflow_execution_id: execution.id, worker_id: worker })
      .first();
  }

  const retrievedPortfolio = async () =>
    (await h.call('GET', `/v2/portfolios/${portfolioId}`)).json().portfolio;

  describe('retrieve portfolio', () => {
    test('by the portfolio_id of the run parameters (the previous output) or of its input', async () => {
      const fromParameters = await chain('Retrieve from parameters', [
        { type: 'BASIC', template_id: id('retrieve-portfolio') },
      ]);
      const expected = await retrievedPortfolio();
      expect(expected.securities).toHaveLength(4);
      const ended = await runToEnd(fromParameters.workflowId, { portfolio_id: portfolioId });
      expect(await enderResult(ended)).toEqual(expected);

      const fromInput = await chain('Retrieve from input', [
        {
          type: 'BASIC',
          template_id: id('retrieve-portfolio'),
          script_inputs: { portfolio_id: portfolioId },
        },
      ]);
      expect(await enderResult(await runToEnd(fromInput.workflowId))).toEqual(expected);
    });

    test('no id anywhere, or an unknown one: the worker ends ERROR saying why', async () => {
      const { workflowId, ids } = await chain('Retrieve nothing', [
        { type: 'BASIC', template_id: id('retrieve-portfolio') },
      ]);
      const missing = await runToEnd(workflowId, {});
      expect(missing.run_status).toBe('FAILED');
      expect((await executionOf(missing, ids[1]!)).error_message).toMatch(
        /No portfolio id: set the portfolio_id/,
      );
      const unknown = await runToEnd(workflowId, { portfolio_id: 'port_0000000000000000000000000' });
      expect((await executionOf(unknown, ids[1]!)).error_message).toMatch(
        /Portfolio port_0000000000000000000000000 not found/,
      );
    });
  });

  describe('calculations', () => {
    test('stress test on the retrieved portfolio: the API endpoint answers the same numbers', async () => {
      const { workflowId } = await chain('Stress', [
        { type: 'BASIC', template_id: id('retrieve-portfolio') },
        {
          type: 'BASIC',
          template_id: id('stress-test'),
          script_inputs: { magnitude: -0.2, horizon: 20, confidence: '99%' },
        },
      ]);
      const result = (await enderResult(await runToEnd(workflowId, { portfolio_id: portfolioId }))) as {
        stress_test: { results: Array<{ id: string }>; magnitude: number };
      };
      const api = await h.call('POST', '/v2/calculations/stress_test', {
        portfolio_id: portfolioId,
        shock: 'IND:SPX',
        magnitude: -0.2,
        horizon: 20,
        confidence: '99%',
        projection: ['IND:SPX'],
      });
      expect(api.statusCode).toBe(200);
      expect(result).toEqual(api.json());
      expect(result.stress_test.magnitude).toBe(-0.2);
      expect(result.stress_test.results.map((r) => r.id).sort()).toEqual(['p1', 'p2', 'p3', 'p4']);
    });

    test('risk attribution by portfolio_id input: the API endpoint answers the same numbers', async () => {
      const { workflowId } = await chain('Attribution', [
        {
          type: 'BASIC',
          template_id: id('risk-attribution'),
          script_inputs: { portfolio_id: portfolioId, risk_measure: 'cvar' },
        },
      ]);
      const result = (await enderResult(await runToEnd(workflowId))) as {
        risk_attribution: { results: Array<{ id: string; mctr: Array<{ projection: string }> }> };
      };
      const api = await h.call('POST', '/v2/calculations/risk_attribution', {
        portfolio_id: portfolioId,
        risk_measure: 'cvar',
      });
      expect(api.statusCode).toBe(200);
      expect(result).toEqual(api.json());
      expect(result.risk_attribution.results).toHaveLength(4);
      expect(result.risk_attribution.results[0]!.mctr.map((m) => m.projection)).toEqual([
        'IND:SPX',
        'residual',
      ]);
    });
  });

  describe('analytics templates (§16–§21)', () => {
    /** The datastore a template wrote holds every number of the endpoint's answer. */
    async function expectTabled(result: { datastore_id: string }, answer: unknown, name: string) {
      const datastore = (await h.call('GET', `/v2/datastores/${result.datastore_id}`)).json().datastore;
      expect(datastore.name).toBe(name);
      const [, ...rows] = datastore.data as unknown[][];
      const cells = new Set(rows.flat().filter((cell) => typeof cell === 'number'));
      const numbers: number[] = [];
      const collect = (value: unknown): void => {
        if (typeof value === 'number') numbers.push(value);
        else if (value !== null && typeof value === 'object') Object.values(value).forEach(collect);
      };
      collect(answer);
      expect(numbers.length).toBeGreaterThan(3);
      expect(numbers.filter((n) => !cells.has(n))).toEqual([]);
    }

    test('marginal tracking error and backtest: the endpoints’ numbers, written to datastores', async () => {
      const benchmark = await h.call('POST', '/v2/portfolios', {
        name: 'Benchmark',
        securities: [{ id: 'b', symbol: 'AAPL', quantity: 10 }],
      });
      const benchmarkId = benchmark.json().portfolio.id as string;
      const { workflowId } = await chain('Book analytics', [
        {
          type: 'BASIC',
          template_id: id('marginal-tracking-error'),
          script_inputs: {
            portfolio_id: portfolioId,
            benchmark_id: benchmarkId,
            EWMA: true,
            datastore_name: 'TE',
          },
        },
      ]);
      const te = (await enderResult(await runToEnd(workflowId))) as Record<string, unknown> & {
        datastore_id: string;
      };
      const teApi = await h.call('POST', '/v2/calculations/marginal_tracking_error', {
        portfolio1: portfolioId,
        portfolio2: benchmarkId,
        EWMA: true,
      });
      expect(teApi.statusCode).toBe(200);
      expect(te.marginal_tracking_error).toEqual(teApi.json().marginal_tracking_error);
      await expectTabled(te, teApi.json().marginal_tracking_error, 'TE');

      const inputs = {
        backtest_periodicity: 'monthly',
        projection_tickers: ['AAPL'],
        backtest_date1: '2022-01-03',
      };
      const run = await chain('Backtest', [
        {
          type: 'BASIC',
          template_id: id('backtest'),
          script_inputs: { portfolio_id: portfolioId, datastore_name: 'Backtest of Book', ...inputs },
        },
      ]);
      const backtest = (await enderResult(await runToEnd(run.workflowId))) as Record<string, unknown> & {
        datastore_id: string;
      };
      const api = await h.call('POST', '/v2/calculations/backtest', { portfolio_id: portfolioId, ...inputs });
      expect(api.statusCode).toBe(200);
      expect(backtest.backtest).toEqual(api.json().backtest);
      await expectTabled(backtest, api.json().backtest, 'Backtest of Book');
      // The other tests list the workspace's portfolios: only Book.
      expect((await h.call('DELETE', `/v2/portfolios/${benchmarkId}`)).statusCode).toBe(200);
    });

    test.each([
      ['exposure', 'exposure', { aggregation: 'exposure' }, {}],
      ['parametric-risk-attribution', 'parametric_risk_attribution', { confidence: '99%' }, {}],
      ['sensitivity', 'sensitivity', { compute_notional: true }, {}],
      [
        'underlying-stress-sensitivity',
        'underlying_stress_sensitivity',
        {},
        { stress_values: [-0.1, -0.05, 0, 0.05, 0.1] },
      ],
      ['properties', 'properties', { horizon: 1 }, {}],
    ] as const)(
      '%s: the endpoint’s numbers, written to a datastore row by row',
      async (folder, kind, inputs, defaults) => {
        const { workflowId } = await chain(folder, [
          {
            type: 'BASIC',
            template_id: id(folder),
            script_inputs: { portfolio_id: portfolioId, datastore_name: `${kind} of Book`, ...inputs },
          },
        ]);
        const result = (await enderResult(await runToEnd(workflowId))) as Record<string, unknown> & {
          datastore_id: string;
        };
        const api = await h.call('POST', `/v2/calculations/${kind}`, {
          portfolio_id: portfolioId,
          ...inputs,
          ...defaults,
        });
        expect(api.statusCode).toBe(200);
        expect(result[kind]).toEqual(api.json()[kind]);
        const datastore = (await h.call('GET', `/v2/datastores/${result.datastore_id}`)).json().datastore;
        expect(datastore.name).toBe(`${kind} of Book`);
        const [heading, ...rows] = datastore.data as unknown[][];
        expect(heading![0]).toBe(kind === 'properties' ? 'property' : 'id');
        // Every number of the answer is in the table.
        const cells = new Set(rows.flat().filter((cell) => typeof cell === 'number'));
        const numbers: number[] = [];
        const collect = (value: unknown): void => {
          if (typeof value === 'number') numbers.push(value);
          else if (value !== null && typeof value === 'object') Object.values(value).forEach(collect);
        };
        collect(api.json()[kind]);
        expect(numbers.length).toBeGreaterThan(3);
        expect(numbers.filter((n) => !cells.has(n))).toEqual([]);
      },
    );
  });

  describe('saving', () => {
    const ROWS = [
      { name: 'plain', note: 'a,b', value: 1.5 },
      { name: 'quoted', note: 'say "hi"', value: -2 },
      { name: 'lines', note: 'one\ntwo', value: null, extra: true },
      { name: 'formula', note: '=SUM(A1:A2)', value: 0 },
      { name: 'negative text', note: '-5', value: 3 },
      { name: ' padded', note: '@home' },
    ];
    const listStarter = 'function main(args) { return args.script_inputs.rows; }';

    test('save datastore: a list of objects becomes a table with a heading row; datastore_id updates', async () => {
      const ids = [workerId(), workerId(), workerId()];
      const workflow = await h.store({
        name: 'To datastore',
        workers: [
          { id: ids[0], name: 'Rows', type: 'STARTER', script: listStarter, next: [ids[1]] },
          {
            id: ids[1],
            name: 'Save',
            type: 'BASIC',
            template_id: id('save-datastore'),
            script_inputs: { name: 'Saved rows', tags: ['From Workflow'] },
            next: [ids[2]],
          },
          { id: ids[2], name: 'End', type: 'ENDER' },
        ],
      });
      const result = (await enderResult(await runToEnd(workflow.id, { rows: ROWS }))) as Record<
        string,
        unknown
      >;
      expect(result).toEqual({
        datastore_id: expect.stringMatching(/^dats_/),
        name: 'Saved rows',
        columns: 4,
        rows: 6,
      });
      const stored = (await h.call('GET', `/v2/datastores/${result.datastore_id as string}`)).json()
        .datastore;
      expect(stored).toMatchObject({ name: 'Saved rows', tags: ['from_workflow'], workspace: 'main' });
      expect(stored.data).toEqual([
        ['name', 'note', 'value', 'extra'],
        ['plain', 'a,b', 1.5, null],
        ['quoted', 'say "hi"', -2, null],
        ['lines', 'one\ntwo', null, 'true'],
        ['formula', '=SUM(A1:A2)', 0, null],
        ['negative text', '-5', 3, null],
        [' padded', '@home', null, null],
      ]);

      const update = await chain('Update datastore', [
        {
          type: 'BASIC',
          template_id: id('save-datastore'),
          script_inputs: { name: 'Renamed', datastore_id: result.datastore_id },
        },
      ]);
      // The STARTER hands on its parameters: an object becomes key/value rows.
      const again = (await enderResult(await runToEnd(update.workflowId, { a: 1, b: 'two' }))) as {
        datastore_id: string;
      };
      expect(again.datastore_id).toBe(result.datastore_id);
      const updated = (await h.call('GET', `/v2/datastores/${again.datastore_id}`)).json().datastore;
      expect(updated).toMatchObject({ name: 'Renamed', version: '2' });
      expect(updated.data).toEqual([
        ['key', 'value'],
        ['a', 1],
        ['b', 'two'],
      ]);
    });

    test('save file as CSV: RFC 4180 quoting, CRLF, formula protection; the file is text/csv', async () => {
      const ids = [workerId(), workerId(), workerId()];
      const workflow = await h.store({
        name: 'To CSV',
        workers: [
          { id: ids[0], name: 'Rows', type: 'STARTER', script: listStarter, next: [ids[1]] },
          {
            id: ids[1],
            name: 'CSV',
            type: 'BASIC',
            template_id: id('save-file-csv'),
            script_inputs: { name: 'rows' },
            next: [ids[2]],
          },
          { id: ids[2], name: 'End', type: 'ENDER' },
        ],
      });
      const result = (await enderResult(await runToEnd(workflow.id, { rows: ROWS }))) as Record<
        string,
        unknown
      >;
      expect(result).toEqual({
        file_id: expect.stringMatching(/^file_/),
        name: 'rows.csv',
        url: expect.stringMatching(/^\/file\//),
        rows: 6,
      });
      const file = (await h.call('GET', `/v2/files/${result.file_id as string}`)).json().file;
      expect(file).toMatchObject({ name: 'rows.csv', content_type: 'text/csv', workspace: 'main' });
      expect(Buffer.from(file.data, 'base64').toString('utf8')).toBe(
        [
          'name,note,value,extra',
          'plain,"a,b",1.5,',
          'quoted,"say ""hi""",-2,',
          'lines,"one\ntwo",,true',
          "formula,'=SUM(A1:A2),0,",
          'negative text,-5,3,',
          '" padded",\'@home,,',
          '',
        ].join('\r\n'),
      );
    });

    test('save file as CSV from a stress test: one row per security, measure and projection', async () => {
      const { workflowId } = await chain('Stress to CSV', [
        { type: 'BASIC', template_id: id('stress-test'), script_inputs: { portfolio_id: portfolioId } },
        {
          type: 'BASIC',
          template_id: id('save-file-csv'),
          script_inputs: { name: 'stress.csv', header: true, protect_formulas: false },
        },
      ]);
      const result = (await enderResult(await runToEnd(workflowId))) as { file_id: string; rows: number };
      const stress = (
        await h.call('POST', '/v2/calculations/stress_test', { portfolio_id: portfolioId, magnitude: -0.1 })
      ).json().stress_test as {
        results: Array<Record<string, Array<{ projection: string; value: number }>>>;
      };
      const expected = stress.results.flatMap((r) =>
        (['ev', 'cvar_neg', 'cvar_pos'] as const).flatMap((measure) =>
          r[measure]!.map((part) => `${String(r.id)},${measure},${part.projection},${part.value}`),
        ),
      );
      expect(result.rows).toBe(expected.length);
      const file = (await h.call('GET', `/v2/files/${result.file_id}`)).json().file;
      expect(Buffer.from(file.data, 'base64').toString('utf8')).toBe(
        ['id,measure,projection,value', ...expected, ''].join('\r\n'),
      );
    });
  });

  describe('reports', () => {
    test('generate report from a stress test: a bar chart and a table of the totals per security', async () => {
      const { workflowId } = await chain('Stress report', [
        { type: 'BASIC', template_id: id('stress-test'), script_inputs: { portfolio_id: portfolioId } },
        { type: 'BASIC', template_id: id('generate-report'), script_inputs: { name: 'Stress report' } },
      ]);
      const result = (await enderResult(await runToEnd(workflowId))) as Record<string, unknown>;
      expect(result).toEqual({
        report_id: expect.stringMatching(/^repo_/),
        name: 'Stress report',
        url: expect.any(String),
        relative_url: expect.stringMatching(/^\/report\//),
        absolute_url: expect.stringMatching(/^http:\/\/pas\.test\/report\//),
        widgets: 2,
      });
      const report = (await h.call('GET', `/v2/reports/${result.report_id as string}`)).json().report;
      expect(report).toMatchObject({ name: 'Stress report', authorization: 'PRIVATE', workspace: 'main' });
      expect(report.widgets.map((w: { name: string }) => w.name)).toEqual([
        'Expected P&L, shock -0.1',
        'Stress test by security',
      ]);
      const stored = await h.db('entities').where({ kind: 'report', id: result.report_id }).first();
      const stress = (
        await h.call('POST', '/v2/calculations/stress_test', { portfolio_id: portfolioId, magnitude: -0.1 })
      ).json().stress_test as { results: Array<{ id: string; ev: Array<{ value: number }> }> };
      const bar = stored.body.widgets[0];
      expect(bar).toMatchObject({ type: 'bar', labels: stress.results.map((r) => r.id) });
      expect(bar.values).toEqual(stress.results.map((r) => r.ev.reduce((s, p) => s + p.value, 0)));
      expect(stored.body.widgets[1]).toMatchObject({
        type: 'table',
        columns: ['id', 'ev', 'cvar_neg', 'cvar_pos'],
      });
      expect(stored.body.widgets[1].rows).toHaveLength(4);
    });

    test('generate report from any other output: a text widget holding it as JSON', async () => {
      const { workflowId } = await chain('Text report', [
        { type: 'BASIC', template_id: id('generate-report'), script_inputs: { authorization: 'PUBLIC' } },
      ]);
      const result = (await enderResult(await runToEnd(workflowId, { note: 'hello' }))) as {
        report_id: string;
      };
      const stored = await h.db('entities').where({ kind: 'report', id: result.report_id }).first();
      expect(stored.name).toBe('Workflow report');
      expect(stored.body.authorization).toBe('PUBLIC');
      expect(stored.body.widgets).toEqual([
        {
          id: expect.any(String),
          name: 'Output',
          type: 'text',
          text: JSON.stringify({ note: 'hello' }, null, 2),
        },
      ]);
    });
  });

  describe('custom script', () => {
    test('the code input runs in the isolate with args, inputs, params and the SDK', async () => {
      const { workflowId } = await chain('Custom', [
        {
          type: 'BASIC',
          template_id: id('custom-script'),
          script_inputs: {
            code: [
              'const listed = await sdk.listPortfolios();',
              'return {',
              '  doubled: inputs.values.map((v) => v * params.factor),',
              '  workspace: args.workspace,',
              '  portfolios: listed.portfolios.map((p) => p.name),',
              '};',
            ].join('\n'),
            params: { factor: 2 },
          },
        },
      ]);
      expect(await enderResult(await runToEnd(workflowId, { values: [1, 2, 3] }))).toEqual({
        doubled: [2, 4, 6],
        workspace: 'main',
        portfolios: ['Book'],
      });
    });

    test('code that does not compile, or throws, ends the worker ERROR with the reason', async () => {
      const broken = await chain('Custom broken', [
        { type: 'BASIC', template_id: id('custom-script'), script_inputs: { code: 'return (;' } },
      ]);
      const failed = await runToEnd(broken.workflowId);
      expect(failed.run_status).toBe('FAILED');
      expect((await executionOf(failed, broken.ids[1]!)).error_message).toMatch(
        /^script: The code does not compile: Unexpected token/,
      );
      const throwing = await chain('Custom throws', [
        {
          type: 'BASIC',
          template_id: id('custom-script'),
          script_inputs: { code: 'throw new Error("nope");' },
        },
      ]);
      const threw = await runToEnd(throwing.workflowId);
      expect((await executionOf(threw, throwing.ids[1]!)).error_message).toMatch(/^script: nope/);
      // The form marks code mandatory: a worker without it is refused when the workflow is stored.
      const [s, b, e] = [workerId(), workerId(), workerId()];
      const refused = await h.call('POST', '/v2/workflows', {
        name: 'No code',
        workers: [
          { id: s, name: 'S', type: 'STARTER', next: [b] },
          { id: b, name: 'B', type: 'BASIC', template_id: id('custom-script'), next: [e] },
          { id: e, name: 'E', type: 'ENDER' },
        ],
      });
      expect(refused.json()).toEqual({
        code: 400,
        message: `Worker ${b} (template ${id('custom-script')}): the required script input "code" is missing.`,
      });
    });
  });

  describe('forker and barrier', () => {
    async function forkJoin(forker: object, branch: string, barrier: object) {
      const ids = [workerId(), workerId(), workerId(), workerId(), workerId()];
      const workflow = await h.store({
        name: 'Fork and join',
        workers: [
          { id: ids[0], name: 'Start', type: 'STARTER', next: [ids[1]] },
          {
            id: ids[1],
            name: 'Split',
            type: 'FORKER',
            template_id: id('forker'),
            script_inputs: forker,
            next: [ids[2]],
          },
          {
            id: ids[2],
            name: 'Each',
            type: 'BASIC',
            template_id: id('custom-script'),
            script_inputs: { code: branch },
            next: [ids[3]],
          },
          {
            id: ids[3],
            name: 'Join',
            type: 'BARRIER',
            template_id: id('barrier'),
            script_inputs: barrier,
            next: [ids[4]],
          },
          { id: ids[4], name: 'End', type: 'ENDER' },
        ],
      });
      return workflow.id;
    }

    test('chunks of the list under a field, one branch each; the barrier joins in branch order', async () => {
      const workflowId = await forkJoin(
        { field: 'values', chunk_size: 2 },
        'return { sum: inputs.reduce((a, b) => a + b, 0), branch: args.parallel_info.index };',
        { field: 'sum' },
      );
      const ended = await runToEnd(workflowId, { values: [1, 2, 3, 4, 5] });
      expect(await enderResult(ended)).toEqual({ items: [3, 7, 5], count: 3 });
      const branches = await h
        .db('worker_executions')
        .where({ workflow_execution_id: ended.id, worker_type: 'BASIC' })
        .orderBy('parallel_index');
      expect(branches.map((b) => [b.parallel_index, b.result])).toEqual([
        [0, { sum: 3, branch: 0 }],
        [1, { sum: 7, branch: 1 }],
        [2, { sum: 5, branch: 2 }],
      ]);
    });

    test('one item per branch from the list input; the barrier flattens the branch lists', async () => {
      const workflowId = await forkJoin({ list: [[1, 2], [3], []] }, 'return inputs.map((v) => v * 10);', {
        flatten: true,
      });
      expect(await enderResult(await runToEnd(workflowId))).toEqual({ items: [10, 20, 30], count: 3 });
    });

    test('a portfolio splits into its securities', async () => {
      const workflowId = await forkJoin({}, 'return inputs.symbol;', {});
      const portfolio = await retrievedPortfolio();
      expect(await enderResult(await runToEnd(workflowId, { securities: portfolio.securities }))).toEqual({
        items: ['AAPL', 'JPM', 'XOM', 'WMT'],
        count: 4,
      });
    });
  });

  describe('per-template sandbox limits', () => {
    const busy =
      'function main() { const end = Date.now() + 3000; while (Date.now() < end) {} return { done: true }; }';
    // About 100 MB of live arrays of doubles: over the 64 MB default, well under 256 MB.
    const hungry =
      'function main() { const keep = []; for (let i = 0; i < 100; i++) keep.push(new Array(1 << 17).fill(i + 0.5)); return { kept: keep.length }; }';

    async function templateRun(fields: object) {
      const template = await h.call('POST', '/v2/worker_templates', { name: 'Limited', ...fields });
      expect(template.statusCode).toBe(200);
      const { workflowId, ids } = await chain('Limited', [
        { type: 'BASIC', template_id: template.json().worker_template.id },
      ]);
      const ended = await runToEnd(workflowId);
      return { ended, step: await executionOf(ended, ids[1]!) };
    }

    test('timeout_seconds 1: a 3 s busy loop ends ERROR (timeout); under the 10 s default it completes', async () => {
      const limited = await templateRun({ script: busy, timeout_seconds: 1 });
      expect(limited.ended.run_status).toBe('FAILED');
      expect(limited.step).toMatchObject({
        status: 'ERROR',
        error_message: 'timeout: Script timed out after 1000 ms',
      });
      const unlimited = await templateRun({ script: busy });
      expect(unlimited.step).toMatchObject({ status: 'COMPLETED', result: { done: true } });
    }, 60_000);

    test('memory_limit_mb 256 allocates what the 64 MB default cannot', async () => {
      const roomy = await templateRun({ script: hungry, memory_limit_mb: 256 });
      expect(roomy.step).toMatchObject({ status: 'COMPLETED', result: { kept: 100 } });
      const cramped = await templateRun({ script: hungry });
      expect(cramped.step).toMatchObject({
        status: 'ERROR',
        error_message: 'memory: Script exceeded the memory limit of 64 MB',
      });
      const lowered = await templateRun({ script: hungry, memory_limit_mb: 32 });
      expect(lowered.step.error_message).toBe('memory: Script exceeded the memory limit of 32 MB');
    }, 60_000);
  });

  describe('TypeScript published once', () => {
    const TS =
      'export function main(args: { inputs: { n: number } }): { twice: number } { return { twice: args.inputs.n * 2 }; }';

    test('runs use the JavaScript stored at publish time, not the source', async () => {
      const template = (
        await h.call('POST', '/v2/worker_templates', {
          name: 'Typed',
          script_runtime: 'typescript',
          script: TS,
        })
      ).json().worker_template;
      const { workflowId } = await chain('Typed', [{ type: 'BASIC', template_id: template.id }]);
      expect(await enderResult(await runToEnd(workflowId, { n: 4 }))).toEqual({ twice: 8 });
      // Corrupt the stored source behind the API's back: a run that transpiled again would fail.
      await h
        .db('entities')
        .where({ kind: 'worker_template', id: template.id })
        .update({
          body: h.db.raw(`jsonb_set(body, '{script}', to_jsonb('this is not TypeScript ('::text))`),
        });
      expect(await enderResult(await runToEnd(workflowId, { n: 5 }))).toEqual({ twice: 10 });
    });

    test('a TypeScript row stored before publish-time transpiling still runs (transpiled on the run)', async () => {
      const template = (
        await h.call('POST', '/v2/worker_templates', {
          name: 'Older',
          script_runtime: 'typescript',
          script: TS,
        })
      ).json().worker_template;
      await h
        .db('entities')
        .where({ kind: 'worker_template', id: template.id })
        .update({ body: h.db.raw(`body - 'script_compiled'`) });
      const { workflowId } = await chain('Older', [{ type: 'BASIC', template_id: template.id }]);
      expect(await enderResult(await runToEnd(workflowId, { n: 6 }))).toEqual({ twice: 12 });
    });
  });

  test('the SDK functions the templates call all exist', () => {
    for (const name of [
      'retrievePortfolio',
      'listPortfolios',
      'runStressTest',
      'runRiskAttribution',
      'runExposure',
      'runParametricRiskAttribution',
      'runSensitivity',
      'runUnderlyingStressSensitivity',
      'runProperties',
      'runMarginalTrackingError',
      'runBacktest',
      'runBacktestStatistics',
      'createDatastore',
      'updateDatastore',
      'createFile',
      'createReport',
      'request',
      'sendEmail',
      'secret',
    ]) {
      expect(typeof SDK_FUNCTIONS[name]).toBe('function');
    }
  });
});
