import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { ensureOwnerAccount } from '../../engine/identity/account-store';
import { performance } from 'node:perf_hooks';
import { type Config, ConfigError, loadConfig } from '../../engine/platform/config';
import { logFormatOf } from '../../engine/platform/log-format';
import { connectDatabase, migrateLatest } from '../../engine/platform/database';
import { SEARCH_ATTRIBUTES } from '../../engine/workflows/run-input';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../embedded/embedded-postgres';
import { SecretsKeyring } from '../../engine/secrets/master-key';
import { exponentialBackoff, type Instance, Supervisor } from './supervisor';
import {
  findTemporalCli,
  startTemporalDevServer,
  TemporalCliMissingError,
  type TemporalDevServer,
} from '../embedded/temporal-dev-server';

const PROJECT_ROOT = path.resolve(__dirname, '..', '..');

/** Marks a component ready: its name, since when it was starting, and a word on it. */
type Mark = (component: string, since: number, detail: string) => void;
const CHILD_STOP_GRACE_MS = 20_000;
const API_READY_TIMEOUT_MS = 120_000;
/** A child that fails more than 5 times within a minute is broken, not unlucky: the service stops. */
const MAX_FAILURES = 5;
const FAILURE_WINDOW_MS = 60_000;

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Where the api and worker processes first serve their metrics under `npm start`. */
const DEFAULT_METRICS_PORT = 9464;

/**
 * The children's lines. On a terminal (pretty) they are held back until the banner, so the
 * credentials a person must copy come first; a warning or an error is shown at once. In JSON they
 * pass through as they come. `watch` sees every line (the launcher marks a component ready by it).
 */
class ChildOutput {
  private held: string[] | null;
  private readonly watchers: Array<(line: string) => void> = [];

  constructor(pretty: boolean) {
    this.held = pretty ? [] : null;
  }

  watch(watcher: (line: string) => void): void {
    this.watchers.push(watcher);
  }

  line(text: string, stream: NodeJS.WritableStream): void {
    for (const watcher of this.watchers) watcher(text);
    if (this.held !== null && !/\b(WARN|ERROR|FATAL)\b|"level":(4|5|6)0/.test(text)) this.held.push(text);
    else stream.write(`${text}\n`);
  }

  /** After the banner: what was held, then everything as it comes. */
  release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const text of held) process.stdout.write(`${text}\n`);
  }
}

function forwardLines(from: NodeJS.ReadableStream, to: NodeJS.WritableStream, output: ChildOutput): void {
  let pending = '';
  from.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      output.line(pending.slice(0, newline), to);
      pending = pending.slice(newline + 1);
      newline = pending.indexOf('\n');
    }
  });
  from.on('end', () => {
    if (pending !== '') output.line(pending, to);
  });
}

/** Spawns an api or worker process on this Node (24, with the flags isolated-vm needs). */
function spawnChild(entry: string, env: NodeJS.ProcessEnv, output: ChildOutput): Instance {
  const child = spawn(
    process.execPath,
    ['--no-node-snapshot', '--import', 'tsx', path.join(PROJECT_ROOT, entry)],
    {
      cwd: PROJECT_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  forwardLines(child.stdout!, process.stdout, output);
  forwardLines(child.stderr!, process.stderr, output);
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
  mark: Mark,
): Promise<{ databaseUrl: string; temporalAddress: string; temporalUiUrl: string | null }> {
  mkdirSync(config.dataDir, { recursive: true });
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    const begun = performance.now();
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
    mark('PostgreSQL', begun, `embedded, data in ${path.join(config.dataDir, 'postgres')}`);
  }
  let temporalAddress = config.temporalAddress;
  let temporalUiUrl = config.temporalUiUrl;
  if (!temporalAddress) {
    const cliPath = findTemporalCli({ cliPath: config.temporalCliPath, projectRoot: PROJECT_ROOT });
    if (!cliPath) throw new TemporalCliMissingError();
    const begun = performance.now();
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
    mark('Temporal', begun, `embedded dev server at ${temporalAddress}`);
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

  const pretty = logFormatOf(config) === 'pretty';
  const started = performance.now();
  /** One line per component as it starts: a mark, its name and its time (JSON without a terminal). */
  const mark: Mark = (component, since, detail) => {
    const ms = performance.now() - since;
    if (pretty) say(`  ✓ ${component.padEnd(11)} ${(ms / 1000).toFixed(1).padStart(5)} s  ${detail}`);
    else
      say(
        JSON.stringify({
          level: 30,
          time: Date.now(),
          component: 'launcher',
          msg: `${component} ready`,
          ms: Math.round(ms),
          detail,
        }),
      );
  };
  const output = new ChildOutput(pretty);

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
  // The terminal closed (or `script` ended): stop as for Ctrl+C, so PostgreSQL is not left running.
  process.on('SIGHUP', () => void shutdown(0));
  // A closed terminal fails writes with EIO: the shutdown goes on without them.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);

  try {
    const services = await startServices(config, supervisor, mark);
    const db = connectDatabase(services.databaseUrl, 2);
    const migrating = performance.now();
    await migrateLatest(db);
    mark('Migrations', migrating, 'the database schema is current');
    const firstKey = await ensureOwnerAccount(db, {
      ownerEmail: config.ownerEmail,
      accountName: 'Default account',
    });
    await db.destroy();
    // Made here, before the api and worker start, so both read the one file (never two keys).
    const secrets = SecretsKeyring.fromConfig(config);
    if (stopping) return;

    // Children get the resolved addresses; everything else of their configuration is ours.
    const metricsPort = config.metricsPort ?? DEFAULT_METRICS_PORT;
    const childEnv = (port: number) => ({
      ...process.env,
      DATABASE_URL: services.databaseUrl,
      TEMPORAL_ADDRESS: services.temporalAddress,
      // Their output is a pipe to us: they keep the format this terminal (or LOG_FORMAT) asked for.
      LOG_FORMAT: pretty ? 'pretty' : 'json',
      METRICS_PORT: String(port),
      // The console links each run to the Temporal UI the launcher started (or was told of).
      ...(services.temporalUiUrl ? { TEMPORAL_UI_URL: services.temporalUiUrl } : {}),
    });
    const needs = ['postgres', 'temporal'];
    const workerBegun = performance.now();
    let workerPolling = false;
    output.watch((line) => {
      if (!workerPolling && line.includes('polling task queue')) {
        workerPolling = true;
        mark('Worker', workerBegun, `polling task queue ${config.temporalTaskQueue}`);
      }
    });
    await supervisor.start({
      name: 'worker',
      needs,
      start: () => Promise.resolve(spawnChild('workers/worker.ts', childEnv(metricsPort + 1), output)),
    });
    const apiBegun = performance.now();
    await supervisor.start({
      name: 'api',
      needs,
      start: () => Promise.resolve(spawnChild('api/server.ts', childEnv(metricsPort), output)),
    });
    const displayHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    const baseUrl = `http://${displayHost}:${config.port}/v2`;
    await waitForApi(`${baseUrl}/health_check`, () => stopping);
    if (stopping) return;
    mark('API', apiBegun, `listening on ${baseUrl}`);

    // The credentials first: on a terminal they are within the first 15 lines of `npm start`.
    say('');
    say(
      `Portfolio Analytics Service is running (started in ${((performance.now() - started) / 1000).toFixed(1)} s).`,
    );
    if (firstKey) {
      say(`  Account SID:      ${firstKey.account_sid}`);
      say(`  Auth token:       ${firstKey.auth_token}`);
      say(`  Owner:            ${firstKey.owner_email}`);
      say(
        '  (First start: the owner account was created. Keep these credentials; they are shown only once.)',
      );
    }
    say(`  API base URL:     ${baseUrl}`);
    say(`  API docs:         ${baseUrl}/docs`);
    say(`  Web console:      http://${displayHost}:${config.port}/console`);
    say(`  Temporal UI:      ${services.temporalUiUrl ?? '(set TEMPORAL_UI_URL to show it here)'}`);
    if (secrets.created) {
      say(`  Secrets key:      ${secrets.describe().replace(/^key file /, '')} (made now)`);
      say(
        '  (Back it up apart from the data: a backup does not hold it, and without it no stored secret can be read.)',
      );
    } else if (secrets.problem() !== null) {
      say(`  Secrets key:      unusable: ${secrets.problem()}`);
    }
    say(
      `  Metrics:          http://${config.metricsHost}:${metricsPort}/metrics (api), :${metricsPort + 1}/metrics (worker)`,
    );
    if (firstKey) {
      say(
        `  Try:  curl -H "Authorization: Bearer ${firstKey.account_sid}:${firstKey.auth_token}" ${baseUrl}/workspaces`,
      );
    }
    say('Press Ctrl+C to stop.');
    say('');
    output.release();
  } catch (error) {
    console.error(`Start-up failed: ${error instanceof Error ? error.message : String(error)}`);
    await shutdown(1);
  }
}

void main();
