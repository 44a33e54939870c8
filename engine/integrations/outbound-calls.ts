import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { FILE, fileBody, fileBytes } from '../files/file-store';
import {
  httpSettings,
  INTEGRATION,
  INTEGRATION_ID_PREFIX,
  SECRET_PLACEHOLDER,
  secretNamesIn,
  smtpSettings,
} from '../kinds/integration';
import type { Database } from '../platform/database';
import { DomainError, InvalidInput, NotFound, TooManyRequests } from '../platform/errors';
import { isId } from '../platform/ids';
import { egressDuration, egressRequests } from '../platform/metrics';
import { isPlainObject } from '../platform/plain-object';
import type { Actor } from '../platform/principal';
import type { SecretsKeyring } from '../secrets/master-key';
import { readSecretValue } from '../secrets/secret-store';
import { recordAudit } from '../store/audit-trail';
import { type EntityRecord, toRecord, viewEntity } from '../store/entity-store';
import { egressFetch, joinUnderBase, type Query, type ResolvedAddress } from './egress-http';
import { checkAddress, EgressFailed, type EgressPolicy, EgressRefused } from './egress-policy';
import { SecretRedactor } from './secret-redaction';
import { checkMailMessage, MAIL_LIMITS, type MailAttachment, sendMail } from './smtp-send';

/** The most outbound calls (HTTP requests and e-mails) one run may make, all its steps together. */
export const RUN_CALLS_MAX = 1000;
/** Calls a step reserves from its run's budget at once. */
const SPEND_BLOCK = 10;

/** What a worker process brings to every outbound call: the keys, the policy, the resolver. */
export interface OutboundSettings {
  keyring: SecretsKeyring;
  policy: EgressPolicy;
  /** Every address of a host name; the system resolver unless a test gives its own. */
  lookup?: (hostname: string) => Promise<ResolvedAddress[]>;
}

/** A line the step's log shows for each call (the worker merges them into the step's logs). */
export interface OutboundLogLine {
  level: 'info' | 'warn';
  message: string;
  at: number;
  /** Marks the worker's own lines, which a script's console output cannot imitate. */
  source: 'egress';
}

/**
 * One step's outbound calls: its secrets (each read once per step, then kept in memory for the
 * step's life, and remembered by the redactor), its log lines, and the run's call budget.
 */
export class StepOutbound {
  readonly redactor = new SecretRedactor();
  readonly logs: OutboundLogLine[] = [];
  private readonly secrets = new Map<string, Promise<string>>();
  private readonly integrations = new Map<string, Promise<EntityRecord>>();
  /** Call records being written; the step awaits them (settle) before it records its own end. */
  private readonly writing = new Set<Promise<unknown>>();
  private writeError: unknown = null;
  private trialCalls = 0;
  /** Calls of the run's budget this step has reserved and not yet made. */
  private reserved = 0;

  constructor(
    private readonly db: Database,
    private readonly settings: OutboundSettings,
    readonly actor: Actor,
    readonly workspace: string,
    /** The step's name in audit records of its secret reads; null in a trial. */
    private readonly stepName: string,
    /** The run whose budget the calls count against; null for a "Try it" run (its own budget). */
    private readonly executionId: string | null,
  ) {}

  /** A secret's value by name in the step's workspace; the first read of each name is audited. */
  secret(name: unknown, purpose: string): Promise<string> {
    if (typeof name !== 'string') return Promise.reject(new InvalidInput('A secret is named by a string.'));
    let pending = this.secrets.get(name);
    if (!pending) {
      pending = readSecretValue(
        this.db,
        this.settings.keyring,
        this.actor,
        this.workspace,
        name,
        `${purpose} in step ${this.stepName}`,
      ).then((read) => {
        this.redactor.add(name, read.value);
        return read.value;
      });
      // A failed read is not kept: the next call tries again (the key file may have been restored).
      pending.catch(() => this.secrets.delete(name));
      this.secrets.set(name, pending);
    }
    return pending;
  }

  /**
   * An integration by id or name, read once per step (a step's calls go through the settings it
   * started with); a failed lookup is not kept.
   */
  integration(reference: unknown): Promise<EntityRecord> {
    const key = typeof reference === 'string' ? reference : '';
    let pending = this.integrations.get(key);
    if (!pending) {
      pending = findNamedIntegration(this.db, this.actor.principal.accountId, reference);
      pending.catch(() => this.integrations.delete(key));
      this.integrations.set(key, pending);
    }
    return pending;
  }

  /**
   * A call's audit record, written beside the call's answer going back to the script instead of
   * before it (one round trip less per call); settle() waits for every one.
   */
  defer(write: Promise<unknown>): void {
    const tracked = write.catch((error: unknown) => {
      this.writeError ??= error;
    });
    this.writing.add(tracked);
    void tracked.finally(() => this.writing.delete(tracked));
  }

  /** Waits for the call records still being written; throws the first that failed. */
  async settle(): Promise<void> {
    while (this.writing.size > 0) await Promise.all([...this.writing]);
    await this.release();
    if (this.writeError !== null) throw this.writeError;
  }

  /** Text with every `{{secret:NAME}}` filled in from the step's secrets. */
  async fill(text: string, purpose: string): Promise<string> {
    const names = secretNamesIn(text);
    if (names.length === 0) return text;
    const values = new Map<string, string>();
    for (const name of names) values.set(name, await this.secret(name, purpose));
    return text.replace(SECRET_PLACEHOLDER, (_, name: string) => values.get(name)!);
  }

  /**
   * Takes one call from the run's budget, or refuses the call. The step reserves calls in blocks of
   * SPEND_BLOCK (one statement, atomic across every step and worker of the run, so the run never
   * passes RUN_CALLS_MAX), and settle() gives back what it did not use, so the run's row counts the
   * calls made. A step whose process dies keeps its unused reservation: the run may then make a few
   * calls fewer, never more.
   */
  async spend(): Promise<void> {
    if (this.executionId === null) {
      this.trialCalls += 1;
      if (this.trialCalls > RUN_CALLS_MAX) throw tooMany();
      return;
    }
    if (this.reserved === 0) {
      const granted = (await this.db.raw(
        `UPDATE workflow_executions w SET egress_calls = w.egress_calls + g.n
           FROM (SELECT id, LEAST(?::int, ?::int - egress_calls) AS n
                   FROM workflow_executions WHERE id = ? FOR UPDATE) g
          WHERE w.id = g.id AND g.n > 0
         RETURNING g.n`,
        [SPEND_BLOCK, RUN_CALLS_MAX, this.executionId],
      )) as { rows: Array<{ n: number }> };
      this.reserved = granted.rows[0]?.n ?? 0;
      if (this.reserved === 0) throw tooMany();
    }
    this.reserved -= 1;
  }

  /** Gives the run back the calls this step reserved and did not make. */
  private async release(): Promise<void> {
    if (this.executionId === null || this.reserved === 0) return;
    const unused = this.reserved;
    this.reserved = 0;
    await this.db('workflow_executions').where({ id: this.executionId }).decrement('egress_calls', unused);
  }

  log(level: OutboundLogLine['level'], message: string): void {
    this.logs.push({ level, message: this.redactor.text(message), at: Date.now(), source: 'egress' });
  }

  get policy(): EgressPolicy {
    return this.settings.policy;
  }

  get lookup(): (hostname: string) => Promise<ResolvedAddress[]> {
    return this.settings.lookup ?? systemLookup;
  }
}

const tooMany = () =>
  new TooManyRequests(`This run has made ${RUN_CALLS_MAX} outbound calls, the most one run may make.`);

const systemLookup = async (hostname: string): Promise<ResolvedAddress[]> =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({
    address,
    family: family === 6 ? 6 : 4,
  }));

/**
 * The integration a script names, by id or by name, among the account's: another account's (or
 * none) is not found, and a name two integrations share must be given as an id.
 */
export async function findNamedIntegration(
  db: Database,
  accountId: string,
  reference: unknown,
): Promise<EntityRecord> {
  if (typeof reference !== 'string' || reference === '') {
    throw new InvalidInput('Name the integration by its id or its name (a string).');
  }
  const query = db('entities').where({ account_id: accountId, kind: INTEGRATION.kind });
  if (isId(INTEGRATION_ID_PREFIX, reference)) query.where({ id: reference });
  else query.where({ name: reference });
  const rows = await query.limit(2);
  if (rows.length === 0) throw new NotFound(`Integration ${reference} not found.`);
  if (rows.length > 1) {
    throw new InvalidInput(`Two or more integrations are named ${reference}: name it by its id.`);
  }
  return toRecord(rows[0]);
}

function integrationOfType(record: EntityRecord, type: 'HTTP' | 'SMTP', call: string): void {
  const actual = (record.body.type as string | undefined) ?? 'WEBHOOK';
  if (actual !== type) {
    throw new InvalidInput(
      `Integration ${record.name} (${record.id}) is a ${actual} integration: ${call} needs an ${type} one.`,
    );
  }
}

/** The outcome of a call for metrics and records: what the policy or the far side made of it. */
function outcomeOf(error: unknown): 'refused' | 'failed' {
  return error instanceof EgressRefused ? 'refused' : 'failed';
}

function recordCall(
  step: StepOutbound,
  db: Database,
  integration: EntityRecord,
  activity: string,
  detail: Record<string, unknown>,
): void {
  step.defer(
    recordAudit(db, step.actor, {
      operation: 'EXECUTE',
      activity: step.redactor.text(activity),
      entityId: integration.id,
      entityType: INTEGRATION.entityType,
      entityName: integration.name,
      workspace: step.workspace,
      after: step.redactor.value(detail),
    }),
  );
}

const RESPONSE_FORMS = ['json', 'text', 'base64'] as const;

/**
 * `sdk.request(integration, {method, path, query, headers, body, response})`: one HTTP call through
 * an HTTP integration. The integration's base_url and headers (their secrets filled in here, never
 * seen by the script) go with the script's path, query, headers and body, under the egress policy.
 * Any status is an answer `{status, headers, body}`; a refusal or a failure to get one throws.
 */
export async function requestThroughIntegration(
  db: Database,
  step: StepOutbound,
  reference: unknown,
  options: unknown,
): Promise<{ status: number; headers: Record<string, string>; body: unknown }> {
  const integration = await step.integration(reference);
  integrationOfType(integration, 'HTTP', 'sdk.request');
  const settings = httpSettings(integration.body);
  if (options !== undefined && options !== null && !isPlainObject(options)) {
    throw new InvalidInput('Pass the request as an object: {method, path, query, headers, body, response}.');
  }
  const given = (options ?? {}) as Record<string, unknown>;
  const method = (typeof given.method === 'string' ? given.method : 'GET').toUpperCase();
  if (!settings.allowedMethods.includes(method)) {
    throw new EgressRefused(
      `${method} is not among the methods integration ${integration.name} allows (${settings.allowedMethods.join(', ')})`,
    );
  }
  const response = given.response ?? 'json';
  if (!(RESPONSE_FORMS as readonly unknown[]).includes(response)) {
    throw new InvalidInput(`response must be one of ${RESPONSE_FORMS.join(', ')}.`);
  }
  if (given.path !== undefined && given.path !== null && typeof given.path !== 'string') {
    throw new InvalidInput('path must be a string.');
  }
  if (given.query !== undefined && given.query !== null && !isPlainObject(given.query)) {
    throw new InvalidInput('query must be an object of names to values.');
  }
  if (given.headers !== undefined && given.headers !== null && !isPlainObject(given.headers)) {
    throw new InvalidInput('headers must be an object of names to text values.');
  }
  const scriptHeaders = (given.headers ?? {}) as Record<string, unknown>;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(scriptHeaders)) {
    if (typeof value !== 'string') throw new InvalidInput(`headers.${name} must be a string.`);
    headers[name] = value;
  }
  let body: Buffer | null = null;
  if (given.body !== undefined && given.body !== null) {
    if (typeof given.body === 'string') body = Buffer.from(given.body, 'utf8');
    else {
      body = Buffer.from(JSON.stringify(given.body), 'utf8');
      if (!Object.keys(headers).some((n) => n.toLowerCase() === 'content-type')) {
        headers['content-type'] = 'application/json';
      }
    }
  }
  // The integration's headers come after the script's: the same name is the integration's.
  const secretHeaders: string[] = [];
  for (const [name, template] of Object.entries(settings.headers)) {
    for (const own of Object.keys(headers)) if (own.toLowerCase() === name.toLowerCase()) delete headers[own];
    if (secretNamesIn(template).length > 0) secretHeaders.push(name.toLowerCase());
    headers[name] = await step.fill(template, `header ${name} of integration ${integration.name}`);
  }
  const baseUrl = await step.fill(settings.baseUrl, `base_url of integration ${integration.name}`);
  const started = performance.now();
  let url: URL | null = null;
  try {
    url = joinUnderBase(
      baseUrl,
      (given.path as string | undefined) ?? undefined,
      (given.query ?? undefined) as Query | undefined,
    );
    await step.spend();
    const answer = await egressFetch(
      {
        method,
        url,
        headers,
        body,
        timeoutMs: settings.timeoutMs,
        sensitiveHeaders: ['authorization', 'cookie', 'proxy-authorization', ...secretHeaders],
      },
      step.policy,
      { lookup: step.lookup },
    );
    const ms = Math.round(performance.now() - started);
    egressRequests.inc({ kind: 'http', outcome: 'ok' });
    egressDuration.observe({ kind: 'http', outcome: 'ok' }, ms / 1000);
    const final = new URL(answer.url);
    step.log(
      'info',
      `[http] ${method} ${final.origin}${final.pathname} → ${answer.status}, ${answer.bytes} bytes, ${ms} ms (integration ${integration.name})`,
    );
    recordCall(step, db, integration, `${method} ${final.host}${final.pathname} → ${answer.status}`, {
      method,
      host: final.host,
      path: final.pathname,
      status: answer.status,
      bytes: answer.bytes,
      ms,
      redirects: answer.redirects,
    });
    return {
      status: answer.status,
      headers: answer.headers,
      body: decodeBody(answer.body, response as string, answer.headers),
    };
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const ms = Math.round(performance.now() - started);
    const outcome = outcomeOf(error);
    egressRequests.inc({ kind: 'http', outcome });
    egressDuration.observe({ kind: 'http', outcome }, ms / 1000);
    const where = url ? `${url.origin}${url.pathname}` : `integration ${integration.name}`;
    step.log('warn', `[http] ${method} ${where} ${outcome}: ${error.message}`);
    recordCall(
      step,
      db,
      integration,
      `${method} ${url ? `${url.host}${url.pathname}` : integration.name} ${outcome}`,
      {
        method,
        host: url?.host ?? null,
        path: url?.pathname ?? null,
        status: null,
        outcome,
        rule: error.message,
        ms,
      },
    );
    // The script sees the rule, with any secret in it replaced.
    throw new DomainError(error.status, step.redactor.text(`sdk.request: ${error.message}`));
  }
}

function decodeBody(bytes: Buffer, form: string, headers: Record<string, string>): unknown {
  if (form === 'base64') return bytes.toString('base64');
  const text = bytes.toString('utf8');
  if (form === 'text') return text;
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    throw new EgressFailed(
      `the answer is not JSON (content-type ${headers['content-type'] ?? 'none'}); ask for response: 'text' or 'base64'`,
    );
  }
}

/**
 * The address an SMTP connection goes to: the host resolved once, every address judged by the
 * policy, the first one connected to.
 */
export async function vettedAddress(step: StepOutbound, host: string): Promise<string> {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  const found: ResolvedAddress[] =
    isIP(bare) !== 0
      ? [{ address: bare, family: isIP(bare) === 6 ? 6 : 4 }]
      : await step.lookup(bare).catch((error: unknown) => {
          throw new EgressFailed(
            `${host} could not be resolved (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
          );
        });
  if (found.length === 0) throw new EgressFailed(`${host} could not be resolved (no addresses)`);
  for (const { address } of found) {
    try {
      checkAddress(address, step.policy);
    } catch (error) {
      if (error instanceof EgressRefused && isIP(bare) === 0) {
        throw new EgressRefused(`the host ${host} resolves to a refused address: ${error.message}`);
      }
      throw error;
    }
  }
  return found[0]!.address;
}

/** The files a message attaches, by id in the step's workspace, each read as a VIEW. */
async function attachmentsOf(db: Database, step: StepOutbound, ids: unknown): Promise<MailAttachment[]> {
  if (ids === undefined || ids === null) return [];
  if (!Array.isArray(ids)) throw new InvalidInput('attachments must be a list of file ids.');
  if (ids.length > MAIL_LIMITS.maxAttachments) {
    throw new InvalidInput(`attachments may name at most ${MAIL_LIMITS.maxAttachments} files.`);
  }
  let total = 0;
  const out: MailAttachment[] = [];
  for (const [index, id] of ids.entries()) {
    if (typeof id !== 'string') throw new InvalidInput(`attachments[${index}] must be a file id.`);
    const record = await viewEntity(db, step.actor, FILE, id, step.workspace);
    const body = fileBody(record);
    total += body.size;
    if (total > MAIL_LIMITS.maxAttachmentBytes) {
      throw new InvalidInput(`attachments hold more than ${MAIL_LIMITS.maxAttachmentBytes} bytes in all.`);
    }
    const pieces: Buffer[] = [];
    for await (const piece of fileBytes(db, record)) pieces.push(piece);
    out.push({
      // A file name may hold a slash or a control character; an attachment's name may not.
      filename: [...record.name]
        .map((c) => (c === '/' || c === '\\' || c < ' ' || c === '\u007f' ? '_' : c))
        .join(''),
      contentType: body.content_type,
      content: Buffer.concat(pieces),
    });
  }
  return out;
}

/**
 * `sdk.sendEmail(integration, {to, cc, subject, text, html, attachments})`: one message through an
 * SMTP integration, its password from the integration's secret, attachments from files of the run's
 * workspace. Answers the message id the message went out with, and which recipients the server took.
 */
export async function sendEmailThroughIntegration(
  db: Database,
  step: StepOutbound,
  reference: unknown,
  options: unknown,
): Promise<{ message_id: string; accepted: string[]; rejected: string[] }> {
  const integration = await step.integration(reference);
  integrationOfType(integration, 'SMTP', 'sdk.sendEmail');
  const settings = smtpSettings(integration.body);
  if (!isPlainObject(options)) {
    throw new InvalidInput('Pass the message as an object: {to, cc, subject, text, html, attachments}.');
  }
  const attachments = await attachmentsOf(db, step, options.attachments);
  const message = checkMailMessage({ ...options, attachments });
  const password =
    settings.passwordSecret === null
      ? null
      : await step.secret(settings.passwordSecret, `password of integration ${integration.name}`);
  const started = performance.now();
  const where = `${settings.host}:${settings.port}`;
  const recipients = message.to.length + message.cc.length;
  try {
    await step.spend();
    const sent = await sendMail(
      {
        host: settings.host,
        port: settings.port,
        security: settings.security,
        username: settings.username,
        password,
        from: settings.from,
        timeoutMs: settings.timeoutMs,
        extraCa: step.policy.extraCa,
      },
      message,
      (host) => vettedAddress(step, host),
    );
    const ms = Math.round(performance.now() - started);
    egressRequests.inc({ kind: 'smtp', outcome: 'ok' });
    egressDuration.observe({ kind: 'smtp', outcome: 'ok' }, ms / 1000);
    step.log(
      'info',
      `[smtp] message to ${recipients} recipient(s) through ${where}: accepted ${sent.accepted.length}, refused ${sent.rejected.length}, ${ms} ms (integration ${integration.name})`,
    );
    recordCall(step, db, integration, `Sent e-mail through ${where}`, {
      method: 'SMTP',
      host: where,
      recipients,
      accepted: sent.accepted.length,
      rejected: sent.rejected.length,
      attachments: message.attachments.length,
      ms,
    });
    return { message_id: sent.messageId, accepted: sent.accepted, rejected: sent.rejected };
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const ms = Math.round(performance.now() - started);
    const outcome = outcomeOf(error);
    egressRequests.inc({ kind: 'smtp', outcome });
    egressDuration.observe({ kind: 'smtp', outcome }, ms / 1000);
    step.log('warn', `[smtp] message through ${where} ${outcome}: ${error.message}`);
    recordCall(step, db, integration, `E-mail through ${where} ${outcome}`, {
      method: 'SMTP',
      host: where,
      recipients,
      outcome,
      rule: error.message,
      ms,
    });
    throw new DomainError(error.status, step.redactor.text(`sdk.sendEmail: ${error.message}`));
  }
}
