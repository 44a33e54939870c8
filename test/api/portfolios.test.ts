import { createTestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

const security = (id: string, symbol = 'AAPL', quantity = 10) => ({ id, symbol, quantity });

describe('portfolios', () => {
  const h = useTestApp({
    setUp: async ({ db }) => {
      await db('securities_master').insert({ symbol: 'AAPL', name: 'Apple Inc.', currency: 'USD' });
    },
  });
  const { call } = h;

  test('create → 200 with defaults, names filled from the securities master, hashtags as tags', async () => {
    const res = await call('POST', '/v2/portfolios', {
      name: 'Core equity',
      description: 'Long book #Equity #us-large',
      tags: ['Growth', 'growth', 'Tech Stocks'],
      securities: [
        security('p1'),
        { ...security('p2', 'MSFT', -5), label: 'hedge', isin: 'US5949181045', unknown_key: 1 },
      ],
      unknown_top_level: true,
    });
    expect(res.statusCode).toBe(200);
    const { portfolio } = res.json();
    expect(portfolio).toEqual({
      id: expect.stringMatching(/^port_[A-Za-z0-9]{25}$/),
      name: 'Core equity',
      description: 'Long book #Equity #us-large',
      tags: ['growth', 'tech_stocks', 'equity', 'us_large'],
      date: null,
      base_currency: 'USD',
      nlv: null,
      securities: [
        expect.objectContaining({
          id: 'p1',
          symbol: 'AAPL',
          quantity: 10,
          label: '',
          status: 'OK',
          name: 'Apple Inc.',
          isin: null,
        }),
        expect.objectContaining({
          id: 'p2',
          symbol: 'MSFT',
          quantity: -5,
          label: 'hedge',
          name: null,
          isin: 'US5949181045',
        }),
      ],
      workspace: 'main',
      created: expect.any(Number),
      updated: expect.any(Number),
      version: '1',
    });
    expect(portfolio.securities[1]).not.toHaveProperty('unknown_key');
  });

  test('with_securities=false leaves securities out of the create response', async () => {
    const res = await call('POST', '/v2/portfolios', {
      name: 'Lean',
      securities: [security('a')],
      with_securities: false,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().portfolio).not.toHaveProperty('securities');
    expect(res.json().portfolio).toMatchObject({ name: 'Lean', base_currency: 'USD', version: '1' });
    // The response schema filters: nothing undeclared leaks, and the OpenAPI shows a real schema.
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    const created = doc.paths['/portfolios'].post.responses['200'].content['application/json'].schema;
    expect(JSON.stringify(created)).not.toContain('"Partial"');
  });

  test.each([
    [{ securities: [] }, 'name is required.'],
    [{ name: 'x' }, 'securities is required.'],
    [{ name: 'x', securities: [{ symbol: 'A', quantity: 1 }] }, 'securities[0].id is required.'],
    [{ name: 'x', securities: [{ id: 'a', quantity: 1 }] }, 'securities[0].symbol is required.'],
    [{ name: 'x', securities: [{ id: 'a', symbol: 'A' }] }, 'securities[0].quantity is required.'],
    [
      { name: 'x', securities: [{ id: 'a', symbol: 'A', quantity: 1, status: 'BAD' }] },
      'securities[0].status must be one of "OK", "ERROR", "UNHEALTHY", null.',
    ],
    [
      { name: 'x', securities: [{ id: 'a', symbol: 'A', quantity: 1, isin: 'SHORT' }] },
      'securities[0].isin must be 12 letters or digits.',
    ],
    [
      { name: 'x', securities: [security('a'), security('a')] },
      'securities[1].id "a" is used by another security.',
    ],
    [
      { name: 'x', securities: [], base_currency: 'usd' },
      'base_currency must be a 3-letter ISO 4217 currency code.',
    ],
    [{ name: 'x', securities: [], date: '20230231' }, 'date must be a date in the format YYYYMMDD.'],
    [{ name: 'x'.repeat(201), securities: [] }, 'name must be at most 200 characters long.'],
    [
      { name: 'x', description: 'd'.repeat(501), securities: [] },
      'description must be at most 500 characters long.',
    ],
    [
      { name: 'x', securities: [], tags: Array.from({ length: 33 }, (_, i) => `t${i}`) },
      'tags must hold at most 32 items.',
    ],
  ])('invalid %j → 400, nothing stored', async (body, message) => {
    const before = await h.db('entities').count({ n: '*' }).first();
    const res = await call('POST', '/v2/portfolios', body);
    expect(res.json()).toEqual({ code: 400, message });
    expect(await h.db('entities').count({ n: '*' }).first()).toEqual(before);
  });

  test('at most 250 securities without nlv, 3000 with nlv', async () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => security(`s${i}`, 'SPY', 1));
    expect((await call('POST', '/v2/portfolios', { name: 'ok', securities: many(250) })).statusCode).toBe(
      200,
    );
    const over = await call('POST', '/v2/portfolios', { name: 'over', securities: many(251) });
    expect(over.json()).toEqual({
      code: 400,
      message: 'At most 250 securities are allowed without nlv (up to 3000 with nlv), got 251.',
    });
    expect(
      (await call('POST', '/v2/portfolios', { name: 'big', nlv: 1e6, securities: many(3000) })).statusCode,
    ).toBe(200);
    const tooBig = await call('POST', '/v2/portfolios', {
      name: 'too big',
      nlv: 1e6,
      securities: many(3001),
    });
    expect(tooBig.json()).toEqual({ code: 400, message: 'securities must hold at most 3000 items.' });
  });

  test('retrieve, update (version bumps), list without securities, delete', async () => {
    const created = (
      await call('POST', '/v2/portfolios', { name: 'Macro', securities: [security('m1')] })
    ).json().portfolio;
    const got = await call('GET', `/v2/portfolios/${created.id}`);
    expect(got.json().portfolio).toEqual(created);

    const updated = await call('PUT', `/v2/portfolios/${created.id}`, {
      description: 'now #rates',
      base_currency: 'EUR',
      securities: [security('m1', 'TLT', 3)],
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.json().portfolio).toMatchObject({
      name: 'Macro',
      description: 'now #rates',
      tags: ['rates'],
      base_currency: 'EUR',
      version: '2',
      securities: [expect.objectContaining({ symbol: 'TLT', quantity: 3 })],
    });

    const list = await call('GET', '/v2/portfolios?query=Macro');
    expect(list.json().portfolios).toEqual([expect.not.objectContaining({ securities: expect.anything() })]);
    expect(list.json().portfolios[0]).toMatchObject({ id: created.id, name: 'Macro' });

    const deleted = await call('DELETE', `/v2/portfolios/${created.id}`);
    expect(deleted.json()).toEqual({ portfolio: { deleted: true, id: created.id, name: 'Macro' } });
    expect((await call('GET', `/v2/portfolios/${created.id}`)).json()).toEqual({
      code: 404,
      message: `Portfolio ${created.id} not found.`,
    });
  });

  test('workspaces separate portfolios; another account sees 404', async () => {
    const inOps = (
      await call('POST', '/v2/portfolios', { name: 'Ops book', securities: [], workspace: 'ops' })
    ).json().portfolio;
    expect(inOps.workspace).toBe('ops');
    expect((await call('GET', `/v2/portfolios/${inOps.id}`)).statusCode).toBe(404);
    expect((await call('GET', `/v2/portfolios/${inOps.id}?workspace=ops`)).statusCode).toBe(200);
    // workspace also rides on the query string of a create or an update.
    const viaQuery = await call('POST', '/v2/portfolios?workspace=ops', {
      name: 'Query book',
      securities: [],
    });
    expect(viaQuery.json().portfolio.workspace).toBe('ops');
    const renamed = await call('PUT', `/v2/portfolios/${inOps.id}?workspace=ops`, { name: 'Ops book 2' });
    expect(renamed.json().portfolio).toMatchObject({ name: 'Ops book 2', workspace: 'ops' });
    const other = await createTestAccount(h.db);
    expect((await call('GET', `/v2/portfolios/${inOps.id}?workspace=ops`, undefined, other)).statusCode).toBe(
      404,
    );
    expect(
      (await call('PUT', `/v2/portfolios/${inOps.id}`, { name: 'hijack', workspace: 'ops' }, other))
        .statusCode,
    ).toBe(404);
    expect(
      (await call('DELETE', `/v2/portfolios/${inOps.id}?workspace=ops`, undefined, other)).statusCode,
    ).toBe(404);
    expect((await call('GET', '/v2/portfolios?workspace=ops', undefined, other)).json().portfolios).toEqual(
      [],
    );
  });

  test('concurrent updates of one portfolio never lose a write', async () => {
    const created = (await call('POST', '/v2/portfolios', { name: 'Busy', securities: [] })).json().portfolio;
    // Each writer changes a different field; with a lost update one change would vanish.
    const writes = await Promise.all([
      call('PUT', `/v2/portfolios/${created.id}`, { description: 'from writer A' }),
      call('PUT', `/v2/portfolios/${created.id}`, { base_currency: 'JPY' }),
      call('PUT', `/v2/portfolios/${created.id}`, { nlv: 5000 }),
      call('PUT', `/v2/portfolios/${created.id}`, { name: 'Busy renamed' }),
    ]);
    expect(writes.map((w) => w.statusCode)).toEqual([200, 200, 200, 200]);
    const final = (await call('GET', `/v2/portfolios/${created.id}`)).json().portfolio;
    expect(final).toMatchObject({
      description: 'from writer A',
      base_currency: 'JPY',
      nlv: 5000,
      name: 'Busy renamed',
      version: '5',
    });
    expect(writes.map((w) => w.json().portfolio.version).sort()).toEqual(['2', '3', '4', '5']);
  });

  test('every action is in the audit trail', async () => {
    const created = (await call('POST', '/v2/portfolios', { name: 'Audited', securities: [] })).json()
      .portfolio;
    await call('GET', `/v2/portfolios/${created.id}`);
    await call('PUT', `/v2/portfolios/${created.id}`, { name: 'Audited 2' });
    await call('DELETE', `/v2/portfolios/${created.id}`);
    const records = await h.db('audit_logs').where({ entity_id: created.id }).orderBy('created_at');
    expect(records.map((r) => [r.operation, r.entity_type, r.entity_name])).toEqual([
      ['CREATE', 'Portfolio', 'Audited'],
      ['VIEW', 'Portfolio', 'Audited'],
      ['UPDATE', 'Portfolio', 'Audited 2'],
      ['DELETE', 'Portfolio', 'Audited 2'],
    ]);
    expect(records[2].before.name).toBe('Audited');
    expect(records[2].after.name).toBe('Audited 2');
  });
});
