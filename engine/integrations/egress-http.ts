import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import tls from 'node:tls';
import { InvalidInput } from '../platform/errors';
import { checkAddress, EgressFailed, type EgressPolicy, EgressRefused } from './egress-policy';

/**
 * The HTTP client of workflow scripts' outbound calls. Everything a script controls (the path under
 * the integration's base_url, query, headers, method, body) is checked before a byte is sent, and
 * every hop, redirects included, is resolved once and connected to the address that was judged.
 *
 * What a script gets wrong is refused with EgressRefused rather than InvalidInput: a path that climbs
 * out of base_url or a header that smuggles a second request is an attempt to leave the integration,
 * and one class (403) for "refused before sending" lets the caller count and audit them as one.
 * Messages name an origin (scheme, host, port) at most: paths and queries can carry secrets
 * (`/bot<token>/`, `?apikey=`), and header values and bodies never appear.
 */

export type QueryValue = string | number | boolean;
export type Query = Record<string, QueryValue | QueryValue[]>;

/** C0 and C1 controls and DEL; a tab counts only where `tabAllowed` (header values). */
function hasControl(text: string, tabAllowed = false): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 9 && tabAllowed) continue;
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}

const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** WHATWG URL treats `%2e` as a dot in dot segments, and so may the server. */
function dotSegment(segment: string): '.' | '..' | null {
  const text = segment.replace(/%2e/gi, '.');
  return text === '.' || text === '..' ? text : null;
}

/**
 * A segment such as `..%2f..` or `%252e%252e` is no dot segment to the URL parser, but a server that
 * decodes before it routes (once or twice) would climb with it.
 */
function hidesClimb(segment: string): boolean {
  let text = segment;
  for (let round = 0; round < 3; round++) {
    const decoded = text.replace(/%([0-9a-f]{2})/gi, (_, hex: string) =>
      String.fromCharCode(parseInt(hex, 16)),
    );
    if (decoded.split(/[/\\]/).includes('..')) return true;
    if (decoded === text) return false;
    text = decoded;
  }
  return false;
}

function encodeQuery(query: Query): string {
  const pairs: string[] = [];
  for (const [key, given] of Object.entries(query)) {
    if (key === '') throw new EgressRefused('a query parameter has an empty name');
    for (const value of Array.isArray(given) ? given : [given]) {
      const ok =
        typeof value === 'string' ||
        typeof value === 'boolean' ||
        (typeof value === 'number' && Number.isFinite(value));
      if (!ok) {
        throw new EgressRefused(
          `query parameter "${key}" must be a string, a finite number or a boolean (or an array of them)`,
        );
      }
      try {
        // %20 rather than form encoding's `+`: every server reads %20 as a space.
        pairs.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`);
      } catch {
        throw new EgressRefused(`query parameter "${key}" holds text that is not valid Unicode`);
      }
    }
  }
  return pairs.join('&');
}

/**
 * The URL of `path` under `baseUrl`'s path, with `query` appended to any query the base or the path
 * already has. The path is relative to the base whether or not it starts with `/`. A `..` that stays
 * under the base is resolved (`a/../b` is `b`): refusing it would buy nothing, since the result is
 * the same request. One that would climb above the base, an absolute URL, a backslash, a fragment
 * and control characters are refused.
 */
export function joinUnderBase(baseUrl: string, path: string | undefined, query?: Query): URL {
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new EgressRefused("the integration's base_url is not a URL");
  }
  const given = path ?? '';
  if (typeof given !== 'string') throw new EgressRefused('the path must be text');
  if (hasControl(given)) {
    throw new EgressRefused('the path holds a control character (CR, LF, NUL or another)');
  }
  if (given.includes('\\')) {
    throw new EgressRefused('the path holds a backslash, which servers read differently');
  }
  if (given.startsWith('//') || SCHEME.test(given)) {
    throw new EgressRefused("the path is an absolute URL; give a path under the integration's base_url");
  }
  if (given.includes('#')) throw new EgressRefused('the path holds a fragment (#), which is never sent');

  const cut = given.indexOf('?');
  const pathPart = cut < 0 ? given : given.slice(0, cut);
  const pathQuery = cut < 0 ? '' : given.slice(cut + 1);

  const url = new URL(base.href);
  url.hash = '';
  const basePath = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`;
  const relative = pathPart.startsWith('/') ? pathPart.slice(1) : pathPart;
  if (relative !== '') {
    const kept: string[] = [];
    const segments = relative.split('/');
    segments.forEach((segment, i) => {
      const dot = dotSegment(segment);
      const last = i === segments.length - 1;
      if (dot === '..') {
        if (kept.length === 0) {
          throw new EgressRefused("the path climbs above the integration's base_url (..)");
        }
        kept.pop();
      } else if (dot === null) {
        if (hidesClimb(segment)) {
          throw new EgressRefused('the path hides a .. in an encoded segment (%2e, %2f, %5c)');
        }
        kept.push(segment);
      }
      // A dot segment at the end leaves a directory, as it would in a browser: `a/..` is `/`.
      if (dot !== null && last) kept.push('');
    });
    url.pathname = `${basePath}${kept.join('/')}`;
  }
  const search = [base.search.slice(1), pathQuery, query === undefined ? '' : encodeQuery(query)]
    .filter((part) => part !== '')
    .join('&');
  url.search = search === '' ? '' : `?${search}`;
  // Belt and braces: whatever the URL parser made of it, the result must still be under the base.
  if (url.origin !== base.origin || !(url.pathname === base.pathname || url.pathname.startsWith(basePath))) {
    throw new EgressRefused("the path leads outside the integration's base_url");
  }
  return url;
}

/** RFC 7230 `token`. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Headers that describe the connection or the framing, not the request: Node and the policy set
 * them. `expect` is here because `100-continue` changes how Node sends the body.
 */
const TRANSPORT_HEADERS = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
  'upgrade',
  'te',
  'trailer',
  'keep-alive',
  'expect',
]);

/**
 * Refuses a header set that could split the request, name another host, or change the framing. A
 * refusal names the header, never its value (it may be a credential).
 */
export function checkHeaders(headers: Record<string, string>): void {
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(headers)) {
    // JSON quoting shows the offending characters without letting them break a log line.
    if (/[\r\n\0]/.test(name)) {
      throw new EgressRefused(`the header name ${JSON.stringify(name)} holds CR, LF or NUL`);
    }
    const lower = name.toLowerCase();
    if (lower === 'host' || lower === ':authority') {
      throw new EgressRefused(`a host in a header is refused (${name}): the host is the integration's`);
    }
    if (name.startsWith(':')) throw new EgressRefused(`the pseudo-header ${name} is refused`);
    if (!TOKEN.test(name)) {
      throw new EgressRefused(`the header name ${JSON.stringify(name)} is not an RFC 7230 token`);
    }
    if (TRANSPORT_HEADERS.has(lower) || lower.startsWith('proxy-')) {
      throw new EgressRefused(`the header ${name} is refused: the HTTP client sets the transport headers`);
    }
    if (seen.has(lower)) throw new EgressRefused(`the header ${name} is given twice`);
    seen.add(lower);
    if (typeof value !== 'string') throw new EgressRefused(`the header ${name} must have a text value`);
    if (/[\r\n\0]/.test(value)) throw new EgressRefused(`the header ${name} has CR, LF or NUL in its value`);
    // Field values are visible characters, spaces and tabs (RFC 7230 §3.2); Node would throw on others.
    if (hasControl(value, true) || /[^\t\u0020-\u00ff]/.test(value)) {
      throw new EgressRefused(`the header ${name} has a control or non-Latin-1 character in its value`);
    }
  }
}

export interface EgressRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: Buffer | string | null;
  /** Bounds the whole call: resolution, connection, redirects and the last byte of the body. */
  timeoutMs: number;
  /** Headers dropped when a redirect leaves the origin (case-insensitive). */
  sensitiveHeaders?: string[];
}

export interface EgressResponse {
  status: number;
  /** Lower-case names; repeated headers joined with `, `, except `set-cookie`, joined with `\n`. */
  headers: Record<string, string>;
  body: Buffer;
  /** The final URL, after redirects. */
  url: string;
  /** The address connected to for the final response. */
  address: string;
  redirects: number;
  bytes: number;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export interface EgressOptions {
  /** Every address of a host name; the default asks the system resolver. */
  lookup?: (hostname: string) => Promise<ResolvedAddress[]>;
}

export const DEFAULT_SENSITIVE_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];
const DEFAULT_MAX_REDIRECTS = 5;
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** CONNECT opens a tunnel and TRACE echoes the request back; a script needs neither. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** What goes with a body when a redirect turns the request into a GET (the Fetch standard's list). */
const BODY_HEADERS = new Set(['content-type', 'content-encoding', 'content-language', 'content-location']);

/**
 * The roots a call trusts: what Node trusts without a `ca` option (its bundle plus
 * NODE_EXTRA_CA_CERTS) and the installation's bundle on top, since `ca` replaces rather than adds.
 */
export function trustedRoots(extraCa: string | null): string[] | undefined {
  if (extraCa === null) return undefined;
  return [...tls.getCACertificates('default'), extraCa];
}

const contexts = new Map<string, tls.SecureContext>();

/**
 * The TLS context of calls trusting `extraCa` too, made once per bundle: building one parses every
 * root certificate (about 25 ms for Node's bundle), which a context per call would pay each time.
 */
export function trustedContext(extraCa: string | null): tls.SecureContext | undefined {
  if (extraCa === null) return undefined;
  let context = contexts.get(extraCa);
  if (context === undefined) {
    context = tls.createSecureContext({ ca: trustedRoots(extraCa) });
    contexts.set(extraCa, context);
  }
  return context;
}

const systemLookup = async (hostname: string): Promise<ResolvedAddress[]> =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({
    address,
    family: family === 6 ? 6 : 4,
  }));

/** One deadline for the whole call; `race` makes a wait (a lookup) give up at it. */
class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  origin = '';

  constructor(readonly ms: number) {
    this.timer = setTimeout(() => this.controller.abort(), ms);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  error(): EgressFailed {
    return new EgressFailed(`${this.origin} did not answer within ${this.ms} ms`);
  }

  race<T>(work: Promise<T>): Promise<T> {
    if (this.signal.aborted) return Promise.reject(this.error());
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(this.error());
      this.signal.addEventListener('abort', onAbort, { once: true });
      work.then(resolve, reject).finally(() => this.signal.removeEventListener('abort', onAbort));
    });
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

interface Hop {
  method: string;
  url: URL;
  headers: Array<[string, string]>;
  body: Buffer | null;
}

interface Target {
  /** The host as the request names it (Host, SNI, certificate check), without IPv6 brackets. */
  host: string;
  address: string;
  family: 4 | 6;
}

function bareHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** The scheme, the host and every address it has are checked; the first address is the one used. */
async function resolveHop(
  url: URL,
  policy: EgressPolicy,
  lookup: (hostname: string) => Promise<ResolvedAddress[]>,
  deadline: Deadline,
): Promise<Target> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new EgressRefused(`the scheme ${url.protocol} is refused: only http: and https: are allowed`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new EgressRefused('credentials in the URL are refused; send them in a header');
  }
  const host = bareHost(url);
  const literal = isIP(host);
  if (literal !== 0) {
    checkAddress(host, policy);
    return { host, address: host, family: literal === 6 ? 6 : 4 };
  }
  let found: ResolvedAddress[];
  try {
    found = await deadline.race(lookup(host));
  } catch (error) {
    if (error instanceof EgressFailed) throw error;
    const code = (error as NodeJS.ErrnoException).code ?? 'no answer';
    throw new EgressFailed(`${host} could not be resolved (${code})`, error);
  }
  if (found.length === 0) throw new EgressFailed(`${host} could not be resolved (no addresses)`);
  const addresses = found.map(({ address }) => {
    const family = isIP(address);
    if (family === 0) {
      throw new EgressFailed(`the resolver answered ${host} with something that is not an address`);
    }
    return { address, family: family as 4 | 6 };
  });
  for (const { address } of addresses) {
    try {
      checkAddress(address, policy);
    } catch (error) {
      if (!(error instanceof EgressRefused)) throw error;
      throw new EgressRefused(`the host ${host} resolves to a refused address: ${error.message}`);
    }
  }
  const [first] = addresses as [ResolvedAddress];
  return { host, ...first };
}

/** Hands the connection the address already judged, so no second lookup can answer differently. */
function pinnedLookup(target: Target): LookupFunction {
  return (hostname, options, callback) => {
    if (hostname !== target.host) {
      callback(new Error(`lookup of ${hostname} while ${target.host} is pinned`), '', 0);
    } else if (options.all) {
      callback(null, [{ address: target.address, family: target.family }]);
    } else {
      callback(null, target.address, target.family);
    }
  };
}

const TLS_CODE = /CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS|ERR_SSL|EPROTO/;

/** Node's own messages are kept for the logs (`cause`); the author sees the origin and the code. */
function failureOf(error: unknown, origin: string): EgressFailed {
  const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
  let message: string;
  if (code === 'ECONNREFUSED') message = `${origin} refused the connection`;
  else if (code === 'ECONNRESET') message = `${origin} closed the connection before answering in full`;
  else if (TLS_CODE.test(code)) message = `TLS with ${origin} failed verification or negotiation (${code})`;
  else if (code.startsWith('HPE_')) message = `${origin} sent a malformed HTTP response (${code})`;
  else if (['EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EADDRNOTAVAIL'].includes(code)) {
    message = `${origin} could not be reached (${code})`;
  } else message = `the request to ${origin} failed (${code})`;
  return new EgressFailed(message, error);
}

function tooLarge(origin: string, limit: number): EgressFailed {
  return new EgressFailed(
    `the response from ${origin} passed EGRESS_MAX_RESPONSE_BYTES (${limit} bytes) and was cut off`,
  );
}

/** Set-Cookie values may hold commas (Expires), so they are joined with a newline instead. */
function responseHeaders(raw: string[]): Record<string, string> {
  // A Map, then fromEntries: a header named __proto__ becomes a plain own property.
  const headers = new Map<string, string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] ?? '').toLowerCase();
    const value = raw[i + 1] ?? '';
    const before = headers.get(name);
    headers.set(
      name,
      before === undefined ? value : `${before}${name === 'set-cookie' ? '\n' : ', '}${value}`,
    );
  }
  return Object.fromEntries(headers);
}

type Exchange =
  | { kind: 'redirect'; status: number; location: string }
  | { kind: 'response'; status: number; headers: Record<string, string>; body: Buffer };

interface Agents {
  http: http.Agent;
  https: https.Agent;
}

function exchange(
  hop: Hop,
  target: Target,
  agents: Agents,
  policy: EgressPolicy,
  deadline: Deadline,
): Promise<Exchange> {
  const origin = hop.url.origin;
  const limit = policy.maxResponseBytes;
  const secure = hop.url.protocol === 'https:';
  return new Promise<Exchange>((resolve, reject) => {
    let response: http.IncomingMessage | undefined;
    let settled = false;
    const settle = (outcome: Exchange | EgressFailed) => {
      if (settled) return;
      settled = true;
      deadline.signal.removeEventListener('abort', onAbort);
      if (outcome instanceof EgressFailed) {
        request.destroy();
        response?.destroy();
        reject(outcome);
      } else {
        resolve(outcome);
      }
    };
    const onAbort = () => settle(deadline.error());
    const headers = Object.fromEntries([['host', hop.url.host], ...hop.headers]);
    const options: https.RequestOptions = {
      // An explicit agent: neither the global agent nor HTTP_PROXY/NODE_USE_ENV_PROXY has a say.
      agent: secure ? agents.https : agents.http,
      method: hop.method,
      host: target.host,
      port: hop.url.port === '' ? (secure ? 443 : 80) : Number(hop.url.port),
      path: `${hop.url.pathname}${hop.url.search}`,
      headers,
      setHost: false,
      lookup: pinnedLookup(target),
      rejectUnauthorized: true,
    };
    const request = (secure ? https : http).request(options);
    request.on('error', (error) => settle(failureOf(error, origin)));
    request.on('response', (res) => {
      response = res;
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (REDIRECTS.has(status) && location !== undefined) {
        // The body of a redirect is never read; the connection is not reused, so it is simply closed.
        settle({ kind: 'redirect', status, location });
        res.destroy();
        return;
      }
      // A declared length over the limit fails now rather than after reading up to the limit.
      // (A HEAD's Content-Length describes a body that does not come.)
      const declared = hop.method === 'HEAD' ? 0 : Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > limit) return settle(tooLarge(origin, limit));
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > limit) settle(tooLarge(origin, limit));
        else chunks.push(chunk);
      });
      res.on('end', () =>
        settle({
          kind: 'response',
          status,
          headers: responseHeaders(res.rawHeaders),
          body: Buffer.concat(chunks),
        }),
      );
      res.on('error', (error) => settle(failureOf(error, origin)));
      res.on('close', () => {
        if (!res.complete) {
          settle(failureOf(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }), origin));
        }
      });
    });
    if (deadline.signal.aborted) return onAbort();
    deadline.signal.addEventListener('abort', onAbort);
    request.end(hop.body ?? undefined);
  });
}

/**
 * Performs one outbound call under `policy`: the scheme, the host's addresses, each redirect and the
 * response's size and time are all checked. Proxies from the environment are ignored, TLS is always
 * verified (against Node's roots plus `policy.extraCa`), and the body is returned as sent: nothing is
 * decompressed, so `Accept-Encoding: identity` is asked for unless the caller chose an encoding.
 */
export async function egressFetch(
  request: EgressRequest,
  policy: EgressPolicy,
  options: EgressOptions = {},
): Promise<EgressResponse> {
  const method = request.method.toUpperCase();
  if (!METHODS.has(method))
    throw new EgressRefused(`the method ${JSON.stringify(request.method)} is refused`);
  // setTimeout cannot wait longer than 2^31 - 1 ms: it would fire at once instead.
  if (!(request.timeoutMs > 0 && request.timeoutMs <= MAX_TIMEOUT_MS)) {
    throw new InvalidInput(`timeoutMs must be a number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`);
  }
  checkHeaders(request.headers);
  const sensitive = new Set(
    (request.sensitiveHeaders ?? DEFAULT_SENSITIVE_HEADERS).map((h) => h.toLowerCase()),
  );
  const headers = Object.entries(request.headers);
  if (!headers.some(([name]) => name.toLowerCase() === 'accept-encoding')) {
    headers.push(['accept-encoding', 'identity']);
  }
  const body = request.body === undefined || request.body === null ? null : Buffer.from(request.body);
  let hop: Hop = { method, url: new URL(request.url.href), headers, body };

  const lookup = options.lookup ?? systemLookup;
  const maxRedirects = policy.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const deadline = new Deadline(request.timeoutMs);
  const agents: Agents = {
    http: new http.Agent({ keepAlive: false }),
    https: new https.Agent({
      keepAlive: false,
      secureContext: trustedContext(policy.extraCa),
      rejectUnauthorized: true,
    }),
  };
  try {
    for (let redirects = 0; ; redirects++) {
      deadline.origin = hop.url.origin;
      const target = await resolveHop(hop.url, policy, lookup, deadline);
      const answer = await exchange(withLength(hop), target, agents, policy, deadline);
      if (answer.kind === 'response') {
        return {
          status: answer.status,
          headers: answer.headers,
          body: answer.body,
          url: hop.url.href,
          address: target.address,
          redirects,
          bytes: answer.body.length,
        };
      }
      if (redirects >= maxRedirects) {
        throw new EgressFailed(`more than ${maxRedirects} redirects (the last from ${hop.url.origin})`);
      }
      hop = redirected(hop, answer.status, answer.location, sensitive);
    }
  } finally {
    deadline.clear();
    agents.http.destroy();
    agents.https.destroy();
  }
}

/** The body's length is declared, so nothing is sent chunked; a bodiless write says 0. */
function withLength(hop: Hop): Hop {
  const sendsBody = hop.body !== null || ['POST', 'PUT', 'PATCH'].includes(hop.method);
  if (!sendsBody) return hop;
  return { ...hop, headers: [...hop.headers, ['content-length', String(hop.body?.length ?? 0)]] };
}

/**
 * The next hop of a redirect. 303, and 301 or 302 after a POST, become a GET without a body (as
 * browsers do); 307 and 308 repeat the request. Leaving the origin drops the credential headers for
 * the rest of the call, even if a later redirect comes back.
 */
function redirected(hop: Hop, status: number, location: string, sensitive: Set<string>): Hop {
  let url: URL;
  try {
    url = new URL(location, hop.url);
  } catch {
    throw new EgressFailed(`${hop.url.origin} redirected to something that is not a URL`);
  }
  url.hash = '';
  let { method, headers, body } = hop;
  if ((status === 303 && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST')) {
    method = 'GET';
    body = null;
    headers = headers.filter(([name]) => !BODY_HEADERS.has(name.toLowerCase()));
  }
  if (url.origin !== hop.url.origin) headers = headers.filter(([name]) => !sensitive.has(name.toLowerCase()));
  return { method, url, headers, body };
}
