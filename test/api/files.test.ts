import { createHash, randomBytes } from 'node:crypto';
import { deflateSync, gunzipSync, gzipSync } from 'node:zlib';
import { createTestAccount, type TestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

const MiB = 1024 * 1024;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const today = () => new Date().toISOString().slice(0, 10).replace(/-/g, '');

describe('files (JSON)', () => {
  let other: TestAccount;
  // Room for a few MiB of Base64 in one JSON body.
  const h = useTestApp({
    maxPayloadBytes: 8 * MiB,
    setUp: async ({ db }) => {
      other = await createTestAccount(db);
    },
  });
  const { call } = h;
  const create = async (body: Record<string, unknown>) => {
    const res = await call('POST', '/v2/files', {
      name: 'Prices',
      description: '',
      content_type: 'text/csv',
      data: Buffer.from('symbol,price\nAAPL,1\n').toString('base64'),
      ...body,
    });
    expect(res.statusCode).toBe(200);
    return res.json().file;
  };
  const chunkRows = async (fileId: string) => {
    const row = await h.db('entities').where({ kind: 'file', id: fileId }).first();
    return Number(
      (await h.db('file_chunks').where({ blob_id: row.body.blob_id }).count({ n: '*' }).first())!.n,
    );
  };

  test('create → 200 with the content echoed in Base64, url /file/<uid>, date today, unknown keys ignored', async () => {
    const content = Buffer.from('symbol,price\nAAPL,189.5\n');
    const res = await call('POST', '/v2/files', {
      name: 'Prices.csv',
      description: 'Closing prices #EOD',
      tags: ['Daily'],
      content_type: 'text/csv',
      data: content.toString('base64'),
      link_uid: 'batch-7',
      unknown_top_level: { ignored: true },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.json()).toEqual({
      file: {
        id: expect.stringMatching(/^file_[A-Za-z0-9]{25}$/),
        name: 'Prices.csv',
        description: 'Closing prices #EOD',
        tags: ['daily', 'eod'],
        content_type: 'text/csv',
        date: today(),
        data: content.toString('base64'),
        url: expect.stringMatching(/^\/file\/[A-Za-z0-9]{32}$/),
        workspace: 'main',
        link_uid: 'batch-7',
        size: content.length,
        created: expect.any(Number),
        updated: expect.any(Number),
        version: '1',
      },
    });
    // Streamed, yet with an exact length.
    expect(Number(res.headers['content-length'])).toBe(res.rawPayload.length);
  });

  test('with_data=false → data null; the content is stored all the same', async () => {
    const created = await create({ with_data: 'False', date: '20240105' });
    expect(created.data).toBeNull();
    expect(created.date).toBe('20240105');
    const fetched = (await call('GET', `/v2/files/${created.id}`)).json().file;
    expect(Buffer.from(fetched.data, 'base64').toString()).toBe('symbol,price\nAAPL,1\n');
  });

  test('an empty file is a file', async () => {
    const created = await create({ data: '' });
    expect(created).toMatchObject({ data: '', size: 0 });
    const raw = await h.app.inject({
      method: 'GET',
      url: created.url,
      headers: { authorization: h.account.bearer },
    });
    expect(raw.statusCode).toBe(200);
    expect(raw.rawPayload.length).toBe(0);
  });

  test.each([
    ['name', { name: undefined }, 'name is required'],
    ['description', { description: undefined }, 'description is required'],
    ['description as null', { description: null }, 'description must be a string'],
    ['data', { data: undefined }, 'data is required'],
    ['content_type', { content_type: undefined }, 'content_type is required'],
  ])('create without %s → 400 naming it, nothing stored', async (_label, override, message) => {
    const before = Number((await h.db('file_chunks').count({ n: '*' }).first())!.n);
    const res = await call('POST', '/v2/files', {
      name: 'x',
      description: 'd',
      content_type: 'text/plain',
      data: 'eA==',
      ...override,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message: expect.stringContaining(message) });
    expect(Number((await h.db('file_chunks').count({ n: '*' }).first())!.n)).toBe(before);
  });

  test.each([
    ['length not a multiple of 4', 'YWJj' + 'ZA'],
    ['a character outside the alphabet', 'YW$j'],
    ['whitespace', 'YWJj\nZGVm'],
    ['base64url alphabet', 'YW-_'],
    ['padding in the middle', 'YQ==YWJj'],
    ['stray bits before ==', 'YR=='],
    ['stray bits before =', 'YWJ='],
    ['only padding', '===='],
    ['a number', 12],
  ])('bad Base64 (%s) → 400', async (_label, data) => {
    const res = await call('POST', '/v2/files', {
      name: 'x',
      description: '',
      content_type: 'text/plain',
      data,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/^data (is not valid Base64|must be a string)/);
  });

  test('content_type: the create list has application/x-zip-compressed, the update list does not', async () => {
    const zipped = await create({ content_type: 'application/x-zip-compressed', name: 'a.zip' });
    expect(zipped.content_type).toBe('application/x-zip-compressed');
    for (const type of ['text/html', 'image/webp', 'TEXT/CSV', 'text/csv; charset=utf-8']) {
      const res = await call('POST', '/v2/files', {
        name: 'x',
        description: '',
        content_type: type,
        data: '',
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(/^content_type must be one of the types allowed on create: /);
    }
    const update = (content_type: string) =>
      call('PUT', `/v2/files/${zipped.id}`, { name: 'a.zip', description: '', content_type, data: 'UEs=' });
    const refused = await update('application/x-zip-compressed');
    expect(refused.statusCode).toBe(400);
    expect(refused.json().message).toMatch(/^content_type must be one of the types allowed on update: /);
    expect(refused.json().message).not.toContain('x-zip-compressed');
    const accepted = await update('application/zip');
    expect(accepted.statusCode).toBe(200);
    expect(accepted.json().file).toMatchObject({
      content_type: 'application/zip',
      data: 'UEs=',
      version: '2',
    });
  });

  test('retrieve, update (content replaced, old chunks freed), list without data, link_uid query, delete', async () => {
    const first = randomBytes(3 * MiB + 5);
    const created = await create({
      name: 'Blob',
      data: first.toString('base64'),
      link_uid: 'pair-1',
      tags: ['a'],
    });
    expect(await chunkRows(created.id)).toBe(4);
    const oldBlob = (await h.db('entities').where({ id: created.id }).first()).body.blob_id;

    const got = (await call('GET', `/v2/files/${created.id}`)).json().file;
    expect(sha256(Buffer.from(got.data, 'base64'))).toBe(sha256(first));

    const second = randomBytes(MiB + 1);
    const put = await call('PUT', `/v2/files/${created.id}`, {
      name: 'Blob 2',
      description: 'new #Tag',
      content_type: 'application/octet-stream',
      data: second.toString('base64'),
    });
    expect(put.statusCode).toBe(200);
    expect(put.json().file).toMatchObject({
      id: created.id,
      name: 'Blob 2',
      tags: ['a', 'tag'],
      link_uid: 'pair-1',
      url: created.url,
      size: second.length,
      version: '2',
    });
    expect(sha256(Buffer.from(put.json().file.data, 'base64'))).toBe(sha256(second));
    expect(await chunkRows(created.id)).toBe(2);
    expect(Number((await h.db('file_chunks').where({ blob_id: oldBlob }).count({ n: '*' }).first())!.n)).toBe(
      0,
    );

    const listed = (await call('GET', `/v2/files?query=${encodeURIComponent('&pair-1')}`)).json();
    expect(listed.files).toHaveLength(1);
    expect(listed.files[0]).toMatchObject({ id: created.id, name: 'Blob 2', size: second.length });
    expect(listed.files[0]).not.toHaveProperty('data');
    expect(listed.next_page_token).toBeNull();

    const blob = (await h.db('entities').where({ id: created.id }).first()).body.blob_id;
    const deleted = await call('DELETE', `/v2/files/${created.id}`);
    expect(deleted.json()).toEqual({ file: { id: created.id, name: 'Blob 2', deleted: true } });
    expect(Number((await h.db('file_chunks').where({ blob_id: blob }).count({ n: '*' }).first())!.n)).toBe(0);
    expect((await call('GET', `/v2/files/${created.id}`)).statusCode).toBe(404);
    expect((await call('DELETE', `/v2/files/${created.id}`)).statusCode).toBe(404);
  });

  test('PUT needs name, description, data and content_type; an unknown id → 404', async () => {
    const created = await create({});
    const res = await call('PUT', `/v2/files/${created.id}`, { name: 'only a name' });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain('description is required');
    const unknown = await call('PUT', '/v2/files/file_AAAAAAAAAAAAAAAAAAAAAAAAA', {
      name: 'x',
      description: '',
      content_type: 'text/plain',
      data: '',
    });
    expect(unknown.statusCode).toBe(404);
  });

  // The body's schema states the shape; these rules stay in the engine, and answer 400 on both routes.
  test.each([
    [
      'an unpaired surrogate in name',
      { name: 'a\ud800' },
      'name holds a NUL character or an unpaired surrogate.',
    ],
    [
      'an unpaired surrogate in a tag',
      { tags: ['a', '\udc00'] },
      'tags[1] holds a NUL character or an unpaired surrogate.',
    ],
    [
      'an unpaired surrogate in tags as text',
      { tags: 'a \ud800' },
      'tags holds a NUL character or an unpaired surrogate.',
    ],
    [
      'an unpaired surrogate in link_uid',
      { link_uid: '\ud800' },
      'link_uid holds a NUL character or an unpaired surrogate.',
    ],
    [
      'an unpaired surrogate in workspace',
      { workspace: 'w\ud800' },
      'workspace holds a NUL character or an unpaired surrogate.',
    ],
    [
      'tags and the description’s hashtags past 32',
      { tags: Array.from({ length: 30 }, (_, i) => `t${i}`), description: '#a #b #c' },
      'At most 32 tags are allowed, got 33.',
    ],
    [
      'data not in strict Base64',
      { data: 'YR==' },
      'data is not valid Base64 (standard alphabet, padded with =, no whitespace).',
    ],
  ])('%s → 400 on create and update, nothing stored', async (_label, change, message) => {
    const kept = await create({ name: 'Kept' });
    const count = async (table: string) => Number((await h.db(table).count({ n: '*' }).first())!.n);
    const [entities, chunks] = [await count('entities'), await count('file_chunks')];
    const body = { name: 'x', description: '', content_type: 'text/plain', data: 'eA==', ...change };
    for (const [method, url] of [
      ['POST', '/v2/files'],
      ['PUT', `/v2/files/${kept.id}`],
    ] as const) {
      const res = await call(method, url, body);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ code: 400, message });
    }
    expect([await count('entities'), await count('file_chunks')]).toEqual([entities, chunks]);
    expect((await call('GET', `/v2/files/${kept.id}`)).json().file).toMatchObject({
      name: 'Kept',
      version: '1',
    });
  });

  test('a name counts characters, as the schema says: 200 emoji are a name, 201 are not', async () => {
    const emoji = '\u{1F600}';
    const made = await create({ name: emoji.repeat(200), description: emoji.repeat(500) });
    expect(made.name).toBe(emoji.repeat(200));
    const renamed = await call('PUT', `/v2/files/${made.id}`, {
      name: emoji.repeat(150),
      description: '',
      content_type: 'text/plain',
      data: 'eA==',
    });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json().file.name).toBe(emoji.repeat(150));
    const long = await call('POST', '/v2/files', {
      name: emoji.repeat(201),
      description: '',
      content_type: 'text/plain',
      data: 'eA==',
    });
    expect(long.json()).toEqual({ code: 400, message: 'name must be at most 200 characters long.' });
  });

  test('a request without a JSON body (none, or text) → 400 naming name, as before', async () => {
    const kept = await create({});
    for (const method of ['POST', 'PUT'] as const) {
      const url = method === 'POST' ? '/v2/files' : `/v2/files/${kept.id}`;
      for (const extra of [{}, { payload: 'name=x', headers: { 'content-type': 'text/plain' } }]) {
        const res = await h.app.inject({
          method,
          url,
          ...extra,
          headers: { ...('headers' in extra ? extra.headers : {}), authorization: h.account.bearer },
        });
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({
          code: 400,
          message: 'name is required: a string of 1 to 200 characters.',
        });
      }
    }
  });

  test('GET /file/<uid>: the raw bytes with the content type; credentials of the same account only', async () => {
    const content = randomBytes(2 * MiB + 77);
    const created = await create({
      name: 'raw.bin',
      content_type: 'image/png',
      data: content.toString('base64'),
    });
    const raw = await h.app.inject({
      method: 'GET',
      url: created.url,
      headers: { authorization: h.account.bearer },
    });
    expect(raw.statusCode).toBe(200);
    expect(raw.headers['content-type']).toBe('image/png');
    expect(raw.headers['content-length']).toBe(String(content.length));
    expect(raw.headers['x-content-type-options']).toBe('nosniff');
    expect(raw.headers['content-disposition']).toBe("inline; filename*=UTF-8''raw.bin");
    expect(sha256(raw.rawPayload)).toBe(sha256(content));

    expect((await h.app.inject({ method: 'GET', url: created.url })).statusCode).toBe(401);
    const foreign = await h.app.inject({
      method: 'GET',
      url: created.url,
      headers: { authorization: other.bearer },
    });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json()).toEqual({ code: 404, message: `File ${created.url} not found.` });
    const malformed = await h.app.inject({
      method: 'GET',
      url: '/file/not-a-uid',
      headers: { authorization: h.account.bearer },
    });
    expect(malformed.statusCode).toBe(404);
  });

  test('GET /file/<uid> with Accept-Encoding gzip: every stored byte back, whatever the content begins with; text compressed, the rest as is', async () => {
    // Decoded as a client does: a gzip Content-Encoding is undone before the bytes are used.
    const download = async (url: string) => {
      const res = await h.app.inject({
        method: 'GET',
        url,
        headers: { authorization: h.account.bearer, 'accept-encoding': 'gzip, deflate, br' },
      });
      expect(res.statusCode).toBe(200);
      const encoding = res.headers['content-encoding'];
      return { encoding, bytes: encoding === 'gzip' ? gunzipSync(res.rawPayload) : res.rawPayload };
    };
    const tsv = Buffer.from('X\tY\n1\t2\n'.repeat(200)); // "X<tab>" reads as a zlib header
    const text = Buffer.from('(S&P 500 members)\n'.repeat(300)); // so does "(S"
    const archive = gzipSync(Buffer.from('symbol,price\nAAPL,1\n'.repeat(500)));
    const zlibbed = deflateSync(randomBytes(5_000));
    for (const [contentType, content, encoded] of [
      ['text/plain', tsv, true],
      ['text/csv', text, true],
      ['image/svg+xml', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), true],
      ['application/json', Buffer.from(JSON.stringify({ n: [1, 2, 3] })), true],
      ['application/zip', archive, false],
      ['application/octet-stream', archive, false],
      ['application/octet-stream', zlibbed, false],
      ['image/png', randomBytes(4_000), false],
    ] as Array<[string, Buffer, boolean]>) {
      const created = await create({
        name: 'content',
        content_type: contentType,
        data: content.toString('base64'),
      });
      const got = await download(created.url);
      expect([contentType, got.encoding]).toEqual([contentType, encoded ? 'gzip' : undefined]);
      expect([contentType, sha256(got.bytes)]).toEqual([contentType, sha256(content)]);
    }
  });

  test('GET /file/<uid>: a text file read without Accept-Encoding comes back as is, with its length', async () => {
    const content = Buffer.from('X\tY\n1\t2\n');
    const created = await create({
      name: 'plain.tsv',
      content_type: 'text/plain',
      data: content.toString('base64'),
    });
    const raw = await h.app.inject({
      method: 'GET',
      url: created.url,
      headers: { authorization: h.account.bearer },
    });
    expect(raw.headers['content-encoding']).toBeUndefined();
    expect(raw.headers['content-length']).toBe(String(content.length));
    expect(raw.headers.vary).toBe('Accept-Encoding');
    expect(raw.rawPayload.equals(content)).toBe(true);
  });

  test('GET /file/<uid> whose bytes are gone before the first one went out: a plain JSON error, not labelled gzip', async () => {
    const created = await create({
      name: 'lost.txt',
      content_type: 'text/plain',
      data: Buffer.from('X\tY\n').toString('base64'),
    });
    const row = await h.db('entities').where({ kind: 'file', id: created.id }).first();
    await h.db('file_chunks').where({ blob_id: row.body.blob_id }).delete();
    const res = await h.app.inject({
      method: 'GET',
      url: created.url,
      headers: { authorization: h.account.bearer, 'accept-encoding': 'gzip' },
    });
    expect(res.statusCode).toBe(500);
    const body = res.headers['content-encoding'] === 'gzip' ? gunzipSync(res.rawPayload) : res.rawPayload;
    expect(JSON.parse(body.toString())).toEqual({ code: 500, message: 'Internal Server Error' });
    expect(res.headers['content-disposition']).toBeUndefined();
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  test('another account sees 404 on retrieve, part download, update and delete; lists stay apart', async () => {
    const created = await create({ name: 'Mine' });
    for (const [method, url, body] of [
      ['GET', `/v2/files/${created.id}`, undefined],
      ['GET', `/v2/files/${created.id}?part_number=1`, undefined],
      [
        'PUT',
        `/v2/files/${created.id}`,
        { name: 'x', description: '', content_type: 'text/plain', data: '' },
      ],
      ['DELETE', `/v2/files/${created.id}`, undefined],
    ] as const) {
      expect((await call(method, url, body, other)).statusCode).toBe(404);
    }
    expect((await call('GET', `/v2/files?query=${created.id}`, undefined, other)).json().files).toEqual([]);
    expect((await call('GET', `/v2/files/${created.id}`)).json().file.name).toBe('Mine');
  });

  test('workspace as body field or query parameter', async () => {
    const inBody = await create({ name: 'Ops file', workspace: 'ops' });
    expect(inBody.workspace).toBe('ops');
    expect((await call('GET', `/v2/files/${inBody.id}`)).statusCode).toBe(404);
    expect((await call('GET', `/v2/files/${inBody.id}?workspace=ops`)).json().file.name).toBe('Ops file');
    const inQuery = await call('POST', '/v2/files?workspace=ops', {
      name: 'Q',
      description: '',
      content_type: 'text/plain',
      data: '',
    });
    expect(inQuery.json().file.workspace).toBe('ops');
  });

  test('download in parts: fields of the spec, joined parts rebuild the file, range checks', async () => {
    const content = randomBytes(3 * MiB + 5);
    const created = await create({ name: 'parts.bin', data: content.toString('base64') });
    const pieces: Buffer[] = [];
    for (let part = 1; part <= 4; part++) {
      const res = await call('GET', `/v2/files/${created.id}?part_number=${part}&part_size=${MiB}`);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toEqual({
        status: 'partial',
        id: created.id,
        part_number: part,
        total_parts: 4,
        part_size: MiB,
        size: content.length,
        chunk: expect.any(String),
      });
      expect(Number(res.headers['content-length'])).toBe(res.rawPayload.length);
      pieces.push(Buffer.from(body.chunk, 'base64'));
    }
    expect(pieces.map((piece) => piece.length)).toEqual([MiB, MiB, MiB, 5]);
    expect(sha256(Buffer.concat(pieces))).toBe(sha256(content));

    // Default part size 33554432: one part holds it all.
    const whole = (await call('GET', `/v2/files/${created.id}?part_number=1`)).json();
    expect(whole).toMatchObject({ total_parts: 1, part_size: 33554432, size: content.length });
    expect(sha256(Buffer.from(whole.chunk, 'base64'))).toBe(sha256(content));

    for (const query of [
      'part_number=0',
      'part_number=5&part_size=1048576',
      'part_number=2',
      'part_number=-1',
    ]) {
      const res = await call('GET', `/v2/files/${created.id}?${query}`);
      expect(res.statusCode).toBe(400);
    }
    expect(
      (await call('GET', `/v2/files/${created.id}?part_number=5&part_size=1048576`)).json().message,
    ).toBe('part_number must be from 1 to total_parts (4 for 3145733 bytes in parts of 1048576).');
    for (const size of ['1048575', '67108865', 'abc']) {
      expect((await call('GET', `/v2/files/${created.id}?part_number=1&part_size=${size}`)).statusCode).toBe(
        400,
      );
    }
    expect((await call('GET', `/v2/files/${created.id}?part_number=1&part_size=67108864`)).statusCode).toBe(
      200,
    );
  });

  test('a gzip-compressed JSON create is accepted; a gzip response streams the same content', async () => {
    const content = randomBytes(200_000);
    const body = JSON.stringify({
      name: 'zipped',
      description: '',
      content_type: 'application/octet-stream',
      data: content.toString('base64'),
    });
    const res = await h.app.inject({
      method: 'POST',
      url: '/v2/files',
      payload: gzipSync(body),
      headers: {
        authorization: h.account.bearer,
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'accept-encoding': 'gzip',
      },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    const { gunzipSync } = await import('node:zlib');
    const file = JSON.parse(gunzipSync(res.rawPayload).toString()).file;
    expect(sha256(Buffer.from(file.data, 'base64'))).toBe(sha256(content));
  });

  test('every action is in the audit trail as File, never with the bytes', async () => {
    const created = await create({ name: 'Audited' });
    await call('GET', `/v2/files/${created.id}`);
    await call('GET', `/v2/files/${created.id}?part_number=1`);
    await h.app.inject({ method: 'GET', url: created.url, headers: { authorization: h.account.bearer } });
    await call('PUT', `/v2/files/${created.id}`, {
      name: 'Audited 2',
      description: '',
      content_type: 'text/plain',
      data: 'eA==',
    });
    await call('DELETE', `/v2/files/${created.id}`);
    await call('GET', `/v2/files/${created.id}`);
    const records = await h.db('audit_logs').where({ entity_id: created.id }).orderBy('created_at');
    expect(records.map((r) => [r.operation, r.entity_type, r.entity_name, r.status])).toEqual([
      ['CREATE', 'File', 'Audited', 'SUCCESS'],
      ['VIEW', 'File', 'Audited', 'SUCCESS'],
      ['VIEW', 'File', 'Audited', 'SUCCESS'],
      ['VIEW', 'File', 'Audited', 'SUCCESS'],
      ['UPDATE', 'File', 'Audited 2', 'SUCCESS'],
      ['DELETE', 'File', 'Audited 2', 'SUCCESS'],
      ['VIEW', 'File', null, 'ERROR'],
    ]);
    expect(records[0].after).toMatchObject({ name: 'Audited', size: 20, content_type: 'text/csv' });
    for (const record of records) {
      for (const snapshot of [record.before, record.after]) {
        if (snapshot) expect(Object.keys(snapshot)).not.toContain('data');
      }
    }
  });

  test('the OpenAPI document lists the file routes, the JSON body and the multipart form', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    expect(Object.keys(doc.paths['/files']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/files/{id}']).sort()).toEqual(['delete', 'get', 'put']);
    const content = doc.paths['/files'].post.requestBody.content;
    expect(Object.keys(content).sort()).toEqual(['application/json', 'multipart/form-data']);
    expect(content['multipart/form-data'].schema.properties.chunk).toMatchObject({
      type: 'string',
      format: 'binary',
    });
  });
});
