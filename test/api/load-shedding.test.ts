import { connect, type Socket } from 'node:net';
import { OVERLOADED_MESSAGE, UPLOADS_BUSY_MESSAGE } from '../../api/http/load-shedding';
import { createTestAccount, createTestApp, type TestAccount, type TestApp } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';

type TestDatabase = Awaited<ReturnType<typeof createTestDatabase>>;

async function eventually(what: string, probe: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const SHED = { code: 503, message: OVERLOADED_MESSAGE };

/** Item 4 of issue 13: under overload the API answers 503 at once instead of queueing without bound. */
describe('load shedding', () => {
  let database: TestDatabase;
  let account: TestAccount;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    account = await createTestAccount(database.db);
  });
  afterAll(async () => {
    await Promise.all(apps.map((t) => t.close()));
    await database?.drop();
  });

  async function app(options: Parameters<typeof createTestApp>[1]) {
    const t = await createTestApp(database.db, options);
    apps.push(t);
    return t;
  }

  test('an event loop delayed past LOAD_SHED_EVENT_LOOP_DELAY_MS sheds requests (503, Retry-After), not the health check', async () => {
    const t = await app({ loadShedding: { loadShedEventLoopDelayMs: 100 }, loadSampleIntervalMs: 500 });
    const get = (url: string) =>
      t.app.inject({ method: 'GET', url, headers: { authorization: account.bearer } });
    // Building the app held the loop too (schema compilation): wait until the samples settle.
    await eventually('the API to settle', async () => (await get('/v2/workspaces')).statusCode === 200);

    // Hold the event loop for a second, as a CPU-bound burst would; the next sample sees it.
    const until = Date.now() + 1_000;
    while (Date.now() < until) {
      /* busy */
    }
    // The sampler's timer, overdue, runs before this one; its reading stands for the next 500 ms.
    await new Promise((resolve) => setTimeout(resolve, 0));
    const shed = await get('/v2/workspaces');
    expect(shed.statusCode).toBe(503);
    expect(shed.headers['retry-after']).toBe('2');
    expect(shed.json()).toEqual(SHED);
    expect((await get('/v2/health_check')).statusCode).toBe(200);

    // The delay passes: requests are served again.
    await eventually(
      'the API to take requests again',
      async () => (await get('/v2/workspaces')).statusCode === 200,
    );
  });

  test('more requests waiting for a database connection than LOAD_SHED_POOL_QUEUE: the next answers 503 at once', async () => {
    const t = await app({ loadShedding: { loadShedPoolQueue: 1, loadShedEventLoopDelayMs: 0 } });
    const get = () =>
      t.app.inject({ method: 'GET', url: '/v2/workspaces', headers: { authorization: account.bearer } });
    expect((await get()).statusCode).toBe(200);

    // Every connection of the pool (5) is busy, and one more request already waits for one.
    const client = database.db.client as {
      acquireConnection(): Promise<unknown>;
      releaseConnection(connection: unknown): Promise<unknown>;
    };
    const held = await Promise.all(Array.from({ length: 5 }, () => client.acquireConnection()));
    const waiting = client.acquireConnection();
    try {
      const began = Date.now();
      const shed = await get();
      expect(shed.statusCode).toBe(503);
      expect(Date.now() - began).toBeLessThan(1_000);
      expect(shed.headers['retry-after']).toBe('2');
      expect(shed.json()).toEqual(SHED);
    } finally {
      await Promise.all(held.map((connection) => client.releaseConnection(connection)));
      await client.releaseConnection(await waiting);
    }
    expect((await get()).statusCode).toBe(200);
  });

  test('slow uploads hold at most MAX_CONCURRENT_UPLOADS requests: other routes answer 200, the next upload 503', async () => {
    const limit = 2;
    const t = await app({ loadShedding: { maxConcurrentUploads: limit } });
    const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = new URL(base);

    // Each announces a 1 MB multipart body and sends a few bytes of it, then nothing.
    const slow: Socket[] = [];
    for (let i = 0; i < limit; i++) {
      const socket = connect({ host: '127.0.0.1', port: Number(port) });
      socket.on('error', () => undefined);
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write(
        'POST /v2/files HTTP/1.1\r\n' +
          'Host: 127.0.0.1\r\n' +
          `Authorization: ${account.bearer}\r\n` +
          'Content-Type: multipart/form-data; boundary=XyZ\r\n' +
          'Content-Length: 1048576\r\n\r\n' +
          '--XyZ\r\nContent-Disposition: form-data; name="name"\r\n\r\nslow\r\n',
      );
      slow.push(socket);
    }
    const headers = { authorization: account.bearer, 'content-type': 'application/json' };
    const upload = () =>
      fetch(`${base}/v2/files`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          name: 'Prices',
          description: '',
          content_type: 'text/csv',
          data: Buffer.from('symbol,price\nAAPL,1\n').toString('base64'),
        }),
      });
    try {
      await eventually('the slow uploads to hold the budget', async () => {
        const res = await upload();
        return (
          res.status === 503 && ((await res.json()) as { message: string }).message === UPLOADS_BUSY_MESSAGE
        );
      });
      const list = await fetch(`${base}/v2/workspaces`, { headers: { authorization: account.bearer } });
      expect(list.status).toBe(200);
      const refused = await upload();
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('2');
      expect(await refused.json()).toEqual({ code: 503, message: UPLOADS_BUSY_MESSAGE });
    } finally {
      for (const socket of slow) socket.destroy();
    }
    // The slow uploaders gave up: their budget is free again.
    await eventually('an upload to be taken again', async () => {
      const res = await upload();
      await res.arrayBuffer();
      return res.status === 200;
    });
  });
});
