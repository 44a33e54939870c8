import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../../engine/platform/config';
import { type Database, migrateLatest } from '../../engine/platform/database';
import { InvalidInput } from '../../engine/platform/errors';
import {
  type ArchiveManifest,
  manifestPathOf,
  pruneToArchive,
  verifyRunArchive,
} from '../../engine/workflows/run-archive';
import { describeCounts, purgeRunHistory, type PurgeActor } from '../../engine/workflows/run-retention';
import { openCliDatabase } from './cli-database';

const say = (line: string) => process.stdout.write(`${line}\n`);

async function withDatabase(action: (db: Database) => Promise<void>): Promise<void> {
  const handle = await openCliDatabase(loadConfig());
  try {
    await migrateLatest(handle.db);
    await action(handle.db);
  } finally {
    await handle.close();
  }
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * --before: a day (`2026-06-30`, its first instant in UTC) or an instant with its offset. One in
 * the future is refused: it would remove every finished run, which a typo should not do.
 */
export function parseBefore(text: string, now: Date = new Date()): Date {
  const value = text.trim();
  const at = DAY.test(value) ? new Date(`${value}T00:00:00Z`) : INSTANT.test(value) ? new Date(value) : null;
  if (
    at === null ||
    Number.isNaN(at.getTime()) ||
    (DAY.test(value) && at.toISOString().slice(0, 10) !== value)
  ) {
    throw new InvalidInput(
      `--before expects a date (YYYY-MM-DD, UTC) or a date and time with offset (2026-06-30T12:00:00Z), got "${text}".`,
    );
  }
  if (at.getTime() > now.getTime()) {
    throw new InvalidInput(`--before ${text} is in the future: give a date up to today.`);
  }
  return at;
}

/** The operator at the host's shell, as the audit trail names them. */
const OPERATOR: PurgeActor = { source: 'PLATFORM', userEmail: 'operator (pas CLI)', label: 'pas runs prune' };

interface PruneOptions {
  before: string;
  archive?: string;
  account?: string;
  json?: boolean;
}

async function prune(db: Database, opts: PruneOptions): Promise<void> {
  const scope = { before: parseBefore(opts.before), accountId: opts.account ?? null };
  if (!opts.archive) {
    const result = await purgeRunHistory(db, scope, OPERATOR);
    if (opts.json) {
      say(
        JSON.stringify({
          before: result.before.toISOString(),
          account_id: scope.accountId,
          removed: result.removed,
          accounts: Object.fromEntries(result.accounts),
        }),
      );
    } else say(`Removed ${describeCounts(result.removed)} finished before ${result.before.toISOString()}.`);
    return;
  }
  const file = path.resolve(opts.archive);
  const result = await pruneToArchive(db, file, scope, OPERATOR);
  const { manifest } = result;
  if (opts.json) {
    say(
      JSON.stringify({
        before: manifest.before,
        account_id: scope.accountId,
        archive: { ...manifest, path: file, manifest_path: result.manifestFile },
        removed: result.removed,
        accounts: Object.fromEntries(result.accounts),
        kept_runs: result.keptRuns,
        kept_payloads: result.keptPayloads,
      }),
    );
    return;
  }
  say(
    `Archived ${describeCounts(manifest.counts)} to ${file}\n` +
      `  ${manifest.bytes} bytes, SHA-256 ${manifest.sha256}, read back and verified; manifest ${result.manifestFile}`,
  );
  say(`Removed ${describeCounts(result.removed)} finished before ${manifest.before}.`);
  if (result.keptRuns > 0 || result.keptPayloads > 0) {
    say(
      `Kept ${result.keptRuns} archived run(s) and ${result.keptPayloads} payload(s) that changed since ` +
        '(retried, or in use): they stay in the database too.',
    );
  }
}

async function verifyArchive(file: string, json: boolean): Promise<void> {
  const target = path.resolve(file);
  const manifestFile = manifestPathOf(target);
  let manifest: ArchiveManifest;
  try {
    manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as ArchiveManifest;
  } catch (error) {
    throw new InvalidInput(`The manifest ${manifestFile} cannot be read: ${(error as Error).message}.`);
  }
  await verifyRunArchive(target, manifest);
  if (json) say(JSON.stringify({ ...manifest, path: target, verified: true }));
  else {
    say(
      `${target} verifies: ${manifest.bytes} bytes, SHA-256 ${manifest.sha256}; ` +
        Object.entries(manifest.counts)
          .map(([table, n]) => `${table} ${n}`)
          .join(', ') +
        ` (history finished before ${manifest.before}).`,
    );
  }
}

export function addRunsCommands(program: Command): void {
  const runs = program.command('runs').description('Workflow run history');
  runs
    .command('prune')
    .description(
      'Remove finished runs that ended before a date, with their steps and SDK journal, and webhook payloads ' +
        'received before it, in small batches while the service runs. Running runs and runs a retry depends on stay',
    )
    .requiredOption('--before <date>', 'YYYY-MM-DD (UTC), or a date and time with offset')
    .option(
      '--archive <file>',
      'first write them to FILE (gzip-compressed JSON lines) and FILE.manifest.json, read it back and check it; remove only then',
    )
    .option('--account <id>', "only this account's history (default: every account)")
    .option('--json', 'print JSON for scripts')
    .action((opts: PruneOptions) => withDatabase((db) => prune(db, opts)));
  runs
    .command('verify-archive')
    .description(
      'Check an archive written by `runs prune --archive` against its manifest (FILE.manifest.json)',
    )
    .argument('<file>', 'the archive')
    .option('--json', 'print JSON for scripts')
    .action((file: string, opts: { json?: boolean }) => verifyArchive(file, !!opts.json));
}
