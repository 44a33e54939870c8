import { gunzipSync, gzipSync } from 'node:zlib';
import { useTestApp } from '../support/use-test-app';

const MAX = 64 * 1024;

describe('compressed requests and responses', () => {
  const h = useTestApp({ maxPayloadBytes: MAX });

  const post = (payload: Buffer | string, headers: Record<string, string>) =>
    h.app.inject({
      method: 'POST',
      url: '/v2/workspaces',
      payload,
      headers: { authorization: h.account.bearer, 'content-type': 'application/json', ...headers },
    });

  test('a gzip body is inflated before parsing', async () => {
    const res = await post(gzipSync(JSON.stringify({ name: 'gzipped', description: 'sent compressed' })), {
      'content-encoding': 'gzip',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().workspace).toMatchObject({ name: 'gzipped', description: 'sent compressed' });
  });

  test.each(['x-gzip', 'deflate', 'gzip, deflate', 'br', 'identity'])(
    'Content-Encoding %s → 400 unsupported Content-Encoding, nothing stored',
    async (encoding) => {
      const res = await post(gzipSync(JSON.stringify({ name: `enc-${encoding.replace(/\W/g, '')}` })), {
        'content-encoding': encoding,
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ code: 400, message: 'unsupported Content-Encoding' });
      expect(await h.db('workspaces').where({ name: `enc-${encoding.replace(/\W/g, '')}` })).toHaveLength(0);
    },
  );

  test('truncated gzip → 400 malformed compressed request body', async () => {
    const whole = gzipSync(JSON.stringify({ name: 'truncated' }));
    const res = await post(whole.subarray(0, whole.length - 6), { 'content-encoding': 'gzip' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message: 'malformed compressed request body' });
    expect(await h.db('workspaces').where({ name: 'truncated' })).toHaveLength(0);
  });

  test('not gzip at all → 400 malformed compressed request body', async () => {
    const res = await post(JSON.stringify({ name: 'plain' }), { 'content-encoding': 'gzip' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message: 'malformed compressed request body' });
  });

  test('inflated body beyond the maximum payload size → 413 (zip bomb)', async () => {
    const huge = JSON.stringify({ name: 'bomb', description: 'x'.repeat(MAX * 4) });
    const compressed = gzipSync(huge);
    expect(compressed.length).toBeLessThan(MAX);
    const res = await post(compressed, { 'content-encoding': 'gzip' });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({
      code: 413,
      message: `Request body exceeds the maximum payload size of ${MAX} bytes once inflated.`,
    });
  });

  test('uncompressed body beyond the maximum payload size → 413', async () => {
    const res = await post(JSON.stringify({ name: 'big', description: 'x'.repeat(MAX) }), {});
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({
      code: 413,
      message: `Request body exceeds the maximum payload size of ${MAX} bytes.`,
    });
  });

  test('responses are gzipped when the client accepts gzip', async () => {
    const res = await h.app.inject({
      method: 'GET',
      url: '/v2/workspaces',
      headers: { authorization: h.account.bearer, 'accept-encoding': 'gzip' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(res.rawPayload).toString()).workspaces).toBeInstanceOf(Array);
    const plain = await h.app.inject({
      method: 'GET',
      url: '/v2/workspaces',
      headers: { authorization: h.account.bearer },
    });
    expect(plain.headers['content-encoding']).toBeUndefined();
  });

  test('a large answer is gzipped at RESPONSE_GZIP_LEVEL’s default, level 1, byte for byte', async () => {
    await expectGzipLevel(h, 1);
  });
});

describe('RESPONSE_GZIP_LEVEL', () => {
  const h = useTestApp({ maxPayloadBytes: MAX, responseGzipLevel: 9 });

  test('sets the level responses are gzipped at', async () => {
    await expectGzipLevel(h, 9);
  });
});

/**
 * A datastore answer of about 40 kB (past the compressor's synchronous path, so streamed through
 * zlib in chunks) comes gzipped exactly as zlib writes it at `level`, and not as at zlib's usual 6.
 */
async function expectGzipLevel(h: ReturnType<typeof useTestApp>, level: number): Promise<void> {
  const data = [['i', 'v'], ...Array.from({ length: 1500 }, (_, i) => [i, Math.sin(i)])];
  const created = await h.call('POST', '/v2/datastores', { name: `gzip-${level}`, data });
  expect(created.statusCode).toBe(200);
  const res = await h.app.inject({
    method: 'GET',
    url: `/v2/datastores/${created.json().datastore.id}`,
    headers: { authorization: h.account.bearer, 'accept-encoding': 'gzip' },
  });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-encoding']).toBe('gzip');
  const text = gunzipSync(res.rawPayload);
  expect(text.length).toBeGreaterThan(32 * 1024);
  expect(JSON.parse(text.toString()).datastore.data).toEqual(data);
  expect(res.rawPayload.equals(gzipSync(text, { level }))).toBe(true);
  expect(res.rawPayload.equals(gzipSync(text, { level: 6 }))).toBe(false);
}
