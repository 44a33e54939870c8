import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import {
  checkHeaders,
  egressFetch,
  type EgressRequest,
  joinUnderBase,
  type ResolvedAddress,
  trustedRoots,
} from '../../engine/integrations/egress-http';
import {
  EgressFailed,
  type EgressPolicy,
  EgressRefused,
  parseCidrList,
} from '../../engine/integrations/egress-policy';
import { InvalidInput } from '../../engine/platform/errors';
import type { ProbeReport, ProbeSpec } from '../support/egress-probe';

/**
 * The HTTP client of scripts' outbound calls, against real servers on loopback (127.0.0.0/8 and
 * ::1 only: the refusals of other addresses run in a network namespace, egress-namespace.test.ts).
 * A refusal is shown to happen before anything is sent by the server's connection count.
 */

const ROOT = path.resolve(__dirname, '../..');
const TLS_DIR = path.join(ROOT, 'test/fixtures/tls');
const pem = (name: string) => readFileSync(path.join(TLS_DIR, name), 'utf8');
const CA = pem('ca.pem');
const SIGNED = { cert: pem('server.pem'), key: pem('server.key') };
const UNTRUSTED = { cert: pem('untrusted.pem'), key: pem('untrusted.key') };

const LOOPBACK = parseCidrList('127.0.0.1/32');

function policy(overrides: Partial<EgressPolicy> = {}): EgressPolicy {
  return { privateAllow: LOOPBACK, maxResponseBytes: 1_000_000, extraCa: null, ...overrides };
}

function get(url: string | URL, overrides: Partial<EgressRequest> = {}): EgressRequest {
  return { method: 'GET', url: new URL(url), headers: {}, timeoutMs: 5_000, ...overrides };
}

/** What a test server saw of one request. */
interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  servername: string | false | null | undefined;
}

interface TestServer {
  origin: string;
  port: number;
  /** TCP connections accepted, TLS or not. */
  connections: number;
  closedSockets: number;
  requests: Seen[];
  close(): Promise<void>;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, seen: Seen) => void;

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(
  handler: Handler = (_req, res) => res.end('ok'),
  options: { host?: string; tls?: { cert: string; key: string } } = {},
): Promise<TestServer> {
  const host = options.host ?? '127.0.0.1';
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const seen: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        servername: (req.socket as tls.TLSSocket).servername,
      };
      result.requests.push(seen);
      handler(req, res, seen);
    });
  };
  const server = options.tls ? https.createServer(options.tls, onRequest) : http.createServer(onRequest);
  const result: TestServer = {
    origin: '',
    port: 0,
    connections: 0,
    closedSockets: 0,
    requests: [],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', (socket: net.Socket) => {
    result.connections++;
    socket.on('close', () => result.closedSockets++);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  result.port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  result.origin = `${options.tls ? 'https' : 'http'}://${shownHost}:${result.port}`;
  servers.push(result);
  return result;
}

/** The echo handler: what the server received, as JSON. */
const echo: Handler = (_req, res, seen) => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(seen));
};

async function failure(work: Promise<unknown>): Promise<Error> {
  try {
    await work;
  } catch (error) {
    return error as Error;
  }
  throw new Error('the call succeeded where it should have failed');
}

async function expectError(
  work: Promise<unknown>,
  type: typeof EgressRefused | typeof EgressFailed,
  message: string,
) {
  const error = await failure(work);
  expect(error).toBeInstanceOf(type);
  expect(error.message).toBe(message);
  return error;
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  const until = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const lookupTo =
  (...addresses: string[]) =>
  async (): Promise<ResolvedAddress[]> =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('joinUnderBase', () => {
  const BASE = 'https://api.vendor.test/v1';

  test.each([
    [BASE, 'prices/AAPL', 'https://api.vendor.test/v1/prices/AAPL'],
    [BASE, '/prices/AAPL', 'https://api.vendor.test/v1/prices/AAPL'],
    [`${BASE}/`, 'prices/AAPL', 'https://api.vendor.test/v1/prices/AAPL'],
    [`${BASE}/`, '/prices/AAPL/', 'https://api.vendor.test/v1/prices/AAPL/'],
    ['https://api.vendor.test', 'prices', 'https://api.vendor.test/prices'],
    [BASE, undefined, 'https://api.vendor.test/v1'],
    [BASE, '', 'https://api.vendor.test/v1'],
    [BASE, 'a/../b', 'https://api.vendor.test/v1/b'],
    [BASE, 'a/%2e%2e/b', 'https://api.vendor.test/v1/b'],
    [BASE, 'a/./b', 'https://api.vendor.test/v1/a/b'],
    [BASE, 'a/..', 'https://api.vendor.test/v1/'],
    [BASE, 'a..b/.c', 'https://api.vendor.test/v1/a..b/.c'],
    [BASE, 'prices:AAPL/x', null],
    [BASE, './prices:AAPL', 'https://api.vendor.test/v1/prices:AAPL'],
    [BASE, 'group%2Fproject', 'https://api.vendor.test/v1/group%2Fproject'],
    [BASE, 'a b/ü', 'https://api.vendor.test/v1/a%20b/%C3%BC'],
    ['https://api.vendor.test/v1?key=k#frag', 'prices?x=1', 'https://api.vendor.test/v1/prices?key=k&x=1'],
  ])('%s + %j', (base, given, expected) => {
    if (expected === null) expect(() => joinUnderBase(base, given)).toThrow(EgressRefused);
    else expect(joinUnderBase(base, given).href).toBe(expected);
  });

  test('query values are encoded and appended to the query the base and the path already have', () => {
    const url = joinUnderBase('https://api.vendor.test/v1?token=t', 'prices?fields=close', {
      symbol: 'BRK.B & co',
      'a=b': 'c/d?',
      n: 2.5,
      live: false,
      ids: [1, 'two', true],
      unicode: 'é€',
    });
    expect(url.href).toBe(
      'https://api.vendor.test/v1/prices?token=t&fields=close&symbol=BRK.B%20%26%20co&a%3Db=c%2Fd%3F&n=2.5&live=false&ids=1&ids=two&ids=true&unicode=%C3%A9%E2%82%AC',
    );
    expect(joinUnderBase('https://api.vendor.test/v1', 'x', {}).href).toBe('https://api.vendor.test/v1/x');
  });

  test.each([
    ['https://evil.test/x', "the path is an absolute URL; give a path under the integration's base_url"],
    ['//evil.test/x', "the path is an absolute URL; give a path under the integration's base_url"],
    ['http:evil', "the path is an absolute URL; give a path under the integration's base_url"],
    ['javascript:alert(1)', "the path is an absolute URL; give a path under the integration's base_url"],
    ['a\\..\\..\\x', 'the path holds a backslash, which servers read differently'],
    ['\\\\evil.test\\x', 'the path holds a backslash, which servers read differently'],
    ['../x', "the path climbs above the integration's base_url (..)"],
    ['/../x', "the path climbs above the integration's base_url (..)"],
    ['a/../../x', "the path climbs above the integration's base_url (..)"],
    ['%2e%2e/x', "the path climbs above the integration's base_url (..)"],
    ['%2E./x', "the path climbs above the integration's base_url (..)"],
    ['.%2E/x', "the path climbs above the integration's base_url (..)"],
    ['a/%2e%2e/%2E%2E/admin', "the path climbs above the integration's base_url (..)"],
    ['..%2fadmin', 'the path hides a .. in an encoded segment (%2e, %2f, %5c)'],
    ['a/%2e%2e%5cadmin', 'the path hides a .. in an encoded segment (%2e, %2f, %5c)'],
    ['%252e%252e/admin', 'the path hides a .. in an encoded segment (%2e, %2f, %5c)'],
    ['a\r\nHost: evil.test', 'the path holds a control character (CR, LF, NUL or another)'],
    ['a\nb', 'the path holds a control character (CR, LF, NUL or another)'],
    ['a\0b', 'the path holds a control character (CR, LF, NUL or another)'],
    ['a\tb', 'the path holds a control character (CR, LF, NUL or another)'],
    ['a\u0085b', 'the path holds a control character (CR, LF, NUL or another)'],
    ['a#b', 'the path holds a fragment (#), which is never sent'],
  ])('%j is refused', (given, message) => {
    expect(() => joinUnderBase('https://api.vendor.test/v1', given)).toThrow(new EgressRefused(message));
  });

  test.each([
    [
      { n: Number.NaN },
      'query parameter "n" must be a string, a finite number or a boolean (or an array of them)',
    ],
    [
      { o: { a: 1 } },
      'query parameter "o" must be a string, a finite number or a boolean (or an array of them)',
    ],
    [{ '': 'x' }, 'a query parameter has an empty name'],
    [{ s: '\ud800' }, 'query parameter "s" holds text that is not valid Unicode'],
  ])('query %j is refused', (query, message) => {
    expect(() => joinUnderBase('https://api.vendor.test/v1', 'x', query as never)).toThrow(
      new EgressRefused(message),
    );
  });

  test('a base_url that is not a URL is refused', () => {
    expect(() => joinUnderBase('api.vendor.test', 'x')).toThrow(
      new EgressRefused("the integration's base_url is not a URL"),
    );
  });

  test('whatever the path, the URL stays on the base origin and under the base path, or is refused', () => {
    const pieces = fc.constantFrom(
      '..',
      '.',
      '%2e',
      '%2E%2e',
      '/',
      '//',
      '\\',
      ':',
      '?',
      '#',
      '@',
      'a',
      'evil.test',
      '%2f',
      '%5c',
      '%25',
    );
    const path = fc.oneof(
      fc.string(),
      fc.array(pieces, { maxLength: 8 }).map((p) => p.join('')),
    );
    fc.assert(
      fc.property(path, (given) => {
        let url: URL;
        try {
          url = joinUnderBase('https://api.vendor.test/v1', given);
        } catch (error) {
          expect(error).toBeInstanceOf(EgressRefused);
          return;
        }
        expect(url.origin).toBe('https://api.vendor.test');
        expect(url.pathname === '/v1' || url.pathname.startsWith('/v1/')).toBe(true);
        expect(url.username + url.password + url.hash).toBe('');
      }),
      { numRuns: 3000 },
    );
  });
});

describe('checkHeaders', () => {
  test.each([
    [{ 'X-Bad\r\nInjected': 'v' }, 'the header name "X-Bad\\r\\nInjected" holds CR, LF or NUL'],
    [{ 'X-Bad\0': 'v' }, 'the header name "X-Bad\\u0000" holds CR, LF or NUL'],
    [{ 'X-Trace': 'a\r\nInjected: 1' }, 'the header X-Trace has CR, LF or NUL in its value'],
    [{ 'X-Trace': 'a\nb' }, 'the header X-Trace has CR, LF or NUL in its value'],
    [{ 'X-Trace': 'a\0b' }, 'the header X-Trace has CR, LF or NUL in its value'],
    [{ 'X-Trace': 'a\u0007b' }, 'the header X-Trace has a control or non-Latin-1 character in its value'],
    [{ 'X-Trace': '€' }, 'the header X-Trace has a control or non-Latin-1 character in its value'],
    [{ Host: 'evil.test' }, "a host in a header is refused (Host): the host is the integration's"],
    [{ HOST: 'evil.test' }, "a host in a header is refused (HOST): the host is the integration's"],
    [
      { ':authority': 'evil.test' },
      "a host in a header is refused (:authority): the host is the integration's",
    ],
    [{ ':path': '/admin' }, 'the pseudo-header :path is refused'],
    [{ 'Bad Header': 'v' }, 'the header name "Bad Header" is not an RFC 7230 token'],
    [{ 'x(y)': 'v' }, 'the header name "x(y)" is not an RFC 7230 token'],
    [{ '': 'v' }, 'the header name "" is not an RFC 7230 token'],
    [
      { 'Content-Length': '5' },
      'the header Content-Length is refused: the HTTP client sets the transport headers',
    ],
    [
      { 'transfer-encoding': 'chunked' },
      'the header transfer-encoding is refused: the HTTP client sets the transport headers',
    ],
    [{ Connection: 'close' }, 'the header Connection is refused: the HTTP client sets the transport headers'],
    [{ Upgrade: 'h2c' }, 'the header Upgrade is refused: the HTTP client sets the transport headers'],
    [
      { 'Proxy-Authorization': 'x' },
      'the header Proxy-Authorization is refused: the HTTP client sets the transport headers',
    ],
    [
      { 'Proxy-Connection': 'x' },
      'the header Proxy-Connection is refused: the HTTP client sets the transport headers',
    ],
    [{ TE: 'trailers' }, 'the header TE is refused: the HTTP client sets the transport headers'],
    [{ Trailer: 'x' }, 'the header Trailer is refused: the HTTP client sets the transport headers'],
    [{ 'Keep-Alive': '5' }, 'the header Keep-Alive is refused: the HTTP client sets the transport headers'],
    [{ Expect: '100-continue' }, 'the header Expect is refused: the HTTP client sets the transport headers'],
    [{ Accept: 'a', accept: 'b' }, 'the header accept is given twice'],
    [{ 'X-N': 5 }, 'the header X-N must have a text value'],
  ])('%j is refused, naming the header and not its value', (headers, message) => {
    expect(() => checkHeaders(headers as never)).toThrow(new EgressRefused(message));
  });

  test('ordinary headers pass, tabs and Latin-1 in values included', () => {
    expect(() =>
      checkHeaders({
        Authorization: 'Bearer abc.def',
        'X-Api-Key': 'k',
        'Content-Type': 'application/json; charset=utf-8',
        'Accept-Encoding': 'gzip',
        "x-!#$%&'*+-.^_`|~": 'a\tb é',
        'X-Empty': '',
      }),
    ).not.toThrow();
  });
});

describe('egressFetch', () => {
  test('a GET reaches the server with the caller’s headers, a Host of its own and Accept-Encoding identity', async () => {
    const server = await serve(echo);
    const answer = await egressFetch(
      get(`${server.origin}/v1/prices?symbol=AAPL`, {
        headers: { 'X-Trace': 't-1', Accept: 'application/json' },
      }),
      policy(),
    );
    expect(answer).toMatchObject({
      status: 200,
      url: `${server.origin}/v1/prices?symbol=AAPL`,
      address: '127.0.0.1',
      redirects: 0,
    });
    expect(answer.headers['content-type']).toBe('application/json');
    const seen = JSON.parse(answer.body.toString()) as Seen;
    expect(answer.bytes).toBe(answer.body.length);
    expect(seen).toMatchObject({ method: 'GET', url: '/v1/prices?symbol=AAPL', body: '' });
    expect(seen.headers).toEqual({
      host: `127.0.0.1:${server.port}`,
      'x-trace': 't-1',
      accept: 'application/json',
      'accept-encoding': 'identity',
      connection: 'close',
    });
  });

  test('a POST sends its body with a declared length; a lower-case method is read as upper case', async () => {
    const server = await serve(echo);
    const body = JSON.stringify({ symbols: ['AAPL', 'MSFT'], note: 'é' });
    const answer = await egressFetch(
      get(`${server.origin}/orders`, {
        method: 'post',
        headers: { 'Content-Type': 'application/json', Authorization: 'Bearer token' },
        body,
      }),
      policy(),
    );
    const seen = JSON.parse(answer.body.toString()) as Seen;
    expect(seen).toMatchObject({ method: 'POST', url: '/orders', body });
    expect(seen.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(seen.headers['transfer-encoding']).toBeUndefined();
    expect(seen.headers.authorization).toBe('Bearer token');

    const bytes = Buffer.from([0, 1, 2, 255]);
    const put = await egressFetch(get(`${server.origin}/blob`, { method: 'PUT', body: bytes }), policy());
    expect(JSON.parse(put.body.toString())).toMatchObject({ method: 'PUT', body: bytes.toString() });
    const empty = await egressFetch(get(`${server.origin}/empty`, { method: 'POST' }), policy());
    expect((JSON.parse(empty.body.toString()) as Seen).headers['content-length']).toBe('0');
  });

  test('response headers come lower-cased, repeated ones joined (set-cookie with newlines)', async () => {
    const server = await serve((_req, res) => {
      res.setHeader('X-Multi', ['a', 'b']);
      res.setHeader('Set-Cookie', ['a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT', 'b=2']);
      res.end('');
    });
    const answer = await egressFetch(get(server.origin), policy());
    expect(answer.headers['x-multi']).toBe('a, b');
    expect(answer.headers['set-cookie']).toBe('a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT\nb=2');
  });

  test('a header named __proto__ is an ordinary header, going out and coming back', async () => {
    const server = await serve((req, res) => {
      // (req.headers is a plain object, so the raw list is where the server finds it.)
      const sent = req.rawHeaders[req.rawHeaders.findIndex((name) => name === '__proto__') + 1];
      res.setHeader('__proto__', `echo ${sent}`);
      res.end('');
    });
    const answer = await egressFetch(
      get(server.origin, { headers: JSON.parse('{"__proto__":"p"}') }),
      policy(),
    );
    expect(Object.prototype.hasOwnProperty.call(answer.headers, '__proto__')).toBe(true);
    expect(Object.getOwnPropertyDescriptor(answer.headers, '__proto__')?.value).toBe('echo p');
  });

  test('nothing is decompressed: a caller that asks for gzip gets the gzip bytes', async () => {
    const text = 'close,101.5\n'.repeat(100);
    const gzipped = gzipSync(text);
    const server = await serve((req, res) => {
      if (req.headers['accept-encoding'] === 'gzip') res.setHeader('content-encoding', 'gzip').end(gzipped);
      else res.end(text);
    });
    const answer = await egressFetch(
      get(server.origin, { headers: { 'Accept-Encoding': 'gzip' } }),
      policy(),
    );
    expect(answer.headers['content-encoding']).toBe('gzip');
    expect(answer.body.equals(gzipped)).toBe(true);
  });

  describe('TLS', () => {
    test('https through a host name: pinned to the looked-up address, SNI and the certificate check use the name, extraCa is trusted', async () => {
      const server = await serve(echo, { tls: SIGNED });
      const asked: string[] = [];
      const answer = await egressFetch(
        get(`https://vendor.test:${server.port}/v1/x`),
        policy({ extraCa: CA }),
        {
          lookup: async (hostname) => {
            asked.push(hostname);
            return [{ address: '127.0.0.1', family: 4 }];
          },
        },
      );
      expect(answer).toMatchObject({
        status: 200,
        address: '127.0.0.1',
        url: `https://vendor.test:${server.port}/v1/x`,
      });
      expect(asked).toEqual(['vendor.test']);
      expect(server.requests[0]).toMatchObject({ servername: 'vendor.test', url: '/v1/x' });
      expect(server.requests[0]?.headers.host).toBe(`vendor.test:${server.port}`);
    });

    test('https to an IP literal is checked against the certificate’s IP names', async () => {
      const server = await serve(echo, { tls: SIGNED });
      const answer = await egressFetch(get(server.origin), policy({ extraCa: CA }));
      expect(answer.status).toBe(200);
    });

    test('without extraCa the installation CA is not trusted', async () => {
      const server = await serve(echo, { tls: SIGNED });
      await expectError(
        egressFetch(get(server.origin), policy()),
        EgressFailed,
        `TLS with ${server.origin} failed verification or negotiation (UNABLE_TO_VERIFY_LEAF_SIGNATURE)`,
      );
      expect(server.requests).toEqual([]);
    });

    test('a self-signed certificate is refused even with extraCa, and so is a certificate for another name', async () => {
      const untrusted = await serve(echo, { tls: UNTRUSTED });
      await expectError(
        egressFetch(get(`https://localhost:${untrusted.port}/`), policy({ extraCa: CA }), {
          lookup: lookupTo('127.0.0.1'),
        }),
        EgressFailed,
        `TLS with https://localhost:${untrusted.port} failed verification or negotiation (DEPTH_ZERO_SELF_SIGNED_CERT)`,
      );
      expect(untrusted.requests).toEqual([]);

      const signed = await serve(echo, { tls: SIGNED });
      await expectError(
        egressFetch(get(`https://other.test:${signed.port}/`), policy({ extraCa: CA }), {
          lookup: lookupTo('127.0.0.1'),
        }),
        EgressFailed,
        `TLS with https://other.test:${signed.port} failed verification or negotiation (ERR_TLS_CERT_ALTNAME_INVALID)`,
      );
      expect(signed.requests).toEqual([]);
    });

    test('extraCa is added to Node’s default roots, not put in their place', () => {
      const roots = trustedRoots(CA) ?? [];
      const set = new Set(roots);
      expect(tls.rootCertificates.every((root) => set.has(root))).toBe(true);
      expect(roots.at(-1)).toBe(CA);
      expect(roots).toHaveLength(tls.getCACertificates('default').length + 1);
      expect(trustedRoots(null)).toBeUndefined();
    });
  });

  describe('what is refused before anything is sent', () => {
    test.each([
      'ftp://127.0.0.1/x',
      'file:///etc/passwd',
      'ws://127.0.0.1/',
      'data:text/plain,hi',
      'gopher://127.0.0.1/',
    ])('the scheme of %s', async (url) => {
      const scheme = new URL(url).protocol;
      await expectError(
        egressFetch(get(url), policy()),
        EgressRefused,
        `the scheme ${scheme} is refused: only http: and https: are allowed`,
      );
    });

    test('loopback, without an EGRESS_PRIVATE_ALLOW entry for it', async () => {
      const server = await serve();
      await expectError(
        egressFetch(get(server.origin), policy({ privateAllow: [] })),
        EgressRefused,
        '127.0.0.1 is a loopback address; EGRESS_PRIVATE_ALLOW does not include it',
      );
      const v6 = await serve(undefined, { host: '::1' });
      await expectError(
        egressFetch(get(v6.origin), policy()),
        EgressRefused,
        '::1 is a loopback address; EGRESS_PRIVATE_ALLOW does not include it',
      );
      expect(server.connections + v6.connections).toBe(0);
      // The allow list is what let them through before.
      expect(
        (await egressFetch(get(v6.origin), policy({ privateAllow: parseCidrList('::1/128') }))).status,
      ).toBe(200);
    });

    test.each([
      ['http://2130706433:PORT/'],
      ['http://0x7f.1:PORT/'],
      ['http://0177.0.0.1:PORT/'],
      ['http://127.1:PORT/'],
      ['http://0x7f000001:PORT/'],
      ['http://127.0.0.1.:PORT/'],
      ['http://%31%32%37.0.0.1:PORT/'],
    ])('the numeric spelling %s is judged as 127.0.0.1', async (spelling) => {
      const server = await serve();
      const url = spelling.replace('PORT', String(server.port));
      await expectError(
        egressFetch(get(url), policy({ privateAllow: [] })),
        EgressRefused,
        '127.0.0.1 is a loopback address; EGRESS_PRIVATE_ALLOW does not include it',
      );
      expect(server.connections).toBe(0);
      expect((await egressFetch(get(url), policy())).address).toBe('127.0.0.1');
    });

    test('an IPv4-mapped IPv6 spelling is judged by its IPv4 address', async () => {
      const server = await serve();
      for (const url of [
        `http://[::ffff:127.0.0.1]:${server.port}/`,
        `http://[::ffff:7f00:1]:${server.port}/`,
      ]) {
        await expectError(
          egressFetch(get(url), policy({ privateAllow: [] })),
          EgressRefused,
          '::ffff:7f00:1 (127.0.0.1) is a loopback address; EGRESS_PRIVATE_ALLOW does not include it',
        );
      }
      expect(server.connections).toBe(0);
      const answer = await egressFetch(get(`http://[::ffff:127.0.0.1]:${server.port}/`), policy());
      expect(answer).toMatchObject({ status: 200, address: '::ffff:7f00:1' });
    });

    // Connecting to either would stay on this machine (Linux reads them as loopback); the IPv6
    // forms that could leave it are refused in egress-namespace.test.ts, where nothing can.
    test.each([
      ['[::]', ':: is an unspecified address'],
      ['0.0.0.0', '0.0.0.0 is an unspecified address'],
    ])('http://%s/ is refused: %s', async (host, reason) => {
      const server = await serve();
      await expectError(
        egressFetch(get(`http://${host}:${server.port}/`), policy({ privateAllow: [] })),
        EgressRefused,
        `${reason}; EGRESS_PRIVATE_ALLOW does not include it`,
      );
      expect(server.connections).toBe(0);
    });

    test('a name that resolves to a refused address is refused before any connection', async () => {
      const server = await serve();
      await expectError(
        egressFetch(get(`http://vendor.test:${server.port}/`), policy({ privateAllow: [] }), {
          lookup: lookupTo('127.0.0.1'),
        }),
        EgressRefused,
        'the host vendor.test resolves to a refused address: 127.0.0.1 is a loopback address; EGRESS_PRIVATE_ALLOW does not include it',
      );
      // One refused address among allowed ones refuses the call, though the first would pass.
      await expectError(
        egressFetch(get(`http://vendor.test:${server.port}/`), policy(), {
          lookup: lookupTo('127.0.0.1', '127.0.0.2'),
        }),
        EgressRefused,
        'the host vendor.test resolves to a refused address: 127.0.0.2 is a loopback address; EGRESS_PRIVATE_ALLOW does not include it',
      );
      expect(server.connections).toBe(0);
    });

    test('the connection goes to the address that was judged: no second lookup', async () => {
      const server = await serve();
      const rebound = await serve(undefined, { host: '127.0.0.2' });
      // A resolver that changes its answer after the first question (DNS rebinding): a second
      // lookup would connect to 127.0.0.2.
      let asked = 0;
      const lookup = async (): Promise<ResolvedAddress[]> => [
        { address: asked++ === 0 ? '127.0.0.1' : '127.0.0.2', family: 4 },
      ];
      const answer = await egressFetch(
        get(`http://vendor.test:${server.port}/`),
        policy({ privateAllow: parseCidrList('127.0.0.0/8') }),
        { lookup },
      );
      expect(answer).toMatchObject({ status: 200, address: '127.0.0.1' });
      expect([asked, server.connections, rebound.connections]).toEqual([1, 1, 0]);
      expect(server.requests[0]?.headers.host).toBe(`vendor.test:${server.port}`);
    });

    test('a name is resolved once per hop', async () => {
      const server = await serve((req, res) => {
        if (req.url === '/first') res.writeHead(302, { location: '/second' }).end();
        else res.end('second');
      });
      const lookup = jest.fn(lookupTo('127.0.0.1'));
      const answer = await egressFetch(get(`http://vendor.test:${server.port}/first`), policy(), { lookup });
      expect(answer).toMatchObject({
        status: 200,
        redirects: 1,
        url: `http://vendor.test:${server.port}/second`,
      });
      expect(lookup.mock.calls).toEqual([['vendor.test'], ['vendor.test']]);
    });

    test('a host name the resolver does not know fails as the remote side’s', async () => {
      const lookup = async (): Promise<ResolvedAddress[]> => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), { code: 'ENOTFOUND' });
      };
      await expectError(
        egressFetch(get('http://nowhere.test/'), policy(), { lookup }),
        EgressFailed,
        'nowhere.test could not be resolved (ENOTFOUND)',
      );
      await expectError(
        egressFetch(get('http://nowhere.test/'), policy(), { lookup: async () => [] }),
        EgressFailed,
        'nowhere.test could not be resolved (no addresses)',
      );
    });

    test('CR or LF in a header name or value, a Host header, a tunnel method and URL credentials', async () => {
      const server = await serve();
      const cases: Array<[Partial<EgressRequest>, string]> = [
        [{ headers: { 'X-A\r\nX-B': '1' } }, 'the header name "X-A\\r\\nX-B" holds CR, LF or NUL'],
        [{ headers: { 'X-A': 'secret\r\nX-B: 1' } }, 'the header X-A has CR, LF or NUL in its value'],
        [
          { headers: { Host: 'vendor.test' } },
          "a host in a header is refused (Host): the host is the integration's",
        ],
        [{ method: 'CONNECT' }, 'the method "CONNECT" is refused'],
        [{ method: 'TRACE' }, 'the method "TRACE" is refused'],
        [{ method: 'GET\r\nX: 1' }, 'the method "GET\\r\\nX: 1" is refused'],
        [
          { url: new URL(`http://user:hunter2@127.0.0.1:${server.port}/`) },
          'credentials in the URL are refused; send them in a header',
        ],
      ];
      for (const [overrides, message] of cases) {
        const error = await expectError(
          egressFetch(get(server.origin, overrides), policy()),
          EgressRefused,
          message,
        );
        expect(error.message).not.toContain('secret');
        expect(error.message).not.toContain('hunter2');
      }
      expect(server.connections).toBe(0);
      for (const timeoutMs of [0, -1, Number.NaN, 2 ** 31]) {
        await expect(egressFetch(get(server.origin, { timeoutMs }), policy())).rejects.toThrow(
          new InvalidInput('timeoutMs must be a number of milliseconds from 1 to 2147483647'),
        );
      }
    });
  });

  describe('redirects', () => {
    async function chain(): Promise<TestServer> {
      return serve((req, res) => {
        const left = Number(/^\/hop\/(\d+)$/.exec(req.url ?? '')?.[1] ?? 0);
        if (left > 0) res.writeHead(302, { location: `/hop/${left - 1}` }).end('moving');
        else res.end('arrived');
      });
    }

    test('five are followed; the sixth fails', async () => {
      const server = await chain();
      const answer = await egressFetch(get(`${server.origin}/hop/5`), policy());
      expect(answer).toMatchObject({ status: 200, redirects: 5, url: `${server.origin}/hop/0` });
      expect(answer.body.toString()).toBe('arrived');
      await expectError(
        egressFetch(get(`${server.origin}/hop/6`), policy()),
        EgressFailed,
        `more than 5 redirects (the last from ${server.origin})`,
      );
      await expectError(
        egressFetch(get(`${server.origin}/hop/1`), policy({ maxRedirects: 0 })),
        EgressFailed,
        `more than 0 redirects (the last from ${server.origin})`,
      );
    });

    test('each hop is checked like the first: a redirect to a refused address or scheme is refused', async () => {
      const elsewhere = await serve(undefined, { host: '127.0.0.2' });
      const v6 = await serve(undefined, { host: '::1' });
      const server = await serve((req, res) => {
        const to = new URL(req.url ?? '/', 'http://x').searchParams.get('to') ?? '';
        res.writeHead(302, { location: to }).end();
      });
      const via = (to: string) => `${server.origin}/?to=${encodeURIComponent(to)}`;
      await expectError(
        egressFetch(get(via(elsewhere.origin)), policy()),
        EgressRefused,
        '127.0.0.2 is a loopback address; EGRESS_PRIVATE_ALLOW does not include it',
      );
      await expectError(
        egressFetch(get(via(v6.origin)), policy()),
        EgressRefused,
        '::1 is a loopback address; EGRESS_PRIVATE_ALLOW does not include it',
      );
      await expectError(
        egressFetch(get(via(`http://metadata.test:${elsewhere.port}/`)), policy(), {
          lookup: lookupTo('127.0.0.2'),
        }),
        EgressRefused,
        'the host metadata.test resolves to a refused address: 127.0.0.2 is a loopback address; EGRESS_PRIVATE_ALLOW does not include it',
      );
      await expectError(
        egressFetch(get(via('file:///etc/passwd')), policy()),
        EgressRefused,
        'the scheme file: is refused: only http: and https: are allowed',
      );
      expect(elsewhere.connections + v6.connections).toBe(0);
      expect(server.requests).toHaveLength(4);
    });

    test('303, and 301 or 302 after a POST, become a GET without a body; 307 and 308 repeat the request', async () => {
      const server = await serve((req, res, seen) => {
        const status = Number(req.url?.slice(1));
        if (REDIRECT_STATUSES.includes(status)) res.writeHead(status, { location: '/echo' }).end();
        else echo(req, res, seen);
      });
      const send = async (status: number, method: string) => {
        const answer = await egressFetch(
          get(`${server.origin}/${status}`, {
            method,
            body: 'payload',
            headers: { 'Content-Type': 'text/plain' },
          }),
          policy(),
        );
        const seen = JSON.parse(answer.body.toString()) as Seen;
        return [seen.method, seen.body, seen.headers['content-type'] ?? null];
      };
      expect(await send(303, 'POST')).toEqual(['GET', '', null]);
      expect(await send(303, 'PUT')).toEqual(['GET', '', null]);
      expect(await send(302, 'POST')).toEqual(['GET', '', null]);
      expect(await send(301, 'POST')).toEqual(['GET', '', null]);
      expect(await send(301, 'PUT')).toEqual(['PUT', 'payload', 'text/plain']);
      expect(await send(307, 'POST')).toEqual(['POST', 'payload', 'text/plain']);
      expect(await send(308, 'PATCH')).toEqual(['PATCH', 'payload', 'text/plain']);
    });

    test('leaving the origin drops Authorization, Cookie and the headers the caller marks, for good', async () => {
      const a = await serve((req, res, seen) => {
        if (req.url === '/same') res.writeHead(302, { location: '/echo' }).end();
        else if (req.url === '/away') res.writeHead(302, { location: `${b.origin}/echo` }).end();
        else if (req.url === '/away-and-back') res.writeHead(307, { location: `${b.origin}/back` }).end();
        else echo(req, res, seen);
      });
      const b: TestServer = await serve((req, res, seen) => {
        if (req.url === '/back') res.writeHead(307, { location: `${a.origin}/echo` }).end();
        else echo(req, res, seen);
      });
      const headers = { Authorization: 'Bearer s3cret', Cookie: 'sid=1', 'X-Api-Key': 'k', 'X-Trace': 't' };
      const request = (path: string) =>
        get(`${a.origin}${path}`, { headers, sensitiveHeaders: ['authorization', 'cookie', 'X-API-KEY'] });
      const headersAt = async (path: string) =>
        (JSON.parse((await egressFetch(request(path), policy())).body.toString()) as Seen).headers;

      expect(await headersAt('/same')).toMatchObject({
        authorization: 'Bearer s3cret',
        cookie: 'sid=1',
        'x-api-key': 'k',
      });
      for (const path of ['/away', '/away-and-back']) {
        const seen = await headersAt(path);
        expect(seen['x-trace']).toBe('t');
        expect([seen.authorization, seen.cookie, seen['x-api-key']]).toEqual([
          undefined,
          undefined,
          undefined,
        ]);
      }
      // By default the list is Authorization, Cookie and Proxy-Authorization: X-Api-Key goes along.
      const plain = await egressFetch(get(`${a.origin}/away`, { headers }), policy());
      expect((JSON.parse(plain.body.toString()) as Seen).headers).toMatchObject({ 'x-api-key': 'k' });
      expect((JSON.parse(plain.body.toString()) as Seen).headers.authorization).toBeUndefined();
    });
  });

  describe('limits', () => {
    test('a Content-Length over the limit fails at once, without waiting for the body', async () => {
      const server = await serve((_req, res) => {
        res.writeHead(200, { 'content-length': '2000' });
        res.flushHeaders();
      });
      const started = Date.now();
      await expectError(
        egressFetch(get(server.origin, { timeoutMs: 20_000 }), policy({ maxResponseBytes: 1000 })),
        EgressFailed,
        `the response from ${server.origin} passed EGRESS_MAX_RESPONSE_BYTES (1000 bytes) and was cut off`,
      );
      expect(Date.now() - started).toBeLessThan(10_000);
      await waitFor(() => server.closedSockets === 1, 'the server to see its connection closed');
    });

    test('a chunked body is counted as it streams and cut off past the limit', async () => {
      const server = await serve((_req, res) => {
        const timer = setInterval(() => res.write('x'.repeat(100)), 2);
        res.on('close', () => clearInterval(timer));
      });
      await expectError(
        egressFetch(get(server.origin), policy({ maxResponseBytes: 1000 })),
        EgressFailed,
        `the response from ${server.origin} passed EGRESS_MAX_RESPONSE_BYTES (1000 bytes) and was cut off`,
      );
      await waitFor(() => server.closedSockets === 1, 'the server to see its connection closed');
    });

    test('a body of exactly the limit is whole; a HEAD’s Content-Length describes no body', async () => {
      const server = await serve((req, res) => {
        if (req.method === 'HEAD') res.writeHead(200, { 'content-length': '5000' }).end();
        else {
          res.write('x'.repeat(600));
          res.end('y'.repeat(400));
        }
      });
      const answer = await egressFetch(get(server.origin), policy({ maxResponseBytes: 1000 }));
      expect([answer.status, answer.bytes, answer.body.toString()]).toEqual([
        200,
        1000,
        'x'.repeat(600) + 'y'.repeat(400),
      ]);
      const head = await egressFetch(
        get(server.origin, { method: 'HEAD' }),
        policy({ maxResponseBytes: 1000 }),
      );
      expect([head.status, head.bytes, head.headers['content-length']]).toEqual([200, 0, '5000']);
    });

    test('a server that never answers fails at the deadline', async () => {
      const server = await serve(() => undefined);
      const started = Date.now();
      await expectError(
        egressFetch(get(server.origin, { timeoutMs: 300 }), policy()),
        EgressFailed,
        `${server.origin} did not answer within 300 ms`,
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect(Date.now() - started).toBeLessThan(3_000);
      await waitFor(() => server.closedSockets === 1, 'the server to see its connection closed');
    });

    test('headers followed by a trickling body fail at the deadline too', async () => {
      const server = await serve((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => res.write('.'), 50);
        res.on('close', () => clearInterval(timer));
      });
      const started = Date.now();
      await expectError(
        egressFetch(get(server.origin, { timeoutMs: 400 }), policy()),
        EgressFailed,
        `${server.origin} did not answer within 400 ms`,
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(390);
      expect(Date.now() - started).toBeLessThan(3_000);
    });

    test('the deadline spans the redirects and a slow resolver', async () => {
      const server = await serve((req, res) => {
        const left = Number(/^\/slow\/(\d+)$/.exec(req.url ?? '')?.[1] ?? 0);
        setTimeout(() => res.writeHead(302, { location: `/slow/${left - 1}` }).end(), 150);
      });
      const started = Date.now();
      await expectError(
        egressFetch(get(`${server.origin}/slow/5`, { timeoutMs: 500 }), policy()),
        EgressFailed,
        `${server.origin} did not answer within 500 ms`,
      );
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(server.requests.length).toBeLessThan(5);

      await expectError(
        egressFetch(get('http://slow-dns.test/', { timeoutMs: 200 }), policy(), {
          lookup: () => new Promise(() => undefined),
        }),
        EgressFailed,
        'http://slow-dns.test did not answer within 200 ms',
      );
    });

    test('a body cut short by the server fails rather than coming back truncated', async () => {
      const server = await serve((req, res) => {
        res.writeHead(200, { 'content-length': '100' });
        res.write('only ten b', () => req.socket.destroy());
      });
      await expectError(
        egressFetch(get(server.origin), policy()),
        EgressFailed,
        `${server.origin} closed the connection before answering in full`,
      );
    });

    test('a refused connection fails as the remote side’s', async () => {
      const server = await serve();
      await server.close();
      servers.splice(servers.indexOf(server), 1);
      await expectError(
        egressFetch(get(server.origin), policy()),
        EgressFailed,
        `${server.origin} refused the connection`,
      );
    });
  });

  test('no failure message carries a header value, the body, the path or the query', async () => {
    const slow = await serve(() => undefined);
    const big = await serve((_req, res) => res.end('x'.repeat(2000)));
    const tlsServer = await serve(echo, { tls: SIGNED });
    const secretRequest = (origin: string, timeoutMs = 5_000) =>
      get(`${origin}/bot-SECRET-PATH/send?apikey=SECRET-QUERY`, {
        method: 'POST',
        headers: { Authorization: 'Bearer SECRET-HEADER', 'X-Api-Key': 'SECRET-KEY' },
        body: 'SECRET-BODY',
        timeoutMs,
      });
    const errors = await Promise.all([
      failure(egressFetch(secretRequest(slow.origin, 200), policy())),
      failure(egressFetch(secretRequest(big.origin), policy({ maxResponseBytes: 100 }))),
      failure(egressFetch(secretRequest(tlsServer.origin), policy())),
      failure(egressFetch(secretRequest(slow.origin), policy({ privateAllow: [] }))),
    ]);
    expect(errors.map((e) => e.constructor)).toEqual([
      EgressFailed,
      EgressFailed,
      EgressFailed,
      EgressRefused,
    ]);
    for (const error of errors) expect(error.message).not.toContain('SECRET');
  });

  describe('proxies from the environment are ignored', () => {
    async function proxyListener() {
      const seen = { connections: 0 };
      const sockets = new Set<net.Socket>();
      // Whatever it is asked, it answers 418, so a call that went through it is plain to see.
      const proxy = net.createServer((socket) => {
        seen.connections++;
        sockets.add(socket);
        socket.on('error', () => undefined);
        socket.once('data', () =>
          socket.end('HTTP/1.1 418 I am the proxy\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'),
        );
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const close = () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy();
          proxy.close(() => resolve());
        });
      return { seen, url, close };
    }

    // Fails for a client that reads the variables itself (an Agent given `proxyEnv: process.env`).
    test('HTTP_PROXY and HTTPS_PROXY set in this process', async () => {
      const proxy = await proxyListener();
      const names = ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY'];
      const before = names.map((name) => process.env[name]);
      for (const name of names) process.env[name] = proxy.url;
      try {
        const server = await serve();
        const secure = await serve(undefined, { tls: SIGNED });
        expect((await egressFetch(get(server.origin), policy())).status).toBe(200);
        expect((await egressFetch(get(secure.origin), policy({ extraCa: CA }))).status).toBe(200);
        expect(server.connections + secure.connections).toBe(2);
        expect(proxy.seen.connections).toBe(0);
      } finally {
        names.forEach((name, i) => {
          if (before[i] === undefined) delete process.env[name];
          else process.env[name] = before[i];
        });
        await proxy.close();
      }
    });

    // NODE_USE_ENV_PROXY is read when Node starts, so this takes a process of its own. The control
    // (a plain http.get in the same environment) shows the proxy would have been used.
    test('NODE_USE_ENV_PROXY=1 with HTTP_PROXY, in a fresh process', async () => {
      const proxy = await proxyListener();
      const server = await serve();
      const run = async (via: 'egress' | 'global-agent') => {
        const spec: ProbeSpec = { calls: [{ url: server.origin, privateAllow: '127.0.0.1/32', via }] };
        const { stdout } = await promisify(execFile)(
          path.join(ROOT, 'node_modules/.bin/node'),
          ['--import', 'tsx', path.join(ROOT, 'test/support/egress-probe.ts'), JSON.stringify(spec)],
          {
            cwd: ROOT,
            timeout: 20_000,
            env: {
              ...process.env,
              NODE_USE_ENV_PROXY: '1',
              HTTP_PROXY: proxy.url,
              http_proxy: proxy.url,
              NO_PROXY: '',
              no_proxy: '',
            },
          },
        );
        return (JSON.parse(stdout) as ProbeReport)[0];
      };
      try {
        expect(await run('global-agent')).toMatchObject({ status: 418 });
        expect([proxy.seen.connections, server.connections]).toEqual([1, 0]);
        expect(await run('egress')).toMatchObject({ status: 200, address: '127.0.0.1' });
        expect([proxy.seen.connections, server.connections]).toEqual([1, 1]);
      } finally {
        await proxy.close();
      }
    });
  });
});

const REDIRECT_STATUSES = [301, 302, 303, 307, 308];
