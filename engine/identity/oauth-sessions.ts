import { recordAudit } from '../store/audit-trail';
import type { AuditSource } from '../platform/principal';
import type { Database } from '../platform/database';
import { Unauthorized } from '../platform/errors';
import { invalidateCachedCredentials } from './credential-cache';
import { authenticateAccessToken, digestSecret, issueAccessToken, verifyClient } from './account-store';

export interface RequestContext {
  source: AuditSource;
  ip: string | null;
  userAgent: string | null;
}

/** Issuing an access token is the API's sign-in: it writes a LOGIN record for the client's user. */
export async function signIn(db: Database, clientId: string, clientSecret: string, context: RequestContext) {
  const token = await issueAccessToken(db, clientId, clientSecret);
  const principal = await authenticateAccessToken(db, token.access_token);
  if (!principal) throw new Unauthorized('invalid_client: unknown client or wrong secret.');
  await recordAudit(
    db,
    { principal, ...context },
    {
      operation: 'LOGIN',
      activity: `Signed in with OAuth client ${clientId}`,
      entityId: principal.userId,
      entityType: 'UserEvent',
      entityName: principal.userEmail,
    },
  );
  return token;
}

/**
 * RFC 7009 revocation, the API's sign-out: the client proves itself, and a token of that client is
 * deleted (LOGOUT record). An unknown token answers the same, so the endpoint reveals nothing.
 */
export async function signOut(
  db: Database,
  clientId: string,
  clientSecret: string,
  token: string,
  context: RequestContext,
): Promise<void> {
  await verifyClient(db, clientId, clientSecret);
  const principal = await authenticateAccessToken(db, token);
  const deleted = await db('oauth_access_tokens')
    .where({ token_hash: digestSecret(token), client_id: clientId })
    .delete();
  // This process's caches at once; the others through the trigger's NOTIFY.
  invalidateCachedCredentials();
  if (deleted > 0 && principal) {
    await recordAudit(
      db,
      { principal, ...context },
      {
        operation: 'LOGOUT',
        activity: `Signed out (revoked an access token of OAuth client ${clientId})`,
        entityId: principal.userId,
        entityType: 'UserEvent',
        entityName: principal.userEmail,
      },
    );
  }
}
