/**
 * Web console sessions: signing in with an API key (SID and token) or an OAuth client (id and
 * secret) opens one; the browser holds its random token in an HttpOnly cookie and sends its CSRF
 * token in a header on every change. Sign-in and sign-out are audit `UserEvent` records (LOGIN,
 * LOGOUT) with source PLATFORM, as the web app's are.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Database } from '../platform/database';
import { Unauthorized } from '../platform/errors';
import type { CredentialType, Principal } from '../platform/principal';
import { recordAudit } from '../store/audit-trail';
import { credentialHolder, digestSecret, resolveApiKey, verifyClient } from './account-store';
import type { RequestContext } from './oauth-sessions';

/** A session ends after this long without a request… */
export const CONSOLE_IDLE_SECONDS = 30 * 60;
/** …and this long after sign-in, whatever happens. */
export const CONSOLE_ABSOLUTE_SECONDS = 12 * 60 * 60;
/** How stale `last_seen_at` may get before a request writes it again (one write a minute at most). */
const TOUCH_SECONDS = 60;

export type ConsoleCredentials =
  | { readonly sid: string; readonly token: string }
  | { readonly client_id: string; readonly client_secret: string };

export interface ConsoleSession {
  readonly principal: Principal;
  readonly csrfToken: string;
  readonly expiresAt: Date;
  readonly idleExpiresAt: Date;
}

const WRONG = 'Unauthorized: the SID and token, or client id and secret, are not valid.';

/** Checks the credentials and opens a session: its cookie token (returned once) and what the page shows. */
export async function openConsoleSession(
  db: Database,
  credentials: ConsoleCredentials,
  context: Omit<RequestContext, 'source'>,
): Promise<{ token: string; session: ConsoleSession }> {
  let principal: Principal | null;
  let credentialType: CredentialType;
  if ('sid' in credentials) {
    principal = (await resolveApiKey(db, credentials.sid, credentials.token))?.principal ?? null;
    credentialType = 'API_KEY';
  } else {
    await verifyClient(db, credentials.client_id, credentials.client_secret).catch(() => {
      throw new Unauthorized(WRONG);
    });
    principal = await credentialHolder(db, 'OAUTH2', credentials.client_id);
    credentialType = 'OAUTH2';
  }
  if (!principal) throw new Unauthorized(WRONG);
  const token = randomBytes(32).toString('base64url');
  const csrfToken = randomBytes(24).toString('base64url');
  const now = Date.now();
  const expiresAt = new Date(now + CONSOLE_ABSOLUTE_SECONDS * 1000);
  await db('console_sessions').insert({
    token_hash: digestSecret(token),
    account_id: principal.accountId,
    user_id: principal.userId,
    credential_type: credentialType,
    credential_id: principal.credentialId,
    csrf_token: csrfToken,
    expires_at: expiresAt,
  });
  await recordAudit(
    db,
    { principal, source: 'PLATFORM', ...context },
    {
      operation: 'LOGIN',
      activity: `Signed in to the web console with ${credentialType === 'API_KEY' ? 'API key' : 'OAuth client'} ${principal.credentialId}`,
      entityId: principal.userId,
      entityType: 'UserEvent',
      entityName: principal.userEmail,
    },
  );
  return {
    token,
    session: {
      principal,
      csrfToken,
      expiresAt,
      idleExpiresAt: new Date(Math.min(now + CONSOLE_IDLE_SECONDS * 1000, expiresAt.getTime())),
    },
  };
}

/**
 * The session a cookie token opens, or null: unknown, idle too long, past its absolute expiry, or
 * its credential revoked or user disabled (then the row goes). A live session's `last_seen_at`
 * moves forward (at most once a minute).
 */
export async function resolveConsoleSession(db: Database, token: string): Promise<ConsoleSession | null> {
  if (token === '' || token.length > 100) return null;
  const hash = digestSecret(token);
  const row = (await db('console_sessions')
    .where({ token_hash: hash })
    .where('expires_at', '>', db.fn.now())
    .where('last_seen_at', '>', db.raw(`now() - interval '${CONSOLE_IDLE_SECONDS} seconds'`))
    .first()) as
    | {
        credential_type: CredentialType;
        credential_id: string;
        csrf_token: string;
        last_seen_at: Date;
        expires_at: Date;
      }
    | undefined;
  if (!row) return null;
  const principal = await credentialHolder(db, row.credential_type, row.credential_id);
  if (!principal) {
    await db('console_sessions').where({ token_hash: hash }).delete();
    return null;
  }
  let lastSeen = row.last_seen_at.getTime();
  if (Date.now() - lastSeen > TOUCH_SECONDS * 1000) {
    await db('console_sessions').where({ token_hash: hash }).update({ last_seen_at: db.fn.now() });
    lastSeen = Date.now();
  }
  return {
    principal,
    csrfToken: row.csrf_token,
    expiresAt: row.expires_at,
    idleExpiresAt: new Date(Math.min(lastSeen + CONSOLE_IDLE_SECONDS * 1000, row.expires_at.getTime())),
  };
}

/** Sign-out: the session's row goes (its cookie opens nothing after this) and a LOGOUT record is written. */
export async function closeConsoleSession(
  db: Database,
  token: string,
  session: ConsoleSession,
  context: Omit<RequestContext, 'source'>,
): Promise<void> {
  const deleted = await db('console_sessions')
    .where({ token_hash: digestSecret(token) })
    .delete();
  if (deleted === 0) return;
  await recordAudit(
    db,
    { principal: session.principal, source: 'PLATFORM', ...context },
    {
      operation: 'LOGOUT',
      activity: 'Signed out of the web console',
      entityId: session.principal.userId,
      entityType: 'UserEvent',
      entityName: session.principal.userEmail,
    },
  );
}

/** Whether a request's CSRF header is the session's (constant time). */
export function sameCsrfToken(session: ConsoleSession, header: string | undefined): boolean {
  if (header === undefined) return false;
  const a = Buffer.from(session.csrfToken);
  const b = Buffer.from(header);
  return a.length === b.length && timingSafeEqual(a, b);
}
