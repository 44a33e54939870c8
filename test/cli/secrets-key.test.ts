import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createAccount } from '../../engine/identity/account-store';
import type { Database } from '../../engine/platform/database';
import type { Actor } from '../../engine/platform/principal';
import { parseKeyList, SecretsKeyring, writeNewKeyFile } from '../../engine/secrets/master-key';
import { formatMasterKey, newMasterKey } from '../../engine/secrets/secret-crypto';
import { createSecret, readSecretValue } from '../../engine/secrets/secret-store';
import { pasWith } from '../support/pas-cli';
import { createTestDatabase } from '../support/test-database';

describe('the master key: made on the first start, rotated online by pas secrets rotate-key', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let actor: Actor;
  let dir: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    const { accountId, owner } = await createAccount(db, { name: 'Keys', ownerEmail: 'keys@example.com' });
    actor = {
      principal: {
        accountId,
        userId: owner.id,
        userEmail: owner.email,
        isOwner: true,
        permissions: [],
        credentialId: 'sid_x',
        credentialType: 'API_KEY',
      },
      source: 'API',
      ip: null,
      userAgent: null,
    };
    dir = mkdtempSync(path.join(tmpdir(), 'pas-keys-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await database.drop();
  });

  const settings = (dataDir: string) => ({ secretsKey: null, secretsKeyFile: null, dataDir });

  test('with neither SECRETS_KEY nor SECRETS_KEY_FILE, DATA_DIR/secrets.key is made once, mode 0600', () => {
    const dataDir = path.join(dir, 'data-first-start');
    const first = SecretsKeyring.fromConfig(settings(dataDir));
    expect(first.created).toBe(true);
    const file = path.join(dataDir, 'secrets.key');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toContain('Back it up apart from the data');
    const second = SecretsKeyring.fromConfig(settings(dataDir));
    expect(second.created).toBe(false);
    expect(second.keyIds()).toEqual(first.keyIds());
  });

  test('an explicit SECRETS_KEY_FILE that is missing is never made: each use says so', () => {
    const keyring = SecretsKeyring.fromConfig({
      secretsKey: null,
      secretsKeyFile: path.join(dir, 'missing.key'),
      dataDir: dir,
    });
    expect(() => keyring.current()).toThrow(
      `Secrets cannot be stored or read: SECRETS_KEY_FILE ${path.join(dir, 'missing.key')} cannot be read (ENOENT).`,
    );
  });

  test('a key file rotated while a process holds it: the process follows, values unchanged, old key dropped', async () => {
    const file = path.join(dir, 'rotate.key');
    const original = newMasterKey();
    writeNewKeyFile(file, [original]);
    const running = SecretsKeyring.fromConfig({ secretsKey: null, secretsKeyFile: file, dataDir: dir });
    const names = ['ROT_A', 'ROT_B', 'ROT_C'];
    for (const name of names) await createSecret(db, running, actor, { name, value: `value of ${name}` });

    const result = pasWith({ SECRETS_KEY_FILE: file }, database.url, 'secrets', 'rotate-key', '--json');
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({
      previous_key_ids: [original.id],
      rewrapped: 3,
      unreadable: [],
      old_keys_dropped: true,
    });
    const fileKeys = parseKeyList(readFileSync(file, 'utf8'), /\r?\n/, file);
    expect(fileKeys.map((k) => k.id)).toEqual([report.key_id]);
    expect(report.key_id).not.toBe(original.id);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const rows = await db('secrets').whereIn('name', names).select('key_id');
    expect(new Set(rows.map((r) => r.key_id))).toEqual(new Set([report.key_id]));

    // The process that held the old key reads the new file without a restart.
    for (const name of names) {
      expect((await readSecretValue(db, running, actor, 'main', name, 'test')).value).toBe(
        `value of ${name}`,
      );
    }
    // And the old key alone no longer opens anything: the rotation was real.
    const stale = SecretsKeyring.fromKeys([original]);
    await expect(readSecretValue(db, stale, actor, 'main', 'ROT_A', 'test')).rejects.toThrow(
      `it was stored under master key ${report.key_id}, and this service holds ${original.id}`,
    );

    const status = pasWith({ SECRETS_KEY_FILE: file }, database.url, 'secrets', 'status', '--json');
    expect(JSON.parse(status.stdout)).toMatchObject({ held: [report.key_id], problem: null });
  });

  test('with SECRETS_KEY, the first key of the list is the new one and rotate-key re-wraps under it', async () => {
    const before = newMasterKey();
    const after = newMasterKey();
    await createSecret(db, SecretsKeyring.fromKeys([before]), actor, {
      name: 'ENV_KEYED',
      value: 'env value',
    });
    const both = `${formatMasterKey(after)},${formatMasterKey(before)}`;
    const result = pasWith({ SECRETS_KEY: both }, database.url, 'secrets', 'rotate-key', '--json');
    // The earlier test's secrets are under a key this list does not hold: named, left alone, exit 1.
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      '3 secret(s) could not be opened with the keys held and were left as they are',
    );
    expect(JSON.parse(result.stdout)).toMatchObject({
      key_id: after.id,
      source: 'SECRETS_KEY',
      rewrapped: 1,
    });
    const row = await db('secrets').where({ name: 'ENV_KEYED' }).first();
    expect(row.key_id).toBe(after.id);
    const value = await readSecretValue(
      db,
      SecretsKeyring.fromKeys([after]),
      actor,
      'main',
      'ENV_KEYED',
      'test',
    );
    expect(value.value).toBe('env value');
  });

  test('a malformed SECRETS_KEY stops the command naming the entry, never echoing it', () => {
    const result = pasWith({ SECRETS_KEY: 'not-a-key-hunter2' }, database.url, 'secrets', 'status');
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('SECRETS_KEY entry 1 is not a master key');
    expect(result.stderr).not.toContain('hunter2');
  });
});
