import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import knexFactory from 'knex';
import { createAccount } from '../../engine/identity/account-store';
import { connectDatabase } from '../../engine/platform/database';
import type { Actor } from '../../engine/platform/principal';
import { findPostgresTool } from '../../ops/backup/postgres-tools';
import { SecretsKeyring } from '../../engine/secrets/master-key';
import { newMasterKey } from '../../engine/secrets/secret-crypto';
import { createSecret, readSecretValue } from '../../engine/secrets/secret-store';
import { pas } from '../support/pas-cli';
import { createTestDatabase } from '../support/test-database';

/**
 * Secrets in a backup: `pas backup` holds them sealed and never the master key, so neither the tar
 * nor the database dump inside it (read back as SQL) holds a value in the clear; a restore without
 * the key restores everything, and a use of a secret then says the key is not the one it was stored
 * under; with the key, it reads.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const VALUE = 'backup-Secret-Value-9b7Q-' + 'x'.repeat(12);

describe('secrets in a backup', () => {
  let source: Awaited<ReturnType<typeof createTestDatabase>>;
  let workDir: string;
  let restoredName: string;
  let actor: Actor;
  const key = newMasterKey();

  beforeAll(async () => {
    await mkdir(path.join(ROOT, '.test-data'), { recursive: true });
    workDir = await mkdtemp(path.join(ROOT, '.test-data', 'backup-secrets-'));
    source = await createTestDatabase();
    const { accountId, owner } = await createAccount(source.db, {
      name: 'Vault',
      ownerEmail: 'v@example.com',
    });
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
    await createSecret(source.db, SecretsKeyring.fromKeys([key]), actor, {
      name: 'VENDOR_TOKEN',
      value: VALUE,
    });
  });

  afterAll(async () => {
    const admin = knexFactory({
      client: 'pg',
      connection: process.env.TEST_DATABASE_ADMIN_URL!,
      pool: { min: 0, max: 1 },
    });
    if (restoredName) await admin.raw(`drop database if exists ${restoredName} with (force)`);
    await admin.destroy();
    await source.drop();
    await rm(workDir, { recursive: true, force: true });
  });

  test('the backup holds the secret sealed: not in the tar, not in its database read back as SQL', async () => {
    const file = path.join(workDir, 'with-secrets.tar');
    const made = pas(source.url, 'backup', '--output', file);
    expect({ status: made.status, stderr: made.stderr }).toEqual({ status: 0, stderr: '' });
    const forms = [VALUE, Buffer.from(VALUE).toString('base64'), Buffer.from(VALUE).toString('hex')];
    const tarBytes = await readFile(file);
    for (const form of forms) expect(tarBytes.includes(Buffer.from(form))).toBe(false);
    expect(spawnSync('tar', ['xf', file, '-C', workDir, 'database.pgdump']).status).toBe(0);
    const pgRestore = findPostgresTool('pg_restore', 16, 'reading the dump back as SQL');
    const sql = spawnSync(pgRestore.path, ['-f', '-', path.join(workDir, 'database.pgdump')], {
      encoding: 'utf8',
      maxBuffer: 512 * 1024 * 1024,
    });
    expect(sql.status).toBe(0);
    // The dump does hold the secrets table and the secret's row: what is missing is its value.
    expect(sql.stdout).toContain('COPY public.secrets');
    expect(sql.stdout).toContain('VENDOR_TOKEN');
    for (const form of forms) expect(sql.stdout.includes(form)).toBe(false);
    // And the key is nowhere in the tar either.
    expect(tarBytes.includes(key.key)).toBe(false);
    expect(tarBytes.includes(Buffer.from(key.key.toString('base64')))).toBe(false);
  }, 120_000);

  test('restored without the key, a use of the secret says the key is wrong; with it, it reads', async () => {
    restoredName = `pas_restore_secrets_${process.pid}_${Date.now()}`;
    const url = new URL(process.env.TEST_DATABASE_ADMIN_URL!);
    url.pathname = `/${restoredName}`;
    const restored = pas(url.toString(), 'restore', path.join(workDir, 'with-secrets.tar'));
    expect({ status: restored.status, stderr: restored.stderr }).toEqual({ status: 0, stderr: '' });
    const db = connectDatabase(url.toString(), 1);
    try {
      expect(Number((await db('secrets').count({ n: '*' }))[0]!.n)).toBe(1);
      const otherMachine = SecretsKeyring.fromKeys([newMasterKey()]);
      await expect(
        readSecretValue(db, otherMachine, actor, 'main', 'VENDOR_TOKEN', 'after restore'),
      ).rejects.toThrow(
        `Secret VENDOR_TOKEN cannot be read: it was stored under master key ${key.id}, and this service holds ${otherMachine.keyIds()[0]}`,
      );
      const withKey = await readSecretValue(
        db,
        SecretsKeyring.fromKeys([key]),
        actor,
        'main',
        'VENDOR_TOKEN',
        'after restore',
      );
      expect(withKey.value).toBe(VALUE);
    } finally {
      await db.destroy();
    }
  }, 120_000);
});
