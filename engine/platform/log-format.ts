import { Writable } from 'node:stream';
import type { Config, LogFormat } from './config';

/**
 * Log lines for people or for machines (issue 32). `json` is pino's line per record, as every log
 * shipper reads it; `pretty` is one short line per record: time, level (WARN and ERROR marked, in
 * colour on a terminal), the component and the message, and for a request its method, route, status
 * and time. LOG_FORMAT chooses; unset, a terminal gets pretty and anything else (containers,
 * systemd, CI) json. docs/operations.md lists the fields.
 */
export function logFormatOf(
  config: Pick<Config, 'logFormat'>,
  stream: { isTTY?: boolean } = process.stdout,
): LogFormat {
  return config.logFormat ?? (stream.isTTY ? 'pretty' : 'json');
}

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
const COLOURS: Record<string, string> = { WARN: '\u001b[33m', ERROR: '\u001b[31m', FATAL: '\u001b[31m' };
const RESET = '\u001b[0m';

function clock(time: unknown): string {
  const date = typeof time === 'number' || typeof time === 'string' ? new Date(time) : new Date();
  return date.toISOString().slice(11, 23);
}

/** The level's word, padded, coloured for a terminal. */
export function levelWord(level: string, colour: boolean): string {
  const word = level.toUpperCase().padEnd(5);
  const code = COLOURS[level.toUpperCase()];
  return colour && code ? `${code}${word}${RESET}` : word;
}

/**
 * One pino record as a readable line. A request's line is `GET /v2/portfolios/:id 200 3.1 ms`; an
 * error's first stack line follows its message.
 */
export function prettyLine(record: Record<string, unknown>, colour = false): string {
  const level = LEVELS[record.level as number] ?? String(record.level ?? 'INFO');
  const parts = [clock(record.time), levelWord(level, colour)];
  const component = typeof record.component === 'string' ? record.component : null;
  if (component) parts.push(component.padEnd(6));
  const request = record.request as
    { method?: string; route?: string; status?: number; ms?: number } | undefined;
  if (request && typeof request.method === 'string') {
    parts.push(`${request.method} ${request.route} ${request.status} ${Number(request.ms).toFixed(1)} ms`);
  } else {
    const message = String(record.msg ?? '');
    // "api: …" under the api component says it twice.
    parts.push(
      component && message.startsWith(`${component}: `) ? message.slice(component.length + 2) : message,
    );
  }
  const error = record.err as { message?: string; stack?: string } | undefined;
  if (error && typeof error === 'object') {
    const where = typeof error.stack === 'string' ? error.stack.split('\n')[1]?.trim() : undefined;
    parts.push(`— ${error.message ?? ''}${where ? ` (${where})` : ''}`);
  }
  return parts.join(' ');
}

const FASTIFY_REQUEST_LINES = new Set(['incoming request', 'request completed']);

/** A writable for pino that turns each JSON line into `prettyLine` on `out`. */
export function prettyStream(out: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout): Writable {
  let pending = '';
  const colour = Boolean(out.isTTY);
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      pending += chunk.toString();
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (line.trim() !== '') {
          let text: string | null = line;
          try {
            const record = JSON.parse(line) as Record<string, unknown>;
            // Fastify's own two lines per request give way to the one line the app writes.
            text = FASTIFY_REQUEST_LINES.has(String(record.msg)) ? null : prettyLine(record, colour);
          } catch {
            // not JSON: as it came
          }
          if (text !== null) out.write(`${text}\n`);
        }
        newline = pending.indexOf('\n');
      }
      done();
    },
  });
}

export interface ProcessLog {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * A process's own lines outside a request (the worker's start, its background passes), in the
 * process's format: a pino-shaped JSON record, or the pretty line of one.
 */
export function processLog(
  format: LogFormat,
  component: string,
  out: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout,
): ProcessLog {
  const write = (level: number, message: string, fields: Record<string, unknown> = {}) => {
    const record = { level, time: Date.now(), component, msg: message, ...fields };
    out.write(`${format === 'json' ? JSON.stringify(record) : prettyLine(record, Boolean(out.isTTY))}\n`);
  };
  return {
    info: (message, fields) => write(30, message, fields),
    warn: (message, fields) => write(40, message, fields),
    error: (message, fields) => write(50, message, fields),
  };
}
