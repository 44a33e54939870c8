import type { Database } from '../platform/database';
import { type EntityRecord, findEntity } from '../store/entity-store';
import { resourceKind } from '../store/resource-kind';
import { Type } from '@sinclair/typebox';
import { Conflict, InvalidInput } from '../platform/errors';
import { Nullable } from '../store/field-schemas';
import { isId } from '../platform/ids';

/**
 * WEBHOOK receives payloads; HTTP and SMTP are how workflow scripts reach the outside world
 * (`sdk.request`, `sdk.sendEmail`): the integration holds the address and the authentication, and
 * the worker adds them when it sends, so a script never holds a credential it does not need.
 */
export const INTEGRATION_TYPES = ['WEBHOOK', 'HTTP', 'SMTP'] as const;
export type IntegrationType = (typeof INTEGRATION_TYPES)[number];
export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export const SMTP_SECURITY = ['starttls', 'tls', 'none'] as const;
export const INTEGRATION_TIMEOUT_DEFAULT_MS = 10_000;
export const INTEGRATION_TIMEOUT_MAX_MS = 60_000;
const HEADERS_MAX = 50;
const SECRET_NAME_TEXT = '[A-Za-z_][A-Za-z0-9_]{0,63}';
/** `{{secret:NAME}}`: where a header value (or a base URL's path) takes a secret's value at send time. */
export const SECRET_PLACEHOLDER = new RegExp(`\\{\\{secret:(${SECRET_NAME_TEXT})\\}\\}`, 'g');

/** The secret names a text refers to with `{{secret:NAME}}`, in order, each once. */
export function secretNamesIn(text: string): string[] {
  return [...new Set([...text.matchAll(SECRET_PLACEHOLDER)].map((m) => m[1]!))];
}

/**
 * Header names whose value is a credential: they must come from a secret, never be stored as typed
 * (the integration's body is shown to every reader of the account and kept in audit snapshots).
 */
const CREDENTIAL_HEADER =
  /^(authorization|proxy-authorization|cookie|x-api-key|api-key|x-auth-token|.*-token|.*-secret|.*-api-key)$/i;

/** The settings of an HTTP or SMTP integration, read back from its stored body. */
export interface HttpSettings {
  baseUrl: string;
  headers: Record<string, string>;
  timeoutMs: number;
  allowedMethods: string[];
}
export interface SmtpSettings {
  host: string;
  port: number;
  security: (typeof SMTP_SECURITY)[number];
  username: string | null;
  passwordSecret: string | null;
  from: string;
  timeoutMs: number;
}

const HTTP_FIELDS = ['base_url', 'headers', 'allowed_methods', 'allow_http'] as const;
const SMTP_FIELDS = ['host', 'port', 'security', 'username', 'password_secret', 'from'] as const;

/** The URL with each `{{secret:NAME}}` as a plain word, so its shape can be checked before any secret is read. */
const withoutPlaceholders = (text: string) => text.replace(SECRET_PLACEHOLDER, 'secret');

function checkBaseUrl(value: unknown, allowHttp: boolean): string {
  if (typeof value !== 'string' || value === '') {
    throw new InvalidInput('base_url is required for an HTTP integration: https://host/base/path.');
  }
  let url: URL;
  try {
    url = new URL(withoutPlaceholders(value));
  } catch {
    throw new InvalidInput('base_url is not a valid absolute URL.');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowHttp)) {
    throw new InvalidInput(
      url.protocol === 'http:'
        ? 'base_url uses http: set allow_http to true to send in the clear, or use https.'
        : `base_url must be https (or http with allow_http), not ${url.protocol.replace(':', '')}.`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new InvalidInput('base_url must not hold a user or password: put them in a header from a secret.');
  }
  if (url.hash !== '') throw new InvalidInput('base_url must not have a #fragment.');
  const authority = value.replace(/^[A-Za-z]+:\/\//, '').split(/[/?#]/)[0]!;
  if (authority.includes('{{')) {
    throw new InvalidInput('base_url may take {{secret:NAME}} in its path only, never in its host.');
  }
  return value;
}

function checkHeaders(value: unknown): Record<string, string> {
  if (value === null || value === undefined) return {};
  const headers = value as Record<string, string>;
  const names = Object.keys(headers);
  if (names.length > HEADERS_MAX) throw new InvalidInput(`headers may hold at most ${HEADERS_MAX} entries.`);
  for (const name of names) {
    const text = headers[name]!;
    if (
      /^(host|content-length|transfer-encoding|connection|upgrade|te|trailer|keep-alive)$/i.test(name) ||
      /^proxy-/i.test(name)
    ) {
      throw new InvalidInput(`headers.${name} is set by the service and cannot be given.`);
    }
    if (CREDENTIAL_HEADER.test(name) && secretNamesIn(text).length === 0) {
      throw new InvalidInput(
        `headers.${name} holds a credential: store it as a secret and write {{secret:NAME}} (e.g. "Bearer {{secret:VENDOR_TOKEN}}").`,
      );
    }
    const leftover = text.replace(SECRET_PLACEHOLDER, '');
    if (/\{\{\s*secret/i.test(leftover)) {
      throw new InvalidInput(
        `headers.${name}: a placeholder is written {{secret:NAME}}, NAME a secret's name.`,
      );
    }
  }
  return headers;
}

/**
 * The rules of each type, across fields: what it needs, its defaults, and none of another type's
 * settings. A type never changes (its workflows and scripts rely on what it is).
 */
function finishIntegration(body: Record<string, unknown>, current?: Record<string, unknown>): void {
  const type = body.type as IntegrationType;
  if (current !== undefined && (current.type ?? 'WEBHOOK') !== type) {
    throw new InvalidInput(
      `type cannot change (this integration is ${String(current.type ?? 'WEBHOOK')}): create another.`,
    );
  }
  const foreign = (names: readonly string[]) =>
    names.filter((name) => body[name] !== null && body[name] !== undefined && body[name] !== false);
  if (type === 'WEBHOOK') {
    const stray = foreign([...HTTP_FIELDS, ...SMTP_FIELDS, 'timeout_ms']);
    if (stray.length > 0) throw new InvalidInput(`${stray[0]} is not a setting of a WEBHOOK integration.`);
    return;
  }
  if (type === 'HTTP') {
    const stray = foreign(SMTP_FIELDS);
    if (stray.length > 0) throw new InvalidInput(`${stray[0]} is a setting of SMTP integrations, not HTTP.`);
    body.allow_http = body.allow_http === true;
    body.base_url = checkBaseUrl(body.base_url, body.allow_http as boolean);
    body.headers = checkHeaders(body.headers);
    body.allowed_methods = body.allowed_methods ?? ['GET', 'POST'];
    body.timeout_ms = body.timeout_ms ?? INTEGRATION_TIMEOUT_DEFAULT_MS;
    return;
  }
  const stray = foreign(HTTP_FIELDS);
  if (stray.length > 0) throw new InvalidInput(`${stray[0]} is a setting of HTTP integrations, not SMTP.`);
  if (typeof body.host !== 'string' || body.host === '')
    throw new InvalidInput('host is required for an SMTP integration.');
  if (typeof body.from !== 'string' || body.from === '') {
    throw new InvalidInput('from is required for an SMTP integration: the sender address.');
  }
  body.security = body.security ?? 'starttls';
  body.port = body.port ?? (body.security === 'tls' ? 465 : 587);
  if ((body.password_secret ?? null) !== null && (body.username ?? null) === null) {
    throw new InvalidInput('password_secret needs a username to log in with.');
  }
  body.timeout_ms = body.timeout_ms ?? INTEGRATION_TIMEOUT_DEFAULT_MS;
}

/** The HTTP settings of an integration's body (an HTTP integration's, checked when stored). */
export function httpSettings(body: Record<string, unknown>): HttpSettings {
  return {
    baseUrl: body.base_url as string,
    headers: (body.headers as Record<string, string> | null) ?? {},
    timeoutMs: (body.timeout_ms as number | null) ?? INTEGRATION_TIMEOUT_DEFAULT_MS,
    allowedMethods: (body.allowed_methods as string[] | null) ?? ['GET', 'POST'],
  };
}

export function smtpSettings(body: Record<string, unknown>): SmtpSettings {
  return {
    host: body.host as string,
    port: body.port as number,
    security: body.security as SmtpSettings['security'],
    username: (body.username as string | null) ?? null,
    passwordSecret: (body.password_secret as string | null) ?? null,
    from: body.from as string,
    timeoutMs: (body.timeout_ms as number | null) ?? INTEGRATION_TIMEOUT_DEFAULT_MS,
  };
}

/** The secrets an integration uses, by name: its header templates', its base URL's, its password's. */
export function secretsUsedBy(body: Record<string, unknown>): string[] {
  const texts = [
    ...Object.values((body.headers as Record<string, string> | null) ?? {}),
    typeof body.base_url === 'string' ? body.base_url : '',
  ];
  const names = texts.flatMap(secretNamesIn);
  if (typeof body.password_secret === 'string') names.push(body.password_secret);
  return [...new Set(names)];
}

export const INTEGRATION_ID_PREFIX = 'intg_';

/** Where a webhook integration receives payloads, relative to the server (no credentials in it). */
export function webhookPath(id: string): string {
  return `/v2/integrations/${id}/webhook`;
}

/**
 * Workflows of the account (any workspace) whose FILE_RECEIVED trigger names this integration.
 * `enabledOnly` picks those a webhook starts.
 */
export async function workflowsTriggeredBy(
  db: Database,
  accountId: string,
  integrationId: string,
  options: { enabledOnly: boolean },
): Promise<Array<{ id: string; workspace: string; name: string }>> {
  const q = db('entities')
    .select('id', 'workspace', 'name')
    .where({ account_id: accountId, kind: 'workflow' })
    .whereRaw(`body->>'trigger_type' = 'FILE_RECEIVED'`)
    .whereRaw(`body->'trigger_config'->>'integration_id' = ?`, [integrationId])
    .orderBy([
      { column: 'created_at', order: 'asc' },
      { column: 'id', order: 'asc' },
    ]);
  if (options.enabledOnly) q.whereRaw(`body->'trigger_enabled' = 'true'::jsonb`);
  return q;
}

/**
 * A delete is refused (409) while any workflow's FILE_RECEIVED trigger names the integration,
 * enabled or not: a disabled one enabled later would point at nothing. The row lock orders this
 * against webhook posts, which hold a share lock on the integration while they store a payload; the
 * stored payloads go with the integration (ON DELETE CASCADE). An integration that is not there is
 * left to the delete, which answers 404.
 */
async function refuseReferenced(db: Database, accountId: string, id: string): Promise<void> {
  if (!isId(INTEGRATION_ID_PREFIX, id)) return;
  const locked = await db('entities')
    .where({ account_id: accountId, kind: INTEGRATION.kind, id })
    .forUpdate()
    .first('id');
  if (!locked) return;
  const referencing = await workflowsTriggeredBy(db, accountId, id, { enabledOnly: false });
  if (referencing.length > 0) {
    const shown = referencing
      .slice(0, 5)
      .map((w) => w.id)
      .join(', ');
    const more = referencing.length > 5 ? ` and ${referencing.length - 5} more` : '';
    throw new Conflict(
      `Integration ${id} triggers ${referencing.length} workflow(s) (${shown}${more}); ` +
        'change their trigger or delete them first.',
    );
  }
}

/**
 * Integrations are account-scoped (like custom indexes): the webhook URL names only the id, and a
 * workflow of any workspace of the account may be triggered by one. A `workspace` sent by a client
 * is ignored. An update may change every setting but the type. Kept apart from the webhook receiver so workflow-store can check
 * references without importing the runner (which imports workflow-store).
 */
const EXTENSION =
  'Extension: the interface has no way to manage integrations. Integrations are account-scoped: ' +
  'seen from every workspace, and a workflow of any workspace may be triggered by one; `workspace` is ignored.';

export const INTEGRATION = resourceKind({
  kind: 'integration',
  plural: 'integrations',
  scope: 'account',
  idPrefix: INTEGRATION_ID_PREFIX,
  idField: 'id',
  hasDate: false,
  listOmit: [],
  fields: {
    type: {
      schema: Type.Union(
        INTEGRATION_TYPES.map((t) => Type.Literal(t)),
        {
          'x-rule': `one of ${INTEGRATION_TYPES.join(', ')}`,
          description:
            'WEBHOOK (receives payloads), HTTP (scripts call an HTTPS API through it: sdk.request) or SMTP (scripts send e-mail through it: sdk.sendEmail). Cannot change.',
        },
      ),
      view: Type.String({ description: 'WEBHOOK, HTTP or SMTP.' }),
      required: `type is required: one of ${INTEGRATION_TYPES.join(', ')}.`,
      viewDefault: 'WEBHOOK',
    },
    base_url: {
      schema: Type.Optional(
        Nullable(
          Type.String({
            minLength: 1,
            maxLength: 2048,
            pattern: '^https?://[^\\s]+$',
            'x-rule': 'an http(s) URL without spaces',
            description:
              'HTTP: the address every call is joined under (https; http only with allow_http). Its path may take {{secret:NAME}} (a chat webhook URL whose path is the credential), its host never.',
          }),
        ),
      ),
      view: Nullable(Type.String()),
      default: () => null,
      nullClears: true,
    },
    headers: {
      schema: Type.Optional(
        Nullable(
          // propertyNames, not a patterned Record key: TypeBox makes that patternProperties, which
          // lets every other key through with any value (a number reached the checks as a header
          // value: a 500), and the OpenAPI document drops it.
          Type.Object(
            {},
            {
              propertyNames: {
                pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$",
                'x-pattern-message':
                  "has a key that is not a header name (1 to 100 letters, digits or !#$%&'*+.^_`|~-)",
              },
              additionalProperties: Type.String({
                maxLength: 8192,
                pattern: '^[^\\r\\n\\u0000]*$',
                'x-rule': 'a header value of at most 8192 characters without CR, LF or NUL',
              }),
              maxProperties: HEADERS_MAX,
              'x-rule': `at most ${HEADERS_MAX} header names (RFC 9110 tokens) to values without CR, LF or NUL`,
              description:
                "HTTP: headers sent with every call, after the script's own. A value may hold {{secret:NAME}}, filled in by the worker when it sends; credentials (Authorization, Cookie, *-Token, *-Api-Key…) must come from a secret.",
            },
          ),
        ),
      ),
      view: Nullable(Type.Record(Type.String(), Type.String())),
      default: () => null,
      nullClears: true,
    },
    timeout_ms: {
      schema: Type.Optional(
        Nullable(
          Type.Integer({
            minimum: 1,
            maximum: INTEGRATION_TIMEOUT_MAX_MS,
            'x-rule': `an integer from 1 to ${INTEGRATION_TIMEOUT_MAX_MS}`,
            description: `HTTP and SMTP: the most one call may take, redirects included (default ${INTEGRATION_TIMEOUT_DEFAULT_MS}, at most ${INTEGRATION_TIMEOUT_MAX_MS}).`,
          }),
        ),
      ),
      view: Nullable(Type.Integer()),
      default: () => null,
      nullClears: true,
    },
    allowed_methods: {
      schema: Type.Optional(
        Nullable(
          Type.Array(Type.Union(HTTP_METHODS.map((m) => Type.Literal(m))), {
            minItems: 1,
            maxItems: HTTP_METHODS.length,
            uniqueItems: true,
            'x-rule': `distinct methods among ${HTTP_METHODS.join(', ')}`,
            description: 'HTTP: the methods scripts may use (default GET and POST).',
          }),
        ),
      ),
      view: Nullable(Type.Array(Type.String())),
      default: () => null,
      nullClears: true,
    },
    allow_http: {
      schema: Type.Optional(
        Nullable(
          Type.Boolean({
            description: 'HTTP: true lets base_url be http (sent in the clear). Default false.',
          }),
        ),
      ),
      view: Nullable(Type.Boolean()),
      default: () => null,
      nullClears: true,
    },
    host: {
      schema: Type.Optional(
        Nullable(
          Type.String({
            minLength: 1,
            maxLength: 253,
            pattern: '^[A-Za-z0-9.:\\[\\]-]+$',
            'x-rule': 'a host name or IP address',
            description: 'SMTP: the mail server.',
          }),
        ),
      ),
      view: Nullable(Type.String()),
      default: () => null,
      nullClears: true,
    },
    port: {
      schema: Type.Optional(
        Nullable(
          Type.Integer({
            minimum: 1,
            maximum: 65535,
            'x-rule': 'a port from 1 to 65535',
            description: 'SMTP: default 587 (465 with security tls).',
          }),
        ),
      ),
      view: Nullable(Type.Integer()),
      default: () => null,
      nullClears: true,
    },
    security: {
      schema: Type.Optional(
        Nullable(
          Type.Union(
            SMTP_SECURITY.map((t) => Type.Literal(t)),
            {
              'x-rule': `one of ${SMTP_SECURITY.join(', ')}`,
              description:
                'SMTP: starttls (default; refused if the server does not offer it), tls (implicit) or none (in the clear).',
            },
          ),
        ),
      ),
      view: Nullable(Type.String()),
      default: () => null,
      nullClears: true,
    },
    username: {
      schema: Type.Optional(
        Nullable(
          Type.String({
            minLength: 1,
            maxLength: 320,
            pattern: '^[^\\r\\n\\u0000]*$',
            description: 'SMTP: the login.',
          }),
        ),
      ),
      view: Nullable(Type.String()),
      default: () => null,
      nullClears: true,
    },
    password_secret: {
      schema: Type.Optional(
        Nullable(
          Type.String({
            pattern: `^${SECRET_NAME_TEXT}$`,
            'x-rule': "a secret's name",
            description:
              'SMTP: the name of the secret holding the password (in the workspace of the run that sends).',
          }),
        ),
      ),
      view: Nullable(Type.String()),
      default: () => null,
      nullClears: true,
    },
    from: {
      schema: Type.Optional(
        Nullable(
          Type.String({
            minLength: 3,
            maxLength: 320,
            pattern: '^[^\\r\\n\\u0000]*@[^\\r\\n\\u0000]*$',
            'x-rule': 'an e-mail address, optionally with a display name',
            description: 'SMTP: the sender, e.g. "Risk desk <risk@example.com>".',
          }),
        ),
      ),
      view: Nullable(Type.String()),
      default: () => null,
      nullClears: true,
    },
  },
  finish(body, { current }) {
    finishIntegration(body, current);
  },
  extraView: (record) => ({
    webhook_path: (record.body.type ?? 'WEBHOOK') === 'WEBHOOK' ? webhookPath(record.id) : null,
    secrets_used: secretsUsedBy(record.body),
  }),
  guard: async (db, actor, id, operation) => {
    if (operation === 'delete') await refuseReferenced(db, actor.principal.accountId, id);
  },
  http: {
    extension: EXTENSION,
    extraViewSchema: {
      secrets_used: Type.Array(Type.String(), {
        description: "The secrets the integration uses, by name: its headers', its base URL's, its password.",
      }),
      webhook_path: Nullable(
        Type.String({
          description:
            'Where the webhook receives payloads, relative to the server: POST it with an Authorization ' +
            'header, or append ?key=<AUTH_TOKEN> (that URL is then a secret).',
        }),
      ),
    },
    operations: {
      create: { summary: 'Create an integration (extension)' },
      list: { summary: 'List integrations, most recent first (extension)' },
      retrieve: { summary: 'Retrieve an integration (extension)' },
      update: {
        summary: 'Change an integration (extension)',
        description:
          EXTENSION +
          ' Every field optional; the type cannot change. A field set to null goes back to its default.',
      },
      delete: {
        summary: 'Delete an integration and its stored payloads (extension)',
        description:
          EXTENSION +
          ' Refused with 409 while a workflow (enabled or not) has a FILE_RECEIVED trigger naming it.',
        errors: [409],
      },
    },
  },
});

/** One integration of the account; another account's (or a malformed id) is simply not found. */
export async function findIntegration(db: Database, accountId: string, id: string): Promise<EntityRecord> {
  return findEntity(db, accountId, INTEGRATION, id);
}
