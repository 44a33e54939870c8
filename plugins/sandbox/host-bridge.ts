/**
 * The host side of the two channels a script has out of its isolate: log lines and `sdk` calls. Both
 * take and give only strings, check everything they receive (the isolate is untrusted), and never throw
 * or reject: a rejected host promise inside isolated-vm surfaces as an unhandled rejection in the host.
 */
import { types } from 'node:util';
import { BRIDGE_ERROR, BRIDGE_OK } from './isolate-bootstrap';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface LogLine {
  level: LogLevel;
  message: string;
  /** Epoch milliseconds, from the host clock when the line arrived. */
  at: number;
}

/** Any JSON-serialisable arguments in, a JSON-serialisable result out. */
export type HostFunction = (...args: unknown[]) => Promise<unknown>;

const LOG_LEVELS: ReadonlySet<string> = new Set(['debug', 'info', 'warn', 'error']);

function utf8Length(codePoint: number): number {
  if (codePoint <= 0x7f) return 1;
  if (codePoint <= 0x7ff) return 2;
  return codePoint <= 0xffff ? 3 : 4;
}

/** The longest prefix of `text` that fits in `maxBytes` of UTF-8, cut between code points. */
function truncateUtf8(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    bytes += utf8Length(char.codePointAt(0) ?? 0);
    if (bytes > maxBytes) break;
    end += char.length;
  }
  return text.slice(0, end);
}

/** Collects a run's log lines up to a byte budget (message text only), then one marker line. */
export class LogCollector {
  readonly lines: LogLine[] = [];
  private usedBytes = 0;
  private full = false;

  constructor(private readonly maxBytes: number) {}

  /** Returns whether more lines are welcome, so the isolate can stop calling once the budget is spent. */
  write(level: unknown, message: unknown): boolean {
    if (this.full) return false;
    if (typeof level !== 'string' || !LOG_LEVELS.has(level) || typeof message !== 'string') return true;
    const at = Date.now();
    const bytes = Buffer.byteLength(message, 'utf8');
    if (this.usedBytes + bytes <= this.maxBytes) {
      this.lines.push({ level: level as LogLevel, message, at });
      this.usedBytes += bytes;
      return true;
    }
    const kept = truncateUtf8(message, this.maxBytes - this.usedBytes);
    if (kept !== '') this.lines.push({ level: level as LogLevel, message: kept, at });
    this.lines.push({ level: 'warn', message: `[log truncated: over ${this.maxBytes} bytes]`, at });
    this.full = true;
    return false;
  }
}

export interface BridgeDispatcherOptions {
  bridge: Readonly<Record<string, HostFunction>>;
  /** Cap on one host result going into the isolate, in bytes of JSON. */
  maxResultBytes: number;
  /** Called when a host function breaks the bridge contract; the run then ends with a `bridge` error. */
  onFault: (message: string) => void;
}

/** The names a script sees on `sdk`: the bridge's own function-valued keys. */
export function bridgeFunctionNames(bridge: Readonly<Record<string, HostFunction>> | undefined): string[] {
  if (bridge === undefined) return [];
  return Object.keys(bridge).filter((name) => typeof bridge[name] === 'function');
}

function errorText(error: unknown): string {
  // Not `instanceof Error`: host functions may come from another realm (a vm context, a test runner).
  if (types.isNativeError(error)) return error.message;
  return typeof error === 'string' ? error : 'Host function failed';
}

/**
 * The function the isolate's `sdk.<name>(...)` reaches: `(name, argsJson)` in, `ok:<json>` or
 * `error:<message>` out. A host error gives the script only its message, never the host stack.
 */
export function createBridgeDispatcher(
  options: BridgeDispatcherOptions,
): (name: unknown, payload: unknown) => Promise<string> {
  const { bridge, maxResultBytes, onFault } = options;
  const fault = (message: string): string => {
    onFault(message);
    return BRIDGE_ERROR + message;
  };
  return async (name, payload) => {
    try {
      if (typeof name !== 'string' || typeof payload !== 'string') return BRIDGE_ERROR + 'Malformed sdk call';
      const fn = Object.hasOwn(bridge, name) ? bridge[name] : undefined;
      if (typeof fn !== 'function') return BRIDGE_ERROR + `sdk.${name} is not available`;
      let args: unknown;
      try {
        args = JSON.parse(payload);
      } catch {
        args = undefined;
      }
      if (!Array.isArray(args)) return BRIDGE_ERROR + `Arguments to sdk.${name} must be a JSON array`;
      let result: unknown;
      try {
        result = await fn(...args);
      } catch (error) {
        return BRIDGE_ERROR + errorText(error);
      }
      if (typeof result === 'function' || typeof result === 'symbol') {
        return fault(`sdk.${name} returned a ${typeof result}, which is not JSON-serialisable`);
      }
      let json: string | undefined;
      try {
        json = JSON.stringify(result);
      } catch (error) {
        return fault(`sdk.${name} returned a value that is not JSON-serialisable: ${errorText(error)}`);
      }
      json ??= 'null';
      const bytes = Buffer.byteLength(json, 'utf8');
      if (bytes > maxResultBytes) {
        return fault(
          `sdk.${name} returned ${bytes} bytes of JSON, over the limit of ${maxResultBytes} bytes`,
        );
      }
      return BRIDGE_OK + json;
    } catch (error) {
      // Only reachable through a bug here; still never reject (see the file comment).
      return fault(`sdk call failed on the host: ${errorText(error)}`);
    }
  };
}
