import { readFileSync, renameSync } from 'node:fs';
import type { Command } from 'commander';
import { loadConfig } from '../../engine/platform/config';
import { type Database, migrateLatest } from '../../engine/platform/database';
import { InvalidInput } from '../../engine/platform/errors';
import { keySetting, parseKeyList, SecretsKeyring, writeNewKeyFile } from '../../engine/secrets/master-key';
import { formatMasterKey, type MasterKey, newMasterKey } from '../../engine/secrets/secret-crypto';
import { rewrapSecrets } from '../../engine/secrets/secret-store';
import { openCliDatabase } from './cli-database';

const say = (line: string) => process.stdout.write(`${line}\n`);

/** A key file replaced whole: written beside it, then renamed over it, so no reader sees half of one. */
function replaceKeyFile(file: string, keys: MasterKey[]): void {
  const next = `${file}.next`;
  writeNewKeyFile(next, keys, 'w');
  renameSync(next, file);
}

async function countByKey(db: Database): Promise<Array<{ key_id: string; count: number }>> {
  const rows = (await db('secrets').select('key_id').count('* as count').groupBy('key_id')) as Array<{
    key_id: string;
    count: string;
  }>;
  return rows.map((r) => ({ key_id: r.key_id, count: Number(r.count) }));
}

/**
 * `pas secrets rotate-key`: every secret's data key wrapped again under a new master key, while the
 * service runs. With a key file (the default, or SECRETS_KEY_FILE): a new key is put first in the
 * file (the running processes read the file again when it changes and seal with the new key from
 * then on), every data key is re-wrapped, and once none is left under the old key the file keeps
 * only the new one. With SECRETS_KEY: the operator deploys the new key first in the list (`pas
 * secrets new-key` makes one), and this re-wraps everything under it; the old keys can then leave
 * the list.
 */
async function rotateKey(db: Database, json: boolean): Promise<void> {
  const config = loadConfig();
  const setting = keySetting(config);
  if (setting.kind === 'env') {
    const keyring = SecretsKeyring.fromConfig(config, { create: false });
    const current = keyring.current();
    const result = await rewrapSecrets(db, keyring);
    const remaining = (await countByKey(db)).filter((r) => r.key_id !== current.id);
    if (json) say(JSON.stringify({ key_id: current.id, source: 'SECRETS_KEY', ...result, remaining }));
    else {
      say(
        `Re-wrapped ${result.rewrapped} secret(s) under master key ${current.id} (the first of SECRETS_KEY).`,
      );
      if (remaining.length === 0)
        say('No secret is left under another key: SECRETS_KEY may now hold this key alone.');
    }
    if (result.unreadable.length > 0) reportUnreadable(result.unreadable);
    return;
  }
  if (setting.kind !== 'file') throw new InvalidInput('No master key is configured.');
  let oldKeys: MasterKey[];
  try {
    oldKeys = parseKeyList(readFileSync(setting.path, 'utf8'), /\r?\n/, setting.path);
  } catch (error) {
    throw new InvalidInput(`The key file cannot be rotated: ${(error as Error).message}.`);
  }
  const fresh = newMasterKey();
  // New first: from here on every process seals with it, and every process still opens the old.
  replaceKeyFile(setting.path, [fresh, ...oldKeys]);
  const keyring = SecretsKeyring.fromConfig(config, { create: false });
  let total = 0;
  let unreadable: Array<{ id: string; name: string; keyId: string }> = [];
  // A process that read the file just before it changed may still seal one secret under an old key:
  // go again until none is left (or only ones that do not open at all).
  for (let pass = 0; pass < 5; pass += 1) {
    const result = await rewrapSecrets(db, keyring);
    total += result.rewrapped;
    unreadable = result.unreadable;
    if (result.rewrapped === 0) break;
  }
  const stillOld = (await countByKey(db)).filter(
    (r) => r.key_id !== fresh.id && oldKeys.some((k) => k.id === r.key_id),
  );
  const unreadableOld = unreadable.filter((u) => oldKeys.some((k) => k.id === u.keyId));
  if (stillOld.length === 0 && unreadableOld.length === 0) replaceKeyFile(setting.path, [fresh]);
  if (json) {
    say(
      JSON.stringify({
        key_id: fresh.id,
        previous_key_ids: oldKeys.map((k) => k.id),
        source: setting.path,
        rewrapped: total,
        unreadable,
        old_keys_dropped: stillOld.length === 0 && unreadableOld.length === 0,
      }),
    );
  } else {
    say(`New master key ${fresh.id} in ${setting.path} (was ${oldKeys.map((k) => k.id).join(', ')}).`);
    say(`Re-wrapped ${total} secret(s); the running service follows the file without a restart.`);
    say(
      stillOld.length === 0 && unreadableOld.length === 0
        ? 'The old key is gone from the file. Back up the new file apart from the data (a backup does not hold it).'
        : 'Some secrets are still under the old key, so the file keeps it too; run rotate-key again.',
    );
  }
  if (unreadable.length > 0) reportUnreadable(unreadable);
}

function reportUnreadable(rows: Array<{ id: string; name: string; keyId: string }>): void {
  process.stderr.write(
    `${rows.length} secret(s) could not be opened with the keys held and were left as they are: ` +
      rows.map((r) => `${r.name} (${r.id}, key ${r.keyId})`).join(', ') +
      '\n',
  );
  process.exitCode = 1;
}

async function withDatabase(action: (db: Database) => Promise<void>): Promise<void> {
  const handle = await openCliDatabase(loadConfig());
  try {
    await migrateLatest(handle.db);
    await action(handle.db);
  } finally {
    await handle.close();
  }
}

export function addSecretsCommands(program: Command): void {
  const secrets = program.command('secrets').description("The secrets' master key");
  secrets
    .command('rotate-key')
    .description(
      'Wrap every secret again under a new master key, online (key file: made here; SECRETS_KEY: its first key)',
    )
    .option('--json', 'print JSON for scripts')
    .action((opts: { json?: boolean }) => withDatabase((db) => rotateKey(db, !!opts.json)));
  secrets
    .command('new-key')
    .description('Print a new random master key (for SECRETS_KEY), and nothing else')
    .action(() => {
      say(formatMasterKey(newMasterKey()));
    });
  secrets
    .command('status')
    .description('Which master keys this configuration holds, and how many secrets each seals')
    .option('--json', 'print JSON for scripts')
    .action((opts: { json?: boolean }) =>
      withDatabase(async (db) => {
        const keyring = SecretsKeyring.fromConfig(loadConfig(), { create: false });
        const counts = await countByKey(db);
        const held = keyring.keyIds();
        if (opts.json) {
          say(
            JSON.stringify({ source: keyring.describe(), held, problem: keyring.problem(), secrets: counts }),
          );
          return;
        }
        say(
          `Master keys from ${keyring.describe()}: ${held.length > 0 ? held.join(', ') : `none (${keyring.problem()})`}`,
        );
        for (const row of counts)
          say(
            `  ${row.key_id}: ${row.count} secret(s)${held.includes(row.key_id) ? '' : '  ← not held: these cannot be read'}`,
          );
      }),
    );
}
