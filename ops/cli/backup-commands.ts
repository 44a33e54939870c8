import { existsSync } from 'node:fs';
import { readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import type { Command } from 'commander';
import { createBackup } from '../backup/create-backup';
import { restoreBackup, type RestoreProgress, RestoreRefused, verifyBackup } from '../backup/restore-backup';
import { loadConfig, type Config } from '../../engine/platform/config';
import { connectDatabase } from '../../engine/platform/database';
import { startEmbeddedPostgres } from '../embedded/embedded-postgres';
import { INTERPRETER_WORKFLOWS } from '../../engine/workflows/run-input';
import { reconcileSchedules, temporalWorkflowSchedules } from '../../engine/workflows/workflow-schedules';
import { openCliDatabaseUrl, portOpen } from './cli-database';

const MB = 1_000_000;

/**
 * Progress of a long copy: on a terminal one line redrawn in place (bytes and MB/s), elsewhere
 * (a log, cron) nothing until the step's closing line.
 */
function progressLine(enabled: boolean) {
  let last = 0;
  let drawn = false;
  return {
    update(label: string, bytes: number, elapsedMs: number, total?: number) {
      if (!enabled || Date.now() - last < 200) return;
      last = Date.now();
      drawn = true;
      const rate = elapsedMs > 0 ? bytes / MB / (elapsedMs / 1000) : 0;
      const share = total ? ` of ${(total / MB).toFixed(1)} MB (${Math.floor((bytes / total) * 100)} %)` : '';
      process.stderr.write(`\r${label}: ${(bytes / MB).toFixed(1)} MB${share}, ${rate.toFixed(1)} MB/s   `);
    },
    end() {
      if (drawn) process.stderr.write('\n');
      drawn = false;
    },
  };
}

const say = (line: string) => process.stdout.write(`${line}\n`);

function defaultBackupName(now: Date): string {
  return `pas-backup-${now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}.tar`;
}

async function backupCommand(opts: { output?: string; progress?: boolean }): Promise<void> {
  const config = loadConfig();
  const output = path.resolve(opts.output ?? defaultBackupName(new Date()));
  const progress = progressLine(!!opts.progress || process.stderr.isTTY === true);
  const target = await openCliDatabaseUrl(config);
  try {
    say(`Backing up the database to ${output} …`);
    const result = await createBackup({
      databaseUrl: target.url,
      output,
      onProgress: ({ bytes, elapsedMs }) => progress.update('database', bytes, elapsedMs),
    });
    progress.end();
    const { manifest } = result;
    say(
      `Backup written: ${result.file}\n` +
        `  ${(result.bytes / MB).toFixed(1)} MB in ${result.seconds.toFixed(1)} s ` +
        `(${(result.bytes / MB / Math.max(result.seconds, 0.001)).toFixed(1)} MB/s)\n` +
        `  snapshot at ${manifest.snapshot_at}, ${manifest.service.name} ${manifest.service.version}, ` +
        `migration ${manifest.migrations.level ?? '(none)'}\n` +
        `  PostgreSQL ${manifest.database.server_version}, pg_dump ${manifest.database.pg_dump_version}; ` +
        Object.entries(manifest.database.row_counts)
          .map(([table, rows]) => `${table} ${rows}`)
          .join(', '),
    );
  } finally {
    progress.end();
    await target.close();
  }
}

/** DATA_DIR is an empty target when it does not exist or holds nothing. */
async function dataDirEntries(dataDir: string): Promise<string[]> {
  try {
    return await readdir(dataDir);
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'ENOENT') return [];
    throw error;
  }
}

/**
 * Where the restore goes: the database DATABASE_URL names, or a new embedded cluster in DATA_DIR
 * (with a newly generated password; the data, API keys included, is in the database). A DATA_DIR
 * in use is refused, and with --force the old Temporal dev-server file is moved aside: its runs
 * and schedules belong to the data being replaced.
 */
async function openRestoreTarget(
  config: Config,
  force: boolean,
): Promise<{ url: string; where: string; close(): Promise<void>; discard(): Promise<void> }> {
  if (config.databaseUrl) {
    const shown = new URL(config.databaseUrl);
    shown.password = '';
    return {
      url: config.databaseUrl,
      where: `the database ${shown.toString()}`,
      close: () => Promise.resolve(),
      discard: () => Promise.resolve(),
    };
  }
  const dataDir = config.dataDir;
  if (await portOpen(config.embeddedPostgresPort)) {
    throw new RestoreRefused(
      `Something is listening on port ${config.embeddedPostgresPort} (EMBEDDED_POSTGRES_PORT): stop the ` +
        'service before restoring, or restore into another DATA_DIR with another EMBEDDED_POSTGRES_PORT.',
    );
  }
  const entries = await dataDirEntries(dataDir);
  if (entries.length > 0 && !force) {
    throw new RestoreRefused(
      `DATA_DIR ${dataDir} is not empty (${entries.slice(0, 5).join(', ')}); restore into an empty or new ` +
        'folder, or pass --force to replace its database.',
    );
  }
  for (const entry of entries.filter((name) => name.startsWith('temporal.sqlite'))) {
    const aside = `${entry}.before-restore-${Date.now()}`;
    await rename(path.join(dataDir, entry), path.join(dataDir, aside));
    say(`Moved ${entry} aside to ${aside} (the Temporal dev server starts afresh).`);
  }
  const existed = existsSync(dataDir);
  // A folder that held nothing is left as it was found when the restore fails.
  const discard = async () => {
    if (entries.length > 0) return;
    if (existed) {
      for (const entry of await readdir(dataDir))
        await rm(path.join(dataDir, entry), { recursive: true, force: true });
    } else {
      await rm(dataDir, { recursive: true, force: true });
    }
  };
  let postgres: Awaited<ReturnType<typeof startEmbeddedPostgres>>;
  try {
    postgres = await startEmbeddedPostgres({ dataDir, port: config.embeddedPostgresPort, database: 'pas' });
  } catch (error) {
    await discard();
    throw error;
  }
  return { url: postgres.url, where: `DATA_DIR ${dataDir}`, close: () => postgres.stop(), discard };
}

/**
 * With a Temporal cluster configured, the restore brings it in line at once: run workflows still
 * open there are terminated, and the schedules are made to match the restored workflows. The embedded dev server of a restored DATA_DIR starts empty, and the API and
 * worker recreate every schedule when `npm start` brings them up (the same reconciliation).
 */
async function alignTemporal(config: Config, databaseUrl: string, settledRuns: string[]): Promise<void> {
  if (!config.temporalAddress) {
    say('Schedules: recreated in the embedded Temporal dev server when the service next starts.');
    return;
  }
  const connection = await Connection.connect({ address: config.temporalAddress });
  const client = new Client({ connection, namespace: config.temporalNamespace });
  const db = connectDatabase(databaseUrl, 2);
  try {
    // No run of the restored database is RUNNING any more: an interpreter still open on this task
    // queue belongs to a run that was in flight at the snapshot or started after it, and has nothing
    // left to record into. The settled ids are added in case the listing lags behind.
    const open = new Set(settledRuns);
    for await (const run of client.workflow.list({
      query:
        `WorkflowType IN (${INTERPRETER_WORKFLOWS.map((type) => `'${type}'`).join(', ')}) AND ` +
        `ExecutionStatus = 'Running' AND ` +
        `TaskQueue = '${config.temporalTaskQueue}'`,
    })) {
      open.add(run.workflowId);
    }
    let terminated = 0;
    for (const id of open) {
      try {
        await client.workflow.getHandle(id).terminate('The service database was restored from a backup');
        terminated += 1;
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    }
    const report = await reconcileSchedules(db, temporalWorkflowSchedules(client, config.temporalTaskQueue));
    say(
      `Temporal (${config.temporalAddress}): ${terminated} open run workflow(s) terminated; schedules ` +
        `${report.synced} created or updated, ${report.unchanged} unchanged, ${report.removed} removed` +
        (report.failed.length ? `, ${report.failed.length} failed (${report.failed[0]!.message})` : '') +
        '.',
    );
    if (report.failed.length > 0)
      throw new Error('Some schedules could not be recreated; run `pas restore` again or start the service.');
  } finally {
    await db.destroy();
    await connection.close();
  }
}

async function restoreCommand(file: string, opts: { force?: boolean; progress?: boolean }): Promise<void> {
  const config = loadConfig();
  const progress = progressLine(!!opts.progress || process.stderr.isTTY === true);
  const show = ({ phase, bytes, total, elapsedMs }: RestoreProgress) =>
    progress.update(phase === 'verify' ? 'checking' : 'restoring', bytes, elapsedMs, total);
  try {
    say(`Checking ${path.resolve(file)} …`);
    const verified = await verifyBackup(file, show);
    progress.end();
    const { manifest } = verified;
    say(
      `Backup of ${manifest.snapshot_at} by ${manifest.service.name} ${manifest.service.version} ` +
        `(migration ${manifest.migrations.level ?? '(none)'}): manifest and SHA-256 checksums are correct.`,
    );
    const target = await openRestoreTarget(config, !!opts.force);
    let restored = false;
    try {
      say(`Restoring into ${target.where} …`);
      const result = await restoreBackup({
        verified,
        databaseUrl: target.url,
        force: !!opts.force,
        onProgress: show,
      });
      progress.end();
      say(
        `Restored in ${result.seconds.toFixed(1)} s. ` +
          (result.migrationsApplied.length
            ? `Migrated forward: ${result.migrationsApplied.join(', ')}.`
            : "The backup was at this version's migration level."),
      );
      say(
        result.settledRuns.length
          ? `${result.settledRuns.length} run(s) in flight at the snapshot are now FAILED (interrupted by a restore; retry them to run their unfinished steps): ${result.settledRuns.join(', ')}`
          : 'No run was in flight at the snapshot.',
      );
      restored = true;
      await alignTemporal(config, target.url, result.settledRuns);
    } finally {
      await target.close();
      if (!restored) await target.discard();
    }
    say(
      config.databaseUrl
        ? 'Done: start the API and workers on this database.'
        : 'Done: start the service with `npm start`.',
    );
  } finally {
    progress.end();
  }
}

export function addBackupCommands(program: Command): void {
  program
    .command('backup')
    .description(
      'Write a consistent backup of everything the service stores (its PostgreSQL database, one snapshot, ' +
        'taken while the service runs) and a manifest with SHA-256 checksums, as one tar file',
    )
    .option('--output <file>', 'where to write it (default: pas-backup-<UTC time>.tar); never overwritten')
    .option('--progress', 'draw progress even when stderr is not a terminal')
    .action((opts: { output?: string; progress?: boolean }) => backupCommand(opts));
  program
    .command('restore')
    .description(
      'Restore a backup into an empty DATA_DIR (a new embedded PostgreSQL) or the empty database of ' +
        'DATABASE_URL: checks the file whole first, migrates forward, settles runs that were in flight',
    )
    .argument('<file>', 'a file written by `pas backup`')
    .option('--force', 'replace what the target holds (its public schema; in DATA_DIR, its database)')
    .option('--progress', 'draw progress even when stderr is not a terminal')
    .action((file: string, opts: { force?: boolean; progress?: boolean }) => restoreCommand(file, opts));
}
