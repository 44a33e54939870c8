import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { decodeBase64Strict } from '../../engine/files/file-store';
import { expireIdleUploads } from '../../engine/files/file-uploads';
import { createTestAccount, createTestApp, type TestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

const MiB = 1024 * 1024;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Bytes of a part: given outright, or one block repeated (64 MiB parts without 64 MiB buffers). */
type ChunkBytes = Buffer | { block: Buffer; times: number };
type Field = [string, string];

interface Form {
  fields: Field[];
  chunk?: ChunkBytes;
  /** Fields sent after the chunk. */
  after?: Field[];
}

/** A multipart/form-data body as a stream, encoded by hand (boundary, fields, the chunk file field). */
function encodeForm(form: Form): { payload: Readable; headers: Record<string, string>; length: number } {
  const boundary = `----pas-test-${randomBytes(8).toString('hex')}`;
  const field = ([name, value]: Field) =>
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  const chunkHead = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="chunk"; filename="blob"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const pieces: Array<Buffer | { block: Buffer; times: number }> = [...form.fields.map(field)];
  if (form.chunk) pieces.push(chunkHead, form.chunk, Buffer.from('\r\n'));
  pieces.push(...(form.after ?? []).map(field), Buffer.from(`--${boundary}--\r\n`));
  const length = pieces.reduce(
    (sum, piece) => sum + (Buffer.isBuffer(piece) ? piece.length : piece.block.length * piece.times),
    0,
  );
  function* stream() {
    for (const piece of pieces) {
      if (Buffer.isBuffer(piece)) yield piece;
      else for (let i = 0; i < piece.times; i++) yield piece.block;
    }
  }
  return {
    payload: Readable.from(stream(), { objectMode: false }),
    headers: {
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(length),
    },
    length,
  };
}

const controls = (uploadId: string, part: number, total: number): Field[] => [
  ['upload_id', uploadId],
  ['part_number', String(part)],
  ['total_parts', String(total)],
];

describe('files: multipart upload', () => {
  let other: TestAccount;

  // Parts up to 64 MiB (the spec's largest download part) fit the maximum payload size.
  const h = useTestApp({
    maxPayloadBytes: 70 * MiB,
    setUp: async ({ db }) => {
      other = await createTestAccount(db);
    },
  });

  const send = (form: Form, options: { method?: 'POST' | 'PUT'; url?: string; who?: TestAccount } = {}) => {
    const { payload, headers } = encodeForm(form);
    return h.app.inject({
      method: options.method ?? 'POST',
      url: options.url ?? '/v2/files',
      payload,
      headers: { ...headers, authorization: (options.who ?? h.account).bearer },
    });
  };
  const { call } = h;
  const count = async (table: string, where: Record<string, unknown> = {}) =>
    Number((await h.db(table).where(where).count({ n: '*' }).first())!.n);
  const uploadRow = (uploadId: string, who = h.account) =>
    h.db('file_uploads').where({ account_id: who.accountId, upload_id: uploadId }).first();
  const stagedChunks = async (uploadId: string) => {
    const row = await uploadRow(uploadId);
    return row?.blob_id ? count('file_chunks', { blob_id: row.blob_id }) : 0;
  };
  const fileRecord = (id: string) => h.db('entities').where({ kind: 'file', id }).first();
  const newUploadId = () => `up_${randomBytes(6).toString('hex')}`;

  /** Sends `content` as `sizes.length` parts and returns each response. */
  const uploadInParts = async (
    content: Buffer,
    sizes: number[],
    part1: Field[],
    options: { method?: 'POST' | 'PUT'; url?: string; uploadId?: string; last?: Field[] } = {},
  ) => {
    const uploadId = options.uploadId ?? newUploadId();
    const responses = [];
    let offset = 0;
    for (const [i, size] of sizes.entries()) {
      const fields = [...controls(uploadId, i + 1, sizes.length), ...(i === 0 ? part1 : [])];
      if (i === sizes.length - 1) fields.push(...(options.last ?? []));
      responses.push(await send({ fields, chunk: content.subarray(offset, offset + size) }, options));
      offset += size;
    }
    return { uploadId, responses };
  };

  test('a 20 MB file in 3 parts, then downloaded in parts: the same SHA-256; one CREATE in the trail', async () => {
    const content = randomBytes(20 * MiB + 12_345);
    const sizes = [8 * MiB, 8 * MiB, 4 * MiB + 12_345];
    const { uploadId, responses } = await uploadInParts(content, sizes, [
      ['name', 'Positions.xlsx'],
      ['description', 'Month end #Close'],
      ['tags', 'Risk'],
      ['tags', 'Monthly'],
      ['content_type', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
      ['date', '20240131'],
      ['link_uid', 'close-2024-01'],
    ]);
    expect(responses.map((res) => res.statusCode)).toEqual([200, 200, 200]);
    expect(responses[0]!.json()).toEqual({
      status: 'staged',
      parts_received: 1,
      total_parts: 3,
      upload_id: uploadId,
    });
    expect(responses[1]!.json()).toEqual({
      status: 'staged',
      parts_received: 2,
      total_parts: 3,
      upload_id: uploadId,
    });
    const file = responses[2]!.json().file;
    expect(file).toEqual({
      id: expect.stringMatching(/^file_[A-Za-z0-9]{25}$/),
      name: 'Positions.xlsx',
      description: 'Month end #Close',
      tags: ['risk', 'monthly', 'close'],
      content_type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      date: '20240131',
      data: null,
      url: expect.stringMatching(/^\/file\/[A-Za-z0-9]{32}$/),
      workspace: 'main',
      link_uid: 'close-2024-01',
      size: content.length,
      created: expect.any(Number),
      updated: expect.any(Number),
      version: '1',
    });

    const pieces: Buffer[] = [];
    const partSize = 4 * MiB;
    for (let part = 1; part <= 6; part++) {
      const res = await call('GET', `/v2/files/${file.id}?part_number=${part}&part_size=${partSize}`);
      expect(res.json()).toMatchObject({
        status: 'partial',
        part_number: part,
        total_parts: 6,
        size: content.length,
      });
      // Each part is strict Base64 on its own (chunks of 1 MiB and parts of 8 MiB do not fall on
      // 3-byte boundaries, so the encoder carries bytes across them).
      pieces.push(decodeBase64Strict(res.json().chunk, 'chunk'));
    }
    expect(sha256(Buffer.concat(pieces))).toBe(sha256(content));
    const raw = await h.app.inject({
      method: 'GET',
      url: file.url,
      headers: { authorization: h.account.bearer },
    });
    expect(raw.headers['content-type']).toBe(file.content_type);
    expect(sha256(raw.rawPayload)).toBe(sha256(content));

    // Within the inline limit (3/4 of the 70 MiB maximum payload size): the whole content as data.
    const whole = (await call('GET', `/v2/files/${file.id}`)).json().file;
    expect(sha256(decodeBase64Strict(whole.data, 'data'))).toBe(sha256(content));

    const trail = await h
      .db('audit_logs')
      .where({ entity_id: file.id })
      .whereIn('operation', ['CREATE', 'UPDATE']);
    expect(trail.map((r) => [r.operation, r.entity_type])).toEqual([['CREATE', 'File']]);
    expect(trail[0].after).toMatchObject({ size: content.length });
    expect(trail[0].after).not.toHaveProperty('data');
    expect(await uploadRow(uploadId)).toMatchObject({ state: 'done', file_id: file.id, blob_id: null });
  });

  test('with_data on the last part returns the content; a single-part upload is its own last part', async () => {
    const content = randomBytes(5000);
    const res = await send({
      fields: [...controls(newUploadId(), 1, 1), ['name', 'tiny.bin'], ['with_data', 'true']],
      chunk: content,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().file).toMatchObject({
      name: 'tiny.bin',
      description: '',
      tags: [],
      content_type: 'application/octet-stream',
      data: content.toString('base64'),
      size: 5000,
    });
  });

  test.each([
    ['an upload_id with a space', 'my upload', 'upload_id must be 1 to 128 characters'],
    ['an upload_id with a dot', 'up.1', 'upload_id must be 1 to 128 characters'],
    ['an upload_id of 129 characters', 'a'.repeat(129), 'upload_id must be 1 to 128 characters'],
    ['an empty upload_id', '', 'upload_id must be 1 to 128 characters'],
  ])('%s → 400', async (_label, uploadId, message) => {
    const res = await send({ fields: [...controls(uploadId, 1, 1), ['name', 'x']], chunk: Buffer.from('x') });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain(message);
  });

  test('an upload_id of 128 letters, digits, _ and - is fine', async () => {
    const uploadId = `${'Az09_-'.repeat(21)}xy`;
    expect(uploadId).toHaveLength(128);
    const res = await send({ fields: [...controls(uploadId, 1, 1), ['name', 'x']], chunk: Buffer.from('x') });
    expect(res.statusCode).toBe(200);
  });

  test.each([
    ['total_parts 301', '1', '301', 'total_parts must be an integer from 1 to 300'],
    ['total_parts 0', '1', '0', 'total_parts must be an integer from 1 to 300'],
    ['total_parts not a number', '1', 'two', 'total_parts must be an integer from 1 to 300'],
    ['part_number 0', '0', '3', 'part_number must be an integer from 1 to total_parts (3)'],
    ['part_number past total_parts', '4', '3', 'part_number must be an integer from 1 to total_parts (3)'],
    ['part_number 1.5', '1.5', '3', 'part_number must be an integer from 1 to total_parts (3)'],
  ])('%s → 400', async (_label, part, total, message) => {
    const res = await send({
      fields: [
        ['upload_id', newUploadId()],
        ['part_number', part],
        ['total_parts', total],
        ['name', 'x'],
      ],
      chunk: Buffer.from('x'),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain(message);
  });

  test('a part that skips ahead → 400 naming the part expected; nothing of it is stored', async () => {
    const uploadId = newUploadId();
    const fresh = await send({ fields: [...controls(uploadId, 2, 3)], chunk: randomBytes(MiB) });
    expect(fresh.statusCode).toBe(400);
    expect(fresh.json().message).toBe(`Part 2 skips ahead: expected part 1 of upload ${uploadId}.`);
    expect(await uploadRow(uploadId)).toBeUndefined();

    expect(
      (await send({ fields: [...controls(uploadId, 1, 3), ['name', 'x']], chunk: randomBytes(MiB) }))
        .statusCode,
    ).toBe(200);
    const skip = await send({ fields: controls(uploadId, 3, 3), chunk: randomBytes(10) });
    expect(skip.statusCode).toBe(400);
    expect(skip.json()).toEqual({
      code: 400,
      message: `Part 3 skips ahead: expected part 2 of upload ${uploadId}.`,
    });
    expect(await uploadRow(uploadId)).toMatchObject({
      parts_received: 1,
      bytes_received: MiB,
      state: 'staged',
    });
    expect(await stagedChunks(uploadId)).toBe(1);
  });

  test('every part but the last needs 1048576 bytes; a short one is refused and may be sent again', async () => {
    const uploadId = newUploadId();
    const short = await send({
      fields: [...controls(uploadId, 1, 2), ['name', 'x']],
      chunk: randomBytes(MiB - 1),
    });
    expect(short.statusCode).toBe(400);
    expect(short.json().message).toBe(
      'Part 1 has 1048575 bytes: every part but the last must have at least 1048576.',
    );
    expect(await uploadRow(uploadId)).toBeUndefined();
    expect(
      (await send({ fields: [...controls(uploadId, 1, 2), ['name', 'x']], chunk: randomBytes(MiB) })).json(),
    ).toMatchObject({
      status: 'staged',
      parts_received: 1,
    });
    const last = await send({ fields: controls(uploadId, 2, 2), chunk: Buffer.from('end') });
    expect(last.json().file.size).toBe(MiB + 3);
  });

  test('total_parts must stay the same; an upload_id of a POST cannot serve a PUT', async () => {
    const uploadId = newUploadId();
    await send({ fields: [...controls(uploadId, 1, 3), ['name', 'x']], chunk: randomBytes(MiB) });
    const changed = await send({ fields: controls(uploadId, 2, 4), chunk: randomBytes(MiB) });
    expect(changed.statusCode).toBe(400);
    expect(changed.json().message).toBe(
      `total_parts must be the same on every part: upload ${uploadId} has 3.`,
    );
    const target = (
      await call('POST', '/v2/files', { name: 'n', description: '', content_type: 'text/plain', data: '' })
    ).json().file;
    const put = await send(
      { fields: controls(uploadId, 2, 3), chunk: randomBytes(MiB) },
      { method: 'PUT', url: `/v2/files/${target.id}` },
    );
    expect(put.statusCode).toBe(400);
    expect(put.json().message).toBe(
      `upload_id ${uploadId} belongs to an upload to POST /files; use a new upload_id.`,
    );
  });

  test('a resent part does nothing; a resent last part answers done with the same file, no second file', async () => {
    const content = randomBytes(2 * MiB + 10);
    const uploadId = newUploadId();
    const part1 = {
      fields: [...controls(uploadId, 1, 2), ['name', 'Once']] as Field[],
      chunk: content.subarray(0, 2 * MiB),
    };
    expect((await send(part1)).json()).toEqual({
      status: 'staged',
      parts_received: 1,
      total_parts: 2,
      upload_id: uploadId,
    });
    const again = await send({ ...part1, chunk: randomBytes(2 * MiB) });
    expect(again.json()).toEqual({
      status: 'staged',
      parts_received: 1,
      total_parts: 2,
      upload_id: uploadId,
    });
    expect(await uploadRow(uploadId)).toMatchObject({ parts_received: 1, bytes_received: 2 * MiB });
    expect(await stagedChunks(uploadId)).toBe(2);

    const lastPart = { fields: controls(uploadId, 2, 2), chunk: content.subarray(2 * MiB) };
    const created = (await send(lastPart)).json().file;
    const resent = await send(lastPart);
    expect(resent.statusCode).toBe(200);
    expect(resent.json()).toEqual({ status: 'done', file: { id: created.id } });
    expect((await send(part1)).json()).toEqual({ status: 'done', file: { id: created.id } });
    expect(await count('entities', { kind: 'file', name: 'Once' })).toBe(1);
    const raw = await h.app.inject({
      method: 'GET',
      url: created.url,
      headers: { authorization: h.account.bearer },
    });
    expect(sha256(raw.rawPayload)).toBe(sha256(content));
  });

  test('the same part sent twice at once: one is stored, the other finds it received', async () => {
    const uploadId = newUploadId();
    const part = () =>
      send({ fields: [...controls(uploadId, 1, 2), ['name', 'Race']], chunk: randomBytes(3 * MiB) });
    const answers = await Promise.all([part(), part()]);
    expect(answers.map((res) => res.json())).toEqual([
      { status: 'staged', parts_received: 1, total_parts: 2, upload_id: uploadId },
      { status: 'staged', parts_received: 1, total_parts: 2, upload_id: uploadId },
    ]);
    expect(await stagedChunks(uploadId)).toBe(3);
  });

  test('metadata is read from part 1 only', async () => {
    const content = randomBytes(MiB + 1);
    const { responses } = await uploadInParts(
      content,
      [MiB, 1],
      [
        ['name', 'First'],
        ['content_type', 'text/csv'],
      ],
      {
        last: [
          ['name', 'Second'],
          ['content_type', 'application/pdf'],
          ['description', 'ignored'],
          ['tags', 'ignored'],
          ['workspace', 'elsewhere'],
        ],
      },
    );
    expect(responses[1]!.json().file).toMatchObject({
      name: 'First',
      content_type: 'text/csv',
      description: '',
      tags: [],
      workspace: 'main',
    });
  });

  test.each([
    ['no name on part 1 of a POST', [] as Field[], 'name (on part 1 of a POST) is required'],
    [
      'a content type off the create list',
      [
        ['name', 'x'],
        ['content_type', 'text/html'],
      ] as Field[],
      'content_type must be one of the types allowed on create',
    ],
    [
      'a bad date',
      [
        ['name', 'x'],
        ['date', '2024-01-31'],
      ] as Field[],
      'date must be a date in the format YYYYMMDD',
    ],
    [
      'a name given twice',
      [
        ['name', 'x'],
        ['name', 'y'],
      ] as Field[],
      'name is given more than once',
    ],
  ])('part 1 with %s → 400, nothing stored', async (_label, fields, message) => {
    const uploadId = newUploadId();
    const res = await send({ fields: [...controls(uploadId, 1, 2), ...fields], chunk: randomBytes(MiB) });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain(message);
    expect(await uploadRow(uploadId)).toBeUndefined();
  });

  test('missing pieces of the form → 400 naming them', async () => {
    const noChunk = await send({ fields: [...controls(newUploadId(), 1, 1), ['name', 'x']] });
    expect(noChunk.json()).toEqual({
      code: 400,
      message: 'chunk is required: a file field with the bytes of the part.',
    });
    const noControls = await send({
      fields: [
        ['upload_id', newUploadId()],
        ['name', 'x'],
      ],
      chunk: Buffer.from('x'),
    });
    expect(noControls.json()).toEqual({
      code: 400,
      message: 'Every part needs upload_id, part_number and total_parts (missing: part_number, total_parts).',
    });
    const wrongFile = await h.app.inject({
      method: 'POST',
      url: '/v2/files',
      headers: {
        authorization: h.account.bearer,
        'content-type': 'multipart/form-data; boundary=b',
      },
      payload:
        '--b\r\nContent-Disposition: form-data; name="upload_id"\r\n\r\nu1\r\n' +
        '--b\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\nxyz\r\n--b--\r\n',
    });
    expect(wrongFile.json()).toEqual({
      code: 400,
      message: "The part's bytes go in the file field chunk, not file.",
    });
    const truncated = await h.app.inject({
      method: 'POST',
      url: '/v2/files',
      headers: { authorization: h.account.bearer, 'content-type': 'multipart/form-data; boundary=b' },
      payload: '--b\r\nContent-Disposition: form-data; name="upload_id"\r\n\r\nu1\r\n--b\r\nContent-Disp',
    });
    expect(truncated.statusCode).toBe(400);
    expect(truncated.json().message).toMatch(/^Malformed multipart\/form-data body: /);
  });

  test('fields after the chunk are read too: the part is checked once the form ends', async () => {
    const content = randomBytes(MiB + 3);
    const uploadId = newUploadId();
    const first = await send({
      fields: [],
      chunk: content.subarray(0, MiB),
      after: [...controls(uploadId, 1, 2), ['name', 'Late']],
    });
    expect(first.json()).toEqual({
      status: 'staged',
      parts_received: 1,
      total_parts: 2,
      upload_id: uploadId,
    });
    const skip = await send({
      fields: [['upload_id', uploadId]],
      chunk: randomBytes(MiB),
      after: [
        ['part_number', '3'],
        ['total_parts', '3'],
      ],
    });
    expect(skip.json().message).toBe(
      'total_parts must be the same on every part: upload ' + uploadId + ' has 2.',
    );
    const last = await send({ fields: [], chunk: content.subarray(MiB), after: controls(uploadId, 2, 2) });
    const file = last.json().file;
    expect(file).toMatchObject({ name: 'Late', size: content.length });
    const raw = await h.app.inject({
      method: 'GET',
      url: file.url,
      headers: { authorization: h.account.bearer },
    });
    expect(sha256(raw.rawPayload)).toBe(sha256(content));
    // A refused chunk-first part leaves no scratch rows behind.
    expect(await count('file_chunks', { blob_id: (await fileRecord(file.id)).body.blob_id })).toBe(2);
    expect(
      Number(
        (await h
          .db('file_chunks')
          .where({ account_id: h.account.accountId })
          .whereNotIn(
            'blob_id',
            h.db('entities').select(h.db.raw("(body->>'blob_id')::uuid")).where({ kind: 'file' }),
          )
          .whereNotIn('blob_id', h.db('file_uploads').select('blob_id').whereNotNull('blob_id'))
          .count({ n: '*' })
          .first())!.n,
      ),
    ).toBe(0);
  });

  test('PUT to an unknown id → 404 on part 1, before anything is stored', async () => {
    const before = await count('file_chunks');
    const uploadId = newUploadId();
    const res = await send(
      { fields: controls(uploadId, 1, 2), chunk: randomBytes(2 * MiB) },
      {
        method: 'PUT',
        url: '/v2/files/file_AAAAAAAAAAAAAAAAAAAAAAAAA',
      },
    );
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ code: 404, message: 'File file_AAAAAAAAAAAAAAAAAAAAAAAAA not found.' });
    expect(await uploadRow(uploadId)).toBeUndefined();
    expect(await count('file_chunks')).toBe(before);
  });

  test('PUT in parts replaces the content: one UPDATE, metadata kept unless part 1 gives it, old bytes freed', async () => {
    const created = (
      await call('POST', '/v2/files', {
        name: 'Book',
        description: 'v1',
        content_type: 'application/vnd.ms-excel',
        data: Buffer.from('old').toString('base64'),
        tags: ['keep'],
      })
    ).json().file;
    const oldBlob = (await fileRecord(created.id)).body.blob_id;
    const content = randomBytes(MiB + 100);
    const { responses } = await uploadInParts(content, [MiB, 100], [['description', 'v2']], {
      method: 'PUT',
      url: `/v2/files/${created.id}`,
    });
    expect(responses[1]!.statusCode).toBe(200);
    expect(responses[1]!.json().file).toMatchObject({
      id: created.id,
      name: 'Book',
      description: 'v2',
      content_type: 'application/vnd.ms-excel',
      tags: ['keep'],
      url: created.url,
      size: content.length,
      data: null,
      version: '2',
    });
    expect(await count('file_chunks', { blob_id: oldBlob })).toBe(0);
    const raw = await h.app.inject({
      method: 'GET',
      url: created.url,
      headers: { authorization: h.account.bearer },
    });
    expect(sha256(raw.rawPayload)).toBe(sha256(content));
    const trail = await h
      .db('audit_logs')
      .where({ entity_id: created.id })
      .whereIn('operation', ['CREATE', 'UPDATE']);
    expect(trail.map((r) => r.operation)).toEqual(['CREATE', 'UPDATE']);

    const zip = await send(
      {
        fields: [...controls(newUploadId(), 1, 1), ['content_type', 'application/x-zip-compressed']],
        chunk: Buffer.from('z'),
      },
      {
        method: 'PUT',
        url: `/v2/files/${created.id}`,
      },
    );
    expect(zip.statusCode).toBe(400);
    expect(zip.json().message).toContain('content_type must be one of the types allowed on update');
  });

  test('uploads are per account: another account may use the same upload_id', async () => {
    const uploadId = newUploadId();
    await send({ fields: [...controls(uploadId, 1, 2), ['name', 'A']], chunk: randomBytes(MiB) });
    const theirs = await send(
      { fields: [...controls(uploadId, 1, 1), ['name', 'B']], chunk: Buffer.from('b') },
      { who: other },
    );
    expect(theirs.json().file).toMatchObject({ name: 'B', size: 1 });
    expect(await uploadRow(uploadId)).toMatchObject({ state: 'staged', parts_received: 1 });
    const ours = await send({ fields: controls(uploadId, 2, 2), chunk: Buffer.from('a') });
    expect(ours.json().file).toMatchObject({ name: 'A', size: MiB + 1 });
  });

  test('a part larger than the maximum payload size → 413; the upload stays as it was', async () => {
    const uploadId = newUploadId();
    const res = await send({
      fields: [...controls(uploadId, 1, 2), ['name', 'big']],
      chunk: { block: randomBytes(MiB), times: 71 },
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({
      code: 413,
      message: `A part must fit the maximum payload size of ${70 * MiB} bytes.`,
    });
    expect(await uploadRow(uploadId)).toBeUndefined();
  });

  test('an upload idle for 2 hours expires (sweep with a controlled clock): bytes freed, a new upload_id needed', async () => {
    const uploadId = newUploadId();
    await send({ fields: [...controls(uploadId, 1, 2), ['name', 'slow']], chunk: randomBytes(2 * MiB) });
    const { blob_id: blobId, last_part_at: lastPart } = await uploadRow(uploadId);
    expect(await count('file_chunks', { blob_id: blobId })).toBe(2);

    const at = (ms: number) => new Date(lastPart.getTime() + ms);
    await expireIdleUploads(h.db, at(2 * 3600_000 - 1000));
    expect(await uploadRow(uploadId)).toMatchObject({ state: 'staged' });
    expect(await count('file_chunks', { blob_id: blobId })).toBe(2);
    expect((await expireIdleUploads(h.db, at(2 * 3600_000 + 1000))).expired).toBeGreaterThanOrEqual(1);
    expect(await uploadRow(uploadId)).toMatchObject({ state: 'expired', blob_id: null });
    expect(await count('file_chunks', { blob_id: blobId })).toBe(0);

    const late = await send({ fields: controls(uploadId, 2, 2), chunk: Buffer.from('x') });
    expect(late.json()).toEqual({
      code: 400,
      message: `Upload ${uploadId} expired after 2 hours without a part: a new upload_id is needed.`,
    });
    // A day later the row goes, and the upload_id is free again.
    expect((await expireIdleUploads(h.db, at(25 * 3600_000))).purged).toBeGreaterThanOrEqual(1);
    expect(await uploadRow(uploadId)).toBeUndefined();
  });

  test('a part arriving after 2 hours idle expires the upload even before the sweep runs', async () => {
    const uploadId = newUploadId();
    await send({ fields: [...controls(uploadId, 1, 2), ['name', 'slow']], chunk: randomBytes(MiB) });
    const { blob_id: blobId } = await uploadRow(uploadId);
    await h
      .db('file_uploads')
      .where({ account_id: h.account.accountId, upload_id: uploadId })
      .update({ last_part_at: new Date(Date.now() - 2 * 3600_000 - 60_000) });
    const late = await send({ fields: controls(uploadId, 2, 2), chunk: Buffer.from('x') });
    expect(late.statusCode).toBe(400);
    expect(late.json().message).toContain('expired after 2 hours without a part: a new upload_id is needed');
    expect(await uploadRow(uploadId)).toMatchObject({ state: 'expired', blob_id: null });
    expect(await count('file_chunks', { blob_id: blobId })).toBe(0);
  });

  test('an upload passing 300 MB is aborted: bytes freed, later parts need a new upload_id', async () => {
    const uploadId = newUploadId();
    const block = randomBytes(MiB);
    const part = (n: number) =>
      send({
        fields: [...controls(uploadId, n, 5), ...(n === 1 ? [['name', 'huge'] as Field] : [])],
        chunk: { block, times: 64 },
      });
    for (let n = 1; n <= 4; n++)
      expect((await part(n)).json()).toMatchObject({ status: 'staged', parts_received: n });
    expect(await stagedChunks(uploadId)).toBe(256);
    const { blob_id: blobId } = await uploadRow(uploadId);

    const fifth = await part(5);
    expect(fifth.statusCode).toBe(400);
    expect(fifth.json().message).toBe(
      `Upload ${uploadId} passed 300 MB (314572800 bytes) and was aborted: a new upload_id is needed.`,
    );
    expect(await uploadRow(uploadId)).toMatchObject({ state: 'aborted', blob_id: null, parts_received: 4 });
    expect(await count('file_chunks', { blob_id: blobId })).toBe(0);
    const again = await part(5);
    expect(again.json().message).toBe(
      `Upload ${uploadId} was aborted when it passed 300 MB: a new upload_id is needed.`,
    );
    expect(await count('entities', { kind: 'file', name: 'huge' })).toBe(0);
  });

  test('a file too large to return inline comes back with data null and how to download it in parts', async () => {
    const small = await createTestApp(h.db, { maxPayloadBytes: 2 * MiB });
    try {
      const content = randomBytes(2 * MiB);
      const uploadId = newUploadId();
      const post = (form: Form) => {
        const { payload, headers } = encodeForm(form);
        return small.app.inject({
          method: 'POST',
          url: '/v2/files',
          payload,
          headers: { ...headers, authorization: h.account.bearer },
        });
      };
      await post({
        fields: [...controls(uploadId, 1, 2), ['name', 'wide']],
        chunk: content.subarray(0, MiB),
      });
      const last = await post({
        fields: [...controls(uploadId, 2, 2), ['with_data', 'true']],
        chunk: content.subarray(MiB),
      });
      const file = last.json().file;
      expect(file.data).toBeNull();
      expect(file.data_omitted).toBe(
        `The file has ${2 * MiB} bytes, more than is returned inline: download it in parts with ` +
          `GET /files/${file.id}?part_number=1 to 1 (part_size 33554432), or its raw bytes from its url.`,
      );
      const got = (
        await small.app.inject({
          method: 'GET',
          url: `/v2/files/${file.id}`,
          headers: { authorization: h.account.bearer },
        })
      ).json();
      expect(got.file.data).toBeNull();
      const part = (
        await small.app.inject({
          method: 'GET',
          url: `/v2/files/${file.id}?part_number=1`,
          headers: { authorization: h.account.bearer },
        })
      ).json();
      expect(sha256(Buffer.from(part.chunk, 'base64'))).toBe(sha256(content));
    } finally {
      await small.close();
    }
  });

  test('a gzip-compressed form is read inflated', async () => {
    const content = Buffer.from('a,b\n1,2\n'.repeat(1000));
    const { payload } = encodeForm({
      fields: [...controls(newUploadId(), 1, 1), ['name', 'gz'], ['content_type', 'text/csv']],
      chunk: content,
    });
    const chunks: Buffer[] = [];
    for await (const piece of payload) chunks.push(piece as Buffer);
    const boundary = /^--(\S+)/.exec(Buffer.concat(chunks).toString('latin1'))![1];
    const res = await h.app.inject({
      method: 'POST',
      url: '/v2/files',
      payload: gzipSync(Buffer.concat(chunks)),
      headers: {
        authorization: h.account.bearer,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-encoding': 'gzip',
      },
    });
    expect(res.statusCode).toBe(200);
    const file = res.json().file;
    expect(file).toMatchObject({ name: 'gz', size: content.length });
    const raw = await h.app.inject({
      method: 'GET',
      url: file.url,
      headers: { authorization: h.account.bearer },
    });
    expect(raw.rawPayload.equals(content)).toBe(true);
  });

  test('over a real socket, a refused part still gets its answer (the rest of the body is read)', async () => {
    const served = await createTestApp(h.db, { maxPayloadBytes: 70 * MiB });
    const url = await served.app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { payload, headers } = encodeForm({
        fields: controls(newUploadId(), 1, 2),
        chunk: { block: randomBytes(MiB), times: 8 },
      });
      const res = await fetch(`${url}/v2/files/file_AAAAAAAAAAAAAAAAAAAAAAAAA`, {
        method: 'PUT',
        headers: { ...headers, authorization: h.account.bearer },
        body: Readable.toWeb(payload) as ReadableStream,
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({
        code: 404,
        message: 'File file_AAAAAAAAAAAAAAAAAAAAAAAAA not found.',
      });
    } finally {
      await served.close();
    }
  });
});
