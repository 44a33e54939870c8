import { createServer, type Server, type Socket, connect } from 'node:net';
import { connectDatabase, type Database } from '../../engine/platform/database';
import { createTestAccount, createTestApp, type TestAccount, type TestApp } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';

/**
 * The database going away for real, at the network level: the app reaches the suite's PostgreSQL
 * through a TCP relay this test can cut (every connection reset, the port refusing) and restore.
 */
class Relay {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    const address = server.address();
    if (typeof address === 'object' && address) this.port = address.port;
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.resetAndDestroy();
    await new Promise<void>((resolve) => server?.close(() => resolve()) ?? resolve());
  }
}

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let relay: Relay;
let db: Database;
let testApp: TestApp;
let account: TestAccount;

beforeAll(async () => {
  database = await createTestDatabase();
  const target = new URL(database.url);
  relay = new Relay({ host: target.hostname, port: Number(target.port) });
  await relay.up();
  const relayed = new URL(database.url);
  relayed.port = String(relay.port);
  db = connectDatabase(relayed.toString(), 5);
  testApp = await createTestApp(db);
  account = await createTestAccount(database.db);
});

afterAll(async () => {
  await testApp?.close();
  await db?.destroy();
  await relay?.down();
  await database?.drop();
});

async function get(url: string) {
  const started = performance.now();
  const res = await testApp.app.inject({ method: 'GET', url, headers: { authorization: account.bearer } });
  return {
    status: res.statusCode,
    body: res.json(),
    retryAfter: res.headers['retry-after'],
    ms: performance.now() - started,
  };
}

test('with the database unreachable every request answers 503 with Retry-After, fast, then recovers by itself', async () => {
  expect((await get('/v2/workspaces')).status).toBe(200);

  await relay.down();
  const outage = [];
  for (let i = 0; i < 20; i++) outage.push(await get(i % 2 ? '/v2/portfolios' : '/v2/workspaces'));
  for (const answer of outage) {
    expect(answer).toMatchObject({
      status: 503,
      body: { code: 503, message: 'Service Unavailable: the database is unreachable; retry shortly.' },
      retryAfter: '2',
    });
  }
  // The first request finds out (a refused connection); the rest meet the open breaker.
  expect(outage.slice(1).every((answer) => answer.ms < 100)).toBe(true);

  // The health check is not refused: it says what is down.
  // As probes call it: without credentials.
  const health = await testApp.app.inject({ method: 'GET', url: '/v2/health_check' });
  expect(health.statusCode).toBe(503);
  expect(health.json()).toMatchObject({
    api_status: 'DEGRADED',
    version: 'v2',
    name: 'Portfolio Analytics Service',
    dependencies: {
      database: { status: 'down', detail: expect.stringContaining('ECONNREFUSED') },
      calculation_backend: { status: 'up' },
    },
  });

  // With credentials it cannot check them: 503 {code, message}, never a 500.
  expect(await get('/v2/health_check')).toMatchObject({ status: 503, body: { code: 503 }, retryAfter: '2' });

  await relay.up();
  const recovered = Date.now();
  let status = 0;
  while (status !== 200 && Date.now() - recovered < 10_000) {
    status = (await get('/v2/workspaces')).status;
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(status).toBe(200);
  expect(Date.now() - recovered).toBeLessThan(10_000);
  expect((await get('/v2/health_check')).body).toMatchObject({
    api_status: 'OK',
    dependencies: { database: { status: 'up' } },
  });
}, 60_000);
