import path from 'node:path';
import type { Actor } from '../../engine/platform/principal';
import { importMarketCsv } from '../../engine/market-data/csv-import';
import { beginStep, insertWorkflowExecution } from '../../engine/workflows/execution-records';
import { newId } from '../../engine/platform/ids';
import { runScript, type ScriptOutcome } from '../../plugins/sandbox/script-sandbox';
import { type BridgeScope, createSdkBridge, READ_FILE_MAX_BYTES } from '../../workers/activities/sdk-bridge';
import { SdkJournal } from '../../workers/activities/sdk-journal';
import { createTestAccount, type TestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

/**
 * The SDK bridge's files and calculations, scoped to the run's account and workspace, and the
 * SDK-call journal that keeps a rerun script (a retried activity) from repeating its effects. The
 * scripts run in the real sandbox against the real database; Temporal is not needed for these.
 */
const MARKET = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'market');
const DATE = '20221228';
const BOOK = [
  { id: 'p1', symbol: 'AAPL', quantity: 100 },
  { id: 'p2', symbol: 'JPM', quantity: 200 },
];

describe('SDK bridge: files, calculations and the journal', () => {
  let other: TestAccount;

  const h = useTestApp({
    setUp: async ({ db }) => {
      await importMarketCsv(db, path.join(MARKET, 'sp500_index_1990_2022.csv'));
      await importMarketCsv(db, path.join(MARKET, 'us_stocks_daily.csv'), { columns: ['AAPL', 'JPM'] });
      other = await createTestAccount(db);
    },
  });
  const { call } = h;

  function actorOf(who: TestAccount, executionId = newId('workflowExecution')): Actor {
    return {
      principal: {
        accountId: who.accountId,
        userId: who.ownerId,
        userEmail: 'System',
        isOwner: false,
        permissions: [],
        credentialId: '',
        credentialType: 'API_KEY',
      },
      source: 'WORKER',
      ip: null,
      userAgent: null,
      workflow: { id: 'wkfl_bridge_test', name: 'Bridge test', executionId },
    };
  }

  const scope = (workspace = 'main', who = h.account): BridgeScope => ({
    db: h.db,
    actor: actorOf(who),
    workspace,
    publicUrl: 'http://pas.test',
  });

  async function run(source: string, bridgeScope: BridgeScope, journal?: SdkJournal, args: object = {}) {
    const outcome = await runScript({
      source,
      args,
      bridge: createSdkBridge(bridgeScope, journal),
      limits: { timeoutMs: 20_000 },
    });
    if (!outcome.ok) throw new Error(`script failed: ${outcome.error.kind}: ${outcome.error.message}`);
    return outcome.result as Record<string, unknown>;
  }

  async function apiFile(name: string, text: string, workspace: string, who = h.account): Promise<string> {
    const res = await call(
      'POST',
      '/v2/files',
      {
        name,
        description: '',
        content_type: 'text/plain',
        data: Buffer.from(text).toString('base64'),
        workspace,
      },
      who,
    );
    expect(res.statusCode).toBe(200);
    return res.json().file.id as string;
  }

  describe('files', () => {
    test('create (text or Base64), retrieve, read, list, update and delete, in the run’s workspace', async () => {
      const result = await run(
        `async function main() {
          const made = await sdk.createFile({ name: 'notes.csv', description: 'From a script', content_type: 'text/csv', text: 'a,b\\n1,é\\n', workspace: 'elsewhere' });
          const binary = await sdk.createFile({ name: 'raw.bin', description: '', content_type: 'application/octet-stream', data: '/wD+AQ==' });
          const retrieved = await sdk.retrieveFile(made.id);
          const read = await sdk.readFile(made.id);
          const readBinary = await sdk.readFile(binary.id);
          const forced = await sdk.readFile(made.id, { encoding: 'base64' });
          const listed = await sdk.listFiles();
          const updated = await sdk.updateFile(made.id, { name: 'notes-2.csv', description: '', content_type: 'text/plain', content: btoaLike });
          const reread = await sdk.readFile(made.id);
          const both = await sdk.createFile({ name: 'x', description: '', content_type: 'text/plain', text: 'a', data: 'YQ==' }).catch((e) => e.message);
          const removed = await sdk.deleteFile(binary.id);
          return { made, retrieved, read, readBinary, forced, listed: listed.files.map((f) => f.id), updated, reread, both, removed };
        }
        const btoaLike = 'aGVsbG8=';`,
        scope(),
      );
      const made = result.made as Record<string, unknown>;
      expect(made).toMatchObject({
        id: expect.stringMatching(/^file_/),
        name: 'notes.csv',
        workspace: 'main',
        content_type: 'text/csv',
        size: Buffer.byteLength('a,b\n1,é\n'),
      });
      expect(made).not.toHaveProperty('data');
      expect(result.retrieved).toEqual(made);
      expect(result.read).toEqual({
        id: made.id,
        name: 'notes.csv',
        content_type: 'text/csv',
        size: made.size,
        text: 'a,b\n1,é\n',
      });
      // Not UTF-8: Base64 in `content`.
      expect(result.readBinary).toMatchObject({ size: 4, content: '/wD+AQ==' });
      expect(result.readBinary).not.toHaveProperty('text');
      expect(result.forced).toMatchObject({ content: Buffer.from('a,b\n1,é\n').toString('base64') });
      expect(result.listed).toEqual(expect.arrayContaining([made.id]));
      expect(result.updated).toMatchObject({ id: made.id, name: 'notes-2.csv', size: 5 });
      expect(result.reread).toMatchObject({ text: 'hello', content_type: 'text/plain' });
      expect(result.both).toMatch(/exactly one of text/);
      expect(result.removed).toMatchObject({ deleted: true });

      const trail = await h
        .db('audit_logs')
        .where({ entity_id: made.id as string })
        .orderBy('created_at')
        .select('operation', 'source');
      expect(trail.map((row) => row.operation)).toEqual(expect.arrayContaining(['CREATE', 'VIEW', 'UPDATE']));
      expect(trail.every((row) => row.source === 'WORKER')).toBe(true);

      // The API sees what the script made, with the same bytes.
      const res = await call('GET', `/v2/files/${made.id as string}`);
      expect(res.statusCode).toBe(200);
      expect(Buffer.from(res.json().file.data, 'base64').toString()).toBe('hello');
    });

    test('a script cannot read or write another workspace’s or another account’s files', async () => {
      const research = await apiFile('research.txt', 'secret research', 'research');
      const foreign = await apiFile('foreign.txt', 'secret foreign', 'main', other);
      const result = await run(
        `async function attempt(call) {
          try { return { ok: await call() }; } catch (error) { return { error: error.message }; }
        }
        async function main(args) {
          const out = {};
          for (const [key, id] of Object.entries(args)) {
            out[key] = {
              retrieve: await attempt(() => sdk.retrieveFile(id)),
              read: await attempt(() => sdk.readFile(id)),
              update: await attempt(() => sdk.updateFile(id, { name: 'taken', description: '', content_type: 'text/plain', text: 'overwritten', workspace: 'research' })),
              remove: await attempt(() => sdk.deleteFile(id)),
            };
          }
          const sneaky = await sdk.listFiles({ query: { filters: [['workspace', '=', 'research']] } });
          out.sneaky = sneaky.files.length;
          out.listed = (await sdk.listFiles()).files.map((f) => f.id);
          return out;
        }`,
        scope('main'),
        undefined,
        { research, foreign },
      );
      for (const [key, id] of [
        ['research', research],
        ['foreign', foreign],
      ] as const) {
        const notFound = { error: `File ${id} not found.` };
        expect(result[key]).toEqual({
          retrieve: notFound,
          read: notFound,
          update: notFound,
          remove: notFound,
        });
      }
      expect(result.sneaky).toBe(0);
      expect(result.listed).not.toEqual(expect.arrayContaining([research]));
      expect(result.listed).not.toEqual(expect.arrayContaining([foreign]));
      // Untouched.
      const own = await call('GET', `/v2/files/${research}?workspace=research`);
      expect(Buffer.from(own.json().file.data, 'base64').toString()).toBe('secret research');
      const theirs = await call('GET', `/v2/files/${foreign}`, undefined, other);
      expect(Buffer.from(theirs.json().file.data, 'base64').toString()).toBe('secret foreign');
    });

    test('readFile refuses a file over its cap with a clear error', async () => {
      const result = await run(
        `async function main(args) {
          const made = await sdk.createFile({ name: 'big.txt', description: '', content_type: 'text/plain', text: 'a'.repeat(args.size) });
          const meta = await sdk.retrieveFile(made.id);
          try { await sdk.readFile(made.id); return { meta }; } catch (error) { return { meta, error: error.message }; }
        }`,
        scope(),
        undefined,
        { size: READ_FILE_MAX_BYTES + 1 },
      );
      const id = (result.meta as { id: string }).id;
      expect(result.meta).toMatchObject({ id, size: READ_FILE_MAX_BYTES + 1 });
      expect(result.error).toBe(
        `File ${id} holds ${READ_FILE_MAX_BYTES + 1} bytes; readFile returns at most ${READ_FILE_MAX_BYTES} bytes into a script.`,
      );
    }, 60_000);

    test('createFile and updateFile are refused with the words of POST and PUT /v2/files; nothing stored', async () => {
      const fields = { name: 'f.txt', description: '', content_type: 'text/plain', data: 'eA==' };
      const id = await apiFile('kept.txt', 'kept', 'main');
      const lone = 'a\ud800';
      const bodies: Array<Record<string, unknown>> = [
        // The schema's rules: the bridge once answered these in the store's own words.
        { date: '20230230' },
        { description: undefined },
        { content_type: 'text/html' },
        { name: 'n'.repeat(201) },
        { tags: 'a', link_uid: 7 },
        { with_data: 'maybe' },
        // The engine's: strict Base64, text PostgreSQL cannot store, the tags with the description's
        // hashtags.
        { data: 'not base64!' },
        { name: lone },
        { tags: [lone] },
        { tags: Array.from({ length: 30 }, (_, i) => `t${i}`), description: '#a #b #c' },
      ].map((change) => ({ ...fields, ...change }));
      const chunkCount = async () => Number((await h.db('file_chunks').count({ n: '*' }).first())!.n);
      const fileCount = async () =>
        Number((await h.db('entities').where({ kind: 'file' }).count({ n: '*' }).first())!.n);
      const [files, chunks] = [await fileCount(), await chunkCount()];
      const result = await run(
        `async function attempt(call) {
          try { await call(); return 'accepted'; } catch (error) { return error.message; }
        }
        async function main(args) {
          const out = [];
          for (const body of args.bodies) {
            out.push([await attempt(() => sdk.createFile(body)), await attempt(() => sdk.updateFile(args.id, body))]);
          }
          return { out };
        }`,
        scope(),
        undefined,
        { id, bodies },
      );
      const api = async (method: 'POST' | 'PUT', url: string, body: object) => {
        const res = await call(method, url, body);
        expect(res.statusCode).toBe(400);
        return (res.json() as { message: string }).message;
      };
      const seen = result.out as Array<[string, string]>;
      for (const [i, body] of bodies.entries()) {
        expect(seen[i]).toEqual([
          await api('POST', '/v2/files', body),
          await api('PUT', `/v2/files/${id}`, body),
        ]);
      }
      // Word for word, a few of them.
      expect(seen[0]).toEqual([
        'date must be a date in the format YYYYMMDD.',
        'date must be a date in the format YYYYMMDD.',
      ]);
      expect(seen[1]![0]).toBe('description is required.');
      expect(seen[2]![1]).toMatch(
        /^content_type must be one of the types allowed on update: image\/svg\+xml, /,
      );
      expect(seen[6]![0]).toBe('data is not valid Base64 (standard alphabet, padded with =, no whitespace).');
      expect(seen[8]![1]).toBe('tags[0] holds a NUL character or an unpaired surrogate.');
      expect(seen[9]![0]).toBe('At most 32 tags are allowed, got 33.');
      expect([await fileCount(), await chunkCount()]).toEqual([files, chunks]);
      const kept = await call('GET', `/v2/files/${id}`);
      expect(kept.json().file).toMatchObject({ name: 'kept.txt', version: '1' });
    });
  });

  describe('declared kinds: one request schema for the API and the SDK', () => {
    /** The message a script's call meets, caught inside the script. */
    async function sdkRefusal(fn: string, args: unknown[]): Promise<string> {
      const result = await run(
        `async function main(args) {
           try { await sdk[args.fn](...args.args); return { accepted: true }; }
           catch (error) { return { message: error.message }; }
         }`,
        scope(),
        undefined,
        { fn, args },
      );
      expect(result.accepted).toBeUndefined();
      return result.message as string;
    }

    // Each a rule a field's schema states and the engine's hand checks no longer repeat.
    const cases: Array<{ path: string; fn: string; body: Record<string, unknown> }> = [
      { path: '/v2/datastores', fn: 'createDatastore', body: { name: 'D', data: [[{ cell: 1 }]] } },
      { path: '/v2/datastores', fn: 'createDatastore', body: { name: 'D' } },
      { path: '/v2/datastores', fn: 'createDatastore', body: { name: '   ', data: [] } },
      {
        path: '/v2/portfolios',
        fn: 'createPortfolio',
        body: { name: 'P', base_currency: 'usd', securities: [] },
      },
      {
        path: '/v2/portfolios',
        fn: 'createPortfolio',
        body: { name: 'P', securities: [{ id: 'a', symbol: 'AAPL', quantity: 1, isin: 'short' }] },
      },
      {
        path: '/v2/portfolios',
        fn: 'createPortfolio',
        body: { name: 'P', securities: [{ id: 'a', symbol: 'AAPL' }] },
      },
      {
        path: '/v2/portfolios',
        fn: 'createPortfolio',
        body: { name: 'P', securities: [{ id: 'a', symbol: 'AAPL', quantity: 1, status: 'BAD' }] },
      },
      // Rules across fields, which no schema states, stay in the engine and answer alike.
      {
        path: '/v2/portfolios',
        fn: 'createPortfolio',
        body: {
          name: 'P',
          securities: [
            { id: 'a', symbol: 'AAPL', quantity: 1 },
            { id: 'a', symbol: 'MSFT', quantity: 2 },
          ],
        },
      },
      {
        path: '/v2/portfolios',
        fn: 'createPortfolio',
        body: {
          name: 'P',
          securities: Array.from({ length: 251 }, (_, i) => ({ id: `p${i}`, symbol: 'AAPL', quantity: 1 })),
        },
      },
      {
        path: '/v2/custom_indexes',
        fn: 'createCustomIndex',
        body: { symbol: 'CUSTOM:X', name: 'X', data_type: 'PRICES', data: [['20240102', 1]] },
      },
      {
        path: '/v2/custom_indexes',
        fn: 'createCustomIndex',
        body: { symbol: 'custom:x', name: 'X', data: [['20240102', 1]] },
      },
      {
        path: '/v2/custom_indexes',
        fn: 'createCustomIndex',
        body: { symbol: 'CUSTOM:X', name: 'X', data: [['20240231', 1]] },
      },
      {
        path: '/v2/private_securities',
        fn: 'createPrivateSecurity',
        body: { symbol: 'PRIVATE:X', name: 'X', type: 'equity', data: {} },
      },
      {
        path: '/v2/private_securities',
        fn: 'createPrivateSecurity',
        body: { symbol: 'PRIVATE:X', name: 'X', data: {} },
      },
    ];

    test.each(cases)(
      '$fn refuses what $path refuses, with the same message ($body)',
      async ({ path, fn, body }) => {
        const res = await call('POST', path, body);
        expect(res.statusCode).toBe(400);
        const api = (res.json() as { message: string }).message;
        expect(await sdkRefusal(fn, [body])).toBe(api);
      },
    );

    test('an update is checked by the update schema too, with the API’s words', async () => {
      const created = await call('POST', '/v2/portfolios', { name: 'P', securities: [] });
      const id = (created.json() as { portfolio: { id: string } }).portfolio.id;
      const body = { nlv: 'lots' };
      const res = await call('PUT', `/v2/portfolios/${id}`, body);
      expect(res.statusCode).toBe(400);
      expect(await sdkRefusal('updatePortfolio', [id, body])).toBe(
        (res.json() as { message: string }).message,
      );
      // Nothing changed.
      const after = await call('GET', `/v2/portfolios/${id}`);
      expect((after.json() as { portfolio: { nlv: unknown } }).portfolio.nlv).toBeNull();
    });
  });

  describe('reports: one request schema for the API and the SDK', () => {
    /** The message a script's call meets, caught inside the script. */
    async function refusal(fn: string, args: unknown[]): Promise<string> {
      const result = await run(
        `async function main(args) {
           try { await sdk[args.fn](...args.args); return { accepted: true }; }
           catch (error) { return { message: error.message }; }
         }`,
        scope(),
        undefined,
        { fn, args },
      );
      expect(result.accepted).toBeUndefined();
      return result.message as string;
    }
    async function apiRefusal(method: 'POST' | 'PUT', url: string, body: object): Promise<string> {
      const res = await call(method, url, body);
      expect(res.statusCode).toBe(400);
      return (res.json() as { message: string }).message;
    }
    const reportCount = async () =>
      Number((await h.db('entities').where({ kind: 'report' }).count({ n: '*' }).first())!.n);

    // Rules the schema states: the bridge once answered some in the store's own words, or not at all.
    test.each([
      [{}, 'name is required.'],
      [
        { name: '   ' },
        'name must be a name of 1 to 200 characters, not only spaces, without NUL characters.',
      ],
      [{ name: 'R', authorization: 'SECRET' }, 'authorization must be PRIVATE or PUBLIC.'],
      [{ name: 'R', authorization: null }, 'authorization must be PRIVATE or PUBLIC.'],
      [{ name: 'R', widgets: { name: 'w' } }, 'widgets must be an array.'],
      [
        { name: 'R', widgets: [{ id: 'a/b', name: 'w' }] },
        'widgets[0].id must be 1 to 64 letters, digits, _ or -.',
      ],
      [{ name: 'R', widgets: [{ id: 'w' }] }, 'widgets[0].name is required.'],
      [{ name: 'R', widgets: [{ name: 'w', type: 7 }] }, 'widgets[0].type must be a string.'],
    ])('createReport refuses %j as POST /v2/reports does, in its words', async (body, message) => {
      const before = await reportCount();
      expect(await apiRefusal('POST', '/v2/reports', body)).toBe(message);
      expect(await refusal('createReport', [body])).toBe(message);
      expect(await reportCount()).toBe(before);
    });

    // Rules no schema states stay in the engine: distinct widget ids, what a drawn widget needs,
    // text PostgreSQL cannot store. Refused on create and update, on both paths.
    test.each([
      [
        {
          widgets: [
            { id: 'w1', name: 'a' },
            { id: 'w1', name: 'b' },
          ],
        },
        'widgets[1].id "w1" is used by another widget.',
      ],
      [
        { widgets: [{ name: 'w', type: 'text' }] },
        'widgets[0].text must be a string of at most 20000 characters.',
      ],
      [
        { widgets: [{ name: 'w', type: 'bar', labels: ['A', 'B'], values: [1] }] },
        'widgets[0].values has 1 values but labels has 2.',
      ],
      [{ data: ['\ud800'] }, 'data[0] holds a NUL character or an unpaired surrogate.'],
    ])('the engine refuses %j on create and update, over HTTP and from a script', async (fields, message) => {
      const made = await call('POST', '/v2/reports', { name: 'Kept', widgets: [{ id: 'k', name: 'K' }] });
      const report = (made.json() as { report: { id: string; version: string } }).report;
      const before = await reportCount();
      const body = { name: 'R', ...fields };
      expect(await apiRefusal('POST', '/v2/reports', body)).toBe(message);
      expect(await refusal('createReport', [body])).toBe(message);
      expect(await apiRefusal('PUT', `/v2/reports/${report.id}`, fields)).toBe(message);
      expect(await refusal('updateReport', [report.id, fields])).toBe(message);
      expect(await reportCount()).toBe(before);
      const after = await call('GET', `/v2/reports/${report.id}`);
      expect((after.json() as { report: { version: string } }).report.version).toBe(report.version);
    });

    test('an update is checked by the update schema, with the API’s words; a good one is stored', async () => {
      const made = await call('POST', '/v2/reports', { name: 'Target' });
      const id = (made.json() as { report: { id: string } }).report.id;
      for (const body of [{ name: '' }, { widgets: 'x' }, { authorization: 'secret!' }, { data: null }]) {
        const api = await apiRefusal('PUT', `/v2/reports/${id}`, body);
        expect(await refusal('updateReport', [id, body])).toBe(api);
      }
      const result = await run(
        `async function main(args) {
           return await sdk.updateReport(args.id, { authorization: 'public', widgets: [{ name: 'W' }] });
         }`,
        scope(),
        undefined,
        { id },
      );
      expect(result).toMatchObject({ id, authorization: 'PUBLIC', version: '2' });
      expect((result.widgets as Array<{ id: string }>)[0]!.id).toMatch(/^[A-Za-z0-9]{25}$/);
    });
  });

  describe('calculations', () => {
    test('runStressTest and runRiskAttribution answer what the endpoints answer', async () => {
      const res = await call('POST', '/v2/portfolios', { name: 'Calc book', securities: BOOK });
      expect(res.statusCode).toBe(200);
      const portfolio = res.json().portfolio.id as string;
      const stressBody = { portfolio_id: portfolio, date: DATE, magnitude: -0.1 };
      const attributionBody = { securities: BOOK, date: DATE, risk_measure: 'var' };
      const result = await run(
        `async function main(args) {
          return {
            stress: await sdk.runStressTest(args.stress),
            attribution: await sdk.runRiskAttribution(args.attribution),
            invalid: await sdk.runStressTest({ securities: [] }).catch((e) => e.message),
          };
        }`,
        scope(),
        undefined,
        { stress: stressBody, attribution: attributionBody },
      );
      const stress = await call('POST', '/v2/calculations/stress_test', stressBody);
      expect(stress.statusCode).toBe(200);
      expect(result.stress).toEqual(stress.json().stress_test);
      const attribution = await call('POST', '/v2/calculations/risk_attribution', attributionBody);
      expect(attribution.statusCode).toBe(200);
      expect(result.attribution).toEqual(attribution.json().risk_attribution);
      expect(typeof result.invalid).toBe('string');
      const executed = await h
        .db('audit_logs')
        .where({ operation: 'EXECUTE', source: 'WORKER', account_id: h.account.accountId })
        .count<{ count: number }[]>('* as count');
      expect(Number(executed[0]!.count)).toBe(2);
    }, 120_000);

    test('the analytics of §16–§21 (runExposure … runBacktestStatistics) answer what their endpoints answer', async () => {
      const res = await call('POST', '/v2/portfolios', {
        name: 'Analytics book',
        securities: BOOK,
        date: DATE,
      });
      expect(res.statusCode).toBe(200);
      const portfolio = res.json().portfolio.id as string;
      const calls = {
        runExposure: ['exposure', { portfolio_id: portfolio, aggregation: 'exposure' }],
        runParametricRiskAttribution: [
          'parametric_risk_attribution',
          { securities: BOOK, date: DATE, confidence: '99%', historical_days: 500 },
        ],
        runSensitivity: ['sensitivity', { portfolio_id: portfolio, compute_notional: true }],
        runUnderlyingStressSensitivity: [
          'underlying_stress_sensitivity',
          { portfolio_id: portfolio, stress_values: [-0.2, 0.2] },
        ],
        runProperties: ['properties', { portfolio_id: portfolio, horizon: 1 }],
        runMarginalTrackingError: [
          'marginal_tracking_error',
          { portfolio1: portfolio, portfolio2: { securities: BOOK.slice(0, 1) }, EWMA: true },
        ],
        runBacktest: ['backtest', { portfolio, backtest_periodicity: 'weekly' }],
        runBacktestStatistics: ['backtest_statistics', { securities: BOOK, date: DATE }],
      } as const;
      const result = await run(
        `async function main(args) {
          const out = {};
          for (const [name, [, body]] of Object.entries(args.calls)) out[name] = await sdk[name](body);
          out.invalid = await sdk.runUnderlyingStressSensitivity({ portfolio_id: args.portfolio, stress_values: [-3] }).catch((e) => e.message);
          return out;
        }`,
        scope(),
        undefined,
        { calls, portfolio },
      );
      for (const [name, [kind, body]] of Object.entries(calls)) {
        const api = await call('POST', `/v2/calculations/${kind}`, body);
        expect(api.statusCode).toBe(200);
        expect(result[name]).toEqual(api.json()[kind]);
      }
      // Validated with the endpoint's schema: the API's words, not the engine's (issue 43).
      const refused = await call('POST', '/v2/calculations/underlying_stress_sensitivity', {
        portfolio_id: portfolio,
        stress_values: [-3],
      });
      expect(refused.json()).toEqual({
        code: 400,
        message: 'stress_values[0] must be a relative move greater than -1.',
      });
      expect(result.invalid).toBe(refused.json().message);
    }, 120_000);

    test('the new parameters (options, surfaces, forecasts, drift, base currency, cash, aggregation, filter) pass through', async () => {
      const securities = [
        ...BOOK,
        { id: 'call', symbol: 'AAPL 20230317 C130', quantity: 2 },
        { id: 'put', symbol: 'AAPL 20230317 P120', quantity: -1, market_price: 4.5 },
        { id: 'cash', symbol: 'CASH:USD', quantity: 1000 },
      ];
      const extra = {
        base_currency: 'USD',
        drift: true,
        forecasts: [{ symbol: 'JPM', years: 1, targets: [120, 160], probabilities: [0.4, 0.6] }],
        volatility_surface: [
          {
            symbol: 'AAPL',
            time_to_expiration: [0.1, 0.5],
            moneyness: [0.9, 1.1],
            volatilities: [
              [0.4, 0.35],
              [0.38, 0.33],
            ],
          },
        ],
      };
      const stressBody = { securities, date: DATE, magnitude: -0.1, aggregation: 'security_type', ...extra };
      // A sold put has a long delta: both options are reported.
      const filter = "type('equity option long delta')";
      const attributionBody = { securities, date: DATE, risk_measure: 'cvar', filter, ...extra };
      const result = await run(
        `async function main(args) {
          return {
            stress: await sdk.runStressTest(args.stress),
            attribution: await sdk.runRiskAttribution(args.attribution),
            invalid: await sdk.runRiskAttribution({ ...args.attribution, drift: 'yes' }).catch((e) => e.message),
            badFilter: await sdk.runStressTest({ ...args.stress, filter: "type('bond')" }).catch((e) => e.message),
          };
        }`,
        scope(),
        undefined,
        { stress: stressBody, attribution: attributionBody },
      );
      const stress = await call('POST', '/v2/calculations/stress_test', stressBody);
      expect(stress.statusCode).toBe(200);
      expect(result.stress).toEqual(stress.json().stress_test);
      const ids = (out: unknown) => (out as { results: Array<{ id: string }> }).results.map((r) => r.id);
      expect(ids(result.stress)).toEqual(['CASH', 'EQUITY', 'EQUITY_OPTION']);
      const attribution = await call('POST', '/v2/calculations/risk_attribution', attributionBody);
      expect(result.attribution).toEqual(attribution.json().risk_attribution);
      expect(ids(result.attribution)).toEqual(['call', 'put']);
      // The API's words for the same body (test/api/calculations.test.ts pins them there).
      expect(result.invalid).toBe('drift must be true or false (or null).');
      expect(result.badFilter).toMatch(/^filter: type does not take 'bond' .* at position 6\.$/);
    }, 120_000);

    /** The message a script's calculation call meets, caught inside the script. */
    async function sdkRefusal(fn: string, body: unknown): Promise<string> {
      const result = await run(
        `async function main(args) {
           try { await sdk[args.fn](args.body); return { accepted: true }; }
           catch (error) { return { message: error.message }; }
         }`,
        scope(),
        undefined,
        { fn, body },
      );
      expect(result.accepted).toBeUndefined();
      return result.message as string;
    }

    // One schema per endpoint, compiled by the API's validator for the SDK too (issue 43): each refusal
    // below was worded by the engine's own checks on the SDK path, and by the schema over HTTP.
    const one = [{ id: 'a', symbol: 'AAPL', quantity: 1 }];
    const refusals: Array<{ kind: string; fn: string; body: Record<string, unknown>; message: string }> = [
      {
        kind: 'stress_test',
        fn: 'runStressTest',
        body: { magnitude: -0.1 },
        message: 'securities is required unless portfolio_id is given.',
      },
      {
        kind: 'stress_test',
        fn: 'runStressTest',
        body: { securities: one, magnitude: -1 },
        message: 'magnitude must be a decimal shock greater than -1 (-0.10 for -10%).',
      },
      {
        kind: 'stress_test',
        fn: 'runStressTest',
        body: { securities: one, magnitude: -0.1, horizon: 10 },
        message: 'horizon must be one of 1, 5, 20, 60, null.',
      },
      {
        kind: 'stress_test',
        fn: 'runStressTest',
        body: { securities: [{ id: 'a', symbol: 'AAPL' }], magnitude: -0.1 },
        message: 'securities[0].quantity is required.',
      },
      {
        kind: 'risk_attribution',
        fn: 'runRiskAttribution',
        body: { securities: one, projection: ['IND:SPX', 'IND:SPX'] },
        message: 'projection must not hold the same value twice (items 0 and 1).',
      },
      {
        kind: 'risk_attribution',
        fn: 'runRiskAttribution',
        body: { securities: [...one, ...one] },
        message: 'securities[1].id "a" is used by another security.',
      },
      {
        kind: 'sensitivity',
        fn: 'runSensitivity',
        body: { securities: one, sensitivity_type: 'rho' },
        message: 'sensitivity_type must be one of "delta", "gamma", "vega", "theta", null.',
      },
      {
        kind: 'parametric_risk_attribution',
        fn: 'runParametricRiskAttribution',
        body: { securities: one, historical_days: 6000 },
        message: 'historical_days must be a whole number of observations from 60 to 5040.',
      },
      {
        kind: 'marginal_tracking_error',
        fn: 'runMarginalTrackingError',
        body: { portfolio1: { securities: one }, portfolio2: {} },
        message: 'portfolio2 must be a portfolio id or an object with securities.',
      },
      {
        kind: 'backtest',
        fn: 'runBacktest',
        body: { portfolio: { securities: one }, securities: one },
        message: 'portfolio is the whole book: do not combine it with portfolio_id or securities.',
      },
      {
        kind: 'backtest_statistics',
        fn: 'runBacktestStatistics',
        body: { date: DATE },
        message: 'securities is required unless portfolio or portfolio_id is given.',
      },
    ];

    test.each(refusals)(
      '$fn refuses what POST /calculations/$kind refuses, with the same message: $message',
      async ({ kind, fn, body, message }) => {
        const res = await call('POST', `/v2/calculations/${kind}`, body);
        expect(res.json()).toEqual({ code: 400, message });
        expect(await sdkRefusal(fn, body)).toBe(message);
      },
    );

    test('a calculation on another workspace’s or account’s portfolio is not found', async () => {
      const inResearch = await call('POST', '/v2/portfolios', {
        name: 'Research book',
        securities: BOOK,
        workspace: 'research',
      });
      const research = inResearch.json().portfolio.id as string;
      const ofOther = await call('POST', '/v2/portfolios', { name: 'Their book', securities: BOOK }, other);
      const foreign = ofOther.json().portfolio.id as string;
      const result = await run(
        `async function main(args) {
          const out = {};
          for (const [key, id] of Object.entries(args)) {
            out[key] = {
              stress: await sdk.runStressTest({ portfolio_id: id, magnitude: -0.1, workspace: 'research' }).catch((e) => e.message),
              attribution: await sdk.runRiskAttribution({ portfolio_id: id, workspace: 'research' }).catch((e) => e.message),
            };
          }
          return out;
        }`,
        scope('main'),
        undefined,
        { research, foreign },
      );
      expect(result).toEqual({
        research: {
          stress: `Portfolio ${research} not found.`,
          attribution: `Portfolio ${research} not found.`,
        },
        foreign: {
          stress: `Portfolio ${foreign} not found.`,
          attribution: `Portfolio ${foreign} not found.`,
        },
      });
    });
  });

  describe('the SDK-call journal', () => {
    /** A worker execution row, as runWorker begins one (the journal's rows hang off it). */
    async function workerExecution(): Promise<string> {
      const execution = await insertWorkflowExecution(h.db, {
        accountId: h.account.accountId,
        workflowId: 'wkfl_journal_test',
        workflowName: 'Journal test',
        workspace: 'main',
        trigger: 'API',
        startedWorkerId: 'wrkr_s',
        enderWorkerId: null,
        parameters: {},
        userId: h.account.ownerId,
        credentialId: '',
        credentialType: 'API_KEY',
      });
      const begun = await beginStep(h.db, {
        executionId: execution.id,
        workerId: 'wrkr_x',
        workerName: 'X',
        workerType: 'BASIC',
        parallelIndex: -1,
        inputParams: {},
        inputIds: [],
        templateId: null,
      });
      return begun.row!.id;
    }

    test('an external call (a request, an e-mail) is answered at once, its row written beside it; a retry answers from the row', async () => {
      const id = await workerExecution();
      const journal = await SdkJournal.open(h.db, id);
      let sent = 0;
      const send = async () => ({ status: 200, body: { n: ++sent } });
      expect(await journal.call('request', ['Vendor', { path: 'x' }], 'external', send)).toEqual({
        status: 200,
        body: { n: 1 },
      });
      await journal.settle();
      expect(await h.db('sdk_calls').where({ worker_execution_id: id }).select('seq', 'name')).toEqual([
        { seq: 0, name: 'request' },
      ]);
      // A retried attempt of the step: the call is answered from its row, not sent again.
      const retried = await SdkJournal.open(h.db, id);
      expect(await retried.call('request', ['Vendor', { path: 'x' }], 'external', send)).toEqual({
        status: 200,
        body: { n: 1 },
      });
      expect(sent).toBe(1);
      // A secret is never written to the journal.
      await retried.call('secret', ['TOKEN'], 'unrecorded', async () => 'the value');
      await retried.settle();
      expect(await h.db('sdk_calls').where({ worker_execution_id: id }).select('seq')).toEqual([{ seq: 0 }]);
    });

    const countPortfolios = async (name: string) =>
      Number(
        (
          await h
            .db('entities')
            .where({ account_id: h.account.accountId, kind: 'portfolio', name })
            .count<{ count: number }[]>('* as count')
        )[0]!.count,
      );

    // Creates, reads, fails on purpose (a domain error), then dies when told to: an attempt whose
    // process went away after its effects, as far as the journal can tell.
    const SCRIPT = `
      async function main(args) {
        const made = await sdk.createPortfolio({ name: args.name, securities: [{ id: 'p1', symbol: 'AAPL', quantity: 1 }] });
        const seen = await sdk.retrievePortfolio(made.id);
        const refused = await sdk.createPortfolio({ name: '' }).catch((e) => e.message);
        const file = await sdk.createFile({ name: args.name + '.txt', description: '', content_type: 'text/plain', text: 'once' });
        if (args.die) throw new Error('the process died here');
        const [a, b] = await Promise.all([sdk.createDatastore({ name: args.name + ' A', data: [['x'], [1]] }), sdk.listPortfolios()]);
        return { made: made.id, seen: seen.id, refused, file: file.id, a: a.id, listed: b.portfolios.length };
      }`;

    test('a rerun of the same worker execution answers from the journal: no second effect', async () => {
      const id = await workerExecution();
      const name = `Journaled ${id.slice(-6)}`;
      const bridgeScope = { ...scope(), actor: actorOf(h.account) };
      const first = await runScript({
        source: SCRIPT,
        args: { name, die: true },
        bridge: createSdkBridge(bridgeScope, await SdkJournal.open(h.db, id)),
      });
      expect(first.ok).toBe(false);
      expect(await countPortfolios(name)).toBe(1);
      const rows = await h.db('sdk_calls').where({ worker_execution_id: id }).orderBy('seq');
      expect(rows.map((row) => [row.seq, row.name])).toEqual([
        [0, 'createPortfolio'],
        [1, 'retrievePortfolio'],
        [2, 'createPortfolio'],
        [3, 'createFile'],
      ]);
      expect(rows[2]!.error).toMatchObject({ status: 400 });

      const journal = await SdkJournal.open(h.db, id);
      const second = await run(SCRIPT, bridgeScope, journal, { name, die: false });
      expect(journal.replayed).toBe(4);
      expect(await countPortfolios(name)).toBe(1);
      const files = await h.db('entities').where({
        account_id: h.account.accountId,
        kind: 'file',
        name: `${name}.txt`,
      });
      expect(files).toHaveLength(1);
      expect(second.made).toBe(rows[0]!.result.id);
      expect(second.file).toBe(files[0]!.id);
      expect(second.refused).toBe(rows[2]!.error.message);
      const creates = await h
        .db('audit_logs')
        .where({ operation: 'CREATE', entity_type: 'Portfolio', entity_name: name })
        .count<{ count: number }[]>('* as count');
      expect(Number(creates[0]!.count)).toBe(1);
      // The calls after the replayed ones ran live and were journaled.
      expect(
        await h.db('sdk_calls').where({ worker_execution_id: id }).count<{ c: number }[]>('* as c'),
      ).toEqual([{ c: 6 }]);
      // A third run replays everything, the datastore included.
      const third = await run(SCRIPT, bridgeScope, await SdkJournal.open(h.db, id), { name, die: false });
      expect(third).toEqual(second);
      expect(
        await h
          .db('entities')
          .where({ account_id: h.account.accountId, kind: 'datastore', name: `${name} A` }),
      ).toHaveLength(1);
    });

    test('a script that calls differently on its rerun goes live from there, with a warning', async () => {
      const id = await workerExecution();
      const name = `Diverging ${id.slice(-6)}`;
      const source = `
        async function main(args) {
          const first = await sdk.createPortfolio({ name: args.name, securities: [] });
          const second = await sdk.createPortfolio({ name: args.name + args.suffix, securities: [] });
          return { first: first.id, second: second.id };
        }`;
      const before = await run(source, scope(), await SdkJournal.open(h.db, id), { name, suffix: ' one' });
      const journal = await SdkJournal.open(h.db, id);
      const outcome: ScriptOutcome = await runScript({
        source,
        args: { name, suffix: ' two' },
        bridge: createSdkBridge(scope(), journal),
      });
      expect(outcome.ok).toBe(true);
      const after = (outcome as { result: Record<string, unknown> }).result;
      expect(after.first).toBe(before.first);
      expect(after.second).not.toBe(before.second);
      expect(await countPortfolios(name)).toBe(1);
      expect(await countPortfolios(`${name} two`)).toBe(1);
      const logs = journal.withLogs(outcome.logs);
      expect(logs).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ level: 'warn', message: expect.stringMatching(/not deterministic/) }),
          expect.objectContaining({
            level: 'info',
            message: expect.stringMatching(/1 SDK call\(s\) answered/),
          }),
        ]),
      );
      const rows = await h.db('sdk_calls').where({ worker_execution_id: id }).orderBy('seq');
      expect(rows).toHaveLength(2);
      expect(rows[1]!.result.id).toBe(after.second);
    });

    test('two attempts alive at once: one commits the call, the other answers its row', async () => {
      const id = await workerExecution();
      const name = `Raced ${id.slice(-6)}`;
      const [a, b] = await Promise.all([SdkJournal.open(h.db, id), SdkJournal.open(h.db, id)]);
      const fields = { name, securities: [] };
      const [fromA, fromB] = await Promise.all([
        createSdkBridge(scope(), a).createPortfolio!(fields),
        createSdkBridge(scope(), b).createPortfolio!(fields),
      ]);
      expect(fromB).toEqual(fromA);
      expect(await countPortfolios(name)).toBe(1);
      expect(a.replayed + b.replayed).toBe(1);
    });

    test('the journal goes with its worker execution', async () => {
      const id = await workerExecution();
      await run(
        `async function main() { return sdk.listPortfolios(); }`,
        scope(),
        await SdkJournal.open(h.db, id),
      );
      expect(await h.db('sdk_calls').where({ worker_execution_id: id })).toHaveLength(1);
      await h.db('worker_executions').where({ id }).delete();
      expect(await h.db('sdk_calls').where({ worker_execution_id: id })).toHaveLength(0);
    });
  });
});
