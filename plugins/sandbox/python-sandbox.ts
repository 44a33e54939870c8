/**
 * Runs one Python worker script in a bubblewrap sandbox: JSON in, JSON out, stdout and stderr as the
 * step's log, the SDK over an HTTP channel the host serves on a Unix socket, and limits on memory,
 * CPU time, wall time, processes, open files, file and output sizes. Every failure comes back as an
 * outcome, as in script-sandbox.ts (the JavaScript sandbox); the host process is never affected.
 *
 * The sandbox: every namespace unshared (user, pid, net, ipc, uts, cgroup, mount), so no network but
 * the loopback of its own namespace; a read-only root holding only the interpreter (/usr/bin/python3.11,
 * its standard library and the shared libraries), the template's virtualenv at /venv, the bootstrap and
 * SDK module, and the script; a private size-limited tmpfs at /tmp; an empty environment. When the
 * host runs as root, bubblewrap itself runs as an unprivileged host uid picked per run, so the
 * process limit (RLIMIT_NPROC) counts that run's processes alone and nothing in it is root anywhere.
 */
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { BRIDGE_OK } from './isolate-bootstrap';
import { createBridgeDispatcher, LogCollector, type HostFunction } from './host-bridge';
import {
  resolveLimits,
  type SandboxError,
  type SandboxErrorKind,
  type SandboxLimits,
  type ScriptOutcome,
} from './script-sandbox';

/** The interpreters a Python step may name, and the binary each one is. */
export const PYTHON_RUNTIMES: Readonly<Record<string, string>> = Object.freeze({
  'python3.11': '/usr/bin/python3.11',
});

export const BWRAP = '/usr/bin/bwrap';
const PRLIMIT = '/usr/bin/prlimit';
const SETPRIV = '/usr/bin/setpriv';
const HERE = path.join(__dirname, 'python');

/** Limits that are not the JavaScript sandbox's settings, fixed for every Python step. */
export const PYTHON_FIXED_LIMITS = Object.freeze({
  /** Processes and threads of the step together (RLIMIT_NPROC, counted in its own user namespace). */
  maxProcesses: 64,
  maxOpenFiles: 256,
  /** The private /tmp (a tmpfs; its pages are memory, so it is kept small). */
  tmpBytes: 64 * 1024 * 1024,
  /** Virtual address space allowed beyond the memory limit: shared libraries, thread stacks. */
  addressSpaceSlackMb: 1024,
});

/** The loopback port inside the sandbox that forwards to the host's SDK socket. */
export const SDK_PORT = 8765;

/**
 * A route on the SDK channel beside the SDK functions, such as the client SDK's /v1/sdk_function:
 * the body as sent and the request's headers in; a string body out is sent as it is (JSON text),
 * any other value as its JSON.
 */
export type ChannelRoute = (
  body: Buffer,
  headers: http.IncomingHttpHeaders,
) => Promise<{ status: number; body: unknown }>;

/** Names a step's environment may set (upper case), and those the sandbox sets itself. */
const VARIABLE_NAME = /^[A-Z][A-Z0-9_]{0,99}$/;
const RESERVED_VARIABLES = /^(HOME|TMPDIR|LANG|PATH|PYTHON.*|PAS_.*|LD_.*|OPENBLAS_.*|OMP_.*|MKL_.*)$/;

export interface PythonRun {
  source: string;
  entryPoint?: string;
  args: unknown;
  runtime?: string;
  /** The template's virtualenv on the host (bound read-only at /venv); none: the bare interpreter. */
  venvDir?: string | null;
  limits?: Partial<SandboxLimits>;
  /** Reached as `sdk.<name>(...)` in the script (POST /v1/worker_sdk/<name> on the channel). */
  bridge?: Record<string, HostFunction>;
  /** More routes of the channel, by exact path (POST only). */
  routes?: Record<string, ChannelRoute>;
  /** More environment variables in the sandbox (upper-case names; not the sandbox's own). */
  environment?: Record<string, string>;
  signal?: AbortSignal;
}

type Verdict = { ok: true; result: unknown } | { ok: false; error: SandboxError };

const failure = (kind: SandboxErrorKind, message: string): Verdict => ({
  ok: false,
  error: { kind, message },
});
const ENTRY_POINT_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The multiarch folder of the host's shared libraries (x86_64-linux-gnu, aarch64-linux-gnu). */
function libraryFolders(): string[] {
  const folders = ['/usr/lib/python3.11'];
  for (const arch of ['x86_64-linux-gnu', 'aarch64-linux-gnu']) {
    if (existsSync(`/usr/lib/${arch}`)) folders.push(`/usr/lib/${arch}`);
  }
  if (existsSync('/usr/lib64')) folders.push('/usr/lib64');
  return folders;
}

/** Whether this machine can run Python steps at all, and what is missing when not. */
export function pythonSandboxProblem(runtime = 'python3.11'): string | null {
  const binary = PYTHON_RUNTIMES[runtime];
  if (binary === undefined) return `No Python runtime ${runtime}`;
  for (const needed of [binary, BWRAP, PRLIMIT, ...(process.getuid?.() === 0 ? [SETPRIV] : [])]) {
    if (!existsSync(needed)) return `${needed} is missing on the worker's machine`;
  }
  return null;
}

/** The SDK channel: HTTP on a Unix socket, one server per run, closed with it. */
async function serveChannel(
  socketPath: string,
  run: PythonRun,
  limits: SandboxLimits,
  onFault: (message: string) => void,
): Promise<http.Server> {
  const dispatch = createBridgeDispatcher({
    bridge: run.bridge ?? {},
    maxResultBytes: limits.maxInputBytes,
    onFault,
  });
  const routes = run.routes ?? {};
  const server = http.createServer((request, response) => {
    const send = (status: number, body: unknown) => {
      const text = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
      response
        .writeHead(status, { 'content-type': 'application/json', 'content-length': text.length })
        .end(text);
    };
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.maxInputBytes) {
        if (!refused) send(413, { code: 'payload_too_large', message: 'The SDK call is too large.' });
        refused = true;
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => {
      if (refused) return;
      void (async () => {
        const url = request.url ?? '';
        const body = Buffer.concat(chunks);
        if (request.method !== 'POST') {
          return send(405, { code: 'method_not_allowed', message: 'The SDK channel takes POST only.' });
        }
        const route = Object.hasOwn(routes, url) ? routes[url] : undefined;
        if (route) {
          try {
            const answer = await route(body, request.headers);
            return send(answer.status, answer.body);
          } catch {
            return send(500, { code: 'internal', message: 'The SDK call failed on the service side.' });
          }
        }
        const match = /^\/v1\/worker_sdk\/([A-Za-z][A-Za-z0-9_]{0,99})$/.exec(url);
        if (!match) return send(404, { code: 'not_found', message: `No SDK route ${url.slice(0, 80)}` });
        const answer = await dispatch(match[1], body.toString('utf8'));
        if (answer.startsWith(BRIDGE_OK)) {
          return send(200, `{"result":${answer.slice(BRIDGE_OK.length)}}`);
        }
        send(400, { code: 'sdk_error', message: answer.slice(answer.indexOf(':') + 1) });
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  return server;
}

/** A line splitter feeding a stream into the run's log at one level, within a byte budget. */
function lineReader(
  logs: LogCollector,
  level: 'info' | 'error',
  onBytes: (n: number) => void,
): { push(chunk: Buffer): void; end(): void } {
  let pending = '';
  // The bootstrap marks each line of sys.stdout and sys.stderr with its level (one stream keeps
  // their order); raw writes to the descriptors come unmarked.
  const write = (line: string) => {
    if (line.startsWith('\x1eI')) logs.write('info', line.slice(2));
    else if (line.startsWith('\x1eE')) logs.write('error', line.slice(2));
    else logs.write(level, line);
  };
  return {
    push(chunk) {
      onBytes(chunk.length);
      pending += chunk.toString('utf8');
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        write(pending.slice(0, newline));
        pending = pending.slice(newline + 1);
      }
      if (pending.length > 65536) {
        write(pending);
        pending = '';
      }
    },
    end() {
      if (pending !== '') write(pending);
      pending = '';
    },
  };
}

const SIGNALS: Record<number, string> = {
  6: 'SIGABRT',
  7: 'SIGBUS',
  9: 'SIGKILL',
  11: 'SIGSEGV',
  24: 'SIGXCPU',
  25: 'SIGXFSZ',
};

export async function runPythonScript(run: PythonRun): Promise<ScriptOutcome> {
  const startedAt = performance.now();
  const limits = resolveLimits(run.limits);
  const logs = new LogCollector(limits.maxLogBytes);
  let cpuTimeMs = 0;
  const measured = (verdict: Verdict): ScriptOutcome => ({
    ...verdict,
    cpuTimeMs,
    wallTimeMs: performance.now() - startedAt,
    logs: logs.lines,
  });
  const runtime = run.runtime ?? 'python3.11';
  const interpreter = PYTHON_RUNTIMES[runtime];
  if (interpreter === undefined) {
    return measured(
      failure(
        'script',
        `script_runtime ${runtime} is not available; use ${Object.keys(PYTHON_RUNTIMES).join(', ')}`,
      ),
    );
  }
  const entryPoint = run.entryPoint ?? 'main';
  if (!ENTRY_POINT_NAME.test(entryPoint)) {
    return measured(
      failure('script', `Entry point ${JSON.stringify(entryPoint)} is not a valid function name`),
    );
  }
  let argsJson: string;
  try {
    argsJson = JSON.stringify(run.args) ?? 'null';
  } catch (error) {
    return measured(failure('invalid_input', `Arguments are not JSON-serialisable: ${String(error)}`));
  }
  if (Buffer.byteLength(argsJson) > limits.maxInputBytes) {
    return measured(
      failure('invalid_input', `Arguments are over the limit of ${limits.maxInputBytes} bytes`),
    );
  }
  for (const [name, value] of Object.entries(run.environment ?? {})) {
    if (!VARIABLE_NAME.test(name) || RESERVED_VARIABLES.test(name) || value.includes('\0')) {
      return measured(failure('script', `The environment variable ${name.slice(0, 100)} cannot be set`));
    }
  }
  const problem = pythonSandboxProblem(runtime);
  if (problem !== null) return measured(failure('script', `Python steps cannot run here: ${problem}`));

  const asRoot = process.getuid?.() === 0;
  // A fresh unprivileged host uid per run: its process count is the run's own.
  const uid = asRoot ? randomInt(200_000, 265_000) : (process.getuid?.() ?? 65534);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pas-py-'));
  let server: http.Server | null = null;
  try {
    await writeFile(path.join(dir, 'script.py'), run.source, { mode: 0o644 });
    const socketPath = path.join(dir, 'sdk.sock');
    let verdictOverride: Verdict | null = null;
    let kill: () => void = () => {};
    const stop = (verdict: Verdict) => {
      verdictOverride ??= verdict;
      kill();
    };
    server = await serveChannel(socketPath, run, limits, (message) => stop(failure('bridge', message)));
    await chmod(dir, 0o700);
    if (asRoot) {
      await chown(dir, uid, uid);
      await chown(socketPath, uid, uid);
    }
    const settings = {
      entryPoint,
      memoryLimitMb: limits.memoryLimitMb,
      maxOutputBytes: limits.maxOutputBytes,
      maxProcesses: PYTHON_FIXED_LIMITS.maxProcesses,
      maxOpenFiles: PYTHON_FIXED_LIMITS.maxOpenFiles,
      maxFileBytes: limits.maxOutputBytes,
      tmpBytes: PYTHON_FIXED_LIMITS.tmpBytes,
      sdkSocket: '/run/pas/sdk.sock',
      sdkPort: SDK_PORT,
    };
    const cpuSeconds = Math.max(1, Math.ceil(limits.timeoutMs / 1000));
    const memoryBytes = limits.memoryLimitMb * 1024 * 1024;
    const python = run.venvDir ? '/venv/bin/python' : interpreter;
    const binds = (kind: string, from: string, to = from) => [kind, from, to];
    // prettier-ignore
    const bwrapArgs = [
      '--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session',
      '--clearenv', '--uid', '1000', '--gid', '1000', '--hostname', 'sandbox',
      ...binds('--ro-bind', interpreter),
      ...libraryFolders().flatMap((folder) => binds('--ro-bind', folder)),
      '--symlink', 'usr/lib', '/lib',
      ...(existsSync('/usr/lib64') ? ['--symlink', 'usr/lib64', '/lib64'] : []),
      ...(run.venvDir ? binds('--ro-bind', run.venvDir, '/venv') : []),
      ...binds('--ro-bind', path.join(HERE, 'bootstrap.py'), '/sandbox/bootstrap.py'),
      ...binds('--ro-bind', path.join(HERE, 'lib'), '/sandbox/lib'),
      ...binds('--ro-bind', path.join(dir, 'script.py'), '/sandbox/script.py'),
      ...binds('--bind', socketPath, '/run/pas/sdk.sock'),
      '--proc', '/proc',
      // Only these devices, in the read-only root: no writable /dev (bubblewrap's --dev is a tmpfs).
      ...['null', 'zero', 'random', 'urandom'].flatMap((device) => binds('--dev-bind', `/dev/${device}`)),
      '--size', String(PYTHON_FIXED_LIMITS.tmpBytes), '--perms', '1777', '--tmpfs', '/tmp',
      '--remount-ro', '/',
      '--chdir', '/tmp',
      '--setenv', 'HOME', '/tmp',
      '--setenv', 'TMPDIR', '/tmp',
      '--setenv', 'LANG', 'C.UTF-8',
      '--setenv', 'PYTHONUNBUFFERED', '1',
      '--setenv', 'PYTHONDONTWRITEBYTECODE', '1',
      '--setenv', 'PAS_SDK_PORT', String(SDK_PORT),
      '--setenv', 'PAS_SDK_SOCKET', '/run/pas/sdk.sock',
      '--setenv', 'PAS_SDK_URL', `http://127.0.0.1:${SDK_PORT}`,
      // One thread per numerical library: threads count against the process limit.
      '--setenv', 'OPENBLAS_NUM_THREADS', '1',
      '--setenv', 'OMP_NUM_THREADS', '1',
      '--setenv', 'MKL_NUM_THREADS', '1',
      ...Object.entries(run.environment ?? {}).flatMap(([name, value]) => ['--setenv', name, value]),
      python, '-I', '/sandbox/bootstrap.py', JSON.stringify(settings),
    ];
    const limitArgs = [
      `--data=${memoryBytes}`,
      `--as=${memoryBytes + PYTHON_FIXED_LIMITS.addressSpaceSlackMb * 1024 * 1024}`,
      `--cpu=${cpuSeconds}:${cpuSeconds + 1}`,
      // As root each run has a uid of its own, so the limit is set here as well; otherwise only
      // bootstrap.py sets it, inside the sandbox's user namespace (the worker's uid has its own
      // processes: counted against a limit set here, bubblewrap could not start).
      ...(asRoot ? [`--nproc=${PYTHON_FIXED_LIMITS.maxProcesses}`] : []),
      `--nofile=${PYTHON_FIXED_LIMITS.maxOpenFiles}`,
      `--fsize=${limits.maxOutputBytes}`,
      '--core=0',
      '--',
    ];
    const command = asRoot
      ? [
          ...limitArgs,
          SETPRIV,
          `--reuid=${uid}`,
          `--regid=${uid}`,
          '--clear-groups',
          '--',
          BWRAP,
          ...bwrapArgs,
        ]
      : [...limitArgs, BWRAP, ...bwrapArgs];
    const child = spawn(PRLIMIT, command, {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      env: {},
      detached: true,
    });
    kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(
      () => stop(failure('timeout', `Script timed out after ${limits.timeoutMs} ms (the wall-time limit)`)),
      limits.timeoutMs,
    );
    const cancel = () => stop(failure('cancelled', 'The script was stopped: its caller cancelled it.'));
    if (run.signal?.aborted) cancel();
    run.signal?.addEventListener('abort', cancel, { once: true });

    const outputCeiling = limits.maxLogBytes + limits.maxOutputBytes;
    let streamed = 0;
    const onBytes = (n: number) => {
      streamed += n;
      if (streamed > outputCeiling) {
        stop(
          failure(
            'output',
            `The script wrote more than ${outputCeiling} bytes to stdout and stderr (the output limit)`,
          ),
        );
      }
    };
    const out = lineReader(logs, 'info', onBytes);
    const err = lineReader(logs, 'error', onBytes);
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    const replyChunks: Buffer[] = [];
    let replyBytes = 0;
    const replyStream = child.stdio[3] as NodeJS.ReadableStream;
    replyStream.on('data', (chunk: Buffer) => {
      replyBytes += chunk.length;
      if (replyBytes > limits.maxOutputBytes + 64) {
        stop(
          failure('invalid_output', `The result JSON exceeds the limit of ${limits.maxOutputBytes} bytes`),
        );
        return;
      }
      replyChunks.push(chunk);
    });
    replyStream.on('error', () => {});
    child.stdin.on('error', () => {});
    child.stdin.end(argsJson);

    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.on('close', (code, signal) => resolve({ code, signal }));
      child.on('error', () => resolve({ code: null, signal: null }));
    });
    clearTimeout(timer);
    run.signal?.removeEventListener('abort', cancel);
    kill();
    out.end();
    err.end();
    if (verdictOverride !== null) return measured(verdictOverride);

    const reply = Buffer.concat(replyChunks).toString('utf8');
    const header = /^(ok|script|memory|invalid_output) (\d+)\n/.exec(reply);
    if (header) {
      cpuTimeMs = Number(header[2]);
      const payload = reply.slice(header[0].length);
      if (header[1] === 'ok') {
        try {
          return measured({ ok: true, result: JSON.parse(payload) });
        } catch {
          return measured(failure('invalid_output', 'The result is not valid JSON'));
        }
      }
      return measured(failure(header[1] as SandboxErrorKind, payload));
    }
    // No reply: the process died. bubblewrap answers 128 + the signal that ended the script.
    const signal = exit.code !== null && exit.code > 128 ? exit.code - 128 : null;
    if (signal === 24 || (signal === 9 && cpuNearLimit(startedAt, cpuSeconds))) {
      return measured(failure('timeout', `Script exceeded the CPU-time limit of ${cpuSeconds} s`));
    }
    if (signal === 25) {
      return measured(
        failure('output', `The script wrote a file over the limit of ${limits.maxOutputBytes} bytes`),
      );
    }
    const last = logs.lines.filter((line) => line.level === 'error').at(-1)?.message;
    if (signal !== null) {
      return measured(
        failure(
          'script',
          `The Python process was killed by ${SIGNALS[signal] ?? `signal ${signal}`}${last ? `: ${last}` : ''}`,
        ),
      );
    }
    return measured(
      failure(
        'script',
        `The Python process exited with code ${String(exit.code)} without a result${last ? `: ${last}` : ''}`,
      ),
    );
  } finally {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await rm(dir, { recursive: true, force: true });
  }
}

/** SIGKILL after the soft CPU limit is the hard limit (a script that ignored SIGXCPU). */
function cpuNearLimit(startedAt: number, cpuSeconds: number): boolean {
  return performance.now() - startedAt >= cpuSeconds * 1000;
}
