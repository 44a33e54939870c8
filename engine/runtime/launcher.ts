import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { ensureOwnerAccount } from '../accounts/account-store';
import { type Config, ConfigError, loadConfig } from '../config';
import { connectDatabase, migrateLatest } from '../db/database';
import { SEARCH_ATTRIBUTES } from '../workflows/run-input';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './embedded-postgres';
import {
  findTemporalCli,
  startTemporalDevServer,
  TemporalCliMissingError,
  type TemporalDevServer,
} from './temporal-dev-server';

const PROJECT_ROOT = path.resolve(__dirname, '..', '..');
const CHILD_STOP_GRACE_MS = 20_000;
const API_READY_TIMEOUT_MS = 120_000;

interface Running {
  postgres: EmbeddedPostgres | null;
  temporal: TemporalDevServer | null;
  children: ChildProcess[];
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Spawns an api or worker process on this Node (24, with the flags isolated-vm needs). */
function spawnChild(entry: string, env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', path.join(PROJECT_ROOT, entry)], {
    cwd: PROJECT_ROOT,
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

async function waitForApi(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + API_READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error('the API process exited during start-up');
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`the API did not answer ${url} within ${API_READY_TIMEOUT_MS / 1000} s`);
}

async function startServices(
  config: Config,
  running: Running,
): Promise<{ databaseUrl: string; temporalAddress: string; temporalUiUrl: string | null }> {
  mkdirSync(config.dataDir, { recursive: true });
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    say(`Starting the embedded PostgreSQL (data in ${path.join(config.dataDir, 'postgres')}) …`);
    running.postgres = await startEmbeddedPostgres({
      dataDir: config.dataDir,
      port: config.embeddedPostgresPort,
      database: 'pas',
    });
    databaseUrl = running.postgres.url;
  }
  let temporalAddress = config.temporalAddress;
  let temporalUiUrl = config.temporalUiUrl;
  if (!temporalAddress) {
    const cliPath = findTemporalCli({ cliPath: config.temporalCliPath, projectRoot: PROJECT_ROOT });
    if (!cliPath) throw new TemporalCliMissingError();
    say('Starting the embedded Temporal dev server …');
    running.temporal = await startTemporalDevServer({
      cliPath,
      dataDir: config.dataDir,
      host: '127.0.0.1',
      port: config.temporalDevPort,
      uiPort: config.temporalUiPort,
      namespace: config.temporalNamespace,
      searchAttributes: { ...SEARCH_ATTRIBUTES },
    });
    temporalAddress = running.temporal.address;
    temporalUiUrl = config.temporalUiUrl ?? running.temporal.uiUrl;
  }
  return { databaseUrl, temporalAddress, temporalUiUrl };
}

/**
 * `npm start`: PostgreSQL and Temporal (embedded unless configured), migrations under a lock, the
 * owner's first credentials, then the api and worker processes. SIGINT/SIGTERM stop everything in
 * reverse order, so no process outlives the launcher and no data is lost.
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

  const running: Running = { postgres: null, temporal: null, children: [] };
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('Shutting down …');
    await Promise.all(running.children.map(stopChild));
    await running.temporal?.stop();
    await running.postgres?.stop();
    say('Stopped.');
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  try {
    const services = await startServices(config, running);
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
    };
    const api = spawnChild('api/server.ts', env);
    const worker = spawnChild('workers/worker.ts', env);
    running.children.push(api, worker);
    for (const child of running.children) {
      child.once('exit', (code, signal) => {
        if (stopping) return;
        console.error(`A service process exited unexpectedly (code ${code}, signal ${signal}); stopping.`);
        void shutdown(1);
      });
    }
    const displayHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    const baseUrl = `http://${displayHost}:${config.port}/v2`;
    await waitForApi(`${baseUrl}/health_check`, api);

    say('');
    say('Portfolio Analytics Service is running.');
    say(`  API base URL:     ${baseUrl}`);
    say(`  API docs:         ${baseUrl}/docs`);
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
