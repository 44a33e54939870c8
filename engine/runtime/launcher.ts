import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { ensureOwnerAccount } from '../identity/account-store';
import { type Config, ConfigError, loadConfig } from '../platform/config';
import { connectDatabase, migrateLatest } from '../platform/database';
import { SEARCH_ATTRIBUTES } from '../workflows/run-input';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './embedded-postgres';
import { exponentialBackoff, type Instance, Supervisor } from './supervisor';
import {
  findTemporalCli,
  startTemporalDevServer,
  TemporalCliMissingError,
  type TemporalDevServer,
} from './temporal-dev-server';

const PROJECT_ROOT = path.resolve(__dirname, '..', '..');
const CHILD_STOP_GRACE_MS = 20_000;
const API_READY_TIMEOUT_MS = 120_000;
/** A child that fails more than 5 times within a minute is broken, not unlucky: the service stops. */
const MAX_FAILURES = 5;
const FAILURE_WINDOW_MS = 60_000;

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Spawns an api or worker process on this Node (24, with the flags isolated-vm needs). */
function spawnChild(entry: string, env: NodeJS.ProcessEnv): Instance {
  const child = spawn(
    process.execPath,
    ['--no-node-snapshot', '--import', 'tsx', path.join(PROJECT_ROOT, entry)],
    {
      cwd: PROJECT_ROOT,
      env,
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) =>
      resolve(code !== null ? `exited with code ${code}` : `was killed by ${signal}`),
    ),
  );
  return { exited, stop: () => stopChild(child) };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

/** Polls until the API answers; a crashing API is the supervisor's to restart or give up on. */
async function waitForApi(url: string, stopped: () => boolean): Promise<void> {
  const deadline = Date.now() + API_READY_TIMEOUT_MS;
  while (Date.now() < deadline && !stopped()) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  if (!stopped()) throw new Error(`the API did not answer ${url} within ${API_READY_TIMEOUT_MS / 1000} s`);
}

/**
 * PostgreSQL and Temporal (embedded unless configured) under the supervisor: a restart reuses the same
 * data folder, port and password, so the api and worker reconnect to the same address.
 */
async function startServices(
  config: Config,
  supervisor: Supervisor,
): Promise<{ databaseUrl: string; temporalAddress: string; temporalUiUrl: string | null }> {
  mkdirSync(config.dataDir, { recursive: true });
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    say(`Starting the embedded PostgreSQL (data in ${path.join(config.dataDir, 'postgres')}) …`);
    let url = '';
    await supervisor.start({
      name: 'postgres',
      start: async () => {
        const postgres: EmbeddedPostgres = await startEmbeddedPostgres({
          dataDir: config.dataDir,
          port: config.embeddedPostgresPort,
          database: 'pas',
        });
        url = postgres.url;
        return postgres;
      },
    });
    databaseUrl = url;
  }
  let temporalAddress = config.temporalAddress;
  let temporalUiUrl = config.temporalUiUrl;
  if (!temporalAddress) {
    const cliPath = findTemporalCli({ cliPath: config.temporalCliPath, projectRoot: PROJECT_ROOT });
    if (!cliPath) throw new TemporalCliMissingError();
    say('Starting the embedded Temporal dev server …');
    let temporal: TemporalDevServer | undefined;
    await supervisor.start({
      name: 'temporal',
      start: async () => {
        temporal = await startTemporalDevServer({
          cliPath,
          dataDir: config.dataDir,
          host: '127.0.0.1',
          port: config.temporalDevPort,
          uiPort: config.temporalUiPort,
          namespace: config.temporalNamespace,
          searchAttributes: { ...SEARCH_ATTRIBUTES },
        });
        return temporal;
      },
    });
    temporalAddress = temporal!.address;
    temporalUiUrl = config.temporalUiUrl ?? temporal!.uiUrl;
  }
  return { databaseUrl, temporalAddress, temporalUiUrl };
}

/**
 * `npm start`: PostgreSQL and Temporal (embedded unless configured), migrations under a lock, the
 * owner's first credentials, then the api and worker processes, all under the supervisor, which
 * restarts a crashed one with backoff. SIGINT/SIGTERM stop everything in reverse order, so no process
 * outlives the launcher and no data is lost.
 */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }

  let stopping = false;
  const supervisor = new Supervisor({
    maxFailures: MAX_FAILURES,
    windowMs: FAILURE_WINDOW_MS,
    backoffMs: exponentialBackoff,
    log: (line) => console.error(line),
    giveUp: (name, reason) => {
      console.error(`supervisor: giving up on ${name}: ${reason}; stopping the service.`);
      void shutdown(1);
    },
  });
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('Shutting down …');
    // Reverse start order: nothing is left talking to a dependency that is already gone.
    await supervisor.stop(['api', 'worker']);
    await supervisor.stop(['temporal']);
    await supervisor.stop(['postgres']);
    say('Stopped.');
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  try {
    const services = await startServices(config, supervisor);
    const db = connectDatabase(services.databaseUrl, 2);
    await migrateLatest(db);
    const firstKey = await ensureOwnerAccount(db, {
      ownerEmail: config.ownerEmail,
      accountName: 'Default account',
    });
    await db.destroy();
    if (stopping) return;

    // Children get the resolved addresses; everything else of their configuration is ours.
    const env = {
      ...process.env,
      DATABASE_URL: services.databaseUrl,
      TEMPORAL_ADDRESS: services.temporalAddress,
      // The console links each run to the Temporal UI the launcher started (or was told of).
      ...(services.temporalUiUrl ? { TEMPORAL_UI_URL: services.temporalUiUrl } : {}),
    };
    const needs = ['postgres', 'temporal'];
    await supervisor.start({
      name: 'worker',
      needs,
      start: () => Promise.resolve(spawnChild('workers/worker.ts', env)),
    });
    await supervisor.start({
      name: 'api',
      needs,
      start: () => Promise.resolve(spawnChild('api/server.ts', env)),
    });
    const displayHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    const baseUrl = `http://${displayHost}:${config.port}/v2`;
    await waitForApi(`${baseUrl}/health_check`, () => stopping);
    if (stopping) return;

    say('');
    say('Portfolio Analytics Service is running.');
    say(`  API base URL:     ${baseUrl}`);
    say(`  API docs:         ${baseUrl}/docs`);
    say(`  Web console:      http://${displayHost}:${config.port}/console`);
    say(`  Temporal UI:      ${services.temporalUiUrl ?? '(set TEMPORAL_UI_URL to show it here)'}`);
    if (firstKey) {
      say('');
      say('First start: the owner account was created. Keep these credentials; they are shown only once.');
      say(`  Owner:            ${firstKey.owner_email}`);
      say(`  Account SID:      ${firstKey.account_sid}`);
      say(`  Auth token:       ${firstKey.auth_token}`);
      say(
        `  Try:  curl -H "Authorization: Bearer ${firstKey.account_sid}:${firstKey.auth_token}" ${baseUrl}/workspaces`,
      );
    }
    say('');
    say('Press Ctrl+C to stop.');
  } catch (error) {
    console.error(`Start-up failed: ${error instanceof Error ? error.message : String(error)}`);
    await shutdown(1);
  }
}

void main();
