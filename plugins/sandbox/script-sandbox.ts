/**
 * Runs one user worker script in a fresh isolated-vm isolate: JSON in, JSON out, captured console, a
 * host bridge exposed as `sdk`, and memory and wall-clock limits. Every failure, hostile or not, comes
 * back as an outcome; the host process and other runs are never affected.
 */
import ivm from 'isolated-vm';
import { types } from 'node:util';
import {
  BOOTSTRAP_FILENAME,
  BOOTSTRAP_SOURCE,
  REPLY_INVALID_OUTPUT,
  REPLY_OK,
  REPLY_SCRIPT_ERROR,
  SCRIPT_FILENAME,
  type BootstrapSettings,
} from './isolate-bootstrap';
import {
  LogCollector,
  bridgeFunctionNames,
  createBridgeDispatcher,
  type HostFunction,
  type LogLine,
} from './host-bridge';

export type { HostFunction, LogLevel, LogLine } from './host-bridge';

export interface SandboxLimits {
  memoryLimitMb: number;
  timeoutMs: number;
  maxInputBytes: number;
  maxOutputBytes: number;
  maxLogBytes: number;
}

const MIB = 1024 * 1024;

export const DEFAULT_SANDBOX_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  memoryLimitMb: 128,
  timeoutMs: 30_000,
  maxInputBytes: 16 * MIB,
  maxOutputBytes: 16 * MIB,
  maxLogBytes: 1 * MIB,
});

export interface ScriptRun {
  /** A classic script (not a module) defining a function named `entryPoint`. */
  source: string;
  /** Defaults to `main`. */
  entryPoint?: string;
  /** Passed to the entry point as a JSON copy. */
  args: unknown;
  limits?: Partial<SandboxLimits>;
  /** Exposed to the script as `sdk.<name>(...args)`, returning a Promise. */
  bridge?: Record<string, HostFunction>;
  /** Aborting it stops the script where it is (its caller gave up on it): outcome `cancelled`. */
  signal?: AbortSignal;
}

export type SandboxErrorKind =
  | 'timeout'
  | 'memory'
  | 'script'
  | 'invalid_output'
  | 'invalid_input'
  | 'bridge'
  | 'cancelled'
  /** A Python step wrote past its output limit (stdout and stderr, or one file). */
  | 'output';

export interface SandboxError {
  kind: SandboxErrorKind;
  message: string;
}

interface Measurements {
  cpuTimeMs: number;
  wallTimeMs: number;
  logs: LogLine[];
}

export type ScriptOutcome =
  ({ ok: true; result: unknown } & Measurements) | ({ ok: false; error: SandboxError } & Measurements);

type Verdict = { ok: true; result: unknown } | { ok: false; error: SandboxError };

/** isolated-vm refuses smaller heaps. */
const MIN_MEMORY_LIMIT_MB = 8;
const ENTRY_POINT_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const SCRIPT_LOCATION = /worker\.js:\d+:\d+/;
const IVM_TIMEOUT_MESSAGE = 'Script execution timed out.';
const IVM_MEMORY_LIMIT_MESSAGE = 'Isolate was disposed during execution due to memory limit';
// Large ArrayBuffers are allocated outside the V8 heap and fail with this RangeError at the limit
// instead of killing the isolate.
const ARRAY_BUFFER_ALLOCATION_FAILED = 'Array buffer allocation failed';

export function resolveLimits(overrides: Partial<SandboxLimits> | undefined): SandboxLimits {
  const limits: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS };
  for (const key of Object.keys(limits) as (keyof SandboxLimits)[]) {
    const value = overrides?.[key];
    if (value !== undefined) limits[key] = value;
    if (!Number.isFinite(limits[key]) || limits[key] <= 0) {
      throw new RangeError(`Sandbox limit ${key} must be a positive number, got ${String(limits[key])}`);
    }
  }
  if (limits.memoryLimitMb < MIN_MEMORY_LIMIT_MB) {
    throw new RangeError(`Sandbox limit memoryLimitMb must be at least ${MIN_MEMORY_LIMIT_MB}`);
  }
  return limits;
}

/**
 * isolated-vm creates the errors it throws in Node's main realm, which is not the caller's realm under
 * a test runner's vm context, so `instanceof Error` is not a reliable test.
 */
function asError(value: unknown): Error | undefined {
  return types.isNativeError(value) ? value : undefined;
}

function failure(kind: SandboxErrorKind, message: string): Verdict {
  return { ok: false, error: { kind, message } };
}

function encodeArgs(args: unknown, maxBytes: number): { json: string } | { error: string } {
  let json: string | undefined;
  try {
    json = JSON.stringify(args);
  } catch (error) {
    return { error: `Arguments are not JSON-serialisable: ${asError(error)?.message ?? String(error)}` };
  }
  json ??= 'null';
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) {
    return { error: `Arguments are ${bytes} bytes of JSON, over the limit of ${maxBytes} bytes` };
  }
  return { json };
}

/** Where a prepared context's host References lead: set to the run's own handlers when it is taken. */
interface Slot {
  log: (level: unknown, message: unknown) => unknown;
  bridge: (name: unknown, payload: unknown) => Promise<string>;
  reply: (reply: unknown) => void;
}

/** A context whose bootstrap already ran, its host References pointing into `slot`. */
interface Prepared {
  context: ivm.Context;
  startEntry: ivm.Reference;
  slot: Slot;
  references: ivm.Reference[];
}

/**
 * One isolate made ahead, after a run ends, so that the next run with the same memory limit does
 * not wait for `new Isolate` (a millisecond or two) on its critical path; once made, its context is
 * created and the bootstrap run in it (another millisecond, off the main thread), for a run with the
 * same bootstrap settings. Nothing has run in it but the bootstrap: taking it is the same as making
 * it then, its References only lead to the handlers the run that takes it installs. At most one is
 * kept.
 */
let spare: {
  memoryLimitMb: number;
  settings: string;
  isolate: ivm.Isolate;
  prepared: Prepared | null;
} | null = null;
let spareScheduled = false;

function takeSpareIsolate(
  memoryLimitMb: number,
  settings: string,
): { isolate: ivm.Isolate; prepared: Prepared | null } | null {
  if (spare === null || spare.memoryLimitMb !== memoryLimitMb || spare.isolate.isDisposed) return null;
  const taken = spare;
  spare = null;
  // A context bootstrapped for other settings (another set of sdk names or limits) is not used.
  return { isolate: taken.isolate, prepared: taken.settings === settings ? taken.prepared : null };
}

const unset = () => {
  throw new Error('The sandbox context was used before its run took it');
};

/** The bootstrap run in a fresh context, its References pointing into a slot filled later. */
async function prepareContext(isolate: ivm.Isolate, settings: string): Promise<Prepared> {
  const slot: Slot = { log: unset, bridge: unset, reply: unset };
  const references = [
    new ivm.Reference((level: unknown, message: unknown) => slot.log(level, message)),
    new ivm.Reference((name: unknown, payload: unknown) => slot.bridge(name, payload)),
    new ivm.Reference((reply: unknown) => slot.reply(reply)),
  ];
  const context = await isolate.createContext();
  const startEntry = (await context.evalClosure(BOOTSTRAP_SOURCE, [...references, settings], {
    filename: BOOTSTRAP_FILENAME,
    timeout: 1_000,
    result: { reference: true },
  })) as ivm.Reference;
  return { context, startEntry, slot, references };
}

function prepareSpareIsolate(memoryLimitMb: number, settings: string): void {
  if (spareScheduled) return;
  spareScheduled = true;
  setImmediate(() => {
    spareScheduled = false;
    if (spare?.memoryLimitMb === memoryLimitMb && spare.settings === settings && !spare.isolate.isDisposed) {
      return;
    }
    const previous = spare;
    const made = { memoryLimitMb, settings, isolate: new ivm.Isolate({ memoryLimit: memoryLimitMb }) };
    spare = { ...made, prepared: null };
    const entry = spare;
    try {
      if (previous && !previous.isolate.isDisposed) previous.isolate.dispose();
    } catch {
      // Already disposed.
    }
    prepareContext(made.isolate, settings).then(
      (prepared) => {
        // Taken meanwhile: the run that took it made its own context; this one goes with the isolate.
        if (spare === entry) entry.prepared = prepared;
        else for (const reference of prepared.references) reference.release();
      },
      () => {
        // The isolate was taken and disposed meanwhile, or the bootstrap failed: a run makes its own.
      },
    );
  }).unref();
}

/**
 * One isolate and its deadline. `abort` ends the run from the host side (timeout, bridge fault) by
 * disposing the isolate, which is the only way to stop a script that is waiting rather than running.
 */
class IsolateRun {
  readonly isolate: ivm.Isolate;
  failure: SandboxError | undefined;
  private cpuTimeNs = 0n;
  private readonly deadline: number;
  private readonly timer: NodeJS.Timeout;
  private rejectAborted: (reason: unknown) => void = () => {};
  private readonly aborted: Promise<never>;

  /** The spare's context, bootstrapped ahead for this run's settings; null: the run makes its own. */
  readonly prepared: Prepared | null;

  constructor(
    private readonly limits: SandboxLimits,
    startedAt: number,
    private readonly settings: string,
  ) {
    const spareTaken = takeSpareIsolate(limits.memoryLimitMb, settings);
    this.isolate = spareTaken?.isolate ?? new ivm.Isolate({ memoryLimit: limits.memoryLimitMb });
    this.prepared = spareTaken?.prepared ?? null;
    this.deadline = startedAt + limits.timeoutMs;
    this.aborted = new Promise<never>((_, reject) => {
      this.rejectAborted = reject;
    });
    this.aborted.catch(() => {});
    // isolated-vm's own `timeout` only covers time spent running; this covers awaits on the host too.
    this.timer = setTimeout(
      () => this.abort('timeout', `Script timed out after ${limits.timeoutMs} ms`),
      Math.max(0, this.deadline - performance.now()),
    );
  }

  get cpuTimeMs(): number {
    return Number(this.cpuTimeNs) / 1e6;
  }

  /** What isolated-vm's `timeout` option should be for the next step. */
  remainingMs(): number {
    return Math.max(1, Math.ceil(this.deadline - performance.now()));
  }

  /** Awaits isolate work, or the abort, whichever comes first. */
  async step<T>(work: Promise<T>): Promise<T> {
    // The losing side of the race may reject later; it must not become an unhandled rejection.
    work.catch(() => {});
    try {
      return await Promise.race([work, this.aborted]);
    } finally {
      this.sampleCpuTime();
    }
  }

  abort(kind: SandboxErrorKind, message: string): void {
    if (this.failure !== undefined) return;
    this.failure = { kind, message };
    this.dispose();
    this.rejectAborted(new Error(message));
  }

  /** Maps an error thrown by a step to the outcome it means. */
  classify(error: unknown, phase: 'compile' | 'execute'): SandboxError {
    if (this.failure !== undefined) return this.failure;
    const message = asError(error)?.message;
    if (this.isolate.isDisposed || message === IVM_MEMORY_LIMIT_MESSAGE) return this.memoryError();
    if (message === IVM_TIMEOUT_MESSAGE) {
      return { kind: 'timeout', message: `Script timed out after ${this.limits.timeoutMs} ms` };
    }
    if (phase === 'compile') return { kind: 'script', message: describeCompileError(error) };
    return this.scriptError(describeCrossedError(error));
  }

  scriptError(message: string): SandboxError {
    if (message.startsWith(ARRAY_BUFFER_ALLOCATION_FAILED)) return this.memoryError();
    return { kind: 'script', message };
  }

  close(): void {
    clearTimeout(this.timer);
    this.dispose();
    prepareSpareIsolate(this.limits.memoryLimitMb, this.settings);
  }

  private memoryError(): SandboxError {
    return { kind: 'memory', message: `Script exceeded the memory limit of ${this.limits.memoryLimitMb} MB` };
  }

  // isolated-vm disposes an isolate that hits its memory limit on its own thread, so either call may
  // find it gone between the isDisposed check and the call; both then have nothing left to do.
  private sampleCpuTime(): void {
    try {
      if (!this.isolate.isDisposed) this.cpuTimeNs = this.isolate.cpuTime;
    } catch {
      // cpuTime keeps its last reading.
    }
  }

  private dispose(): void {
    this.sampleCpuTime();
    try {
      if (!this.isolate.isDisposed) this.isolate.dispose();
    } catch {
      // Already disposed.
    }
  }
}

/** A syntax error as isolated-vm reports it (`msg [worker.js:2:3]`), in the runtime errors' format. */
function describeCompileError(thrown: unknown): string {
  const error = asError(thrown);
  if (error === undefined) return 'The script could not be compiled';
  const location = /\s*\[(worker\.js:\d+:\d+)\]$/.exec(error.message);
  const text = location ? error.message.slice(0, location.index) : error.message;
  return `${error.name}: ${text}${location ? ` (${location[1]})` : ''}`;
}

/**
 * An error that crossed out of the isolate (top-level code, or a rejection nobody handled). Only the
 * message and the script location are kept: the stack also holds host frames.
 */
function describeCrossedError(thrown: unknown): string {
  if (typeof thrown === 'string') return thrown;
  const error = asError(thrown);
  if (error === undefined) return String(thrown);
  const location = typeof error.stack === 'string' ? SCRIPT_LOCATION.exec(error.stack) : null;
  return (error.message || error.name) + (location ? ` (${location[0]})` : '');
}

function decodeReply(reply: unknown, run: IsolateRun, maxOutputBytes: number): Verdict {
  if (typeof reply !== 'string') throw new Error('The sandbox runner returned a non-string reply');
  const separator = reply.indexOf(':');
  const kind = reply.slice(0, separator);
  const payload = reply.slice(separator + 1);
  switch (kind) {
    case REPLY_OK: {
      const bytes = Buffer.byteLength(payload, 'utf8');
      if (bytes > maxOutputBytes) {
        return failure('invalid_output', `The result JSON exceeds the limit of ${maxOutputBytes} bytes`);
      }
      try {
        return { ok: true, result: JSON.parse(payload) };
      } catch {
        return failure('invalid_output', 'The result is not valid JSON');
      }
    }
    case REPLY_SCRIPT_ERROR:
      return { ok: false, error: run.scriptError(payload) };
    case REPLY_INVALID_OUTPUT:
      return failure('invalid_output', payload);
    default:
      throw new Error(`The sandbox runner returned an unknown reply kind ${JSON.stringify(kind)}`);
  }
}

async function execute(
  run: ScriptRun,
  isolateRun: IsolateRun,
  limits: SandboxLimits,
  logs: LogCollector,
  entryPoint: string,
  argsJson: string,
  settings: BootstrapSettings,
): Promise<Verdict> {
  const bridge = run.bridge ?? {};
  const log = (level: unknown, message: unknown) => logs.write(level, message);
  const dispatch = createBridgeDispatcher({
    bridge,
    maxResultBytes: limits.maxInputBytes,
    onFault: (message) => isolateRun.abort('bridge', message),
  });
  let deliverReply: (reply: unknown) => void = () => {};
  const replied = new Promise<unknown>((resolve) => {
    deliverReply = resolve;
  });
  const reply = (value: unknown) => deliverReply(value);
  // A prepared context's References lead into its slot: they lead to this run's handlers now.
  const prepared = isolateRun.prepared;
  if (prepared) Object.assign(prepared.slot, { log, bridge: dispatch, reply });
  const references = prepared
    ? prepared.references
    : [new ivm.Reference(log), new ivm.Reference(dispatch), new ivm.Reference(reply)];
  const { isolate } = isolateRun;
  let phase: 'setup' | 'compile' | 'execute' = 'setup';
  try {
    const context = prepared?.context ?? (await isolateRun.step(isolate.createContext()));
    const startEntry =
      prepared?.startEntry ??
      (await isolateRun.step(
        context.evalClosure(BOOTSTRAP_SOURCE, [...references, JSON.stringify(settings)], {
          filename: BOOTSTRAP_FILENAME,
          timeout: isolateRun.remainingMs(),
          result: { reference: true },
        }),
      ));
    phase = 'compile';
    const script = await isolateRun.step(isolate.compileScript(run.source, { filename: SCRIPT_FILENAME }));
    phase = 'execute';
    await isolateRun.step(script.run(context, { timeout: isolateRun.remainingMs(), release: true }));
    // `timeout` covers the entry point's synchronous part; the host timer covers what follows an await.
    await isolateRun.step(
      startEntry.apply(undefined, [entryPoint, argsJson], { timeout: isolateRun.remainingMs() }),
    );
    const reply = await isolateRun.step(replied);
    // A bridge fault the script caught still fails the run.
    if (isolateRun.failure !== undefined) return { ok: false, error: isolateRun.failure };
    return decodeReply(reply, isolateRun, limits.maxOutputBytes);
  } catch (error) {
    const known = isolateRun.failure !== undefined || isolate.isDisposed;
    // A setup failure that is neither a limit nor an abort is a defect here, not in the script.
    if (phase === 'setup' && !known && asError(error)?.message !== IVM_TIMEOUT_MESSAGE) {
      throw error;
    }
    return { ok: false, error: isolateRun.classify(error, phase === 'compile' ? 'compile' : 'execute') };
  } finally {
    for (const reference of references) reference.release();
  }
}

export async function runScript(run: ScriptRun): Promise<ScriptOutcome> {
  const startedAt = performance.now();
  const limits = resolveLimits(run.limits);
  const logs = new LogCollector(limits.maxLogBytes);
  const measured = (verdict: Verdict, cpuTimeMs: number): ScriptOutcome => ({
    ...verdict,
    cpuTimeMs,
    wallTimeMs: performance.now() - startedAt,
    logs: logs.lines,
  });

  const entryPoint = run.entryPoint ?? 'main';
  if (!ENTRY_POINT_NAME.test(entryPoint)) {
    return measured(
      failure('script', `Entry point ${JSON.stringify(entryPoint)} is not a valid function name`),
      0,
    );
  }
  const encoded = encodeArgs(run.args, limits.maxInputBytes);
  if ('error' in encoded) return measured(failure('invalid_input', encoded.error), 0);

  const settings: BootstrapSettings = {
    sdkNames: bridgeFunctionNames(run.bridge ?? {}),
    maxLogBytes: limits.maxLogBytes,
    maxOutputBytes: limits.maxOutputBytes,
  };
  const isolateRun = new IsolateRun(limits, startedAt, JSON.stringify(settings));
  const cancel = () => isolateRun.abort('cancelled', 'The script was stopped: its caller cancelled it.');
  if (run.signal?.aborted) cancel();
  run.signal?.addEventListener('abort', cancel, { once: true });
  let verdict: Verdict;
  try {
    verdict = await execute(run, isolateRun, limits, logs, entryPoint, encoded.json, settings);
  } finally {
    run.signal?.removeEventListener('abort', cancel);
    isolateRun.close();
  }
  return measured(verdict, isolateRun.cpuTimeMs);
}
