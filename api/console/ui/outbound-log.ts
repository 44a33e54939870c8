/**
 * A step's outbound calls, read back from its log: the worker writes one line per HTTP request or
 * e-mail (engine/integrations/outbound-calls.ts), and the step view lists them as a table. Pure (no
 * DOM), so the parser is tested on its own as well as on the page.
 */
export interface OutboundCall {
  kind: 'http' | 'smtp';
  /** GET, POST, … or SMTP. */
  method: string;
  /** The URL called, or the mail server as host:port; empty when the call never got that far. */
  target: string;
  /** The HTTP status, `accepted 2, refused 0`, `refused` or `failed`. */
  outcome: string;
  /** Whether the call did what was asked: a 1xx–3xx answer, or every recipient accepted. */
  ok: boolean;
  /** Why a call was refused or failed, as the worker said it. */
  reason: string | null;
  recipients: number | null;
  bytes: number | null;
  ms: number | null;
  integration: string | null;
}

const HTTP_DONE = /^\[http\] ([A-Z]+) (\S+) → (\d{3}), (\d+) bytes, (\d+) ms \(integration (.+)\)$/s;
const HTTP_STOPPED = /^\[http\] ([A-Z]+) (.+?) (refused|failed): (.*)$/s;
const SMTP_DONE =
  /^\[smtp\] message to (\d+) recipient\(s\) through (\S+): accepted (\d+), refused (\d+), (\d+) ms \(integration (.+)\)$/s;
const SMTP_STOPPED = /^\[smtp\] message through (\S+) (refused|failed): (.*)$/s;

/** One log message as a call, or null when it is not a call's line. */
export function parseOutboundCall(message: unknown): OutboundCall | null {
  if (typeof message !== 'string') return null;
  let m = HTTP_DONE.exec(message);
  if (m) {
    const status = Number(m[3]);
    return {
      kind: 'http',
      method: m[1]!,
      target: m[2]!,
      outcome: m[3]!,
      ok: status < 400,
      reason: null,
      recipients: null,
      bytes: Number(m[4]),
      ms: Number(m[5]),
      integration: m[6]!,
    };
  }
  m = HTTP_STOPPED.exec(message);
  if (m) {
    // Refused before a URL was made (a secret missing, a path that escapes the base): the integration.
    const named = /^integration (.+)$/s.exec(m[2]!);
    return {
      kind: 'http',
      method: m[1]!,
      target: named ? '' : m[2]!,
      outcome: m[3]!,
      ok: false,
      reason: m[4]!,
      recipients: null,
      bytes: null,
      ms: null,
      integration: named ? named[1]! : null,
    };
  }
  m = SMTP_DONE.exec(message);
  if (m) {
    return {
      kind: 'smtp',
      method: 'SMTP',
      target: m[2]!,
      outcome: `accepted ${m[3]}, refused ${m[4]}`,
      ok: m[4] === '0',
      reason: null,
      recipients: Number(m[1]),
      bytes: null,
      ms: Number(m[5]),
      integration: m[6]!,
    };
  }
  m = SMTP_STOPPED.exec(message);
  if (m) {
    return {
      kind: 'smtp',
      method: 'SMTP',
      target: m[1]!,
      outcome: m[2]!,
      ok: false,
      reason: m[3]!,
      recipients: null,
      bytes: null,
      ms: null,
      integration: null,
    };
  }
  return null;
}

/** The calls among a step's log lines, in order. */
export function outboundCalls(
  logs: ReadonlyArray<{ message?: unknown; source?: unknown }> | null | undefined,
): OutboundCall[] {
  // Only the worker's own lines (source `egress`): a script printing a look-alike line is not a call.
  return (logs ?? []).flatMap((line) =>
    line?.source === 'egress' ? (parseOutboundCall(line.message) ?? []) : [],
  );
}
