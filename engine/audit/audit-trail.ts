import type { Principal } from '../accounts/account-store';
import type { Database } from '../db/database';
import { newId } from '../ids';
import { prettyUserAgent } from './user-agent';

export const AUDIT_OPERATIONS = [
  'CREATE',
  'UPDATE',
  'DELETE',
  'EXECUTE',
  'CLONE',
  'SHARE',
  'VIEW',
  'LOGIN',
  'LOGOUT',
] as const;
export type AuditOperation = (typeof AUDIT_OPERATIONS)[number];

export const AUDIT_SOURCES = [
  'PLATFORM',
  'API',
  'SDK',
  'WORKER',
  'INTEGRATION',
  'WORKFLOW_BRIDGE',
  'SCHEDULER',
  'UNKNOWN',
] as const;
export type AuditSource = (typeof AUDIT_SOURCES)[number];

export type AuditStatus = 'SUCCESS' | 'ERROR' | 'DENIED';

/** Who acts, through which door: every engine write takes one and every audit record names it. */
export interface Actor {
  principal: Principal;
  source: AuditSource;
  ip: string | null;
  userAgent: string | null;
  /** Set when the action runs inside a workflow execution. */
  workflow?: { id: string; name: string; executionId: string };
  /** Administrator acting on behalf of the principal's user. */
  proxyAdminEmail?: string | null;
}

export interface AuditEntry {
  operation: AuditOperation;
  activity: string;
  entityId: string | null;
  entityType: string | null;
  entityName?: string | null;
  workspace?: string | null;
  status?: AuditStatus;
  viewedIds?: string[] | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/** Automatic actions carry the word System instead of a person's e-mail. */
const SYSTEM_SOURCES: ReadonlySet<AuditSource> = new Set([
  'WORKER',
  'WORKFLOW_BRIDGE',
  'SCHEDULER',
  'INTEGRATION',
]);

/** ERROR and DENIED exist only for people acting through the platform or the API. */
const HUMAN_SOURCES: ReadonlySet<AuditSource> = new Set(['PLATFORM', 'API']);

/**
 * Fields that hold secrets: a name that is, or ends in, token, secret, password, … (`auth_token`,
 * `webhook_token`, `client_secret`). Matched on whole words so user data such as `tokenizer` survives.
 */
const SENSITIVE_KEY =
  /(^|_)(token|token_hash|secret|secret_hash|password|credentials?|env_vars|authorization|api_key)$/i;

/** Drops sensitive fields (at any depth) before a snapshot is kept in the trail. */
export function withoutSensitiveFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSensitiveFields);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    // fromEntries (not assignment) keeps a field literally named __proto__ as data.
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => !SENSITIVE_KEY.test(key))
        .map(([key, inner]) => [key, withoutSensitiveFields(inner)]),
    );
  }
  return value;
}

const EMPTY_LOCATION = { country: '', region: '', city: '', cityLatLong: '' };

function snapshot(value: Record<string, unknown> | null | undefined): string | null {
  return value ? JSON.stringify(withoutSensitiveFields(value)) : null;
}

/**
 * Appends one immutable record. Pass the transaction that made the change, so a change and its
 * record commit (or roll back) together.
 */
export async function recordAudit(db: Database, actor: Actor, entry: AuditEntry): Promise<string> {
  const id = newId('auditLog');
  const status = HUMAN_SOURCES.has(actor.source) ? (entry.status ?? 'SUCCESS') : 'SUCCESS';
  await db('audit_logs').insert({
    id,
    account_id: actor.principal.accountId,
    user_id: actor.principal.userId,
    created_at: new Date(),
    activity: entry.activity,
    operation: entry.operation,
    source: actor.source,
    status,
    entity_id: entry.entityId,
    entity_type: entry.entityType,
    entity_name: entry.entityName ?? null,
    workspace: entry.workspace ?? null,
    workflow_id: actor.workflow?.id ?? null,
    workflow_name: actor.workflow?.name ?? null,
    workflow_execution_id: actor.workflow?.executionId ?? null,
    user_email: SYSTEM_SOURCES.has(actor.source) ? 'System' : actor.principal.userEmail,
    proxy_admin_email: actor.proxyAdminEmail ?? null,
    credential_id: actor.principal.credentialId,
    credential_type: actor.principal.credentialType,
    ip: actor.ip,
    user_agent: actor.userAgent,
    user_agent_pretty: prettyUserAgent(actor.userAgent),
    location: JSON.stringify(EMPTY_LOCATION),
    viewed_ids: entry.viewedIds ? JSON.stringify(entry.viewedIds) : null,
    before: snapshot(entry.before),
    after: snapshot(entry.after),
  });
  return id;
}
