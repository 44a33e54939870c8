import { createTestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

const SECRET = 'sk-live-9f8e7d6c5b4a';
const OTHER_SECRET = 'pw-rotated-1a2b3c';

describe('user apps', () => {
  const h = useTestApp();
  const { call } = h;
  const publish = async (extra: object = {}, who = h.account) => {
    const res = await call('POST', '/v2/user_apps', { name: 'App', ...extra }, who);
    expect(res.statusCode).toBe(200);
    return res.json().user_app;
  };
  const count = async () =>
    Number((await h.db('entities').where({ kind: 'user_app' }).count({ n: '*' }))[0]!.n);

  test('publish → 200 with the defaults', async () => {
    const res = await call('POST', '/v2/user_apps', { name: 'Minimal', unknown_key: 1 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      user_app: {
        id: expect.stringMatching(/^uapp_[A-Za-z0-9]{25}$/),
        name: 'Minimal',
        description: null,
        tags: [],
        data: {},
        env_vars: {},
        created: expect.any(Number),
        updated: expect.any(Number),
        version: '1',
      },
    });
  });

  test('publish with data and env_vars: both come back on create and on retrieve', async () => {
    const created = await publish({
      name: 'CRM sync',
      description: 'Pushes positions #crm',
      tags: 'Integration',
      data: { endpoint: 'https://crm.example.com', retries: 3, nested: { on: true } },
      env_vars: { CRM_API_KEY: SECRET, _REGION: 'eu-west-1' },
    });
    expect(created).toMatchObject({
      tags: ['integration', 'crm'],
      data: { endpoint: 'https://crm.example.com', retries: 3, nested: { on: true } },
      env_vars: { CRM_API_KEY: SECRET, _REGION: 'eu-west-1' },
    });
    for (const query of ['', '?workspace=main', '?workspace=research']) {
      expect((await call('GET', `/v2/user_apps/${created.id}${query}`)).json()).toEqual({
        user_app: created,
      });
    }
    const missing = 'uapp_' + 'Z'.repeat(25);
    expect((await call('GET', `/v2/user_apps/${missing}`)).json()).toEqual({
      code: 404,
      message: `User app ${missing} not found.`,
    });
  });

  const envMessage =
    'env_vars must be an object of variable names (a letter or _, then letters, digits or _; at most 128) to string values.';
  const badName = (_name: string) => envMessage;
  test.each([
    [{}, 'name is required.'],
    [{ name: 'x', data: [] }, 'data must be a JSON object.'],
    [{ name: 'x', data: 'text' }, 'data must be a JSON object.'],
    [{ name: 'x', env_vars: [] }, envMessage],
    [{ name: 'x', env_vars: 'A=1' }, envMessage],
    [{ name: 'x', env_vars: { '1ST': 'x' } }, badName('1ST')],
    [{ name: 'x', env_vars: { 'WITH-DASH': 'x' } }, badName('WITH-DASH')],
    [{ name: 'x', env_vars: { '': 'x' } }, badName('')],
    [{ name: 'x', env_vars: { ['A'.repeat(129)]: 'x' } }, badName('A'.repeat(128))],
    // The message names the variable, never the value.
    [{ name: 'x', env_vars: { API_KEY: { secret: SECRET } } }, 'env_vars.API_KEY must be a string.'],
    [{ name: 'x', env_vars: { PORT: 8080 } }, 'env_vars.PORT must be a string.'],
    [
      { name: 'x', env_vars: { BIG: 'v'.repeat(32 * 1024 + 1) } },
      'env_vars.BIG must be at most 32768 characters long.',
    ],
    [
      { name: 'x', env_vars: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`V${i}`, 'x'])) },
      envMessage,
    ],
  ])('invalid publish %# → 400 with its message, nothing stored', async (body, message) => {
    const before = await count();
    const res = await call('POST', '/v2/user_apps', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message });
    expect(await count()).toBe(before);
  });

  test('the largest env_vars accepted: 100 variables, 32768-character values, 128-character names', async () => {
    const env = Object.fromEntries(Array.from({ length: 99 }, (_, i) => [`V${i}`, 'x']));
    env['N'.repeat(128)] = 'v'.repeat(32 * 1024);
    expect(Object.keys((await publish({ env_vars: env })).env_vars)).toHaveLength(100);
  });

  test('republish: fields left out or null are kept; data and env_vars are replaced whole', async () => {
    const created = await publish({ name: 'Before', data: { a: 1 }, env_vars: { TOKEN: SECRET, KEEP: 'k' } });
    const url = `/v2/user_apps/${created.id}`;
    const same = await call('PUT', url, { name: null, data: null, env_vars: null });
    expect(same.json().user_app).toEqual({ ...created, updated: expect.any(Number), version: '2' });

    const res = await call('PUT', url, { name: 'After', env_vars: { TOKEN: OTHER_SECRET } });
    expect(res.json().user_app).toEqual({
      ...created,
      name: 'After',
      env_vars: { TOKEN: OTHER_SECRET },
      updated: expect.any(Number),
      version: '3',
    });
    const cleared = await call('PUT', url, { data: { b: 2 }, env_vars: {}, description: 'now #live' });
    expect(cleared.json().user_app).toMatchObject({
      data: { b: 2 },
      env_vars: {},
      description: 'now #live',
      tags: ['live'],
      version: '4',
    });
    expect((await call('PUT', url, { env_vars: { BAD: 1 } })).json()).toEqual({
      code: 400,
      message: 'env_vars.BAD must be a string.',
    });
    expect((await call('GET', url)).json().user_app.version).toBe('4');
    const missing = 'uapp_' + 'Y'.repeat(25);
    expect((await call('PUT', `/v2/user_apps/${missing}`, { name: 'x' })).json()).toEqual({
      code: 404,
      message: `User app ${missing} not found.`,
    });
  });

  test('list leaves out data and env_vars, even when a projection asks for them', async () => {
    const other = await createTestAccount(h.db);
    const a = await publish({ name: 'Alpha app', data: { x: 1 }, env_vars: { K: SECRET } }, other);
    const b = await publish({ name: 'Beta app', env_vars: { K: SECRET } }, other);
    const list = (query = '') => call('GET', `/v2/user_apps${query}`, undefined, other);
    const all = await list();
    expect(all.json()).toEqual({
      user_apps: [
        {
          id: b.id,
          name: 'Beta app',
          description: null,
          tags: [],
          created: expect.any(Number),
          updated: expect.any(Number),
          version: '1',
        },
        expect.objectContaining({ id: a.id, name: 'Alpha app' }),
      ],
      next_page_token: null,
    });
    expect(all.body).not.toContain(SECRET);
    expect((await list('?workspace=ops')).json()).toEqual(all.json());
    expect((await list(`?query=${a.id}`)).json().user_apps.map((u: { id: string }) => u.id)).toEqual([a.id]);
    expect((await list('?query=Beta')).json().user_apps.map((u: { id: string }) => u.id)).toEqual([b.id]);
    const projected = await list(
      `?query=${encodeURIComponent(JSON.stringify({ projection: ['id', 'env_vars', 'data'] }))}`,
    );
    expect(projected.json().user_apps).toEqual([{ id: b.id }, { id: a.id }]);
  });

  test('delete → {user_app: {deleted, id, name}}; another account gets 404 everywhere', async () => {
    const created = await publish({ name: 'Disposable', env_vars: { K: SECRET } });
    const url = `/v2/user_apps/${created.id}`;
    const other = await createTestAccount(h.db);
    for (const res of [
      await call('GET', url, undefined, other),
      await call('PUT', url, { name: 'hijack' }, other),
      await call('DELETE', url, undefined, other),
    ]) {
      expect(res.json()).toEqual({ code: 404, message: `User app ${created.id} not found.` });
    }
    expect((await call('GET', '/v2/user_apps', undefined, other)).json().user_apps).toEqual([]);

    const res = await call('DELETE', url);
    expect(res.json()).toEqual({ user_app: { deleted: true, id: created.id, name: 'Disposable' } });
    expect((await call('GET', url)).statusCode).toBe(404);
  });

  test('audit trail: UserApp records whose snapshots never hold env_vars', async () => {
    // Variable names that no sensitive-key rule would catch on their own: env_vars go as a whole.
    const created = await publish({ name: 'Audited', data: { d: 1 }, env_vars: { CRM_LOGIN: SECRET } });
    const url = `/v2/user_apps/${created.id}`;
    await call('GET', url);
    await call('PUT', url, { env_vars: { CRM_LOGIN: OTHER_SECRET, REGION: 'eu' }, data: { d: 2 } });
    await call('GET', `/v2/user_apps?query=${created.id}`);
    await call('DELETE', url);
    const records = await h.db('audit_logs').where({ entity_id: created.id }).orderBy('created_at');
    expect(records.map((r) => [r.operation, r.entity_type, r.entity_name, r.workspace])).toEqual([
      ['CREATE', 'UserApp', 'Audited', null],
      ['VIEW', 'UserApp', 'Audited', null],
      ['UPDATE', 'UserApp', 'Audited', null],
      ['DELETE', 'UserApp', 'Audited', null],
    ]);
    // The rest of the object is kept, so the diff still shows what changed.
    expect(records[0].after).toMatchObject({ id: created.id, name: 'Audited', data: { d: 1 } });
    expect(records[2].before.data).toEqual({ d: 1 });
    expect(records[2].after.data).toEqual({ d: 2 });
    for (const record of records) {
      expect(record.before ?? {}).not.toHaveProperty('env_vars');
      expect(record.after ?? {}).not.toHaveProperty('env_vars');
    }
    // No column of any record of the account holds either secret (the same search finds the name).
    const holding = (text: string) =>
      h
        .db('audit_logs')
        .where({ account_id: h.account.accountId })
        .whereRaw('(audit_logs.*)::text LIKE ?', [`%${text}%`]);
    expect((await holding('Audited')).length).toBeGreaterThanOrEqual(4);
    expect(await holding(SECRET)).toEqual([]);
    expect(await holding(OTHER_SECRET)).toEqual([]);
    // The VIEW of the list names the app among the viewed ids.
    const [listed] = await h
      .db('audit_logs')
      .whereRaw('viewed_ids @> ?::jsonb', [JSON.stringify([created.id])]);
    expect(listed).toMatchObject({ operation: 'VIEW', entity_type: 'UserApp' });
  });

  test('the OpenAPI document lists the routes, the publishing ones marked as extensions', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    expect(Object.keys(doc.paths['/user_apps']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/user_apps/{id}']).sort()).toEqual(['delete', 'get', 'put']);
    expect(doc.paths['/user_apps'].post.description).toMatch(/^Extension/);
    expect(doc.paths['/user_apps/{id}'].put.description).toMatch(/^Extension/);
    const schema = Object.values(doc.components.schemas).find(
      (s) => (s as { title?: string }).title === 'UserApp',
    ) as { properties: Record<string, unknown> };
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['data', 'env_vars']));
  });
});
