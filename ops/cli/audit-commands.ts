import type { Command } from 'commander';
import { loadConfig } from '../../engine/platform/config';
import { type Database, migrateLatest } from '../../engine/platform/database';
import {
  archiveAuditMonths,
  dropRestoredAuditMonth,
  listRestoredAuditMonths,
  restoreAuditArchive,
} from '../../engine/store/audit-archive';
import { ensureAuditPartitions, listAuditPartitions } from '../../engine/store/audit-partitions';
import { openCliDatabase } from './cli-database';

const say = (line: string) => process.stdout.write(`${line}\n`);
const MB = 1_000_000;

async function withDatabase(action: (db: Database) => Promise<void>): Promise<void> {
  const handle = await openCliDatabase(loadConfig());
  try {
    await migrateLatest(handle.db);
    await action(handle.db);
  } finally {
    await handle.close();
  }
}

async function showPartitions(db: Database, json: boolean): Promise<void> {
  await ensureAuditPartitions(db);
  const months = await listAuditPartitions(db);
  const sizes = (await db.raw(
    `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes, greatest(c.reltuples, 0)::bigint AS rows
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'audit_logs'::regclass`,
  )) as { rows: Array<{ name: string; bytes: number; rows: number }> };
  const byName = new Map(sizes.rows.map((row) => [row.name, row]));
  const partitions = months.map((p) => ({ ...p, ...byName.get(p.name)! }));
  const restored = await listRestoredAuditMonths(db);
  if (json) {
    say(JSON.stringify({ partitions, restored }));
    return;
  }
  say('Month     Rows (estimate)   Size');
  for (const p of partitions)
    say(`${p.month}   ${String(p.rows).padStart(15)}   ${(p.bytes / MB).toFixed(1).padStart(8)} MB`);
  for (const r of restored) say(`${r.month}   restored read-only as ${r.table}`);
}

export function addAuditCommands(program: Command): void {
  const audit = program
    .command('audit')
    .description('The audit trail: its monthly partitions, archives of old months, restores of them');
  audit
    .command('partitions')
    .description('List the months the trail holds (made ahead as needed) and the restored ones')
    .option('--json', 'print JSON for scripts')
    .action((opts: { json?: boolean }) => withDatabase((db) => showPartitions(db, !!opts.json)));
  audit
    .command('archive')
    .description(
      'Write each month before --before to DIR as audit_logs_YYYY_MM.jsonl.gz with a manifest (row count, ' +
        'SHA-256), read it back and check it against the month, then drop the month from the trail',
    )
    .requiredOption('--before <YYYY-MM>', 'archive the months strictly before this one (UTC)')
    .option('--dir <dir>', 'where the archives go (default: AUDIT_ARCHIVE_DIR)')
    .option('--no-drop', 'write and verify the archives but keep the months in the trail')
    .option('--json', 'print JSON for scripts')
    .action((opts: { before: string; dir?: string; drop: boolean; json?: boolean }) =>
      withDatabase(async (db) => {
        const dir = opts.dir ?? loadConfig().auditArchiveDir;
        const archived = await archiveAuditMonths(db, {
          before: opts.before,
          dir,
          drop: opts.drop,
          source: 'PLATFORM',
          onMonth: (month) => {
            if (opts.json) return;
            say(
              `${month.month}: ${month.rows} records → ${month.file} (${(month.bytes / MB).toFixed(1)} MB, ` +
                `SHA-256 ${month.sha256_gzip}); ${month.reused ? 'existing archive' : 'archive'} verified` +
                (month.dropped ? `; ${month.partition} dropped.` : '; kept in the trail (--no-drop).'),
            );
          },
        });
        if (opts.json) say(JSON.stringify(archived));
        else if (archived.length === 0) say(`No month before ${opts.before} is in the trail.`);
      }),
    );
  audit
    .command('restore')
    .description(
      'Check an archive against its manifest and load it, read-only, as audit_archive.audit_logs_YYYY_MM ' +
        'for an investigation (the live trail is not touched)',
    )
    .argument('<file>', 'audit_logs_YYYY_MM.jsonl.gz or its .manifest.json')
    .option('--json', 'print JSON for scripts')
    .action((file: string, opts: { json?: boolean }) =>
      withDatabase(async (db) => {
        const restored = await restoreAuditArchive(db, file);
        if (opts.json) say(JSON.stringify(restored));
        else
          say(
            `${restored.month}: ${restored.rows} records restored into ${restored.table} (checked against ` +
              'the manifest; UPDATE, DELETE and TRUNCATE are refused there as in the trail).',
          );
      }),
    );
  audit
    .command('drop-restored')
    .description('Drop the restored copy of a month (its archive file stays)')
    .argument('<YYYY-MM>', 'the month')
    .action((month: string) =>
      withDatabase(async (db) => {
        say(`Dropped ${await dropRestoredAuditMonth(db, month)}.`);
      }),
    );
}
