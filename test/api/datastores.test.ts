import { createHash } from 'node:crypto';
import { createTestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

const table = [
  ['symbol', 'weight', 'note'],
  ['AAPL', 0.4, null],
  ['MSFT', 0.6, 'core'],
];

describe('datastores', () => {
  const h = useTestApp();
  const { call } = h;
  const create = async (body: object) => {
    const res = await call('POST', '/v2/datastores', body);
    expect(res.statusCode).toBe(200);
    return res.json().datastore;
  };
  const entityCount = async () => Number((await h.db('entities').count({ n: '*' }).first())!.n);

  test('create → 200 with defaults, hashtags as tags, data echoed, unknown keys ignored', async () => {
    const res = await call('POST', '/v2/datastores', {
      name: 'Weights',
      description: 'Target weights #Model',
      tags: ['Rebalance'],
      data: table,
      unknown_top_level: 'ignored',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      datastore: {
        id: expect.stringMatching(/^dats_[A-Za-z0-9]{25}$/),
        name: 'Weights',
        description: 'Target weights #Model',
        tags: ['rebalance', 'model'],
        date: null,
        data: table,
        workspace: 'main',
        created: expect.any(Number),
        updated: expect.any(Number),
        version: '1',
      },
    });
  });

  test('minimal create: description null, tags empty, data may be empty', async () => {
    const created = await create({ name: 'Empty', data: [] });
    expect(created).toMatchObject({ description: null, tags: [], date: null, data: [] });
  });

  test.each([false, 'False', 'false', '0'])(
    'with_data=%j leaves data out of the create response but stores it',
    async (withData) => {
      const created = await create({ name: 'Lean', data: table, with_data: withData });
      expect(created).not.toHaveProperty('data');
      expect(created.name).toBe('Lean');
      expect((await call('GET', `/v2/datastores/${created.id}`)).json().datastore.data).toEqual(table);
    },
  );

  test('with_data=True (as Python clients send it) keeps data', async () => {
    expect((await create({ name: 'Full', data: table, with_data: 'True' })).data).toEqual(table);
  });

  test.each([
    [{ data: table }, 'name is required.'],
    [{ name: '', data: table }, 'name must not be empty.'],
    [{ name: 'x' }, 'data is required.'],
    [{ name: 'x', data: null }, 'data must be an array.'],
    [{ name: 'x', data: 'a,b' }, 'data must be an array.'],
    [{ name: 'x', data: [['a'], 'b'] }, 'data[1] must be an array.'],
    [{ name: 'x', data: [['a'], ['b'], [1, true]] }, 'data[2][1] must be a string, a number or null.'],
    [{ name: 'x', data: [[{ nested: 1 }]] }, 'data[0][0] must be a string, a number or null.'],
    [{ name: 'x', data: [[['deeper']]] }, 'data[0][0] must be a string, a number or null.'],
    [{ name: 'x', data: table, date: '2024-01-31' }, 'date must be a date in the format YYYYMMDD.'],
    [{ name: 'x', data: table, date: '20230229' }, 'date must be a date in the format YYYYMMDD.'],
    [
      { name: 'x', data: table, description: 'd'.repeat(501) },
      'description must be at most 500 characters long.',
    ],
    [
      { name: 'x', data: table, tags: Array.from({ length: 33 }, (_, i) => `t${i}`) },
      'tags must hold at most 32 items.',
    ],
    [{ name: 'x', data: table, tags: [1] }, 'tags[0] must be a string.'],
    [
      { name: 'x', data: table, workspace: 'has space' },
      'workspace must be a workspace name without spaces.',
    ],
    // PostgreSQL cannot store these in jsonb: a 400 naming the cell, not a 500.
    [{ name: 'x', data: [['ok'], ['a\u0000b']] }, 'data[1][0] must be text (without NUL characters).'],
    [{ name: 'x', data: [['\ud800']] }, 'data[0][0] holds a NUL character or an unpaired surrogate.'],
    [
      { name: 'x\u0000', data: [] },
      'name must be a name of 1 to 200 characters, not only spaces, without NUL characters.',
    ],
  ])('invalid %j → 400 with its message, nothing stored', async (body, message) => {
    const before = await entityCount();
    const res = await call('POST', '/v2/datastores', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message });
    expect(await entityCount()).toBe(before);
  });

  test('unknown body keys are ignored, whatever they hold', async () => {
    const created = await create({ name: 'Odd keys', data: [], junk: 'a\u0000', nested: { x: [1] } });
    expect(created).not.toHaveProperty('junk');
    expect(created).not.toHaveProperty('nested');
  });

  test('a date is kept as given', async () => {
    expect((await create({ name: 'Dated', data: [], date: '20240131' })).date).toBe('20240131');
  });

  test('retrieve, update (version bumps), list without data, delete', async () => {
    const created = await create({ name: 'Prices', data: table, tags: ['keep'] });
    const got = await call('GET', `/v2/datastores/${created.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.json()).toEqual({ datastore: created });

    const newTable = [['symbol'], ['SPY']];
    const updated = await call('PUT', `/v2/datastores/${created.id}`, {
      name: 'Prices v2',
      description: 'now #daily',
      tags: null,
      data: newTable,
      ignored: true,
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.json().datastore).toEqual({
      ...created,
      name: 'Prices v2',
      description: 'now #daily',
      tags: ['keep', 'daily'],
      data: newTable,
      updated: expect.any(Number),
      version: '2',
    });

    // A PUT without data keeps the stored rows.
    const renamed = (await call('PUT', `/v2/datastores/${created.id}`, { name: 'Prices v3' })).json()
      .datastore;
    expect(renamed).toMatchObject({ name: 'Prices v3', data: newTable, version: '3' });

    const list = await call('GET', '/v2/datastores?query=Prices');
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual({
      datastores: [
        {
          id: created.id,
          name: 'Prices v3',
          description: 'now #daily',
          tags: ['keep', 'daily'],
          date: null,
          workspace: 'main',
          created: created.created,
          updated: expect.any(Number),
          version: '3',
        },
      ],
      next_page_token: null,
    });

    const deleted = await call('DELETE', `/v2/datastores/${created.id}`);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ datastore: { deleted: true, id: created.id, name: 'Prices v3' } });
    expect((await call('GET', `/v2/datastores/${created.id}`)).json()).toEqual({
      code: 404,
      message: `Datastore ${created.id} not found.`,
    });
    expect((await call('DELETE', `/v2/datastores/${created.id}`)).statusCode).toBe(404);
  });

  test('an invalid update → 400 naming the row, nothing changed', async () => {
    const created = await create({ name: 'Stable', data: table });
    const res = await call('PUT', `/v2/datastores/${created.id}`, {
      name: 'Changed',
      data: [['a'], [false]],
    });
    expect(res.json()).toEqual({ code: 400, message: 'data[1][0] must be a string, a number or null.' });
    expect((await call('GET', `/v2/datastores/${created.id}`)).json().datastore).toEqual(created);
  });

  test('list pages most recent first', async () => {
    const names = ['Page A', 'Page B', 'Page C'];
    const ids: string[] = [];
    for (const name of names) ids.push((await create({ name, data: [] })).id);
    const first = (await call('GET', '/v2/datastores?query=Page&page_size=2')).json();
    expect(first.datastores.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    expect(first.next_page_token).toEqual(expect.any(String));
    const second = (
      await call('GET', `/v2/datastores?query=Page&page_size=2&page_token=${first.next_page_token}`)
    ).json();
    expect(second).toEqual({ datastores: [expect.objectContaining({ id: ids[0] })], next_page_token: null });
  });

  test('workspace as body field or query parameter; another account sees 404', async () => {
    const inBody = await create({ name: 'Ops table', data: [], workspace: 'ops' });
    expect(inBody.workspace).toBe('ops');
    const viaQuery = await call('POST', '/v2/datastores?workspace=ops', { name: 'Ops 2', data: [] });
    expect(viaQuery.json().datastore.workspace).toBe('ops');

    expect((await call('GET', `/v2/datastores/${inBody.id}`)).statusCode).toBe(404);
    expect((await call('GET', `/v2/datastores/${inBody.id}?workspace=ops`)).statusCode).toBe(200);
    const putViaQuery = await call('PUT', `/v2/datastores/${inBody.id}?workspace=ops`, {
      name: 'Ops renamed',
    });
    expect(putViaQuery.json().datastore).toMatchObject({ name: 'Ops renamed', workspace: 'ops' });
    const listed = (await call('GET', '/v2/datastores?workspace=ops')).json().datastores;
    expect(listed.map((d: { workspace: string }) => d.workspace)).toEqual(['ops', 'ops']);

    const other = await createTestAccount(h.db);
    const notFound = { code: 404, message: `Datastore ${inBody.id} not found.` };
    expect((await call('GET', `/v2/datastores/${inBody.id}?workspace=ops`, undefined, other)).json()).toEqual(
      notFound,
    );
    expect(
      (await call('PUT', `/v2/datastores/${inBody.id}`, { name: 'hijack', workspace: 'ops' }, other)).json(),
    ).toEqual(notFound);
    expect(
      (await call('DELETE', `/v2/datastores/${inBody.id}?workspace=ops`, undefined, other)).json(),
    ).toEqual(notFound);
    expect((await call('GET', '/v2/datastores?workspace=ops', undefined, other)).json().datastores).toEqual(
      [],
    );
    expect((await call('GET', `/v2/datastores/${inBody.id}?workspace=ops`)).json().datastore.name).toBe(
      'Ops renamed',
    );
  });

  test('every action is in the audit trail', async () => {
    const created = await create({ name: 'Audited', data: table });
    await call('GET', `/v2/datastores/${created.id}`);
    await call('PUT', `/v2/datastores/${created.id}`, { name: 'Audited 2', data: [['x']] });
    await call('GET', `/v2/datastores?query=${created.id}`);
    await call('DELETE', `/v2/datastores/${created.id}`);
    await call('GET', `/v2/datastores/${created.id}`);
    const records = await h.db('audit_logs').where({ entity_id: created.id }).orderBy('created_at');
    expect(records.map((r) => [r.operation, r.entity_type, r.entity_name, r.status])).toEqual([
      ['CREATE', 'Datastore', 'Audited', 'SUCCESS'],
      ['VIEW', 'Datastore', 'Audited', 'SUCCESS'],
      ['UPDATE', 'Datastore', 'Audited 2', 'SUCCESS'],
      ['DELETE', 'Datastore', 'Audited 2', 'SUCCESS'],
      ['VIEW', 'Datastore', null, 'ERROR'],
    ]);
    // Tables can be large: the trail keeps a digest of `data`, enough to see that it changed.
    const digest = (value: unknown) => ({
      sha256: createHash('sha256').update(JSON.stringify(value)).digest('hex'),
      bytes: Buffer.byteLength(JSON.stringify(value)),
    });
    expect(records[0].after).toMatchObject({ name: 'Audited', data: digest(table), workspace: 'main' });
    expect(records[2].before.data).toEqual(digest(table));
    expect(records[2].after.data).toEqual(digest([['x']]));
    const listed = await h
      .db('audit_logs')
      .where({ entity_type: 'Datastore', operation: 'VIEW' })
      .whereNull('entity_id')
      .whereRaw('viewed_ids @> ?::jsonb', [JSON.stringify([created.id])]);
    expect(listed).toHaveLength(1);
  });

  test('the OpenAPI document lists every datastore route and the Datastore schema', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    expect(Object.keys(doc.paths['/datastores']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/datastores/{id}']).sort()).toEqual(['delete', 'get', 'put']);
    const schemaOf = (ref: string) => doc.components.schemas[ref.split('/').pop()!];
    const retrieved = schemaOf(
      doc.paths['/datastores/{id}'].get.responses['200'].content['application/json'].schema.properties
        .datastore.$ref,
    );
    expect(retrieved.title).toBe('Datastore');
    expect(retrieved.required).toEqual(expect.arrayContaining(['id', 'name', 'data', 'date', 'workspace']));
    const created = schemaOf(
      doc.paths['/datastores'].post.responses['200'].content['application/json'].schema.properties.datastore
        .$ref,
    );
    expect(created.required).not.toContain('data');
  });
});
