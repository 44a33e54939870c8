import type { LightMyRequestResponse } from 'fastify';
import knexFactory from 'knex';
import pg from 'pg';
import { newId } from '../../engine/platform/ids';
import { connectDatabase, type Database, migrateLatest } from '../../engine/platform/database';
import { parseLsn, ReadReplica } from '../../engine/platform/read-replica';
import { createApiKey } from '../../engine/identity/account-store';
import { createTestAccount, createTestApp, type TestAccount, type TestApp } from '../support/test-app';
import { startStreamingPair, type StreamingPair } from '../support/streaming-replica';

/**
 * DATABASE_READ_URL with a real streaming replica: a standby made with `pg_basebackup -R` from a
 * primary of the suite's own. Pausing the standby's replay (pg_wal_replay_pause) makes the replica
 * lag on purpose, so what a list shows says where it was read.
 */

const DATABASE = 'pas_replica';
/** The default, so that a slow machine's test does not pass it unasked. */
const MAX_LAG_MS = 5_000;

let pair: StreamingPair;
let db: Database;
let replica: ReadReplica;
let t: TestApp;
let account: TestAccount;
/** A second caller of the same account (and user): another API key. */
let other: { bearer: string; sid: string };
/** The portfolio every list finds, replayed before the tests. */
let seeded: string;

const call = (method: 'GET' | 'POST', url: string, payload?: object, bearer = account.bearer) =>
  t.app.inject({ method, url, payload, headers: { authorization: bearer } });

const ids = (res: LightMyRequestResponse, plural: string) =>
  (res.json()[plural] as Array<{ id: string }>).map((item) => item.id);

/** One statement on the standby's maintenance database (a connection each: the standby is stopped later). */
async function onStandby<Row extends object>(sql: string): Promise<Row[]> {
  const client = new pg.Client({ connectionString: pair.standbyUrl('postgres') });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<Row>(sql)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function primaryPosition(): Promise<bigint> {
  const { rows } = (await db.raw('select pg_current_wal_lsn()::text as lsn')) as { rows: [{ lsn: string }] };
  return parseLsn(rows[0].lsn);
}

/** Until the standby has replayed everything the primary has written so far. */
async function caughtUp(): Promise<void> {
  const target = await primaryPosition();
  for (let i = 0; i < 300; i++) {
    const [row] = await onStandby<{ replayed: string }>('select pg_last_wal_replay_lsn()::text as replayed');
    if (parseLsn(row!.replayed) >= target) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the standby did not catch up in 15 s');
}

async function pauseReplay(): Promise<void> {
  await caughtUp();
  await onStandby('select pg_wal_replay_pause()');
  for (let i = 0; i < 100; i++) {
    const [row] = await onStandby<{ state: string }>('select pg_get_wal_replay_pause_state() as state');
    if (row!.state === 'paused') return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('replay did not pause');
}

async function resumeReplay(): Promise<void> {
  await onStandby('select pg_wal_replay_resume()');
  await caughtUp();
}

async function health(): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'GET', url: '/v2/health_check' });
}

/** Polls the health check until the replica's report matches (the replica is checked every 100 ms). */
async function untilReplica(status: 'up' | 'down', detail: RegExp): Promise<LightMyRequestResponse> {
  let res = await health();
  for (let i = 0; i < 200; i++) {
    const report = res.json().dependencies.database_replica as { status: string; detail: string };
    if (report.status === status && detail.test(report.detail)) return res;
    await new Promise((resolve) => setTimeout(resolve, 100));
    res = await health();
  }
  return res;
}

const portfolio = (name: string) => ({ name, securities: [{ id: 's1', symbol: 'AAPL', quantity: 1 }] });

beforeAll(async () => {
  pair = await startStreamingPair();
  const admin = knexFactory({
    client: 'pg',
    connection: pair.primaryUrl('postgres'),
    pool: { min: 0, max: 1 },
  });
  await admin.raw(`CREATE DATABASE ${DATABASE}`);
  await admin.destroy();
  db = connectDatabase(pair.primaryUrl(DATABASE), 5);
  await migrateLatest(db);
  await caughtUp();
  replica = await new ReadReplica(db, connectDatabase(pair.standbyUrl(DATABASE), 5, { quiet: true }), {
    maxLagMs: MAX_LAG_MS,
    checkIntervalMs: 100,
  }).start();
  t = await createTestApp(db, { replica });
  account = await createTestAccount(db);
  const key = await createApiKey(db, { accountId: account.accountId, userId: account.ownerId });
  other = { bearer: `Bearer ${key.account_sid}:${key.auth_token}`, sid: key.account_sid };
  await db('securities_master').insert({ symbol: 'AAPL', name: 'Apple Inc.', currency: 'USD' });
  seeded = (await call('POST', '/v2/portfolios', portfolio('Seeded'))).json().portfolio.id as string;
  await caughtUp();
}, 120_000);

afterAll(async () => {
  await t?.close();
  await replica?.close();
  await db?.destroy();
  await pair?.close();
}, 60_000);

test('the standby made with pg_basebackup -R streams from the primary; the health check reports it', async () => {
  const { rows } = await db.raw(
    "select application_name, state from pg_stat_replication where application_name = 'pas-test-standby'",
  );
  expect(rows).toEqual([{ application_name: 'pas-test-standby', state: 'streaming' }]);
  const res = await health();
  expect(res.statusCode).toBe(200);
  expect(res.json()).toMatchObject({
    api_status: 'OK',
    dependencies: {
      database: { status: 'up' },
      database_replica: { status: 'up', detail: expect.stringMatching(/^serves lists; /) },
    },
  });
});

describe('with replay paused on the standby', () => {
  beforeEach(pauseReplay);
  afterEach(resumeReplay);

  test('a caller who has just written lists its write at once; another caller of the account lists the replica, which has not replayed it yet', async () => {
    const created = await call('POST', '/v2/portfolios', portfolio('Fresh'));
    expect(created.statusCode).toBe(200);
    const id = created.json().portfolio.id as string;
    // The write went to the primary (the standby is read-only, and paused).
    expect(await db('entities').where({ id }).select('name')).toEqual([{ name: 'Fresh' }]);

    const mine = await call('GET', '/v2/portfolios');
    expect(mine.statusCode).toBe(200);
    expect(ids(mine, 'portfolios')).toContain(id);
    const filtered = await call('POST', '/v2/portfolios/filter', { page_size: 5 });
    expect(ids(filtered, 'portfolios')).toContain(id);
    const myTrail = await call('GET', '/v2/audit_logs');
    expect(myTrail.json().audit_logs.map((r: { entity_id: string }) => r.entity_id)).toContain(id);

    const theirs = await call('GET', '/v2/portfolios', undefined, other.bearer);
    expect(theirs.statusCode).toBe(200);
    expect(ids(theirs, 'portfolios')).not.toContain(id);
    const theirTrail = await call('GET', '/v2/audit_logs/all', undefined, other.bearer);
    expect(theirTrail.statusCode).toBe(200);
    expect(theirTrail.json().audit_logs.map((r: { entity_id: string }) => r.entity_id)).not.toContain(id);
    // The replica cannot take the VIEW record of the list it served: the primary has it.
    const views = await db('audit_logs')
      .where({ credential_id: other.sid, operation: 'VIEW', entity_type: 'Portfolio' })
      .select('activity', 'viewed_ids');
    expect(views).toEqual([{ activity: 'Listed 1 portfolio records', viewed_ids: [seeded] }]);

    await resumeReplay();
    const later = await call('GET', '/v2/portfolios', undefined, other.bearer);
    expect(ids(later, 'portfolios')).toContain(id);
  });

  test('once the replica has replayed a caller’s write, that caller lists from the replica again', async () => {
    const created = await call('POST', '/v2/portfolios', portfolio('Mine'));
    expect(created.statusCode).toBe(200);
    await resumeReplay();
    await pauseReplay();
    // Written on the primary by no request (as a worker or a schedule would): no caller's own write.
    const [row] = await db('entities').where({ id: created.json().portfolio.id }).select('*');
    const unseen = newId('port_');
    await db('entities').insert({ ...row, id: unseen, name: 'Behind the replica' });
    const listed = await call('GET', '/v2/portfolios');
    expect(ids(listed, 'portfolios')).toContain(created.json().portfolio.id);
    expect(ids(listed, 'portfolios')).not.toContain(unseen);
  });

  test('a view is no write: after a GET, or a POST that only lists, the caller still lists from the replica', async () => {
    const created = await call('POST', '/v2/portfolios', portfolio('Viewed'), other.bearer);
    const id = created.json().portfolio.id as string;
    await resumeReplay();
    await pauseReplay();
    const viewed = await call('GET', `/v2/portfolios/${id}`);
    expect(viewed.statusCode).toBe(200);
    const filtered = await call('POST', '/v2/portfolios/filter', { page_size: 5 });
    expect(filtered.statusCode).toBe(200);
    const trail = await call('GET', '/v2/audit_logs');
    const records = trail.json().audit_logs as Array<{ entity_id: string; operation: string }>;
    // The CREATE was replayed before the pause; the VIEW record (written on the primary since) was not.
    expect(records.filter((r) => r.entity_id === id).map((r) => r.operation)).toEqual(['CREATE']);
  });

  test('the runs of a workspace: a caller’s run at once, another caller’s after the replay', async () => {
    const workers = [newId('worker'), newId('worker')];
    const stored = await call('POST', '/v2/workflows', {
      name: 'Replica run',
      workers: [
        { id: workers[0], name: 'Start', type: 'STARTER', next: [workers[1]] },
        { id: workers[1], name: 'End', type: 'ENDER' },
      ],
    });
    expect(stored.statusCode).toBe(200);
    const workflowId = stored.json().workflow.id as string;
    const run = await call('POST', `/v2/workflows/${workflowId}/run`, { parameters: {} });
    expect(run.statusCode).toBe(202);
    const executionId = run.json().workflow_execution.id as string;

    const mine = await call('GET', '/v2/workflow_executions');
    expect(ids(mine, 'workflow_executions')).toContain(executionId);
    const theirs = await call('GET', '/v2/workflow_executions', undefined, other.bearer);
    expect(theirs.statusCode).toBe(200);
    expect(ids(theirs, 'workflow_executions')).not.toContain(executionId);
    // The workflow itself is not on the replica yet either: its list of runs is a 404 for them.
    const ofWorkflow = await call(
      'GET',
      `/v2/workflows/${workflowId}/workflow_executions`,
      undefined,
      other.bearer,
    );
    expect(ofWorkflow.statusCode).toBe(404);

    await resumeReplay();
    const later = await call(
      'GET',
      `/v2/workflows/${workflowId}/workflow_executions`,
      undefined,
      other.bearer,
    );
    expect(ids(later, 'workflow_executions')).toEqual([executionId]);
  });

  test(`a replica more than ${MAX_LAG_MS} ms behind serves no one; the API stays OK`, async () => {
    const created = await call('POST', '/v2/portfolios', portfolio('Lagging'));
    const id = created.json().portfolio.id as string;
    const lagging = await untilReplica(
      'down',
      new RegExp(
        `^\\d+ ms behind the primary \\(more than ${MAX_LAG_MS} ms\\); lists read from the primary$`,
      ),
    );
    expect(lagging.statusCode).toBe(200);
    expect(lagging.json()).toMatchObject({
      api_status: 'OK',
      dependencies: { database_replica: { status: 'down' } },
    });
    const theirs = await call('GET', '/v2/portfolios', undefined, other.bearer);
    expect(ids(theirs, 'portfolios')).toContain(id);

    await resumeReplay();
    const back = await untilReplica('up', /^serves lists; /);
    expect(back.json().dependencies.database_replica.status).toBe('up');
  });
});

describe('with the standby down', () => {
  test('lists read from the primary, the health check says so and stays 200, and the replica serves again once back', async () => {
    await pair.stopStandby();
    try {
      const created = await call('POST', '/v2/portfolios', portfolio('While down'));
      const id = created.json().portfolio.id as string;
      const theirs = await call('GET', '/v2/portfolios', undefined, other.bearer);
      expect(theirs.statusCode).toBe(200);
      expect(ids(theirs, 'portfolios')).toContain(id);
      const trail = await call('GET', '/v2/audit_logs/all', undefined, other.bearer);
      expect(trail.statusCode).toBe(200);
      const down = await untilReplica('down', /^unreachable: /);
      expect(down.statusCode).toBe(200);
      expect(down.json()).toMatchObject({
        api_status: 'OK',
        dependencies: {
          database: { status: 'up' },
          database_replica: {
            status: 'down',
            detail: expect.stringMatching(/; lists read from the primary$/),
          },
        },
      });
    } finally {
      await pair.startStandby();
    }
    const up = await untilReplica('up', /^serves lists; /);
    expect(up.json().dependencies.database_replica.status).toBe('up');
  });

  test('a read the replica fails between two checks runs again on the primary', async () => {
    // Checked once only: it still takes the replica for serving when the standby goes.
    const once = await new ReadReplica(db, connectDatabase(pair.standbyUrl(DATABASE), 1, { quiet: true }), {
      checkIntervalMs: 600_000,
    }).start();
    try {
      expect((await once.health()).status).toBe('up');
      const principal = {
        accountId: account.accountId,
        userId: account.ownerId,
        userEmail: 'owner@example.com',
        isOwner: true,
        permissions: [],
        credentialId: other.sid,
        credentialType: 'API_KEY' as const,
      };
      expect(await once.read(principal, async (_db, onReplica) => onReplica)).toBe(true);
      await pair.stopStandby();
      const where = await once.read(principal, async (source, onReplica) => {
        await source.raw('select 1');
        return onReplica ? 'replica' : 'primary';
      });
      expect(where).toBe('primary');
    } finally {
      await once.close();
      await pair.startStandby();
    }
  });
});
