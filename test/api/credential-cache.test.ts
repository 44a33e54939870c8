import knexFactory from 'knex';
import { createOAuthClient } from '../../engine/identity/account-store';
import { createTestAccount, createTestApp, type TestAccount, type TestApp } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';

type TestDatabase = Awaited<ReturnType<typeof createTestDatabase>>;

async function eventually(what: string, probe: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Item 5 of issue 13: each API replica caches resolved credentials, and a revocation made anywhere
 * (another replica, the CLI, psql) reaches every replica through PostgreSQL LISTEN/NOTIFY.
 */
describe('credential cache across replicas', () => {
  let database: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  /** A connection of its own, standing for another process (the `pas` CLI, psql). */
  let other: ReturnType<typeof knexFactory>;

  beforeAll(async () => {
    database = await createTestDatabase();
    a = await createTestApp(database.db);
    b = await createTestApp(database.db);
    other = knexFactory({ client: 'pg', connection: database.url, pool: { min: 0, max: 1 } });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await other?.destroy();
    await database?.drop();
  });

  const list = (t: TestApp, authorization: string) =>
    t.app.inject({ method: 'GET', url: '/v2/workspaces', headers: { authorization } });

  async function listening() {
    // Each cache serves only once its LISTEN connection is up.
    await eventually('both replicas to listen', async () => {
      const { rows } = await other.raw(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN pas_credentials'`,
      );
      return rows[0].n >= 2;
    });
  }

  test('a key revoked in another process is refused by both replicas at once', async () => {
    await listening();
    const account: TestAccount = await createTestAccount(database.db);
    expect((await list(a, account.bearer)).statusCode).toBe(200);
    expect((await list(b, account.bearer)).statusCode).toBe(200);

    // Changed without a notification (triggers off for this session): replica B still serves the
    // key from its cache, which is what makes the notification necessary.
    await other.transaction(async (trx) => {
      await trx.raw('SET LOCAL session_replication_role = replica');
      await trx('api_keys').where({ sid: account.key.account_sid }).update({ revoked_at: trx.fn.now() });
    });
    expect((await list(b, account.bearer)).statusCode).toBe(200);

    // The same revocation as the CLI makes it: it notifies, and B refuses within moments.
    await other('api_keys').where({ sid: account.key.account_sid }).update({ revoked_at: other.fn.now() });
    const began = Date.now();
    await eventually(
      'replica B to refuse the revoked key',
      async () => (await list(b, account.bearer)).statusCode === 401,
    );
    expect(Date.now() - began).toBeLessThan(1_000);
    expect((await list(a, account.bearer)).statusCode).toBe(401);
  });

  test('a user disabled, or a client revoked, is refused too; a wrong secret never hits the cache', async () => {
    await listening();
    const account = await createTestAccount(database.db);
    const client = await createOAuthClient(database.db, { accountId: account.accountId, name: 'session' });
    const token = await a.app.inject({
      method: 'POST',
      url: '/v2/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `grant_type=client_credentials&client_id=${client.client_id}&client_secret=${client.client_secret}`,
    });
    const oauth = `Bearer ${token.json().access_token}`;
    expect((await list(b, oauth)).statusCode).toBe(200);
    expect((await list(b, `Bearer ${account.key.account_sid}:wrong-token`)).statusCode).toBe(401);
    expect((await list(b, account.bearer)).statusCode).toBe(200);

    await other('oauth_clients')
      .where({ client_id: client.client_id })
      .update({ revoked_at: other.fn.now() });
    await eventually(
      'replica B to refuse the revoked client',
      async () => (await list(b, oauth)).statusCode === 401,
    );

    await other('users').where({ id: account.ownerId }).update({ disabled_at: other.fn.now() });
    await eventually(
      'replica B to refuse the disabled user',
      async () => (await list(b, account.bearer)).statusCode === 401,
    );
    expect((await list(a, account.bearer)).statusCode).toBe(401);
  });
});
