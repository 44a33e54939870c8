import { randomBytes } from 'node:crypto';
import { NativeConnection } from '@temporalio/worker';
import { createTemporalWorker } from '../../workers/temporal-worker';
import { createTestApp, temporalAddress, type TestApp } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let h: TestApp;
const taskQueue = `health-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  database = await createTestDatabase();
  h = await createTestApp(database.db, { healthOfTaskQueue: taskQueue });
});

afterAll(async () => {
  await h?.close();
  await database?.drop();
});

test('a task queue no worker polls makes the health check 503 DEGRADED; a poller makes it 200 OK', async () => {
  const before = await h.app.inject({ method: 'GET', url: '/v2/health_check' });
  expect(before.statusCode).toBe(503);
  expect(before.json()).toMatchObject({
    api_status: 'DEGRADED',
    version: 'v2',
    name: 'Portfolio Analytics Service',
    dependencies: {
      database: { status: 'up' },
      temporal: { status: 'up' },
      workers: { status: 'down', detail: `no worker polls task queue ${taskQueue}` },
      calculation_backend: { status: 'up', detail: expect.stringContaining('reference') },
    },
  });

  // A real worker on the queue: Temporal lists it among the pollers.
  const connection = await NativeConnection.connect({ address: temporalAddress() });
  const worker = await createTemporalWorker({
    db: database.db,
    connection,
    client: h.temporal,
    namespace: 'default',
    taskQueue,
    publicUrl: 'http://pas.test',
  });
  const running = worker.run();
  try {
    let after = await h.app.inject({ method: 'GET', url: '/v2/health_check' });
    for (let i = 0; i < 80 && after.statusCode !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      after = await h.app.inject({ method: 'GET', url: '/v2/health_check' });
    }
    expect(after.statusCode).toBe(200);
    expect(after.json()).toMatchObject({
      api_status: 'OK',
      dependencies: {
        workers: {
          status: 'up',
          detail: expect.stringMatching(new RegExp(`^\\d+ poller\\(s\\) on task queue ${taskQueue}$`)),
        },
      },
    });
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
  }
}, 120_000);
