import { gzipSync } from 'node:zlib';
import { CREATE_CONTENT_TYPES, UPDATE_CONTENT_TYPES } from '../../engine/files/file-schemas';
import { callSdkFunction } from '../../engine/sdk/sdk-function';
import { temporalWorkflowRunner } from '../../engine/workflows/temporal-workflow-runner';
import { createTestAccount, type TestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

/**
 * POST /v1/sdk_function: the wire of everysk-lib's SDK layer (gzip JSON labelled text/html, tagged
 * values, `{error_message, error_module}` errors), account scoping of entities, caches and locks,
 * refusals that change nothing, audit records, and the in-process entry point a worker uses.
 */
describe('sdk_function', () => {
  const h = useTestApp();
  let other: TestAccount;
  const securities = [{ id: 'p1', symbol: 'AAPL', quantity: 1, name: null, __class_path__: 'x.Security' }];

  beforeAll(async () => {
    other = await createTestAccount(h.db);
  });

  async function sdk(
    body: unknown,
    who: TestAccount = h.account,
    options: { gzip?: boolean; path?: string } = {},
  ) {
    const json = Buffer.from(JSON.stringify(body));
    const gzip = options.gzip ?? true;
    return h.app.inject({
      method: 'POST',
      url: options.path ?? '/v1/sdk_function',
      headers: {
        authorization: who.bearer,
        'content-type': gzip ? 'text/html; charset=UTF-8' : 'application/json',
        ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      },
      payload: gzip ? gzipSync(json) : json,
    });
  }
  const call = (class_name: string, method_name: string, params: object = {}, self_obj: unknown = null) => ({
    class_name,
    method_name,
    self_obj,
    params,
  });
  const entityCount = async () => Number((await h.db('entities').count({ n: '*' }).first())!.n);

  async function createPortfolio(who: TestAccount = h.account, name = 'Book') {
    const res = await sdk(
      call('Portfolio', 'create', {
        entity_dict: { name, workspace: 'main', date: '20221228', securities, __class_path__: 'p.Portfolio' },
      }),
      who,
    );
    expect(res.statusCode).toBe(200);
    return res.json() as Record<string, unknown>;
  }

  test('a gzip body labelled text/html is read as JSON; tagged values decoded; plain JSON back', async () => {
    const created = await createPortfolio();
    expect(created).toMatchObject({
      id: expect.stringMatching(/^port_/),
      name: 'Book',
      date: '20221228',
      workspace: 'main',
      created_on: { __datetime__: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T.*\+00:00$/) },
    });
    expect((created.securities as Array<Record<string, unknown>>)[0]).toMatchObject({
      id: 'p1',
      symbol: 'AAPL',
    });
    // A date the client sends as {"__date__"} lands as YYYYMMDD; {"__undefined__"} is an argument left out.
    const res = await sdk(
      call('Datastore', 'create', {
        entity_dict: {
          name: 'T',
          data: [['a']],
          date: { __date__: '2022-12-27' },
          description: { __undefined__: null },
        },
      }),
      h.account,
      { gzip: false },
    );
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ date: '20221227', description: null });
    const same = await sdk(
      call('Portfolio', 'retrieve', { entity_id: created.id, projection: { __undefined__: null } }),
      h.account,
      {
        path: '/v2/sdk_function',
      },
    );
    expect(same.json()).toMatchObject({ id: created.id, name: 'Book' });
  });

  test('another account: its ids are unknown (retrieve → null, writes → 404), and nothing of it changes', async () => {
    const mine = await createPortfolio(h.account, 'Mine');
    const retrieve = await sdk(call('Portfolio', 'retrieve', { entity_id: mine.id }), other);
    expect(retrieve.statusCode).toBe(200);
    expect(retrieve.json()).toBeNull();
    for (const body of [
      call('Portfolio', 'modify', { entity_id: mine.id, overwrites: { name: 'stolen' } }),
      call('Portfolio', 'remove', { entity_id: mine.id }),
      call('Portfolio', 'clone', { entity_id: mine.id, overwrites: {} }),
      call('Portfolio', 'delete', {}, { id: mine.id, name: 'x' }),
      call('Portfolio', 'save', {}, { id: mine.id, name: 'stolen', securities }),
    ]) {
      const res = await sdk(body, other);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({
        error_message: expect.stringContaining('not found'),
        error_module: 'everysk.core.exceptions.EntityNotFound',
      });
    }
    const still = await sdk(call('Portfolio', 'retrieve', { entity_id: mine.id }));
    expect(still.json()).toMatchObject({ id: mine.id, name: 'Mine' });
    const theirQuery = await sdk(
      call('Query', 'fetch_ids', {}, { _klass: 'Portfolio', filters: [['name', '=', 'Mine']], order: [] }),
      other,
    );
    expect(theirQuery.json()).toEqual([]);
  });

  test('caches and locks are per account', async () => {
    const cache = (method: string, params: object, who?: TestAccount) =>
      sdk(call('UserCache', method, params, { prefix: null, timeout_default: 14400 }), who);
    expect(
      (
        await cache('set', { key: 'k', value: { __datetime__: '2022-12-28T00:00:00+00:00' }, timeout: 60 })
      ).json(),
    ).toBe(true);
    expect((await cache('get', { key: 'k' })).json()).toEqual({ __datetime__: '2022-12-28T00:00:00+00:00' });
    expect((await cache('get', { key: 'k' }, other)).json()).toBeNull();
    await cache('set', { key: 'k', value: 'theirs', timeout: 60 }, other);
    expect((await cache('get', { key: 'k' })).json()).toEqual({ __datetime__: '2022-12-28T00:00:00+00:00' });

    const lock = (method: string, params: object, token: string | null, who?: TestAccount) =>
      sdk(call('UserLock', method, params, { name: 'job', token, timeout: 30, blocking: true }), who);
    expect((await lock('acquire', { blocking: false }, 'mine')).json()).toBe(true);
    expect((await lock('acquire', { blocking: false }, 'theirs', other)).json()).toBe(true);
    expect((await lock('acquire', { blocking: false }, 'intruder')).json()).toBe(false);
    const release = await lock('release', { force: false }, 'intruder');
    expect(release.statusCode).toBe(400);
    expect((await lock('get_lock_info', {}, null)).json()).toMatchObject({ locked: true, name: 'job' });
    expect((await lock('release', { force: false }, 'mine')).statusCode).toBe(200);
    expect((await lock('get_lock_info', {}, null)).json()).toMatchObject({ locked: false });
    expect((await lock('get_lock_info', {}, null, other)).json()).toMatchObject({ locked: true });
  });

  test('expiry: an expired key is absent; an expired lock is taken by another token', async () => {
    const self = { prefix: 'exp:' };
    await sdk(call('UserCache', 'set', { key: 'gone', value: 1, timeout: 60 }, self));
    await h
      .db('user_cache')
      .where({ key: 'exp:gone' })
      .update({ expires_at: new Date(Date.now() - 1000) });
    expect((await sdk(call('UserCache', 'get', { key: 'gone' }, self))).json()).toBeNull();
    expect(
      (await sdk(call('UserCache', 'incr', { key: 'gone', delta: 1, initial_value: null }, self))).json(),
    ).toBeNull();
    expect(
      (await sdk(call('UserCache', 'incr', { key: 'gone', delta: 2, initial_value: 5 }, self))).json(),
    ).toBe(7);

    const lock = (token: string) => ({ name: 'short', token, timeout: 0.05 });
    expect((await sdk(call('UserLock', 'acquire', { blocking: false }, lock('a')))).json()).toBe(true);
    expect(
      (await sdk(call('UserLock', 'acquire', { blocking: true, blocking_timeout: 2 }, lock('b')))).json(),
    ).toBe(true);
  });

  test.each([
    [
      'a class this service does not offer',
      call('Workspace', 'retrieve', { entity_id: 'main' }),
      /not offered.*not built yet/,
    ],
    ['a platform-internal class', call('Secrets', 'get', { path: 'x' }), /not offered.*platform-internal/],
    ['an unknown method', call('Portfolio', 'explode'), /Portfolio\.explode is not offered/],
    ['MarketData.search', call('MarketData', 'search', { conditions: [] }), /semantics undocumented/],
    ['no class_name', { method_name: 'retrieve', params: {} }, /class_name/],
    ['params not an object', { class_name: 'Portfolio', method_name: 'retrieve', params: [1] }, /params/],
    [
      'a bad Query filter',
      call('Query', 'loads', {}, { _klass: 'Portfolio', filters: [['name']] }),
      /filters\[0\]/,
    ],
    [
      'loads past the cap',
      call('Query', 'loads', { limit: 5000 }, { _klass: 'Portfolio', filters: [] }),
      /at most 1000/,
    ],
    ['a cache key too long', call('UserCache', 'set', { key: 'k'.repeat(251), value: 1 }, {}), /key/],
    [
      'a cache timeout past 4 hours',
      call('UserCache', 'set', { key: 'k', value: 1, timeout: 14401 }, {}),
      /timeout/,
    ],
    [
      'a lock timeout past 60 s',
      call('UserLock', 'acquire', {}, { name: 'n', token: 't', timeout: 61 }),
      /timeout/,
    ],
  ])('%s → 400 {error_message, error_module}, nothing stored', async (_what, body, message) => {
    const before = await entityCount();
    const res = await sdk(body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error_message: expect.stringMatching(message),
      error_module: expect.any(String),
    });
    expect(await entityCount()).toBe(before);
  });

  test('create refused by the /v2 rules stores nothing; create_many is all or nothing; validate stores nothing', async () => {
    const before = await entityCount();
    const dup = [
      { id: 'p1', symbol: 'AAPL', quantity: 1 },
      { id: 'p1', symbol: 'JPM', quantity: 1 },
    ];
    const v2 = await h.call('POST', '/v2/portfolios', { name: 'x', securities: dup });
    const res = await sdk(call('Portfolio', 'create', { entity_dict: { name: 'x', securities: dup } }));
    expect(res.statusCode).toBe(400);
    expect(res.json().error_message).toBe(v2.json().message);
    const many = await sdk(
      call('Portfolio', 'create_many', {
        entity_dict_list: [
          { name: 'ok', securities },
          { name: 'bad', securities: dup },
        ],
      }),
    );
    expect(many.statusCode).toBe(400);
    const valid = await sdk(
      call('Portfolio', 'validate', {}, { name: 'ok', securities, __class_path__: 'p.Portfolio' }),
    );
    expect(valid.json()).toBe(true);
    expect(await entityCount()).toBe(before);
  });

  test('securities_check, validate_transient, clone_many and retrieve_many', async () => {
    const before = await entityCount();
    const ok = await sdk(call('Portfolio', 'securities_check', {}, { name: 'c', securities }));
    expect(ok.json()).toBe(true);
    const bad = await sdk(
      call('Portfolio', 'securities_check', {}, { name: 'c', securities: [{ id: 'p1' }] }),
    );
    expect(bad.statusCode).toBe(400);
    const transient = await sdk(
      call('Datastore', 'validate_transient', { entity_dict: { name: 'T', data: [['a']] } }),
    );
    expect(transient.json()).toMatchObject({ name: 'T', id: null });
    expect(await entityCount()).toBe(before);

    const a = await createPortfolio(h.account, 'CloneMe');
    const clones = await sdk(
      call('Portfolio', 'clone_many', {
        entity_id_list: [a.id, a.id],
        overwrites: [{ name: 'c1' }, { name: 'c2' }],
      }),
    );
    expect(clones.json().map((p: { name: string }) => p.name)).toEqual(['c1', 'c2']);
    const ids = [a.id, ...clones.json().map((p: { id: string }) => p.id), 'port_' + 'n'.repeat(25)];
    const many = await sdk(call('Portfolio', 'retrieve_many', { entity_id_list: ids, projection: ['name'] }));
    expect(many.json().map((p: { name: string } | null) => p?.name ?? null)).toEqual([
      'CloneMe',
      'c1',
      'c2',
      null,
    ]);
    const tooMany = await sdk(call('Portfolio', 'retrieve_many', { entity_id_list: Array(101).fill(a.id) }));
    expect(tooMany.statusCode).toBe(400);
  });

  test('File: validate_transient with the /v2 rules, content inline, another account’s file unknown', async () => {
    const before = await entityCount();
    const fields = {
      name: 'a.csv',
      description: '',
      content_type: 'text/csv',
      data: Buffer.from('x,y\n').toString('base64'),
    };
    const bad = await sdk(
      call('File', 'validate_transient', { entity_dict: { ...fields, data: 'not base64!' } }),
    );
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error_message).toMatch(/Base64/);
    expect((await sdk(call('File', 'validate_transient', { entity_dict: fields }))).json()).toMatchObject({
      name: 'a.csv',
    });
    expect(await entityCount()).toBe(before);
    const made = (await sdk(call('File', 'create', { entity_dict: fields }))).json();
    expect((await sdk(call('File', 'retrieve', { entity_id: made.id }))).json()).toMatchObject({
      data: fields.data,
    });
    expect((await sdk(call('File', 'retrieve', { entity_id: made.id }), other)).json()).toBeNull();
    expect((await sdk(call('File', 'remove', { entity_id: made.id }), other)).statusCode).toBe(404);
    expect((await sdk(call('File', 'remove', { entity_id: made.id }))).json()).toMatchObject({ id: made.id });
  });

  test('File: refused with the words of POST and PUT /v2/files, by their schema or the engine; nothing stored', async () => {
    const fields = { name: 'a.csv', description: '', content_type: 'text/csv', data: 'eA==' };
    const kept = (await sdk(call('File', 'create', { entity_dict: fields }))).json();
    const sdkRefusal = async (body: object) => {
      const res = await sdk(body);
      expect(res.statusCode).toBe(400);
      return (res.json() as { error_message: string }).error_message;
    };
    const apiRefusal = async (method: 'POST' | 'PUT', url: string, body: object) => {
      const res = await h.call(method, url, body);
      expect(res.statusCode).toBe(400);
      return (res.json() as { message: string }).message;
    };
    const chunkCount = async () => Number((await h.db('file_chunks').count({ n: '*' }).first())!.n);
    const [entities, chunks] = [await entityCount(), await chunkCount()];
    const notAllowed = (operation: 'create' | 'update') =>
      `content_type must be one of the types allowed on ${operation}: ` +
      `${(operation === 'create' ? CREATE_CONTENT_TYPES : UPDATE_CONTENT_TYPES).join(', ')}.`;
    const lone = 'a\ud800';
    const cases: Array<[Record<string, unknown>, string | ((operation: 'create' | 'update') => string)]> = [
      // The schema's rules: the SDK once answered these in the store's own words.
      [{ date: '20230230' }, 'date must be a date in the format YYYYMMDD.'],
      [{ description: undefined }, 'description is required.'],
      [{ description: null }, 'description must be a string.'],
      [{ content_type: 'text/html' }, notAllowed],
      [{ content_type: undefined }, 'content_type is required.'],
      [{ data: 12 }, 'data must be a string.'],
      [{ name: 'n'.repeat(201) }, 'name must be at most 200 characters long.'],
      [{ tags: [1] }, 'tags[0] must be a string.'],
      [{ link_uid: 'a\u0000' }, 'link_uid must be a string of at most 200 characters.'],
      // The engine's: strict Base64, text PostgreSQL cannot store, the tags with the description's
      // hashtags.
      [{ data: 'YR==' }, 'data is not valid Base64 (standard alphabet, padded with =, no whitespace).'],
      [{ name: lone }, 'name holds a NUL character or an unpaired surrogate.'],
      [{ tags: ['ok', lone] }, 'tags[1] holds a NUL character or an unpaired surrogate.'],
      [{ link_uid: lone }, 'link_uid holds a NUL character or an unpaired surrogate.'],
      [
        { tags: Array.from({ length: 30 }, (_, i) => `t${i}`), description: '#a #b #c' },
        'At most 32 tags are allowed, got 33.',
      ],
    ];
    for (const [change, expected] of cases) {
      const body = { ...fields, ...change };
      const message = (op: 'create' | 'update') => (typeof expected === 'string' ? expected : expected(op));
      expect(await apiRefusal('POST', '/v2/files', body)).toBe(message('create'));
      expect(await sdkRefusal(call('File', 'create', { entity_dict: body }))).toBe(message('create'));
      expect(await sdkRefusal(call('File', 'validate_transient', { entity_dict: body }))).toBe(
        message('create'),
      );
      expect(await apiRefusal('PUT', `/v2/files/${kept.id}`, body)).toBe(message('update'));
      expect(await sdkRefusal(call('File', 'modify', { entity_id: kept.id, overwrites: body }))).toBe(
        message('update'),
      );
    }
    // A type of the create list only: the update schema's rule on both paths.
    const zip = { ...fields, content_type: 'application/x-zip-compressed' };
    expect(await apiRefusal('PUT', `/v2/files/${kept.id}`, zip)).toBe(notAllowed('update'));
    expect(await sdkRefusal(call('File', 'modify', { entity_id: kept.id, overwrites: zip }))).toBe(
      notAllowed('update'),
    );
    expect([await entityCount(), await chunkCount()]).toEqual([entities, chunks]);
    expect((await sdk(call('File', 'retrieve', { entity_id: kept.id }))).json()).toMatchObject({
      version: '1',
      data: fields.data,
    });
  });

  test('Query where(name): the SDK’s prefix range on the search form (case and accents folded)', async () => {
    await sdk(
      call('Portfolio', 'create', { entity_dict: { name: 'Café Growth', workspace: 'nm', securities } }),
    );
    await sdk(
      call('Portfolio', 'create', { entity_dict: { name: 'Cafeteria', workspace: 'nm', securities } }),
    );
    await sdk(call('Portfolio', 'create', { entity_dict: { name: 'Bonds', workspace: 'nm', securities } }));
    // Portfolio.query.where('name', 'Café') sends the normalised text as a range.
    const text = 'café'.normalize('NFKD');
    const limit = text.slice(0, -1) + String.fromCharCode(text.charCodeAt(text.length - 1) + 1);
    const res = await sdk(
      call(
        'Query',
        'loads',
        {},
        {
          _klass: 'Portfolio',
          filters: [
            ['workspace', '=', 'nm'],
            ['name', '<', limit],
            ['name', '>=', text],
          ],
          order: ['name'],
          projection: ['workspace'],
        },
      ),
    );
    expect(res.json().map((p: { name: string }) => p.name)).toEqual(['Café Growth']);
  });

  test('Report: the SDK’s lower-case authorization; another account’s report unknown', async () => {
    const made = (await sdk(call('Report', 'create', { entity_dict: { name: 'R', widgets: [] } }))).json();
    expect(made).toMatchObject({ id: expect.stringMatching(/^repo_/), authorization: 'private' });
    expect((await sdk(call('Report', 'retrieve', { entity_id: made.id }), other)).json()).toBeNull();
    expect(
      (await sdk(call('Report', 'modify', { entity_id: made.id, overwrites: { name: 'x' } }), other))
        .statusCode,
    ).toBe(404);
    expect((await sdk(call('Report', 'retrieve', { entity_id: made.id }))).json()).toMatchObject({
      name: 'R',
    });
  });

  test('Report and File saved from an SDK object: its unset (null) attributes take the defaults', async () => {
    // everysk-lib sends the whole object on save: every attribute it knows, unset ones as None.
    const report = await sdk(
      call(
        'Report',
        'save',
        {},
        {
          name: 'Saved',
          workspace: null,
          data: null,
          widgets: null,
          authorization: null,
          url: null,
          config_cascaded: null,
          layout_content: null,
          __class_path__: 'everysk.sdk.entities.report.base.Report',
        },
      ),
    );
    expect(report.statusCode).toBe(200);
    expect(report.json()).toMatchObject({ name: 'Saved', workspace: 'main', authorization: 'private' });
    const file = await sdk(
      call(
        'File',
        'save',
        {},
        {
          name: 'saved.txt',
          description: '',
          content_type: 'text/plain',
          data: 'eA==',
          workspace: null,
          with_data: null,
          url: null,
          __class_path__: 'everysk.sdk.entities.file.base.File',
        },
      ),
    );
    expect(file.statusCode).toBe(200);
    expect(file.json()).toMatchObject({ name: 'saved.txt', workspace: 'main', data: 'eA==' });
    // Where the API's schema takes null, null still means what it means there.
    const modified = await sdk(
      call('Report', 'modify', {
        entity_id: report.json().id,
        overwrites: { description: null, widgets: null },
      }),
    );
    expect(modified.statusCode).toBe(200);
    expect(modified.json()).toMatchObject({ name: 'Saved', description: null });
  });

  test('Report: refused with the words of POST and PUT /v2/reports, by its schema or the engine; nothing stored', async () => {
    const sdkRefusal = async (body: object) => {
      const res = await sdk(body);
      expect(res.statusCode).toBe(400);
      return (res.json() as { error_message: string }).error_message;
    };
    const apiRefusal = async (method: 'POST' | 'PUT', url: string, body: object) => {
      const res = await h.call(method, url, body);
      expect(res.statusCode).toBe(400);
      return (res.json() as { message: string }).message;
    };
    const kept = (await sdk(call('Report', 'create', { entity_dict: { name: 'Kept' } }))).json();
    const before = await entityCount();
    const cases: Array<[Record<string, unknown>, string]> = [
      // The schema's rules (the SDK once answered these in the store's own words, or stored them).
      [{}, 'name is required.'],
      [{ name: 'R', authorization: 'secret' }, 'authorization must be PRIVATE or PUBLIC.'],
      [{ name: 'R', widgets: 'w' }, 'widgets must be an array.'],
      [
        { name: 'R', widgets: [{ id: 7, name: 'w' }] },
        'widgets[0].id must be 1 to 64 letters, digits, _ or -.',
      ],
      // The engine's: distinct widget ids, what a drawn widget needs.
      [
        {
          name: 'R',
          widgets: [
            { id: 'w1', name: 'a' },
            { id: 'w1', name: 'b' },
          ],
        },
        'widgets[1].id "w1" is used by another widget.',
      ],
      [
        { name: 'R', widgets: [{ name: 'w', type: 'table', columns: ['a'], rows: [[{ nested: 1 }]] }] },
        'widgets[0].rows[0][0] must be a string, number, boolean or null.',
      ],
    ];
    for (const [body, message] of cases) {
      // The SDK writes authorization in lower case; the API takes any letter case.
      expect(await apiRefusal('POST', '/v2/reports', body)).toBe(message);
      expect(await sdkRefusal(call('Report', 'create', { entity_dict: body }))).toBe(message);
      expect(await sdkRefusal(call('Report', 'validate', {}, { ...body, __class_path__: 'r.Report' }))).toBe(
        message,
      );
      const { name: _name, ...fields } = body;
      if (Object.keys(fields).length === 0) continue;
      expect(await apiRefusal('PUT', `/v2/reports/${kept.id}`, fields)).toBe(message);
      expect(await sdkRefusal(call('Report', 'modify', { entity_id: kept.id, overwrites: fields }))).toBe(
        message,
      );
    }
    expect(await entityCount()).toBe(before);
    expect((await sdk(call('Report', 'retrieve', { entity_id: kept.id }))).json()).toMatchObject({
      version: '1',
    });
  });

  test('workflows: another account’s workflow cannot be run or read; unknown executions are None', async () => {
    const workflow = await h.call('POST', '/v2/workflows', {
      name: 'w',
      workers: [
        { id: 'wrkr_' + 'a'.repeat(25), name: 'Start', type: 'STARTER', next: ['wrkr_' + 'e'.repeat(25)] },
        {
          id: 'wrkr_' + 'e'.repeat(25),
          name: 'End',
          type: 'ENDER',
          script: 'function main(args) { return {}; }',
        },
      ],
    });
    expect(workflow.statusCode).toBe(200);
    const id = workflow.json().workflow.id as string;
    expect((await sdk(call('Workflow', 'retrieve', { entity_id: id }))).json()).toMatchObject({
      id,
      name: 'w',
    });
    expect((await sdk(call('Workflow', 'retrieve', { entity_id: id }), other)).json()).toBeNull();
    const run = await sdk(call('Workflow', 'run', { parameters: {} }, { id }), other);
    expect(run.statusCode).toBe(404);
    expect(await h.db('workflow_executions').where({ workflow_id: id }).count({ n: '*' }).first()).toEqual({
      n: 0,
    });
    const unknown = 'wfex_' + 'b'.repeat(25);
    expect((await sdk(call('WorkflowExecution', 'retrieve', { entity_id: unknown }))).json()).toBeNull();
    expect(
      (await sdk(call('WorkerExecution', 'retrieve', { entity_id: 'wkex_' + 'c'.repeat(25) }))).json(),
    ).toBeNull();
  });

  test('malformed gzip, a body that is not JSON, no credentials: the SDK error body', async () => {
    const broken = await h.app.inject({
      method: 'POST',
      url: '/v1/sdk_function',
      headers: { authorization: h.account.bearer, 'content-type': 'text/html', 'content-encoding': 'gzip' },
      payload: Buffer.from('not gzip'),
    });
    expect(broken.statusCode).toBe(400);
    expect(broken.json()).toEqual({ error_message: expect.any(String), error_module: expect.any(String) });
    const text = await h.app.inject({
      method: 'POST',
      url: '/v1/sdk_function',
      headers: { authorization: h.account.bearer, 'content-type': 'text/html' },
      payload: '<html>',
    });
    expect(text.statusCode).toBe(400);
    expect(text.json()).toHaveProperty('error_message');
    // Labelled JSON or not, one reader (shared with a Python step's SDK channel): no prototype keys.
    for (const type of ['application/json', 'text/html']) {
      const poisoned = await h.app.inject({
        method: 'POST',
        url: '/v1/sdk_function',
        headers: { authorization: h.account.bearer, 'content-type': type },
        payload: '{"class_name": "UserCache", "method_name": "get", "__proto__": {"x": 1}}',
      });
      expect(poisoned.statusCode).toBe(400);
      expect(poisoned.json()).toEqual({
        error_message: 'Object contains forbidden prototype property',
        error_module: 'everysk.core.exceptions.SDKValueError',
      });
    }
    const anonymous = await h.app.inject({
      method: 'POST',
      url: '/v1/sdk_function',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(call('Portfolio', 'retrieve', { entity_id: 'x' })),
    });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json()).toEqual({
      error_message: expect.any(String),
      error_module: 'everysk.core.exceptions.SDKError',
    });
  });

  test('audit records: source SDK over HTTP; source WORKER through the in-process entry point', async () => {
    const created = await createPortfolio(h.account, 'Audited');
    const byHttp = await h.db('audit_logs').where({ entity_id: created.id, operation: 'CREATE' }).first();
    expect(byHttp).toMatchObject({ source: 'SDK', account_id: h.account.accountId });

    const worker = (await callSdkFunction(
      {
        db: h.db,
        workflows: temporalWorkflowRunner(h.t.temporal, 'unused-task-queue'),
        publicUrl: 'http://localhost',
      },
      {
        accountId: h.account.accountId,
        userId: h.account.ownerId,
        userEmail: 'owner@example.com',
        isOwner: true,
        permissions: [],
        credentialId: h.account.key.account_sid,
        credentialType: 'API_KEY',
      },
      call('Portfolio', 'create', { entity_dict: { name: 'From a step', securities } }),
      'WORKER',
    )) as { id: string };
    const byWorker = await h.db('audit_logs').where({ entity_id: worker.id, operation: 'CREATE' }).first();
    expect(byWorker).toMatchObject({ source: 'WORKER' });
  });

  test('Query: filters, order, projection, distinct_on and stable page tokens', async () => {
    const tag = `q${Date.now()}`;
    for (const [name, ws] of [
      ['A', 'qa'],
      ['B', 'qa'],
      ['C', 'qa'],
      ['A', 'qb'],
    ])
      await sdk(
        call('Portfolio', 'create', { entity_dict: { name, workspace: ws, tags: [tag], securities } }),
      );
    const base = { _klass: 'Portfolio', filters: [['tags', '=', tag]], order: ['name'] };
    const names = await sdk(call('Query', 'loads', {}, { ...base, projection: ['name'] }));
    expect(names.json().map((p: { name: string }) => p.name)).toEqual(['A', 'A', 'B', 'C']);
    expect(Object.keys(names.json()[0]).sort()).toEqual(['id', 'name']);
    const distinct = await sdk(call('Query', 'loads', {}, { ...base, distinct_on: ['name'] }));
    expect(distinct.json().map((p: { name: string }) => p.name)).toEqual(['A', 'B', 'C']);
    const qa = await sdk(
      call('Query', 'fetch_ids', {}, { ...base, filters: [...base.filters, ['workspace', '=', 'qb']] }),
    );
    expect(qa.json()).toHaveLength(1);
    const first = (await sdk(call('Query', 'page', { page_size: 2 }, base))).json();
    expect(first.entities.map((p: { name: string }) => p.name)).toEqual(['A', 'A']);
    // A row inserted before the cursor neither repeats nor shifts the next page.
    await sdk(
      call('Portfolio', 'create', { entity_dict: { name: '0', workspace: 'qa', tags: [tag], securities } }),
    );
    const second = (
      await sdk(call('Query', 'page', { page_size: 2, page_token: first.next_page_token }, base))
    ).json();
    expect(second.entities.map((p: { name: string }) => p.name)).toEqual(['B', 'C']);
    expect(second.next_page_token).toBeNull();
    const missing = await sdk(
      call('Query', 'load', {}, { ...base, filters: [['tags', '=', 'none' + tag]], _find_or_fail: true }),
    );
    expect(missing.statusCode).toBe(404);
  });
});
