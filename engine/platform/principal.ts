/**
 * Who is calling and through which door: the types every layer above the platform passes along
 * (identity resolves a Principal from credentials, the store writes an Actor into each audit record).
 */
export const PERMISSIONS = ['VIEW USER', 'VIEW ALL USERS'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export type CredentialType = 'API_KEY' | 'OAUTH2';

/** Who is calling: resolved from credentials, carried into every engine call and audit record. */
export interface Principal {
  accountId: string;
  userId: string;
  userEmail: string;
  isOwner: boolean;
  permissions: Permission[];
  /** Account SID for an API key, client id for OAuth 2.0. */
  credentialId: string;
  credentialType: CredentialType;
}

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
