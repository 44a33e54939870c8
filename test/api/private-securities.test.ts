import { createTestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

const TYPE_RULE =
  "an upper-case instrument type of up to 50 letters, digits or _, such as EQUITY or FIXED_INCOME, or one of everysk-lib's PrivateFixedIncome and PrivateCustomIndex";

describe('private securities', () => {
  const h = useTestApp();
  const { call } = h;
  const create = (symbol: string, extra: object = {}, who = h.account) =>
    call(
      'POST',
      '/v2/private_securities',
      { symbol, name: `Security ${symbol}`, type: 'EQUITY', data: {}, ...extra },
      who,
    );
  const count = async () =>
    Number((await h.db('entities').where({ kind: 'private_security' }).count({ n: '*' }))[0]!.n);

  test('create → 200: type shown as instrument_type, currency USD by default, unknown keys ignored', async () => {
    const res = await call('POST', '/v2/private_securities', {
      symbol: 'PRIVATE:FUND_A',
      name: 'Fund A',
      description: 'Closed-end fund #PrivateEquity',
      tags: ['Alts'],
      type: 'FUND',
      data: { vintage: 2019, commitments: [{ lp: 'x', amount: 5e6 }] },
      unknown_key: true,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      private_security: {
        symbol: 'PRIVATE:FUND_A',
        name: 'Fund A',
        description: 'Closed-end fund #PrivateEquity',
        tags: ['alts', 'privateequity'],
        instrument_type: 'FUND',
        currency: 'USD',
        data: { vintage: 2019, commitments: [{ lp: 'x', amount: 5e6 }] },
        created: expect.any(Number),
        updated: expect.any(Number),
        version: '1',
      },
    });
  });

  test('currency and description as given; null currency takes the default; instrument_type is an alias of type', async () => {
    const res = await create('PRIVATE:BOND_1', { type: 'FIXED_INCOME', currency: 'BRL', description: null });
    expect(res.json().private_security).toMatchObject({
      instrument_type: 'FIXED_INCOME',
      currency: 'BRL',
      description: null,
      tags: [],
    });
    const alias = await call('POST', '/v2/private_securities', {
      symbol: 'PRIVATE:ALIAS',
      name: 'Alias',
      instrument_type: 'DERIVATIVE',
      currency: null,
      data: {},
    });
    expect(alias.json().private_security).toMatchObject({ instrument_type: 'DERIVATIVE', currency: 'USD' });
    const both = await create('PRIVATE:BOTH', { type: 'CASH', instrument_type: 'OTHER' });
    expect(both.json().private_security.instrument_type).toBe('CASH');
  });

  test.each(['PrivateFixedIncome', 'PrivateCustomIndex'])(
    'everysk-lib’s instrument type %s is stored and shown as sent',
    async (type) => {
      const res = await create(`PRIVATE:${type.toUpperCase()}`, { type });
      expect(res.statusCode).toBe(200);
      expect(res.json().private_security.instrument_type).toBe(type);
      const read = await call('GET', `/v2/private_securities/PRIVATE:${type.toUpperCase()}`);
      expect(read.json().private_security.instrument_type).toBe(type);
    },
  );

  const symbolMessage =
    'symbol must be PRIVATE: followed by upper-case letters, digits or _ (no spaces), at most 64 characters in all.';
  const typeMessage = `type must be ${TYPE_RULE}.`;
  const dataMessage = 'data must be an object.';
  const valid = { symbol: 'PRIVATE:BAD', name: 'Bad', type: 'EQUITY', data: {} };
  test.each([
    [{ ...valid, symbol: undefined }, 'symbol is required.'],
    [{ ...valid, symbol: 'private:bad' }, symbolMessage],
    [{ ...valid, symbol: 'PRIVATE:NOT ALLOWED' }, symbolMessage],
    [{ ...valid, symbol: 'CUSTOM:BAD' }, symbolMessage],
    [{ ...valid, symbol: 'PRIVATE-BAD' }, symbolMessage],
    [{ ...valid, symbol: 'PRIVATE:' + 'X'.repeat(57) }, symbolMessage],
    [{ ...valid, name: undefined }, 'name is required.'],
    [
      { ...valid, name: 7 },
      'name must be a name of 1 to 200 characters, not only spaces, without NUL characters.',
    ],
    [{ ...valid, type: undefined }, `type is required: ${TYPE_RULE}.`],
    [{ ...valid, type: 'equity' }, typeMessage],
    [{ ...valid, type: 'FIXED INCOME' }, typeMessage],
    [{ ...valid, type: '1EQUITY' }, typeMessage],
    [{ ...valid, type: 'E'.repeat(51) }, typeMessage],
    [{ ...valid, type: 'PrivateEquity' }, typeMessage],
    [{ ...valid, type: 'privatefixedincome' }, typeMessage],
    [{ ...valid, type: 3 }, `type is required: ${TYPE_RULE}.`],
    [{ ...valid, data: undefined }, 'data is required.'],
    [{ ...valid, data: null }, dataMessage],
    [{ ...valid, data: [1, 2] }, dataMessage],
    [{ ...valid, data: 'text' }, dataMessage],
    [{ ...valid, currency: 'us' }, 'currency must be a 3-letter ISO 4217 currency code.'],
    [{ ...valid, description: 5 }, 'description must be a string or null.'],
    [{ ...valid, tags: { a: 1 } }, 'tags must be an array, a string or null.'],
  ])('invalid create %j → 400 with its message, nothing stored', async (body, message) => {
    const before = await count();
    const res = await call('POST', '/v2/private_securities', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message });
    expect(await count()).toBe(before);
  });

  test('the widest accepted instrument type and the bare prefix symbol are valid', async () => {
    expect((await create('PRIVATE:WIDE', { type: 'A' + 'B_9'.repeat(16) + 'C' })).statusCode).toBe(200);
    // The interface's pattern allows an empty suffix.
    expect((await create('PRIVATE:')).statusCode).toBe(200);
    const longest = 'PRIVATE:' + 'L'.repeat(56);
    expect((await create(longest)).statusCode).toBe(200);
    const encoded = await call('GET', `/v2/private_securities/${encodeURIComponent(longest)}`);
    expect(encoded.json().private_security.symbol).toBe(longest);
  });

  test('duplicate symbol → 409 and the stored security is untouched', async () => {
    await create('PRIVATE:DUP', { name: 'Original' });
    const again = await create('PRIVATE:DUP', { name: 'Copy' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({
      code: 409,
      message: 'A private security with symbol PRIVATE:DUP already exists.',
    });
    expect((await call('GET', '/v2/private_securities/PRIVATE:DUP')).json().private_security.name).toBe(
      'Original',
    );
  });

  test('retrieve is the same from every workspace; unknown → 404', async () => {
    const created = (await create('PRIVATE:SEEN', { data: { k: 'v' } })).json().private_security;
    for (const url of [
      '/v2/private_securities/PRIVATE:SEEN',
      '/v2/private_securities/PRIVATE%3ASEEN?workspace=research',
      '/v2/private_securities/PRIVATE:SEEN?workspace=main',
    ]) {
      expect((await call('GET', url)).json()).toEqual({ private_security: created });
    }
    expect((await call('GET', '/v2/private_securities/PRIVATE:NOPE')).json()).toEqual({
      code: 404,
      message: 'Private security PRIVATE:NOPE not found.',
    });
  });

  test('update: every field optional, left-out and null fields kept, data replaced whole', async () => {
    await create('PRIVATE:UPD', {
      name: 'Before',
      description: 'desc',
      type: 'EQUITY',
      currency: 'EUR',
      data: { a: 1, b: 2 },
    });
    const url = '/v2/private_securities/PRIVATE:UPD';
    const empty = await call('PUT', url, {});
    expect(empty.statusCode).toBe(200);
    expect(empty.json().private_security).toMatchObject({
      name: 'Before',
      description: 'desc',
      instrument_type: 'EQUITY',
      currency: 'EUR',
      data: { a: 1, b: 2 },
      version: '2',
    });

    const res = await call('PUT', url, {
      name: 'After',
      type: 'FUND',
      data: { c: 3 },
      currency: null,
      symbol: 'PRIVATE:IGNORED',
    });
    expect(res.json().private_security).toEqual({
      symbol: 'PRIVATE:UPD',
      name: 'After',
      description: 'desc',
      tags: [],
      instrument_type: 'FUND',
      currency: 'EUR',
      data: { c: 3 },
      created: expect.any(Number),
      updated: expect.any(Number),
      version: '3',
    });

    const renamed = await call('PUT', url, {
      name: null,
      instrument_type: 'OTHER',
      currency: 'JPY',
      tags: ['x'],
    });
    expect(renamed.json().private_security).toMatchObject({
      name: 'After',
      instrument_type: 'OTHER',
      currency: 'JPY',
      tags: ['x'],
      version: '4',
    });

    for (const [body, message] of [
      [{ type: 'fund' }, typeMessage],
      [{ data: [] }, 'data must be an object or null.'],
      [{ currency: 'yen' }, 'currency must be a 3-letter ISO 4217 currency code.'],
      [{ name: '' }, 'name must not be empty.'],
    ] as const) {
      expect((await call('PUT', url, body)).json()).toEqual({ code: 400, message });
    }
    expect((await call('GET', url)).json().private_security.version).toBe('4');
    expect((await call('PUT', '/v2/private_securities/PRIVATE:ABSENT', { name: 'x' })).json()).toEqual({
      code: 404,
      message: 'Private security PRIVATE:ABSENT not found.',
    });
  });

  test('concurrent updates of one security never lose a write', async () => {
    await create('PRIVATE:BUSY', { name: 'Busy', currency: 'USD' });
    const url = '/v2/private_securities/PRIVATE:BUSY';
    // Each writer changes a different field; with a lost update one change would vanish.
    const writes = await Promise.all([
      call('PUT', url, { description: 'from writer A' }),
      call('PUT', url, { type: 'FUND' }),
      call('PUT', url, { currency: 'JPY' }),
      call('PUT', url, { data: { nav: 1 } }),
      call('PUT', url, { name: 'Busy renamed' }),
    ]);
    expect(writes.map((w) => w.statusCode)).toEqual([200, 200, 200, 200, 200]);
    expect((await call('GET', url)).json().private_security).toMatchObject({
      description: 'from writer A',
      instrument_type: 'FUND',
      currency: 'JPY',
      data: { nav: 1 },
      name: 'Busy renamed',
      version: '6',
    });
  });

  test('list without data, most recent first, one-symbol mode, alike from every workspace', async () => {
    const other = await createTestAccount(h.db);
    await create('PRIVATE:L1', { name: 'Loan one' }, other);
    await create('PRIVATE:L2', { name: 'Loan two' }, other);
    await create('PRIVATE:X', { name: 'Other' }, other);
    const list = (query = '') => call('GET', `/v2/private_securities${query}`, undefined, other);
    const all = await list();
    expect(all.json().private_securities.map((p: { symbol: string }) => p.symbol)).toEqual([
      'PRIVATE:X',
      'PRIVATE:L2',
      'PRIVATE:L1',
    ]);
    expect(Object.keys(all.json().private_securities[0]).sort()).toEqual(
      [
        'symbol',
        'name',
        'description',
        'tags',
        'instrument_type',
        'currency',
        'created',
        'updated',
        'version',
      ].sort(),
    );
    expect((await list('?workspace=elsewhere')).json()).toEqual(all.json());
    expect((await list(`?query=${encodeURIComponent('PRIVATE:L1')}`)).json().private_securities).toEqual([
      expect.objectContaining({ symbol: 'PRIVATE:L1', name: 'Loan one' }),
    ]);
    expect(
      (await list('?query=Loan')).json().private_securities.map((p: { name: string }) => p.name),
    ).toEqual(['Loan two', 'Loan one']);
    const filtered = await list(
      `?query=${encodeURIComponent(JSON.stringify({ filters: [['symbol', 'IN', ['PRIVATE:L2', 'PRIVATE:X']]] }))}`,
    );
    expect(filtered.json().private_securities.map((p: { symbol: string }) => p.symbol)).toEqual([
      'PRIVATE:X',
      'PRIVATE:L2',
    ]);
  });

  test('delete → {private_security: {deleted, symbol, name}}; another account gets 404 everywhere', async () => {
    await create('PRIVATE:DEL', { name: 'To delete' });
    const other = await createTestAccount(h.db);
    const url = '/v2/private_securities/PRIVATE:DEL';
    expect((await call('GET', url, undefined, other)).statusCode).toBe(404);
    expect((await call('PUT', url, { name: 'hijack' }, other)).statusCode).toBe(404);
    expect((await call('DELETE', url, undefined, other)).statusCode).toBe(404);
    expect((await call('GET', url)).json().private_security.name).toBe('To delete');

    const res = await call('DELETE', `${url}?workspace=ops`);
    expect(res.json()).toEqual({
      private_security: { deleted: true, symbol: 'PRIVATE:DEL', name: 'To delete' },
    });
    expect((await call('GET', url)).statusCode).toBe(404);
    expect((await call('DELETE', url)).json()).toEqual({
      code: 404,
      message: 'Private security PRIVATE:DEL not found.',
    });
  });

  test('audit trail: CustomSecurity records with before/after snapshots', async () => {
    await create('PRIVATE:AUDIT', { name: 'Audited', data: { nav: 10 } });
    await call('GET', '/v2/private_securities/PRIVATE:AUDIT');
    await call('PUT', '/v2/private_securities/PRIVATE:AUDIT', { data: { nav: 11 } });
    await call('DELETE', '/v2/private_securities/PRIVATE:AUDIT');
    const records = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, entity_id: 'PRIVATE:AUDIT' })
      .orderBy('created_at');
    expect(records.map((r) => [r.operation, r.entity_type, r.entity_name, r.workspace])).toEqual([
      ['CREATE', 'CustomSecurity', 'Audited', null],
      ['VIEW', 'CustomSecurity', 'Audited', null],
      ['UPDATE', 'CustomSecurity', 'Audited', null],
      ['DELETE', 'CustomSecurity', 'Audited', null],
    ]);
    expect(records[0].after).toMatchObject({ symbol: 'PRIVATE:AUDIT', instrument_type: 'EQUITY' });
    expect(records[2].before.data).toEqual({ nav: 10 });
    expect(records[2].after.data).toEqual({ nav: 11 });
    expect(records[3].before.data).toEqual({ nav: 11 });

    await call('PUT', '/v2/private_securities/PRIVATE:AUDIT', { name: 'gone' });
    const [failure] = await h.db('audit_logs').where({
      account_id: h.account.accountId,
      entity_id: 'PRIVATE:AUDIT',
      status: 'ERROR',
    });
    expect(failure).toMatchObject({ operation: 'UPDATE', entity_type: 'CustomSecurity' });
  });

  test('the OpenAPI document lists the routes and the PrivateSecurity schema', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    expect(Object.keys(doc.paths['/private_securities']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/private_securities/{id}']).sort()).toEqual(['delete', 'get', 'put']);
    const schema = Object.values(doc.components.schemas).find(
      (s) => (s as { title?: string }).title === 'PrivateSecurity',
    ) as { properties: object };
    expect(Object.keys(schema.properties)).toContain('instrument_type');
    expect(Object.keys(schema.properties)).not.toContain('type');
  });
});
