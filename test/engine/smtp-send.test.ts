import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { type AddressObject, simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import {
  checkMailbox,
  checkMailMessage,
  MAIL_LIMITS,
  type Mailbox,
  MailFailed,
  type MailMessage,
  sendMail,
  type SmtpTarget,
} from '../../engine/integrations/smtp-send';
import { InvalidInput } from '../../engine/platform/errors';

/**
 * Sending mail through an SMTP integration, against real SMTP servers (smtp-server) on loopback:
 * implicit TLS, STARTTLS and plain, with the committed test certificates (test/fixtures/tls).
 */

const TLS_DIR = path.join(__dirname, '..', 'fixtures', 'tls');
const pem = (name: string) => readFileSync(path.join(TLS_DIR, name), 'utf8');
const CA = pem('ca.pem');
const SERVER = { key: pem('server.key'), cert: pem('server.pem') };
const UNTRUSTED = { key: pem('untrusted.key'), cert: pem('untrusted.pem') };

const USER = 'reports@pas.example';
const PASSWORD = 'hunter2-Secret!';

interface Delivery {
  secure: boolean;
  servername: string | null;
  localAddress: string;
  ehloName: string;
  user: unknown;
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
}

interface TestServer {
  port: number;
  /** What the server saw, in order: connect, auth, mail, rcpt, data. */
  events: string[];
  logins: Array<{ method: string; username: string | undefined }>;
  deliveries: Delivery[];
}

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  jest.restoreAllMocks();
  await Promise.all(cleanups.splice(0).map((close) => close()));
});

/**
 * A real SMTP server on `host`, port 0. It accepts USER/PASSWORD over PLAIN and LOGIN and refuses
 * any other login with a reply that quotes the password back, as a careless server might.
 */
async function smtpServer(options: SMTPServerOptions = {}, host = '127.0.0.1'): Promise<TestServer> {
  const state: TestServer = { port: 0, events: [], logins: [], deliveries: [] };
  const server = new SMTPServer({
    logger: false,
    disableReverseLookup: true,
    closeTimeout: 100,
    ...SERVER,
    onConnect(_session, callback) {
      state.events.push('connect');
      callback();
    },
    onAuth(auth, _session, callback) {
      state.events.push('auth');
      state.logins.push({ method: auth.method, username: auth.username });
      if (auth.username === USER && auth.password === PASSWORD) {
        return callback(null, { user: auth.username });
      }
      const refusal: Error & { responseCode?: number } = new Error(
        `Invalid password ${String(auth.password)} for ${String(auth.username)}`,
      );
      refusal.responseCode = 535;
      callback(refusal);
    },
    onMailFrom(address, _session, callback) {
      state.events.push('mail');
      if (address.address.startsWith('blocked@')) {
        const refusal: Error & { responseCode?: number } = new Error(
          `5.7.1 ${USER} (password ${PASSWORD}) may not send as ${address.address}`,
        );
        refusal.responseCode = 553;
        return callback(refusal);
      }
      callback();
    },
    onRcptTo(address, _session, callback) {
      state.events.push('rcpt');
      if (address.address.startsWith('nobody@')) {
        const refusal: Error & { responseCode?: number } = new Error('5.1.1 No such user here');
        refusal.responseCode = 550;
        return callback(refusal);
      }
      callback();
    },
    onData(stream, session, callback) {
      state.events.push('data');
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        state.deliveries.push({
          secure: session.secure,
          servername: session.servername || null,
          localAddress: session.localAddress,
          ehloName: session.hostNameAppearsAs,
          user: session.user,
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          raw: Buffer.concat(chunks),
        });
        callback(null, 'Queued as TEST-1');
      });
    },
    ...options,
  });
  // A client that drops the handshake (a certificate it refuses) is an 'error' on the server.
  server.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  state.port = (server.server.address() as AddressInfo).port;
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return state;
}

/** A TCP server that accepts and never says a word: no greeting, ever. */
async function silentServer(): Promise<{ port: number; accepted: () => number }> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as AddressInfo).port, accepted: () => accepted };
}

function target(port: number, overrides: Partial<SmtpTarget> = {}): SmtpTarget {
  return {
    host: 'smtp.test',
    port,
    security: 'tls',
    username: USER,
    password: PASSWORD,
    from: 'PAS Reports <reports@pas.example>',
    timeoutMs: 5000,
    extraCa: CA,
    ...overrides,
  };
}

/** The egress policy as tests see it: the test names map to loopback, anything else is refused. */
function loopbackPolicy(address = '127.0.0.1') {
  return jest.fn(async (host: string) => {
    if (host.endsWith('.test')) return address;
    throw new Error(`no test address for ${host}`);
  });
}

const simpleMessage: MailMessage = {
  to: ['ana@example.com'],
  cc: [],
  subject: 'Hello',
  text: 'Hi Ana.',
  html: null,
  attachments: [],
};

async function failure(promise: Promise<unknown>): Promise<MailFailed> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(MailFailed);
  return error as MailFailed;
}

function addresses(header: AddressObject | AddressObject[] | undefined) {
  return [header ?? []]
    .flat()
    .flatMap((object) => object.value.map(({ name, address }) => ({ name, address })));
}

describe('sendMail through a real SMTP server', () => {
  test('implicit TLS: text, html, cc and two attachments arrive as sent, under the returned Message-ID', async () => {
    // A host name that would show up in EHLO or the message if nodemailer were left to its defaults.
    jest.spyOn(os, 'hostname').mockReturnValue('build-7.corp.internal');
    const server = await smtpServer({ secure: true });
    const connectTo = loopbackPolicy();
    const binary = randomBytes(100 * 1024);
    const csv = Buffer.from('security,weight\nÖMV AG,0.25\n', 'utf8');
    const message = checkMailMessage({
      to: ['Ana Lima <ana@example.com>', 'bo@example.com'],
      cc: ['"Carla Ödegaard" <carla@example.org>'],
      subject: 'Q3 risk report — ready',
      text: 'The report is attached.',
      html: '<p>The report is <b>attached</b>.</p>',
      attachments: [
        { filename: 'weights.bin', contentType: 'application/octet-stream', content: binary },
        { filename: 'Übersicht.csv', contentType: 'text/csv', content: csv },
      ],
    });

    const sent = await sendMail(target(server.port), message, connectTo);

    expect(connectTo.mock.calls).toEqual([['smtp.test']]);
    expect(server.deliveries).toHaveLength(1);
    const delivery = server.deliveries[0]!;
    expect(delivery).toMatchObject({
      secure: true,
      servername: 'smtp.test',
      localAddress: '127.0.0.1',
      ehloName: '[127.0.0.1]',
      user: USER,
      mailFrom: 'reports@pas.example',
      rcptTo: ['ana@example.com', 'bo@example.com', 'carla@example.org'],
    });
    expect(server.logins).toEqual([{ method: 'PLAIN', username: USER }]);

    const parsed = await simpleParser(delivery.raw);
    expect(addresses(parsed.from)).toEqual([{ name: 'PAS Reports', address: 'reports@pas.example' }]);
    expect(addresses(parsed.to)).toEqual([
      { name: 'Ana Lima', address: 'ana@example.com' },
      { name: '', address: 'bo@example.com' },
    ]);
    expect(addresses(parsed.cc)).toEqual([{ name: 'Carla Ödegaard', address: 'carla@example.org' }]);
    expect(parsed.headers.has('bcc')).toBe(false);
    expect(parsed.subject).toBe('Q3 risk report — ready');
    expect(parsed.text?.trim()).toBe('The report is attached.');
    expect(parsed.html).toBe('<p>The report is <b>attached</b>.</p>');
    expect(
      parsed.attachments.map((file) => ({
        filename: file.filename,
        contentType: file.contentType,
        disposition: file.contentDisposition,
        content: file.content,
      })),
    ).toEqual([
      {
        filename: 'weights.bin',
        contentType: 'application/octet-stream',
        disposition: 'attachment',
        content: binary,
      },
      { filename: 'Übersicht.csv', contentType: 'text/csv', disposition: 'attachment', content: csv },
    ]);

    expect(sent).toEqual({
      messageId: parsed.messageId,
      accepted: ['ana@example.com', 'bo@example.com', 'carla@example.org'],
      rejected: [],
      response: '250 Queued as TEST-1',
    });
    expect(sent.messageId).toMatch(/^<[^<>@\s]+@pas\.example>$/);
    expect(delivery.raw.toString('latin1')).not.toContain('corp.internal');
  });

  test('STARTTLS: upgrades before it logs in with AUTH LOGIN and sends', async () => {
    const server = await smtpServer({ authMethods: ['LOGIN'] });
    const sent = await sendMail(
      target(server.port, { security: 'starttls' }),
      simpleMessage,
      loopbackPolicy(),
    );
    expect(server.logins).toEqual([{ method: 'LOGIN', username: USER }]);
    expect(server.deliveries.map(({ secure, servername, user }) => ({ secure, servername, user }))).toEqual([
      { secure: true, servername: 'smtp.test', user: USER },
    ]);
    expect(sent.accepted).toEqual(['ana@example.com']);
  });

  test('plain: no TLS even where the server offers STARTTLS, and no login without credentials', async () => {
    const server = await smtpServer({ authOptional: true });
    const plain = target(server.port, { security: 'none', username: null, password: null, extraCa: null });
    await sendMail(plain, simpleMessage, loopbackPolicy());
    expect(server.deliveries.map(({ secure, user }) => ({ secure, user }))).toEqual([
      { secure: false, user: undefined },
    ]);
    expect(server.events).toEqual(['connect', 'mail', 'rcpt', 'data']);
  });

  test('the connection goes to the address connectTo answered, IPv6 included', async () => {
    const server = await smtpServer({ secure: true }, '::1');
    const connectTo = loopbackPolicy('::1');
    await sendMail(target(server.port), simpleMessage, connectTo);
    expect(connectTo).toHaveBeenCalledTimes(1);
    expect(server.deliveries.map(({ localAddress, servername }) => ({ localAddress, servername }))).toEqual([
      { localAddress: '::1', servername: 'smtp.test' },
    ]);
  });

  test('a wrong password is refused with a message that carries no trace of it', async () => {
    const server = await smtpServer({ secure: true });
    const wrong = 'not-the-Password-42';
    const error = await failure(
      sendMail(target(server.port, { password: wrong }), simpleMessage, loopbackPolicy()),
    );
    expect(error.message).toBe(`SMTP smtp.test:${server.port} refused the login (535).`);
    expect(error).toMatchObject({ status: 502, responseCode: 535, transient: false });
    const traces = [
      wrong,
      Buffer.from(wrong).toString('base64'),
      Buffer.from(`\0${USER}\0${wrong}`).toString('base64'),
    ];
    for (const trace of traces) {
      expect(JSON.stringify({ ...error, message: error.message })).not.toContain(trace);
    }
    expect(server.events).toEqual(['connect', 'auth']);
  });

  test('configured credentials are used or the send fails: no quiet fallback to sending without login', async () => {
    const server = await smtpServer({ secure: true, disabledCommands: ['AUTH'], authOptional: true });
    const error = await failure(sendMail(target(server.port), simpleMessage, loopbackPolicy()));
    expect(error.message).toMatch(
      new RegExp(`^SMTP smtp\\.test:${server.port} refused the login \\(5\\d\\d\\b`),
    );
    expect(server.events).toEqual(['connect']);
  });

  test('a server reply that quotes the password is shown with the password redacted', async () => {
    const server = await smtpServer({ secure: true });
    const error = await failure(
      sendMail(target(server.port, { from: 'blocked@pas.example' }), simpleMessage, loopbackPolicy()),
    );
    expect(error.message).toBe(
      `SMTP smtp.test:${server.port} refused the sender: 553 5.7.1 ${USER} (password [redacted]) may not send as blocked@pas.example`,
    );
    expect(error).toMatchObject({ status: 502, responseCode: 553, transient: false });
  });

  test('starttls is refused before any login or MAIL FROM when the server does not offer it', async () => {
    const server = await smtpServer({ disabledCommands: ['STARTTLS'], allowInsecureAuth: true });
    const error = await failure(
      sendMail(target(server.port, { security: 'starttls' }), simpleMessage, loopbackPolicy()),
    );
    expect(error.message).toMatch(
      new RegExp(`^SMTP smtp\\.test:${server.port} does not offer STARTTLS \\(5\\d\\d\\b`),
    );
    expect(server.events).toEqual(['connect']);
    expect(server.deliveries).toEqual([]);
  });

  test.each([
    ['implicit TLS', 'tls', true],
    ['STARTTLS', 'starttls', false],
  ] as const)(
    '%s: a self-signed certificate is refused before anything is sent',
    async (_name, security, secure) => {
      const server = await smtpServer({ secure, ...UNTRUSTED });
      const error = await failure(
        sendMail(target(server.port, { security }), simpleMessage, loopbackPolicy()),
      );
      expect(error.message).toBe(
        `SMTP smtp.test:${server.port}: the certificate could not be verified (DEPTH_ZERO_SELF_SIGNED_CERT).`,
      );
      expect(server.logins).toEqual([]);
      expect(server.deliveries).toEqual([]);
    },
  );

  test('without extraCa the test CA is not trusted: verification uses the default roots only', async () => {
    const server = await smtpServer({ secure: true });
    const error = await failure(
      sendMail(target(server.port, { extraCa: null }), simpleMessage, loopbackPolicy()),
    );
    expect(error.message).toBe(
      `SMTP smtp.test:${server.port}: the certificate could not be verified (UNABLE_TO_VERIFY_LEAF_SIGNATURE).`,
    );
  });

  test('the certificate must name the integration host, not just the address connected to', async () => {
    // server.pem names 127.0.0.1, so verifying against the vetted address would wrongly pass.
    const server = await smtpServer({ secure: true });
    const error = await failure(
      sendMail(target(server.port, { host: 'other.test' }), simpleMessage, loopbackPolicy()),
    );
    expect(error.message).toBe(
      `SMTP other.test:${server.port}: the certificate could not be verified (ERR_TLS_CERT_ALTNAME_INVALID).`,
    );
    expect(server.deliveries).toEqual([]);
  });

  test('an IP address as host: no SNI, and the certificate must name that address', async () => {
    const server = await smtpServer({ secure: true }, '::1');
    await sendMail(target(server.port, { host: '::1' }), simpleMessage, async () => '::1');
    expect(server.deliveries.map(({ servername }) => servername)).toEqual([null]);

    // 192.0.2.10 (documentation range) is never dialled: the policy answers loopback for it.
    const elsewhere = await smtpServer({ secure: true });
    const error = await failure(
      sendMail(target(elsewhere.port, { host: '192.0.2.10' }), simpleMessage, async () => '127.0.0.1'),
    );
    expect(error.message).toBe(
      `SMTP 192.0.2.10:${elsewhere.port}: the certificate could not be verified (ERR_TLS_CERT_ALTNAME_INVALID).`,
    );
  });

  test('a server that never greets times out after timeoutMs', async () => {
    const silent = await silentServer();
    const started = Date.now();
    const error = await failure(
      sendMail(
        target(silent.port, { security: 'starttls', timeoutMs: 300 }),
        simpleMessage,
        loopbackPolicy(),
      ),
    );
    const elapsed = Date.now() - started;
    expect(error.message).toBe(`SMTP smtp.test:${silent.port} did not answer within 300 ms.`);
    expect(error.transient).toBe(true);
    expect(silent.accepted()).toBe(1);
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(3000);
  });

  test('a refusal from the egress policy reaches the caller unchanged, and nothing connects', async () => {
    const server = await smtpServer({ secure: true });
    const refusal = new Error('egress: smtp.test resolves to a private address');
    const connectTo = jest.fn(async () => Promise.reject(refusal));
    await expect(sendMail(target(server.port), simpleMessage, connectTo)).rejects.toBe(refusal);
    expect(server.events).toEqual([]);
  });

  test('connectTo must answer an address: a name would let nodemailer resolve it past the policy', async () => {
    const server = await smtpServer({ secure: true });
    await expect(sendMail(target(server.port), simpleMessage, async () => 'localhost')).rejects.toThrow(
      'connectTo must answer an IP address.',
    );
    expect(server.events).toEqual([]);
  });

  test('a recipient the server refuses is reported; all refused is a failure quoting the reply', async () => {
    const server = await smtpServer({ secure: true });
    const some = await sendMail(
      target(server.port),
      { ...simpleMessage, to: ['ana@example.com', 'nobody@example.com'] },
      loopbackPolicy(),
    );
    expect([some.accepted, some.rejected]).toEqual([['ana@example.com'], ['nobody@example.com']]);

    const error = await failure(
      sendMail(target(server.port), { ...simpleMessage, to: ['nobody@example.com'] }, loopbackPolicy()),
    );
    expect(error.message).toBe(
      `SMTP smtp.test:${server.port} refused every recipient: 550 5.1.1 No such user here`,
    );
    expect(error).toMatchObject({ responseCode: 550, transient: false });
  });
});

describe('checkMailMessage', () => {
  const valid = { to: 'ana@example.com', subject: 'Hello', text: 'Hi.' };
  const file = (bytes: number) => ({
    filename: 'a.bin',
    contentType: 'application/octet-stream',
    content: Buffer.alloc(bytes),
  });
  const many = (n: number, domain = 'example.com') => Array.from({ length: n }, (_, i) => `u${i}@${domain}`);

  test('one address as a string becomes a list; absent fields become empty', () => {
    expect(checkMailMessage(valid)).toEqual({
      to: ['ana@example.com'],
      cc: [],
      subject: 'Hello',
      text: 'Hi.',
      html: null,
      attachments: [],
    });
    expect(
      checkMailMessage({ ...valid, to: many(50), cc: many(50, 'example.org'), text: null, html: '<p/>' }),
    ).toMatchObject({
      text: null,
      html: '<p/>',
    });
  });

  test.each<[string, Record<string, unknown>, string]>([
    [
      'CR/LF in the subject',
      { subject: 'Hi\r\nBcc: eve@example.com' },
      'subject must not contain a line break or control character.',
    ],
    [
      'LF in an address',
      { to: ['ana@example.com\nBcc: eve@example.com'] },
      'to[0] contains a control character (CR, LF, NUL, …).',
    ],
    [
      'NUL in a cc address',
      { cc: ['a@example.com', 'b\0@example.com'] },
      'cc[1] contains a control character (CR, LF, NUL, …).',
    ],
    [
      'two addresses in one entry',
      { to: 'ana@example.com, eve@example.com' },
      'to[0] holds a comma: give each address as its own entry.',
    ],
    [
      'a group in one entry',
      { to: 'team: eve@example.com; <ana@example.com>' },
      'to[0] has a name with one of " < > ; : \\.',
    ],
    [
      'an encoded word as a name',
      { cc: ['=?utf-8?q?CEO?= <eve@example.com>'] },
      'cc[0] has a name with an encoded word (=?…?=): give the text itself.',
    ],
    [
      'no domain',
      { to: ['ana@localhost'] },
      'to[0] is not an address like a@example.com or "Name <a@example.com>".',
    ],
    ['no recipients', { to: [] }, 'to needs at least 1 address.'],
    ['no to at all', { to: undefined }, 'to must be an address or a list of addresses.'],
    ['51 addresses in to', { to: many(51) }, 'to holds more than 50 addresses.'],
    [
      '101 recipients in all',
      { to: many(50), cc: many(51, 'example.org') },
      'to and cc hold more than 100 addresses together.',
    ],
    ['an empty subject', { subject: '  ' }, 'subject must be a non-empty string.'],
    ['a subject of 999 characters', { subject: 'x'.repeat(999) }, 'subject is longer than 998 characters.'],
    ['no body', { text: undefined }, 'The e-mail needs text or html.'],
    ['an empty body', { text: '', html: null }, 'The e-mail needs text or html.'],
    [
      'a body over the limit',
      { html: 'x'.repeat(MAIL_LIMITS.maxBodyBytes + 1) },
      `html is larger than ${MAIL_LIMITS.maxBodyBytes} bytes.`,
    ],
    [
      '11 attachments',
      { attachments: Array.from({ length: 11 }, () => file(1)) },
      'attachments holds more than 10 files.',
    ],
    [
      'attachments over 10 MiB',
      { attachments: [file(5 * 1024 * 1024), file(5 * 1024 * 1024 + 1)] },
      'attachments are larger than 10485760 bytes together.',
    ],
    [
      'an attachment of text, not bytes',
      { attachments: [{ ...file(1), content: 'abc' }] },
      'attachments[0].content must be bytes.',
    ],
    [
      'a header in a content type',
      { attachments: [{ ...file(1), contentType: 'text/plain\r\nX: y' }] },
      'attachments[0].contentType must be a media type such as text/csv.',
    ],
    [
      'a path as filename',
      { attachments: [{ ...file(1), filename: '../etc/passwd' }] },
      'attachments[0].filename must not contain a control character or a slash.',
    ],
    ['a field not offered', { bcc: ['eve@example.com'] }, 'The e-mail has "bcc", which is not offered.'],
  ])('refuses %s', (_case, change, message) => {
    const attempt = () => checkMailMessage({ ...valid, ...change });
    expect(attempt).toThrow(InvalidInput);
    expect(attempt).toThrow(message);
    expect(() => checkMailMessage({ ...valid, ...change })).toThrow(new InvalidInput(message));
  });

  test('refuses what is not an object, without quoting a large value back', () => {
    expect(() => checkMailMessage('to: ana@example.com')).toThrow(
      'The e-mail must be an object with to, subject and text or html.',
    );
    const huge = `${'x'.repeat(100_000)}\n`;
    for (const change of [{ subject: huge }, { to: huge }, { [huge]: 1 }]) {
      const error = (() => {
        try {
          checkMailMessage({ ...valid, ...change });
        } catch (caught) {
          return caught as Error;
        }
        throw new Error('accepted');
      })();
      expect(error).toBeInstanceOf(InvalidInput);
      expect(error.message.length).toBeLessThan(120);
    }
  });

  test('property: an accepted entry is one mailbox, and nodemailer writes it so that it parses back the same', async () => {
    // Mostly well-shaped entries, with the characters that could split or extend a header mixed in.
    const hostile = ['"', ',', ';', ':', '<', '>', '@', '\\', '(', ')', '\r\n', '\0', ' '];
    const word = (...parts: string[]) =>
      fc
        .array(
          fc.oneof(
            { arbitrary: fc.constantFrom(...parts), weight: 8 },
            { arbitrary: fc.constantFrom(...hostile), weight: 1 },
          ),
          { maxLength: 5 },
        )
        .map((chosen) => chosen.join(''));
    const name = word('Ana', ' ', 'Lima', 'Ö', '=?utf-8?q?x?=', "O'Brien", '.', '-');
    const local = word('ana', 'b.c', '+tag', '-', "'").filter((text) => text !== '');
    const domain = fc.constantFrom(
      'example.com',
      'ex-ample.org',
      'bücher.example',
      'localhost',
      '-x.com',
      'a..b',
    );
    const entry = fc
      .tuple(fc.boolean(), name, local, domain)
      .map(([named, n, l, d]) => (named ? `${n} <${l}@${d}>` : `${l}@${d}`));
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(entry, async (candidate) => {
        let mailbox: Mailbox;
        try {
          mailbox = checkMailbox('to[0]', candidate);
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidInput);
          return;
        }
        accepted += 1;
        expect(candidate).not.toMatch(/[\p{Cc},]/u);
        const raw = await new MailComposer({ from: 'a@example.com', to: [mailbox], subject: 's', text: 't' })
          .compile()
          .build();
        expect(addresses((await simpleParser(raw)).to)).toEqual([mailbox]);
      }),
      { numRuns: 300 },
    );
    expect(accepted).toBeGreaterThan(50);
  });
});
