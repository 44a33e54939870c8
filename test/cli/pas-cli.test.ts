import {
  authenticateAccessToken,
  authenticateApiKey,
  issueAccessToken,
} from '../../engine/identity/account-store';
import type { Database } from '../../engine/platform/database';
import { createTestDatabase } from '../support/test-database';
import { pas } from '../support/pas-cli';

describe('pas CLI', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
  });
  afterAll(async () => {
    await database.drop();
  });

  test('accounts, users, keys and OAuth clients round trip', async () => {
    const none = pas(database.url, 'keys', 'create', '--json');
    expect(none.status).toBe(1);
    expect(none.stderr).toContain('No account exists yet');

    const account = pas(
      database.url,
      'accounts',
      'create',
      '--name',
      'Desk',
      '--owner-email',
      'pm@example.com',
      '--json',
    );
    expect(account.status).toBe(0);
    const created = JSON.parse(account.stdout);
    expect(created).toMatchObject({
      owner_email: 'pm@example.com',
      account_sid: expect.stringMatching(/^sid_/),
    });

    // With one account, --account may be left out; --json prints exactly what scripts read.
    const key = pas(database.url, 'keys', 'create', '--json');
    expect(key.status).toBe(0);
    const parsed = JSON.parse(key.stdout);
    expect(Object.keys(parsed).sort()).toEqual(['account_sid', 'auth_token']);
    const principal = await authenticateApiKey(db, parsed.account_sid, parsed.auth_token);
    expect(principal).toMatchObject({
      accountId: created.account_id,
      userEmail: 'pm@example.com',
      isOwner: true,
    });

    const revoke = pas(database.url, 'keys', 'revoke', parsed.account_sid);
    expect(revoke.status).toBe(0);
    expect(await authenticateApiKey(db, parsed.account_sid, parsed.auth_token)).toBeNull();

    const user = pas(
      database.url,
      'users',
      'create',
      '--email',
      'analyst@example.com',
      '--permission',
      'VIEW USER',
      '--json',
    );
    expect(user.status).toBe(0);
    expect(JSON.parse(user.stdout)).toMatchObject({
      email: 'analyst@example.com',
      permissions: ['VIEW USER'],
      is_owner: false,
    });
    const bad = pas(database.url, 'users', 'create', '--email', 'x@example.com', '--permission', 'ROOT');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('Unknown permission "ROOT"');

    const client = pas(database.url, 'oauth-clients', 'create', '--name', 'nightly', '--json');
    expect(client.status).toBe(0);
    const { client_id, client_secret } = JSON.parse(client.stdout);
    const token = await issueAccessToken(db, client_id, client_secret);
    expect(await authenticateAccessToken(db, token.access_token)).toMatchObject({
      credentialType: 'OAUTH2',
      credentialId: client_id,
    });
  }, 120_000);
});
