import { createHash, timingSafeEqual } from 'node:crypto';
import type { Database } from '../platform/database';
import { InvalidInput, NotFound, Unauthorized } from '../platform/errors';
import { newId, randomAlphanumeric } from '../platform/ids';
import { type CredentialType, type Permission, PERMISSIONS, type Principal } from '../platform/principal';
import { createDefaultWorkspace } from './workspace-store';
import { invalidateCachedCredentials, type ResolvedCredential } from './credential-cache';

export interface NewApiKey {
  account_sid: string;
  auth_token: string;
}

export interface UserRecord {
  id: string;
  account_id: string;
  email: string;
  name: string;
  is_owner: boolean;
  permissions: Permission[];
  created_at: Date;
  disabled_at: Date | null;
}

export const ACCESS_TOKEN_TTL_SECONDS = 3600;

/** SHA-256 of a secret as stored: tokens and secrets are never kept in clear. */
export function digestSecret(secret: string): string {
  return digest(secret);
}

function digest(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

function sameDigest(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

function checkPermissions(values: string[]): Permission[] {
  for (const value of values) {
    if (!(PERMISSIONS as readonly string[]).includes(value)) {
      throw new InvalidInput(`Unknown permission "${value}"; allowed: ${PERMISSIONS.join(', ')}.`);
    }
  }
  return [...new Set(values)] as Permission[];
}

export async function createAccount(
  db: Database,
  input: { name: string; ownerEmail: string; ownerName?: string },
): Promise<{ accountId: string; owner: UserRecord }> {
  if (!input.name.trim()) throw new InvalidInput('Account name is required.');
  if (!EMAIL.test(input.ownerEmail))
    throw new InvalidInput(`"${input.ownerEmail}" is not an e-mail address.`);
  const accountId = newId('account');
  return db.transaction(async (trx) => {
    await trx('accounts').insert({ id: accountId, name: input.name.trim() });
    const owner = await insertUser(trx, accountId, {
      email: input.ownerEmail,
      name: input.ownerName ?? 'Owner',
      isOwner: true,
      permissions: [...PERMISSIONS],
    });
    await createDefaultWorkspace(trx, accountId);
    return { accountId, owner };
  });
}

async function insertUser(
  db: Database,
  accountId: string,
  input: { email: string; name: string; isOwner: boolean; permissions: Permission[] },
): Promise<UserRecord> {
  const existing = await db('users').where({ email: input.email.toLowerCase() }).first();
  if (existing) throw new InvalidInput(`A user with e-mail ${input.email} already exists.`);
  const [row] = await db('users')
    .insert({
      id: newId('user'),
      account_id: accountId,
      email: input.email.toLowerCase(),
      name: input.name,
      is_owner: input.isOwner,
      permissions: input.permissions,
    })
    .returning('*');
  return row as UserRecord;
}

export async function createUser(
  db: Database,
  accountId: string,
  input: { email: string; name?: string; permissions?: string[] },
): Promise<UserRecord> {
  if (!EMAIL.test(input.email)) throw new InvalidInput(`"${input.email}" is not an e-mail address.`);
  const account = await db('accounts').where({ id: accountId }).first();
  if (!account) throw new NotFound(`Account ${accountId} not found.`);
  return insertUser(db, accountId, {
    email: input.email,
    name: input.name ?? input.email,
    isOwner: false,
    permissions: checkPermissions(input.permissions ?? ['VIEW USER']),
  });
}

export async function listUsers(db: Database, accountId: string): Promise<UserRecord[]> {
  return db('users').where({ account_id: accountId }).orderBy('created_at');
}

export async function setUserPermissions(
  db: Database,
  userId: string,
  permissions: string[],
): Promise<UserRecord> {
  const [row] = await db('users')
    .where({ id: userId })
    .update({ permissions: checkPermissions(permissions) })
    .returning('*');
  invalidateCachedCredentials();
  if (!row) throw new NotFound(`User ${userId} not found.`);
  return row as UserRecord;
}

export async function listAccounts(
  db: Database,
): Promise<Array<{ id: string; name: string; created_at: Date }>> {
  // The service's own account (it owns the built-in worker templates) is nobody's tenant.
  return db('accounts').where({ is_system: false }).select('id', 'name', 'created_at').orderBy('created_at');
}

/** Creates an API key acting as `userId` (default: the account owner). The token is returned once. */
export async function createApiKey(
  db: Database,
  input: { accountId: string; userId?: string; description?: string },
): Promise<NewApiKey> {
  const user = input.userId
    ? await db('users').where({ id: input.userId, account_id: input.accountId }).first()
    : await db('users').where({ account_id: input.accountId, is_owner: true }).first();
  if (!user) throw new NotFound(`User not found in account ${input.accountId}.`);
  const sid = newId('apiKey');
  const token = randomAlphanumeric(40);
  await db('api_keys').insert({
    sid,
    account_id: input.accountId,
    user_id: user.id,
    token_hash: digest(token),
    description: input.description ?? null,
  });
  return { account_sid: sid, auth_token: token };
}

export async function listApiKeys(
  db: Database,
  accountId: string,
): Promise<
  Array<{
    sid: string;
    user_id: string;
    description: string | null;
    created_at: Date;
    revoked_at: Date | null;
  }>
> {
  return db('api_keys')
    .select('sid', 'user_id', 'description', 'created_at', 'revoked_at')
    .where({ account_id: accountId })
    .orderBy('created_at');
}

export async function revokeApiKey(db: Database, sid: string): Promise<void> {
  const updated = await db('api_keys')
    .where({ sid })
    .whereNull('revoked_at')
    .update({ revoked_at: db.fn.now() });
  invalidateCachedCredentials();
  if (updated === 0) {
    const exists = await db('api_keys').where({ sid }).first();
    if (!exists) throw new NotFound(`API key ${sid} not found.`);
  }
}

export async function createOAuthClient(
  db: Database,
  input: { accountId: string; userId?: string; name: string },
): Promise<{ client_id: string; client_secret: string }> {
  const user = input.userId
    ? await db('users').where({ id: input.userId, account_id: input.accountId }).first()
    : await db('users').where({ account_id: input.accountId, is_owner: true }).first();
  if (!user) throw new NotFound(`User not found in account ${input.accountId}.`);
  const clientId = newId('oauthClient');
  const secret = randomAlphanumeric(48);
  await db('oauth_clients').insert({
    client_id: clientId,
    account_id: input.accountId,
    user_id: user.id,
    secret_hash: digest(secret),
    name: input.name,
  });
  return { client_id: clientId, client_secret: secret };
}

export async function revokeOAuthClient(db: Database, clientId: string): Promise<void> {
  const updated = await db('oauth_clients')
    .where({ client_id: clientId })
    .whereNull('revoked_at')
    .update({ revoked_at: db.fn.now() });
  invalidateCachedCredentials();
  if (updated === 0) throw new NotFound(`OAuth client ${clientId} not found or already revoked.`);
}

export async function verifyClient(db: Database, clientId: string, clientSecret: string): Promise<void> {
  const client = await db('oauth_clients').where({ client_id: clientId }).whereNull('revoked_at').first();
  if (!client || !sameDigest(client.secret_hash, digest(clientSecret))) {
    throw new Unauthorized('invalid_client: unknown client or wrong secret.');
  }
}

/** OAuth 2.0 client-credentials grant: a bearer access token valid for one hour. */
export async function issueAccessToken(
  db: Database,
  clientId: string,
  clientSecret: string,
): Promise<{ access_token: string; token_type: 'Bearer'; expires_in: number }> {
  await verifyClient(db, clientId, clientSecret);
  const token = 'oat_' + randomAlphanumeric(43);
  await db('oauth_access_tokens').insert({
    token_hash: digest(token),
    client_id: clientId,
    expires_at: new Date(Date.now() + ACCESS_TOKEN_TTL_SECONDS * 1000),
  });
  return { access_token: token, token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL_SECONDS };
}

const PRINCIPAL_COLUMNS = [
  'u.id as user_id',
  'u.account_id',
  'u.email',
  'u.is_owner',
  'u.permissions',
  'u.disabled_at',
] as const;

function toPrincipal(
  row: { user_id: string; account_id: string; email: string; is_owner: boolean; permissions: Permission[] },
  credentialId: string,
  credentialType: CredentialType,
): Principal {
  return {
    accountId: row.account_id,
    userId: row.user_id,
    userEmail: row.email,
    isOwner: row.is_owner,
    permissions: row.permissions,
    credentialId,
    credentialType,
  };
}

export async function authenticateApiKey(
  db: Database,
  sid: string,
  token: string,
): Promise<Principal | null> {
  return (await resolveApiKey(db, sid, token))?.principal ?? null;
}

export async function resolveApiKey(
  db: Database,
  sid: string,
  token: string,
): Promise<ResolvedCredential | null> {
  const row = await db('api_keys as k')
    .join('users as u', 'u.id', 'k.user_id')
    .select('k.token_hash', ...PRINCIPAL_COLUMNS)
    .where('k.sid', sid)
    .whereNull('k.revoked_at')
    .first();
  if (!row || row.disabled_at || !sameDigest(row.token_hash, digest(token))) return null;
  return { principal: toPrincipal(row, sid, 'API_KEY'), expiresAt: null };
}

/**
 * Who holds a credential already proven (a console session's): the API key's or OAuth client's user,
 * or null once the credential is revoked or the user disabled. No secret is checked here.
 */
export async function credentialHolder(
  db: Database,
  credentialType: CredentialType,
  credentialId: string,
): Promise<Principal | null> {
  const row =
    credentialType === 'API_KEY'
      ? await db('api_keys as k')
          .join('users as u', 'u.id', 'k.user_id')
          .select(...PRINCIPAL_COLUMNS)
          .where('k.sid', credentialId)
          .whereNull('k.revoked_at')
          .first()
      : await db('oauth_clients as c')
          .join('users as u', 'u.id', 'c.user_id')
          .select(...PRINCIPAL_COLUMNS)
          .where('c.client_id', credentialId)
          .whereNull('c.revoked_at')
          .first();
  if (!row || row.disabled_at) return null;
  return toPrincipal(row, credentialId, credentialType);
}

/** The webhook's `key` query parameter: an auth token without its SID. */
export async function authenticateAuthToken(db: Database, token: string): Promise<Principal | null> {
  return (await resolveAuthToken(db, token))?.principal ?? null;
}

export async function resolveAuthToken(db: Database, token: string): Promise<ResolvedCredential | null> {
  const row = await db('api_keys as k')
    .join('users as u', 'u.id', 'k.user_id')
    .select('k.sid', ...PRINCIPAL_COLUMNS)
    .where('k.token_hash', digest(token))
    .whereNull('k.revoked_at')
    .first();
  if (!row || row.disabled_at) return null;
  return { principal: toPrincipal(row, row.sid, 'API_KEY'), expiresAt: null };
}

export async function authenticateAccessToken(db: Database, token: string): Promise<Principal | null> {
  return (await resolveAccessToken(db, token))?.principal ?? null;
}

export async function resolveAccessToken(db: Database, token: string): Promise<ResolvedCredential | null> {
  const row = await db('oauth_access_tokens as t')
    .join('oauth_clients as c', 'c.client_id', 't.client_id')
    .join('users as u', 'u.id', 'c.user_id')
    .select('c.client_id', 't.expires_at', ...PRINCIPAL_COLUMNS)
    .where('t.token_hash', digest(token))
    .where('t.expires_at', '>', db.fn.now())
    .whereNull('c.revoked_at')
    .first();
  if (!row || row.disabled_at) return null;
  return { principal: toPrincipal(row, row.client_id, 'OAUTH2'), expiresAt: row.expires_at as Date };
}

/**
 * First start: when no account exists yet, create the owner's account and one API key. Returns the
 * key (to print once) or null when the database already has an account. Safe when several
 * processes race: the advisory lock lets exactly one create the owner.
 */
export async function ensureOwnerAccount(
  db: Database,
  input: { ownerEmail: string; accountName: string },
): Promise<(NewApiKey & { owner_email: string }) | null> {
  return db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(728204116)');
    const existing = await trx('accounts').where({ is_system: false }).first();
    if (existing) return null;
    const accountId = newId('account');
    await trx('accounts').insert({ id: accountId, name: input.accountName });
    const owner = await insertUser(trx, accountId, {
      email: input.ownerEmail,
      name: 'Owner',
      isOwner: true,
      permissions: [...PERMISSIONS],
    });
    await createDefaultWorkspace(trx, accountId);
    const key = await createApiKey(trx, {
      accountId,
      userId: owner.id,
      description: 'created at first start',
    });
    return { ...key, owner_email: owner.email };
  });
}
