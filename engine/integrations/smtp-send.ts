import net from 'node:net';
import tls from 'node:tls';
import nodemailer from 'nodemailer';
import { DomainError, InvalidInput } from '../platform/errors';

/**
 * Sending one e-mail through an SMTP integration's server: what a workflow script may ask to send
 * (`checkMailMessage`) and the sending itself (`sendMail`), which connects only to the address the
 * egress policy vetted and keeps the integration's password out of every message it raises.
 */

export type SmtpSecurity = 'starttls' | 'tls' | 'none';

export interface SmtpTarget {
  host: string;
  port: number;
  security: SmtpSecurity;
  username: string | null;
  password: string | null;
  from: string;
  timeoutMs: number;
  /** PEM added to Node's default roots, for a server whose certificate a private CA signed. */
  extraCa: string | null;
}

export interface MailAttachment {
  filename: string;
  contentType: string;
  content: Buffer;
}

export interface MailMessage {
  to: string[];
  cc: string[];
  subject: string;
  text: string | null;
  html: string | null;
  attachments: MailAttachment[];
}

export interface MailSent {
  /** The Message-ID header the message went out with, angle brackets included. */
  messageId: string;
  accepted: string[];
  rejected: string[];
  /** The server's final reply, shortened. */
  response: string;
}

export interface MailLimits {
  maxTo: number;
  /** To and Cc together. */
  maxRecipients: number;
  maxSubjectLength: number;
  /** Each of text and html, in UTF-8 bytes. */
  maxBodyBytes: number;
  maxAttachments: number;
  /** All attachments together. */
  maxAttachmentBytes: number;
}

const MiB = 1024 * 1024;

export const MAIL_LIMITS: MailLimits = {
  maxTo: 50,
  maxRecipients: 100,
  // RFC 5322's line limit; nodemailer folds and encodes the header, so this bounds the text itself.
  maxSubjectLength: 998,
  maxBodyBytes: 2 * MiB,
  maxAttachments: 10,
  // Base64 grows this by a third on the wire, which common providers' 25 MiB ceilings still allow.
  maxAttachmentBytes: 10 * MiB,
};

/** The server refused or failed the message; the message names the server and why, never a secret. */
export class MailFailed extends DomainError {
  constructor(
    message: string,
    /** Worth retrying later: a timeout, a dropped connection or a 4xx reply. */
    readonly transient: boolean,
    readonly responseCode: number | null,
  ) {
    super(502, message);
  }
}

// --------------------------------------------------------------------------------------------------
// Addresses and messages

export interface Mailbox {
  name: string;
  address: string;
}

const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
// Unicode labels are allowed: nodemailer writes them as punycode.
const DOMAIN_LABEL = /^[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?$/u;
const CONTROL = /\p{Cc}/u;
const NAMED = /^(.*?)\s*<([^<>]*)>$/s;

/**
 * One mailbox, `local@domain` or `Name <local@domain>`, or why not. One entry is one address: a
 * comma or a group (`team: a@x;`) would make nodemailer's parser find several, so neither parses.
 */
function parseMailbox(entry: string): Mailbox | string {
  if (entry.length > 320) return 'is longer than 320 characters';
  if (CONTROL.test(entry)) return 'contains a control character (CR, LF, NUL, …)';
  if (entry.includes(',')) return 'holds a comma: give each address as its own entry';
  const trimmed = entry.trim();
  const named = NAMED.exec(trimmed);
  let name = named ? named[1]!.trim() : '';
  const address = named ? named[2]!.trim() : trimmed;
  if (name.length >= 2 && name.startsWith('"') && name.endsWith('"')) name = name.slice(1, -1);
  if (/["<>;:\\]/.test(name)) return 'has a name with one of " < > ; : \\';
  // nodemailer passes an encoded-word through as it is, so a reader would see it decoded: other text.
  if (name.includes('=?')) return 'has a name with an encoded word (=?…?=): give the text itself';
  const at = address.lastIndexOf('@');
  const local = address.slice(0, at);
  const domain = address.slice(at + 1);
  const labels = domain.split('.');
  const wellFormed =
    at > 0 &&
    local.length <= 64 &&
    LOCAL_PART.test(local) &&
    domain.length <= 253 &&
    labels.length >= 2 &&
    labels.every((label) => DOMAIN_LABEL.test(label));
  return wellFormed ? { name, address } : 'is not an address like a@example.com or "Name <a@example.com>"';
}

/** One address given as configuration (an integration's `from`), as nodemailer is handed it. */
export function checkMailbox(field: string, entry: string): Mailbox {
  const mailbox = parseMailbox(entry);
  if (typeof mailbox === 'string') throw new InvalidInput(`${field} ${mailbox}.`);
  return mailbox;
}

/** Keys are named in messages only when they look like identifiers, so a message stays short. */
function fieldName(key: string): string {
  return /^[A-Za-z_$][\w$]{0,39}$/.test(key) ? `"${key}"` : 'an unnamed field';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

function addressList(field: string, value: unknown, max: number, min: number): string[] {
  const entries = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(entries)) throw new InvalidInput(`${field} must be an address or a list of addresses.`);
  if (entries.length < min) throw new InvalidInput(`${field} needs at least ${min} address.`);
  if (entries.length > max) throw new InvalidInput(`${field} holds more than ${max} addresses.`);
  return entries.map((entry: unknown, i) => {
    const at = `${field}[${i}]`;
    if (typeof entry !== 'string') throw new InvalidInput(`${at} must be a string.`);
    checkMailbox(at, entry);
    return entry.trim();
  });
}

function bodyPart(field: string, value: unknown, maxBytes: number): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') throw new InvalidInput(`${field} must be a string.`);
  if (Buffer.byteLength(value) > maxBytes) {
    throw new InvalidInput(`${field} is larger than ${maxBytes} bytes.`);
  }
  return value;
}

const CONTENT_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}$/;

function attachmentList(value: unknown, limits: MailLimits): MailAttachment[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new InvalidInput('attachments must be a list.');
  if (value.length > limits.maxAttachments) {
    throw new InvalidInput(`attachments holds more than ${limits.maxAttachments} files.`);
  }
  let total = 0;
  return value.map((item: unknown, i) => {
    const at = `attachments[${i}]`;
    if (!isRecord(item)) throw new InvalidInput(`${at} must be an object.`);
    const { filename, contentType, content } = item;
    if (typeof filename !== 'string' || filename.trim() === '' || filename.length > 255) {
      throw new InvalidInput(`${at}.filename must be a name of 1 to 255 characters.`);
    }
    if (CONTROL.test(filename) || /[/\\]/.test(filename)) {
      throw new InvalidInput(`${at}.filename must not contain a control character or a slash.`);
    }
    if (typeof contentType !== 'string' || !CONTENT_TYPE.test(contentType)) {
      throw new InvalidInput(`${at}.contentType must be a media type such as text/csv.`);
    }
    if (!Buffer.isBuffer(content)) throw new InvalidInput(`${at}.content must be bytes.`);
    total += content.length;
    if (total > limits.maxAttachmentBytes) {
      throw new InvalidInput(`attachments are larger than ${limits.maxAttachmentBytes} bytes together.`);
    }
    return { filename, contentType, content };
  });
}

const MESSAGE_FIELDS = new Set(['to', 'cc', 'subject', 'text', 'html', 'attachments']);

/**
 * What a script asked to send, checked: a refusal is an `InvalidInput` naming the field, never
 * quoting the value (a script may pass megabytes, or text that was never meant to be shown).
 * Attachments arrive already resolved from file ids to bytes.
 */
export function checkMailMessage(input: unknown, limits: MailLimits = MAIL_LIMITS): MailMessage {
  if (!isRecord(input)) {
    throw new InvalidInput('The e-mail must be an object with to, subject and text or html.');
  }
  for (const key of Object.keys(input)) {
    // An unknown key is most likely a field we do not offer (bcc, replyTo): silently dropping it
    // would send something other than what the script meant.
    if (!MESSAGE_FIELDS.has(key)) {
      throw new InvalidInput(`The e-mail has ${fieldName(key)}, which is not offered.`);
    }
  }
  const to = addressList('to', input.to, limits.maxTo, 1);
  const cc =
    input.cc === undefined || input.cc === null ? [] : addressList('cc', input.cc, limits.maxRecipients, 0);
  if (to.length + cc.length > limits.maxRecipients) {
    throw new InvalidInput(`to and cc hold more than ${limits.maxRecipients} addresses together.`);
  }
  const { subject } = input;
  if (typeof subject !== 'string' || subject.trim() === '') {
    throw new InvalidInput('subject must be a non-empty string.');
  }
  if (subject.length > limits.maxSubjectLength) {
    throw new InvalidInput(`subject is longer than ${limits.maxSubjectLength} characters.`);
  }
  // A line break would end the header and let the rest be read as headers or body; a tab is allowed.
  if (/[^\P{Cc}\t]/u.test(subject)) {
    throw new InvalidInput('subject must not contain a line break or control character.');
  }
  const text = bodyPart('text', input.text, limits.maxBodyBytes);
  const html = bodyPart('html', input.html, limits.maxBodyBytes);
  if (text === null && html === null) throw new InvalidInput('The e-mail needs text or html.');
  return { to, cc, subject, text, html, attachments: attachmentList(input.attachments, limits) };
}

// --------------------------------------------------------------------------------------------------
// Sending

/**
 * The EHLO name. nodemailer would send the machine's host name where it is a full domain name,
 * telling every server we reach about our hosts; this address literal is its own fallback, which
 * servers accept.
 */
const EHLO_NAME = '[127.0.0.1]';

/**
 * Sends `message` through the target's server. `connectTo` is the egress policy: it resolves the
 * host once and answers the address to connect to, or throws (its error reaches the caller as it
 * is). TLS still names and verifies `target.host`, so a vetted address cannot stand in for it.
 */
export async function sendMail(
  target: SmtpTarget,
  message: MailMessage,
  connectTo: (host: string) => Promise<string>,
  /** A Message-ID of the caller's (an alert's, the same on every attempt); nodemailer makes one otherwise. */
  options: { messageId?: string } = {},
): Promise<MailSent> {
  const from = checkMailbox("The integration's from address", target.from);
  const address = await connectTo(target.host);
  // Given a name, nodemailer would look it up itself, past the policy.
  if (net.isIP(address) === 0) throw new Error('connectTo must answer an IP address.');
  const hostIsIp = net.isIP(target.host) !== 0;
  const auth =
    target.username !== null && target.password !== null
      ? { user: target.username, pass: target.password }
      : undefined;
  const transport = nodemailer.createTransport({
    host: address,
    port: target.port,
    secure: target.security === 'tls',
    requireTLS: target.security === 'starttls',
    ignoreTLS: target.security === 'none',
    name: EHLO_NAME,
    // SNI carries names only (RFC 6066); verification below covers an IP literal as well.
    servername: hostIsIp ? undefined : target.host,
    tls: {
      servername: hostIsIp ? undefined : target.host,
      rejectUnauthorized: true,
      checkServerIdentity: (_connectedTo, cert) => tls.checkServerIdentity(target.host, cert),
      // 'default' keeps NODE_EXTRA_CA_CERTS and, under --use-system-ca, the system's store.
      ca: target.extraCa === null ? undefined : [...tls.getCACertificates('default'), target.extraCa],
    },
    auth,
    // Configured credentials are used or the send fails: a server that hides AUTH (or a path that
    // strips it) must not get the message unauthenticated.
    forceAuth: auth !== undefined,
    connectionTimeout: target.timeoutMs,
    greetingTimeout: target.timeoutMs,
    socketTimeout: target.timeoutMs,
    logger: false,
    debug: false,
    transactionLog: false,
    // Content is bytes we hand over; nothing in a message may make nodemailer read a file or a URL.
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  try {
    const info = await transport.sendMail({
      ...(options.messageId ? { messageId: options.messageId } : {}),
      from,
      to: message.to.map((entry, i) => checkMailbox(`to[${i}]`, entry)),
      cc: message.cc.map((entry, i) => checkMailbox(`cc[${i}]`, entry)),
      subject: message.subject,
      text: message.text ?? undefined,
      html: message.html ?? undefined,
      attachments: message.attachments.map((file) => ({
        filename: file.filename,
        contentType: file.contentType,
        content: file.content,
        contentDisposition: 'attachment' as const,
      })),
    });
    const redact = redactor(target);
    return {
      messageId: info.messageId,
      accepted: [...info.accepted],
      rejected: [...info.rejected],
      response: redact(info.response),
    };
  } catch (error) {
    throw mailFailed(error, target);
  } finally {
    transport.close();
  }
}

// --------------------------------------------------------------------------------------------------
// Failures

/** What nodemailer puts on its errors (dist/cjs/errors.d.ts), all optional. */
interface SmtpErrorFields {
  code?: unknown;
  originalCode?: unknown;
  responseCode?: unknown;
  response?: unknown;
  command?: unknown;
  timeoutType?: unknown;
}

/** OpenSSL's and Node's codes for a certificate that does not check out. */
const CERTIFICATE_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REJECTED',
  'CERT_REVOKED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'HOSTNAME_MISMATCH',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

const REFUSED = new Set(['ECONNREFUSED']);
const UNREACHABLE = new Set(['EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/**
 * Hides the password, and the base64 forms AUTH PLAIN and AUTH LOGIN send it in, from a server's
 * reply (a server may echo what it got), and keeps the reply short and printable.
 */
function redactor(target: SmtpTarget): (reply: string) => string {
  const secrets: string[] = [];
  if (target.password) {
    const user = target.username ?? '';
    secrets.push(
      target.password,
      Buffer.from(target.password).toString('base64'),
      Buffer.from(`\u0000${user}\u0000${target.password}`).toString('base64'),
      Buffer.from(`${user}\u0000${user}\u0000${target.password}`).toString('base64'),
    );
  }
  return (reply) => {
    let text = reply.replace(/[^\x20-\x7e]+/g, ' ').trim();
    for (const secret of secrets) text = text.split(secret).join('[redacted]');
    return text.length > 200 ? `${text.slice(0, 199)}…` : text;
  };
}

function codeOf(value: unknown): string | null {
  return typeof value === 'string' && /^[A-Z][A-Z0-9_]{1,63}$/.test(value) ? value : null;
}

/** Our own sentence for a nodemailer error: its fields, never its message (which quotes the server). */
function mailFailed(error: unknown, target: SmtpTarget): MailFailed {
  const fields: SmtpErrorFields = typeof error === 'object' && error !== null ? error : {};
  const host = net.isIPv6(target.host) ? `[${target.host}]` : target.host;
  const where = `SMTP ${host}:${target.port}`;
  const code = codeOf(fields.code);
  const cause = codeOf(fields.originalCode) ?? code;
  const responseCode =
    typeof fields.responseCode === 'number' && fields.responseCode >= 200 && fields.responseCode < 600
      ? fields.responseCode
      : null;
  const reply = typeof fields.response === 'string' ? redactor(target)(fields.response) : '';
  // The enhanced status code (RFC 3463) says more than the basic one and carries nothing secret.
  const enhanced = /^\d{3}[ -]([245]\.\d{1,3}\.\d{1,3})\b/.exec(reply)?.[1];
  const status = responseCode === null ? '' : ` (${responseCode}${enhanced ? ` ${enhanced}` : ''})`;
  const said = reply === '' ? '' : `: ${reply}`;
  const transientReply = responseCode !== null && responseCode < 500;

  if (cause !== null && CERTIFICATE_CODES.has(cause)) {
    return new MailFailed(`${where}: the certificate could not be verified (${cause}).`, false, null);
  }
  switch (code) {
    case 'ETIMEDOUT':
      return fields.timeoutType === 'CONNECT_TIMEOUT'
        ? new MailFailed(`${where} could not be reached within ${target.timeoutMs} ms.`, true, null)
        : new MailFailed(`${where} did not answer within ${target.timeoutMs} ms.`, true, null);
    case 'EAUTH':
    case 'ENOAUTH':
      // Only the codes: during AUTH a server may quote the credentials back.
      return new MailFailed(`${where} refused the login${status}.`, transientReply, responseCode);
    case 'ETLS':
      if (fields.command === 'STARTTLS' && responseCode !== null) {
        return new MailFailed(`${where} does not offer STARTTLS${status}.`, transientReply, responseCode);
      }
      return new MailFailed(
        `${where}: the TLS handshake failed${cause === code ? '' : ` (${cause})`}.`,
        true,
        null,
      );
    case 'EENVELOPE':
      if (fields.command === 'MAIL FROM') {
        return new MailFailed(`${where} refused the sender${said}`, transientReply, responseCode);
      }
      if (fields.command === 'DATA') {
        return new MailFailed(`${where} refused the message${said}`, transientReply, responseCode);
      }
      return new MailFailed(`${where} refused every recipient${said}`, transientReply, responseCode);
    case 'EMESSAGE':
      return new MailFailed(`${where} refused the message${said}`, transientReply, responseCode);
    case 'EPROTOCOL':
      return new MailFailed(`${where} answered outside the SMTP protocol.`, false, null);
  }
  if (cause !== null && REFUSED.has(cause)) {
    return new MailFailed(`${where} refused the connection.`, true, null);
  }
  if (cause !== null && UNREACHABLE.has(cause)) {
    return new MailFailed(`${where} could not be reached (${cause}).`, true, null);
  }
  if (cause !== null && cause.startsWith('ERR_SSL')) {
    return new MailFailed(`${where}: the TLS handshake failed (${cause}).`, false, null);
  }
  if (responseCode !== null) {
    return new MailFailed(`${where} failed${said}`, transientReply, responseCode);
  }
  return new MailFailed(
    `${where} closed the connection unexpectedly${cause === null ? '' : ` (${cause})`}.`,
    true,
    null,
  );
}
