import { createTestAccount, createTestApp } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

const points = (...pairs: Array<[string, number]>) => pairs;

describe('custom indexes', () => {
  const h = useTestApp();
  const { call } = h;
  const create = (symbol: string, extra: object = {}) =>
    call('POST', '/v2/custom_indexes', {
      symbol,
      name: `Index ${symbol}`,
      data: points(['20240102', 100]),
      ...extra,
    });
  const count = async () =>
    Number((await h.db('entities').where({ kind: 'custom_index' }).count({ n: '*' }))[0]!.n);

  test('create → 200 with the defaults; data sorted by date; date and unknown keys ignored', async () => {
    const res = await call('POST', '/v2/custom_indexes', {
      symbol: 'CUSTOM:BENCH_1',
      name: 'Bench',
      description: 'Rates proxy #Rates',
      data: points(['20240104', 102.25], ['20240102', 100], ['20240103', 101]),
      date: '20240105',
      unknown_key: 'dropped',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      custom_index: {
        symbol: 'CUSTOM:BENCH_1',
        name: 'Bench',
        description: 'Rates proxy #Rates',
        tags: ['rates'],
        data_type: 'PRICE',
        periodicity: 'D',
        currency: 'USD',
        base_price: 1,
        data: [
          ['20240102', 100],
          ['20240103', 101],
          ['20240104', 102.25],
        ],
        created: expect.any(Number),
        updated: expect.any(Number),
        version: '1',
      },
    });
  });

  test('every optional field is stored as given; tags may be a string; nulls take the defaults', async () => {
    const res = await call('POST', '/v2/custom_indexes', {
      symbol: 'CUSTOM:FUND_RETURNS',
      name: 'Fund returns',
      tags: 'hedge Fund',
      data_type: 'RETURN',
      periodicity: 'M',
      currency: 'EUR',
      base_price: 250.5,
      data: points(['20231231', -0.5], ['20240131', 0.02]),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().custom_index).toMatchObject({
      tags: ['hedge', 'fund'],
      data_type: 'RETURN',
      periodicity: 'M',
      currency: 'EUR',
      base_price: 250.5,
      data: [
        ['20231231', -0.5],
        ['20240131', 0.02],
      ],
    });

    const nulls = await create('CUSTOM:NULLS', {
      description: null,
      tags: null,
      data_type: null,
      periodicity: null,
      currency: null,
      base_price: null,
    });
    expect(nulls.json().custom_index).toMatchObject({
      description: null,
      tags: [],
      data_type: 'PRICE',
      periodicity: 'D',
      currency: 'USD',
      base_price: 1,
    });
  });

  const symbolMessage =
    'symbol must be CUSTOM: followed by upper-case letters, digits or _ (no spaces), at most 64 characters in all.';
  const valid = { symbol: 'CUSTOM:BAD', name: 'Bad', data: points(['20240102', 1], ['20240103', 2]) };
  test.each([
    [{ name: 'x', data: valid.data }, 'symbol is required.'],
    [{ ...valid, symbol: 'custom:abc' }, symbolMessage],
    [{ ...valid, symbol: 'CUSTOM:MY INDEX' }, symbolMessage],
    [{ ...valid, symbol: 'INDEX:ABC' }, symbolMessage],
    [{ ...valid, symbol: 'PRIVATE:ABC' }, symbolMessage],
    [{ ...valid, symbol: 42 }, symbolMessage],
    [{ ...valid, symbol: 'CUSTOM:' + 'X'.repeat(58) }, symbolMessage],
    [{ ...valid, name: undefined }, 'name is required.'],
    [
      { ...valid, name: ' ' },
      'name must be a name of 1 to 200 characters, not only spaces, without NUL characters.',
    ],
    [{ ...valid, name: 'x'.repeat(201) }, 'name must be at most 200 characters long.'],
    [{ ...valid, data: undefined }, 'data is required.'],
    [{ ...valid, data: { '20240102': 1 } }, 'data must be an array.'],
    [{ ...valid, data: [] }, 'data must hold at least 1 item.'],
    [{ ...valid, data: [['20240102']] }, 'data[0] must be a [YYYYMMDD, number] pair.'],
    [{ ...valid, data: ['20240102', 1] }, 'data[0] must be a [YYYYMMDD, number] pair.'],
    [{ ...valid, data: [['20240102', 1, 2]] }, 'data[0] must be a [YYYYMMDD, number] pair.'],
    [{ ...valid, data: [['2024-01-02', 1]] }, 'data[0][0] must be a date in the format YYYYMMDD.'],
    [{ ...valid, data: [['20240230', 1]] }, 'data[0][0] must be a date in the format YYYYMMDD.'],
    [{ ...valid, data: [[20240102, 1]] }, 'data[0][0] must be a date in the format YYYYMMDD.'],
    [{ ...valid, data: [['20240102', '1.5']] }, 'data[0][1] must be a number.'],
    [{ ...valid, data: [['20240102', null]] }, 'data[0][1] must be a number.'],
    [
      {
        ...valid,
        data: [
          ['20240102', 1],
          ['20240103', 0],
        ],
      },
      'data[1][1]: a PRICE must be greater than 0.',
    ],
    [
      { ...valid, data_type: 'RETURN', data: [['20240102', -1]] },
      'data[0][1]: a RETURN (decimal) must be greater than -1.',
    ],
    [
      { ...valid, data_type: 'RETURN_100', data: [['20240102', -100]] },
      'data[0][1]: a RETURN_100 (percent) must be greater than -100.',
    ],
    [
      {
        ...valid,
        data: [
          ['20240103', 1],
          ['20240102', 2],
          ['20240103', 3],
        ],
      },
      'data has more than one value for the date 20240103.',
    ],
    [{ ...valid, data_type: 'LEVEL' }, 'data_type must be one of PRICE, RETURN, RETURN_100.'],
    [{ ...valid, data_type: 'price' }, 'data_type must be one of PRICE, RETURN, RETURN_100.'],
    [{ ...valid, periodicity: 'W' }, 'periodicity must be D (daily) or M (monthly).'],
    [{ ...valid, currency: 'usd' }, 'currency must be a 3-letter ISO 4217 currency code.'],
    [{ ...valid, currency: 'EURO' }, 'currency must be a 3-letter ISO 4217 currency code.'],
    [{ ...valid, base_price: 0 }, 'base_price must be a positive number.'],
    [{ ...valid, base_price: -1 }, 'base_price must be a positive number.'],
    [{ ...valid, base_price: '1' }, 'base_price must be a positive number.'],
    [{ ...valid, description: 'd'.repeat(501) }, 'description must be at most 500 characters long.'],
    [{ ...valid, tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }, 'tags must hold at most 32 items.'],
  ])('invalid create %j → 400 with its message, nothing stored', async (body, message) => {
    const before = await count();
    const res = await call('POST', '/v2/custom_indexes', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message });
    expect(await count()).toBe(before);
  });

  test('a value that JSON reads as Infinity is refused', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v2/custom_indexes',
      headers: { authorization: h.account.bearer, 'content-type': 'application/json' },
      payload: '{"symbol":"CUSTOM:HUGE","name":"Huge","data":[["20240102",1e400]]}',
    });
    expect(res.json()).toEqual({ code: 400, message: 'data[0][1] must be a number.' });
  });

  test('at most 100000 points', async () => {
    const big = await createTestApp(h.db, { maxPayloadBytes: 8 * 1024 * 1024 });
    try {
      const day = Date.UTC(1700, 0, 1);
      const series = (n: number) =>
        Array.from({ length: n }, (_, i) => [
          new Date(day + i * 86_400_000).toISOString().slice(0, 10).replace(/-/g, ''),
          1 + i,
        ]);
      const post = (symbol: string, n: number) =>
        big.app.inject({
          method: 'POST',
          url: '/v2/custom_indexes',
          headers: { authorization: h.account.bearer },
          payload: { symbol, name: symbol, data: series(n) },
        });
      const over = await post('CUSTOM:TOO_LONG', 100_001);
      expect(over.json()).toEqual({ code: 400, message: 'data must hold at most 100000 items.' });
      const full = await post('CUSTOM:LONG', 100_000);
      expect(full.statusCode).toBe(200);
      expect(full.json().custom_index.data).toHaveLength(100_000);
    } finally {
      await big.close();
    }
  });

  test('a symbol is unique in the account: a second create → 409, the first is untouched', async () => {
    expect((await create('CUSTOM:DUP', { name: 'First' })).statusCode).toBe(200);
    const again = await create('CUSTOM:DUP', { name: 'Second' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({
      code: 409,
      message: 'A custom index with symbol CUSTOM:DUP already exists.',
    });
    expect((await call('GET', '/v2/custom_indexes/CUSTOM:DUP')).json().custom_index.name).toBe('First');
    // Another account has its own symbols.
    const other = await createTestAccount(h.db);
    const theirs = await call(
      'POST',
      '/v2/custom_indexes',
      { symbol: 'CUSTOM:DUP', name: 'Theirs', data: points(['20240102', 5]) },
      other,
    );
    expect(theirs.statusCode).toBe(200);
    expect((await call('GET', '/v2/custom_indexes/CUSTOM:DUP')).json().custom_index.name).toBe('First');
  });

  test('retrieve by symbol (plain or URL-encoded), alike from every workspace; unknown → 404', async () => {
    const created = (await create('CUSTOM:RETRIEVE')).json().custom_index;
    for (const url of [
      '/v2/custom_indexes/CUSTOM:RETRIEVE',
      '/v2/custom_indexes/CUSTOM%3ARETRIEVE',
      '/v2/custom_indexes/CUSTOM:RETRIEVE?workspace=ops',
      '/v2/custom_indexes/CUSTOM:RETRIEVE?workspace=main',
    ]) {
      const res = await call('GET', url);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ custom_index: created });
    }
    // The longest symbol is still reachable as a path segment, URL-encoded or not.
    const longest = 'CUSTOM:' + 'L'.repeat(57);
    expect((await create(longest)).statusCode).toBe(200);
    for (const url of [
      `/v2/custom_indexes/${longest}`,
      `/v2/custom_indexes/${encodeURIComponent(longest)}`,
    ]) {
      expect((await call('GET', url)).json().custom_index.symbol).toBe(longest);
    }
    expect((await call('GET', '/v2/custom_indexes/CUSTOM:NOPE')).json()).toEqual({
      code: 404,
      message: 'Custom index CUSTOM:NOPE not found.',
    });
  });

  test('update: name and data required, other fields kept, data checked against the resulting type', async () => {
    await create('CUSTOM:UPD', {
      description: 'first #one',
      periodicity: 'M',
      currency: 'GBP',
      base_price: 10,
    });
    const url = '/v2/custom_indexes/CUSTOM:UPD';
    expect((await call('PUT', url, { data: points(['20240102', 1]) })).json()).toEqual({
      code: 400,
      message: 'name is required.',
    });
    expect((await call('PUT', url, { name: 'Renamed' })).json()).toEqual({
      code: 400,
      message: 'data is required.',
    });
    // The stored type is PRICE: a negative value is refused unless the update changes the type.
    expect((await call('PUT', url, { name: 'Renamed', data: points(['20240102', -0.1]) })).json()).toEqual({
      code: 400,
      message: 'data[0][1]: a PRICE must be greater than 0.',
    });

    const res = await call('PUT', url, {
      symbol: 'CUSTOM:IGNORED',
      name: 'Renamed',
      data_type: 'RETURN_100',
      data: points(['20240202', -5], ['20240201', 3]),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().custom_index).toEqual({
      symbol: 'CUSTOM:UPD',
      name: 'Renamed',
      description: 'first #one',
      tags: ['one'],
      data_type: 'RETURN_100',
      periodicity: 'M',
      currency: 'GBP',
      base_price: 10,
      data: [
        ['20240201', 3],
        ['20240202', -5],
      ],
      created: expect.any(Number),
      updated: expect.any(Number),
      version: '2',
    });
    expect((await call('GET', '/v2/custom_indexes/CUSTOM:IGNORED')).statusCode).toBe(404);

    const again = await call('PUT', url, {
      name: 'Renamed',
      description: 'now #two',
      currency: 'CHF',
      data: points(['20240301', 1]),
    });
    // The old description's hashtag goes with it; the new hashtag becomes the tag.
    expect(again.json().custom_index).toMatchObject({
      description: 'now #two',
      tags: ['two'],
      currency: 'CHF',
      data_type: 'RETURN_100',
      version: '3',
    });
    expect(
      (
        await call('PUT', '/v2/custom_indexes/CUSTOM:ABSENT', { name: 'x', data: points(['20240102', 1]) })
      ).json(),
    ).toEqual({ code: 404, message: 'Custom index CUSTOM:ABSENT not found.' });
  });

  test('list: without data, most recent first, one-symbol mode, name prefix, tags, any workspace', async () => {
    const other = await createTestAccount(h.db);
    const as = (symbol: string, name: string, tags: string[] = []) =>
      call('POST', '/v2/custom_indexes', { symbol, name, tags, data: points(['20240102', 1]) }, other);
    await as('CUSTOM:LIST_A', 'Alpha', ['x']);
    await as('CUSTOM:LIST_B', 'Beta', ['x', 'y']);
    await as('CUSTOM:LIST_C', 'Alphabet');
    const list = (query = '') => call('GET', `/v2/custom_indexes${query}`, undefined, other);

    const all = await list();
    expect(all.statusCode).toBe(200);
    expect(all.json().next_page_token).toBeNull();
    expect(all.json().custom_indexes.map((c: { symbol: string }) => c.symbol)).toEqual([
      'CUSTOM:LIST_C',
      'CUSTOM:LIST_B',
      'CUSTOM:LIST_A',
    ]);
    expect(Object.keys(all.json().custom_indexes[0]).sort()).toEqual(
      [
        'symbol',
        'name',
        'description',
        'tags',
        'data_type',
        'periodicity',
        'currency',
        'base_price',
        'created',
        'updated',
        'version',
      ].sort(),
    );
    expect((await list('?workspace=ops')).json()).toEqual(all.json());

    const one = await list(`?query=${encodeURIComponent('CUSTOM:LIST_B')}`);
    expect(one.json().custom_indexes.map((c: { symbol: string }) => c.symbol)).toEqual(['CUSTOM:LIST_B']);
    const prefix = await list('?query=Alpha');
    expect(prefix.json().custom_indexes.map((c: { name: string }) => c.name)).toEqual(['Alphabet', 'Alpha']);
    const tagged = await list(`?query=${encodeURIComponent('#x y')}`);
    expect(tagged.json().custom_indexes.map((c: { symbol: string }) => c.symbol)).toEqual(['CUSTOM:LIST_B']);

    const first = await list('?page_size=2');
    expect(first.json().custom_indexes).toHaveLength(2);
    const token = first.json().next_page_token;
    expect(typeof token).toBe('string');
    const second = await list(`?page_size=2&page_token=${encodeURIComponent(token)}`);
    expect(second.json()).toEqual({
      custom_indexes: [expect.objectContaining({ symbol: 'CUSTOM:LIST_A' })],
      next_page_token: null,
    });
    // Account-scoped: no date of their own, so a period filters on updated_on only.
    expect((await list('?start=20240101&period_field=date')).json()).toEqual({
      code: 400,
      message: 'These entities have no date: use period_field=updated_on.',
    });
  });

  test('delete → {custom_index: {deleted, symbol, name}}; then 404', async () => {
    await create('CUSTOM:GONE', { name: 'Gone soon' });
    const res = await call('DELETE', '/v2/custom_indexes/CUSTOM:GONE?workspace=anything');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ custom_index: { deleted: true, symbol: 'CUSTOM:GONE', name: 'Gone soon' } });
    expect((await call('GET', '/v2/custom_indexes/CUSTOM:GONE')).statusCode).toBe(404);
    expect((await call('DELETE', '/v2/custom_indexes/CUSTOM:GONE')).json()).toEqual({
      code: 404,
      message: 'Custom index CUSTOM:GONE not found.',
    });
    // The symbol is free again.
    expect((await create('CUSTOM:GONE')).statusCode).toBe(200);
  });

  test('another account sees 404 for every operation and an empty list', async () => {
    await create('CUSTOM:MINE', { name: 'Mine' });
    const other = await createTestAccount(h.db);
    const url = '/v2/custom_indexes/CUSTOM:MINE';
    expect((await call('GET', url, undefined, other)).statusCode).toBe(404);
    expect(
      (await call('PUT', url, { name: 'hijack', data: points(['20240102', 1]) }, other)).statusCode,
    ).toBe(404);
    expect((await call('DELETE', url, undefined, other)).statusCode).toBe(404);
    expect(
      (await call('GET', '/v2/custom_indexes?query=Mine', undefined, other)).json().custom_indexes,
    ).toEqual([]);
    expect((await call('GET', url)).json().custom_index.name).toBe('Mine');
  });

  test('audit trail: CustomSecurity records for every action, failures recorded as ERROR', async () => {
    await create('CUSTOM:AUDIT', { name: 'Audited' });
    await call('GET', '/v2/custom_indexes/CUSTOM:AUDIT');
    await call('PUT', '/v2/custom_indexes/CUSTOM:AUDIT', {
      name: 'Audited 2',
      data: points(['20240105', 7]),
    });
    await call('GET', `/v2/custom_indexes?query=${encodeURIComponent('CUSTOM:AUDIT')}`);
    await call('DELETE', '/v2/custom_indexes/CUSTOM:AUDIT');
    const records = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, entity_id: 'CUSTOM:AUDIT' })
      .orderBy('created_at');
    expect(records.map((r) => [r.operation, r.entity_type, r.entity_name, r.workspace, r.status])).toEqual([
      ['CREATE', 'CustomSecurity', 'Audited', null, 'SUCCESS'],
      ['VIEW', 'CustomSecurity', 'Audited', null, 'SUCCESS'],
      ['UPDATE', 'CustomSecurity', 'Audited 2', null, 'SUCCESS'],
      ['DELETE', 'CustomSecurity', 'Audited 2', null, 'SUCCESS'],
    ]);
    // Series are large: the trail keeps their digest, which still shows whether they changed.
    const digest = { sha256: expect.stringMatching(/^[0-9a-f]{64}$/), bytes: expect.any(Number) };
    expect(records[0].after).toMatchObject({ symbol: 'CUSTOM:AUDIT', data: digest });
    expect(records[2].before).toMatchObject({ name: 'Audited', data: records[0].after.data });
    expect(records[2].after).toMatchObject({ name: 'Audited 2', data: digest });
    expect(records[2].after.data.sha256).not.toBe(records[2].before.data.sha256);
    const [listed] = await h
      .db('audit_logs')
      .whereRaw(`viewed_ids @> ?::jsonb`, [JSON.stringify(['CUSTOM:AUDIT'])]);
    expect(listed).toMatchObject({ operation: 'VIEW', entity_type: 'CustomSecurity', entity_id: null });

    await call('POST', '/v2/custom_indexes', { symbol: 'CUSTOM:FAILS', name: 'x' });
    await call('GET', '/v2/custom_indexes/CUSTOM:FAILS');
    const failures = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, status: 'ERROR', entity_type: 'CustomSecurity' })
      .orderBy('created_at');
    expect(failures.map((r) => [r.operation, r.entity_id])).toEqual(
      expect.arrayContaining([
        ['CREATE', null],
        ['VIEW', 'CUSTOM:FAILS'],
      ]),
    );
  });

  test('the OpenAPI document lists the routes and the CustomIndex schema', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    expect(Object.keys(doc.paths['/custom_indexes']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/custom_indexes/{id}']).sort()).toEqual(['delete', 'get', 'put']);
    const schema = Object.values(doc.components.schemas).find(
      (s) => (s as { title?: string }).title === 'CustomIndex',
    ) as { properties: object };
    expect(Object.keys(schema.properties)).toEqual([
      'symbol',
      'name',
      'description',
      'tags',
      'data_type',
      'periodicity',
      'currency',
      'base_price',
      'data',
      'created',
      'updated',
      'version',
    ]);
  });
});
