import { pythonEnvironmentBuilds } from '../platform/metrics';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Database } from '../platform/database';
import { type PythonRuntime, WORKER_TEMPLATE } from '../kinds/worker-template';

/**
 * The virtualenvs of the Python worker templates: one folder per requirements hash under a root
 * (DATA_DIR/python-environments), built once by pip from the package index and shared by every
 * template with the same requirements. A folder is complete when it holds COMPLETE_MARK; it is
 * built elsewhere under the root and renamed into place, so a reader never sees half of one.
 *
 * pip installs wheels only (`--only-binary=:all:`): building a source distribution would run the
 * package's own code on the host. What pip installed (`pip freeze`) is kept in the folder and in the
 * build log, so a template's environment can be reproduced exactly by pinning those versions.
 */
/** Where the environments live when the process names no folder (the worker gets DATA_DIR's). */
export const DEFAULT_ENVIRONMENT_ROOT = path.join(os.tmpdir(), 'pas-python-environments');
export const COMPLETE_MARK = '.pas-complete';
export const FREEZE_FILE = '.pas-freeze.txt';
/** The most of a build log a template keeps (its end: where pip says what went wrong). */
export const BUILD_LOG_TAIL_CHARS = 4000;
/** A build that takes longer is stopped and fails. */
export const BUILD_TIMEOUT_MS = 10 * 60_000;

const INTERPRETERS: Record<PythonRuntime, string> = { 'python3.11': '/usr/bin/python3.11' };

export function environmentDir(root: string, hash: string): string {
  return path.join(root, hash);
}

export function environmentReady(root: string, hash: string): boolean {
  return existsSync(path.join(environmentDir(root, hash), COMPLETE_MARK));
}

export type BuildOutcome = { ok: true; dir: string; log: string } | { ok: false; log: string };

function tail(text: string): string {
  return text.length > BUILD_LOG_TAIL_CHARS ? '…' + text.slice(-BUILD_LOG_TAIL_CHARS) : text;
}

/** Runs one build command, appending its output to `log`; resolves to its exit code. */
function runLogged(command: string, args: string[], log: string[], deadline: number): Promise<number> {
  return new Promise((resolve) => {
    log.push(`$ ${[path.basename(command), ...args].join(' ')}\n`);
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8', PIP_NO_INPUT: '1' },
    });
    const timer = setTimeout(
      () => {
        log.push(`\n[stopped: the build took longer than ${BUILD_TIMEOUT_MS / 1000} s]\n`);
        child.kill('SIGKILL');
      },
      Math.max(0, deadline - Date.now()),
    );
    child.stdout.on('data', (chunk: Buffer) => log.push(chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => log.push(chunk.toString('utf8')));
    child.on('error', (error) => log.push(`${error.message}\n`));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve(code ?? -1);
    });
  });
}

/**
 * The environment for `requirements`, built now if this machine has none yet. Concurrent builds of
 * one hash (two processes) both finish; the first rename wins and the other's copy is dropped.
 */
export async function ensureEnvironment(
  root: string,
  runtime: PythonRuntime,
  requirements: readonly string[],
  hash: string,
): Promise<BuildOutcome> {
  const dir = environmentDir(root, hash);
  if (environmentReady(root, hash)) {
    const frozen = await readFile(path.join(dir, FREEZE_FILE), 'utf8').catch(() => '');
    pythonEnvironmentBuilds.inc({ result: 'reused' });
    return { ok: true, dir, log: tail(`Already built on this machine. Installed:\n${frozen}`) };
  }
  const built = await buildEnvironment(root, runtime, requirements, hash, dir);
  pythonEnvironmentBuilds.inc({ result: built.ok ? 'built' : 'failed' });
  return built;
}

/** The build itself (ensureEnvironment counts its result). */
async function buildEnvironment(
  root: string,
  runtime: PythonRuntime,
  requirements: readonly string[],
  hash: string,
  dir: string,
): Promise<BuildOutcome> {
  await mkdir(root, { recursive: true });
  const work = path.join(root, `.build-${hash.slice(0, 16)}-${randomBytes(4).toString('hex')}`);
  const log: string[] = [];
  const deadline = Date.now() + BUILD_TIMEOUT_MS;
  try {
    const python = INTERPRETERS[runtime];
    if ((await runLogged(python, ['-m', 'venv', work], log, deadline)) !== 0) {
      return { ok: false, log: tail(log.join('')) };
    }
    const requirementsFile = path.join(work, 'requirements.txt');
    await writeFile(requirementsFile, requirements.join('\n') + '\n');
    const pip = path.join(work, 'bin', 'python');
    const installed = await runLogged(
      pip,
      [
        '-m',
        'pip',
        'install',
        '--disable-pip-version-check',
        '--no-input',
        '--only-binary=:all:',
        '--progress-bar=off',
        '-r',
        requirementsFile,
      ],
      log,
      deadline,
    );
    if (installed !== 0) return { ok: false, log: tail(log.join('')) };
    const freeze: string[] = [];
    await runLogged(pip, ['-m', 'pip', 'freeze', '--all'], freeze, deadline);
    const frozen = freeze.slice(1).join('');
    log.push(`Installed:\n${frozen}`);
    await writeFile(path.join(work, FREEZE_FILE), frozen);
    // The sandbox runs as an unprivileged uid: everything readable, nothing writable by it.
    await makeReadable(work);
    await writeFile(path.join(work, COMPLETE_MARK), new Date().toISOString());
    try {
      await rename(work, dir);
    } catch (error) {
      if (!environmentReady(root, hash)) throw error;
    }
    return { ok: true, dir, log: tail(log.join('')) };
  } catch (error) {
    log.push(`\n${(error as Error).message}\n`);
    return { ok: false, log: tail(log.join('')) };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function makeReadable(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) await makeReadable(full);
    else await chmod(full, ((await stat(full)).mode & 0o111) !== 0 ? 0o755 : 0o644);
  }
}

interface PendingRow {
  account_id: string;
  id: string;
  runtime: PythonRuntime;
  requirements: string[];
  hash: string;
}

/**
 * Builds the environments of PENDING templates, one hash at a time, and records the outcome on
 * every template still waiting for that hash (SUCCESS, or ERROR with the log's tail). Returns how
 * many hashes it handled. A republish that changed the requirements meanwhile has a new hash, so
 * an old build never marks it.
 */
export async function buildPendingEnvironments(db: Database, root: string): Promise<number> {
  const rows = (await db('entities')
    .where({ kind: WORKER_TEMPLATE.kind })
    .whereRaw("body->>'container_status' = 'PENDING'")
    .select(
      'account_id',
      'id',
      db.raw("body->>'script_runtime' AS runtime"),
      db.raw("body->'requirements' AS requirements"),
      db.raw("body->'environment'->>'hash' AS hash"),
    )
    .limit(100)) as PendingRow[];
  const byHash = new Map<string, PendingRow>();
  for (const row of rows) if (row.hash && !byHash.has(row.hash)) byHash.set(row.hash, row);
  for (const [hash, row] of byHash) {
    const outcome = await ensureEnvironment(root, row.runtime, row.requirements, hash);
    await db('entities')
      .where({ kind: WORKER_TEMPLATE.kind })
      .whereRaw("body->>'container_status' = 'PENDING'")
      .whereRaw("body->'environment'->>'hash' = ?", [hash])
      .update({
        body: db.raw(
          `jsonb_set(jsonb_set(body, '{container_status}', to_jsonb(?::text)), '{environment}',
             jsonb_build_object('hash', ?::text, 'log_tail', ?::text, 'built_at', ?::text))`,
          [outcome.ok ? 'SUCCESS' : 'ERROR', hash, outcome.log, new Date().toISOString()],
        ),
      });
  }
  return byHash.size;
}

/**
 * Builds PENDING environments in the background: at start and then every `intervalMs`, one pass at
 * a time. `stop()` waits for the pass under way.
 */
export function startEnvironmentBuilder(
  db: Database,
  root: string,
  options: { intervalMs?: number; onError?: (error: unknown) => void } = {},
): { stop(): Promise<void>; poke(): void } {
  const intervalMs = options.intervalMs ?? 2_000;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | null = null;
  const pass = () => {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timer = null;
    running = running
      .then(() => buildPendingEnvironments(db, root))
      .then(
        () => undefined,
        (error: unknown) => options.onError?.(error),
      )
      .finally(() => {
        if (!stopped && timer === null) timer = setTimeout(pass, intervalMs);
      });
  };
  pass();
  return {
    poke: pass,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
