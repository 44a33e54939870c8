import type { Database } from '../platform/database';
import { Conflict, InvalidInput, NotFound, SecretKeyUnavailable } from '../platform/errors';
import { isId, newId } from '../platform/ids';
import type { Actor } from '../platform/principal';
import { readOneAudited, readPageAudited, recordAudit } from '../store/audit-trail';
import { checkWorkspaceName } from '../store/entity-fields';
import {
  checkPageSize,
  decodePageToken,
  encodePageToken,
  epochSeconds,
  likePrefix,
} from '../store/page-token';
import type { SecretsKeyring } from './master-key';
import { openValue, rewrap, type SealedValue, sealValue } from './secret-crypto';

export const SECRET_ID_PREFIX = 'secr_';
/** The audit trail's type for secrets, as the interface names it. */
export const SECRETS_ENTITY_TYPE = 'Secrets';
export const SECRET_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,63}$';
const SECRET_NAME = new RegExp(SECRET_NAME_PATTERN);
/** A value is a token, a password, a key in PEM: 64 KiB holds any of them. */
export const SECRET_VALUE_MAX_BYTES = 65_536;

/** What the API shows of a secret: never the value, not even masked. */
export interface SecretView {
  id: string;
  name: string;
  workspace: string;
  description: string | null;
  version: string;
  created: number;
  updated: number;
}

interface SecretRow {
  id: string;
  account_id: string;
  workspace: string;
  name: string;
  description: string | null;
  version: number;
  key_id: string;
  wrapped_key: Buffer;
  ciphertext: Buffer;
  created_at: Date;
  updated_at: Date;
}

/** The columns a view needs: the sealed value stays in the database unless it is to be opened. */
const VIEW_COLUMNS = ['id', 'workspace', 'name', 'description', 'version', 'created_at', 'updated_at'];

function toView(
  row: Pick<SecretRow, 'id' | 'workspace' | 'name' | 'description' | 'version' | 'created_at' | 'updated_at'>,
): SecretView {
  return {
    id: row.id,
    name: row.name,
    workspace: row.workspace,
    description: row.description,
    version: String(row.version),
    created: epochSeconds(row.created_at)!,
    updated: epochSeconds(row.updated_at)!,
  };
}

/**
 * What the schema cannot state of a value: its size in bytes (the schema counts characters). Its
 * text never appears in a message.
 */
function checkValueBytes(value: string): string {
  if (Buffer.byteLength(value, 'utf8') > SECRET_VALUE_MAX_BYTES) {
    throw new InvalidInput(`value must be at most ${SECRET_VALUE_MAX_BYTES} bytes.`);
  }
  return value;
}

const sealed = (row: SecretRow): SealedValue => ({
  keyId: row.key_id,
  wrappedKey: row.wrapped_key,
  ciphertext: row.ciphertext,
});

const notFound = (id: string) => new NotFound(`Secret ${id} not found.`);

/** The record's snapshot for the trail: what the API shows, never the value. */
const snapshot = (view: SecretView) => ({ ...view });

/**
 * A secret request as the route's schema accepted it (api/routes/secrets.ts): a name of the pattern,
 * a non-empty value without NUL, a description up to 500 characters.
 */
export interface SecretInput {
  name?: string | null;
  value?: string;
  description?: string | null;
  workspace?: string;
}

/** A create: its schema requires the name and the value. */
export type SecretCreateInput = SecretInput & { name: string; value: string };

export async function createSecret(
  db: Database,
  keyring: SecretsKeyring,
  actor: Actor,
  input: SecretCreateInput,
): Promise<SecretView> {
  const { name } = input;
  const value = checkValueBytes(input.value);
  const workspace = checkWorkspaceName(input.workspace);
  const accountId = actor.principal.accountId;
  const id = newId(SECRET_ID_PREFIX);
  const seal = sealValue(keyring.current(), { accountId, secretId: id }, value);
  return db.transaction(async (trx) => {
    const now = new Date();
    const [row] = (await trx('secrets')
      .insert({
        id,
        account_id: accountId,
        workspace,
        name,
        description: input.description ?? null,
        version: 1,
        key_id: seal.keyId,
        wrapped_key: seal.wrappedKey,
        ciphertext: seal.ciphertext,
        created_at: now,
        updated_at: now,
      })
      .onConflict(['account_id', 'workspace', 'name'])
      .ignore()
      .returning(VIEW_COLUMNS)) as SecretRow[];
    if (!row) throw new Conflict(`A secret named ${name} already exists in workspace ${workspace}.`);
    const view = toView(row);
    await recordAudit(trx, actor, {
      operation: 'CREATE',
      activity: `Created secret ${name}`,
      entityId: id,
      entityType: SECRETS_ENTITY_TYPE,
      entityName: name,
      workspace,
      after: snapshot(view),
    });
    return view;
  });
}

export async function listSecrets(
  db: Database,
  actor: Actor,
  input: { workspace?: unknown; query?: string | null; pageSize?: number; pageToken?: string | null },
): Promise<{ secrets: SecretView[]; next_page_token: string | null }> {
  const workspace = checkWorkspaceName(input.workspace);
  const pageSize = checkPageSize(input.pageSize);
  const cursor = decodePageToken(input.pageToken);
  const q = db<SecretRow>('secrets')
    .select(VIEW_COLUMNS)
    .where({ account_id: actor.principal.accountId, workspace });
  const query = input.query ?? null;
  if (query) {
    if (isId(SECRET_ID_PREFIX, query)) q.where({ id: query });
    else q.whereRaw(`name LIKE ? ESCAPE '\\'`, [likePrefix(query)]);
  }
  if (cursor) q.whereRaw('(created_at, id) < (?, ?)', [new Date(cursor.createdAtMs), cursor.key]);
  const rows = await readPageAudited<SecretRow>(
    db,
    q
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(pageSize + 1),
    actor,
    { entityType: SECRETS_ENTITY_TYPE, noun: 'secrets', workspace, pageSize },
  );
  const page = rows.slice(0, pageSize);
  const last = page[page.length - 1];
  const next =
    rows.length > pageSize && last
      ? encodePageToken({ createdAtMs: last.created_at.getTime(), key: last.id })
      : null;
  return { secrets: page.map(toView), next_page_token: next };
}

export async function getSecret(
  db: Database,
  actor: Actor,
  id: string,
  workspace: unknown,
): Promise<SecretView> {
  const scope = checkWorkspaceName(workspace);
  if (!isId(SECRET_ID_PREFIX, id)) throw notFound(id);
  const row = await readOneAudited<SecretRow>(
    db,
    db('secrets').select(VIEW_COLUMNS).where({ account_id: actor.principal.accountId, workspace: scope, id }),
    actor,
    { entityType: SECRETS_ENTITY_TYPE, activityPrefix: 'Viewed secret ' },
  );
  if (!row) throw notFound(id);
  return toView(row);
}

async function lockedRow(db: Database, actor: Actor, id: string, workspace: string): Promise<SecretRow> {
  if (!isId(SECRET_ID_PREFIX, id)) throw notFound(id);
  const row = (await db('secrets')
    .where({ account_id: actor.principal.accountId, workspace, id })
    .forUpdate()
    .first()) as SecretRow | undefined;
  if (!row) throw notFound(id);
  return row;
}

/** A new value seals afresh (a new data key) and raises `version`; a description alone does not. */
export async function updateSecret(
  db: Database,
  keyring: SecretsKeyring,
  actor: Actor,
  id: string,
  input: SecretInput,
): Promise<SecretView> {
  const workspace = checkWorkspaceName(input.workspace);
  const value = input.value === undefined ? null : checkValueBytes(input.value);
  const accountId = actor.principal.accountId;
  const seal = value === null ? null : sealValue(keyring.current(), { accountId, secretId: id }, value);
  return db.transaction(async (trx) => {
    const before = await lockedRow(trx, actor, id, workspace);
    if (input.name !== undefined && input.name !== null && input.name !== before.name) {
      throw new InvalidInput(
        'A secret cannot be renamed (integrations and scripts name it): create one under the new name and delete this one.',
      );
    }
    const changes: Record<string, unknown> = { updated_at: new Date() };
    if (input.description !== undefined) changes.description = input.description;
    if (seal !== null) {
      Object.assign(changes, {
        key_id: seal.keyId,
        wrapped_key: seal.wrappedKey,
        ciphertext: seal.ciphertext,
        version: trx.raw('version + 1'),
      });
    }
    const [row] = (await trx('secrets').where({ id }).update(changes).returning(VIEW_COLUMNS)) as SecretRow[];
    const after = toView(row!);
    await recordAudit(trx, actor, {
      operation: 'UPDATE',
      activity: seal !== null ? `Updated secret ${before.name} (new value)` : `Updated secret ${before.name}`,
      entityId: id,
      entityType: SECRETS_ENTITY_TYPE,
      entityName: before.name,
      workspace,
      before: snapshot(toView(before)),
      after: snapshot(after),
    });
    return after;
  });
}

export async function deleteSecret(
  db: Database,
  actor: Actor,
  id: string,
  workspace: unknown,
): Promise<{ deleted: boolean; id: string; name: string }> {
  const scope = checkWorkspaceName(workspace);
  return db.transaction(async (trx) => {
    const row = await lockedRow(trx, actor, id, scope);
    await trx('secrets').where({ id }).delete();
    await recordAudit(trx, actor, {
      operation: 'DELETE',
      activity: `Deleted secret ${row.name}`,
      entityId: id,
      entityType: SECRETS_ENTITY_TYPE,
      entityName: row.name,
      workspace: scope,
      before: snapshot(toView(row)),
    });
    return { deleted: true, id, name: row.name };
  });
}

/** The message of a secret that does not open: which key it needs and which this process holds. */
function unreadable(
  keyring: SecretsKeyring,
  name: string,
  failure: { reason: 'unknown-key' | 'does-not-open'; keyId: string },
): SecretKeyUnavailable {
  const problem = keyring.problem();
  if (problem !== null) {
    return new SecretKeyUnavailable(
      `Secret ${name} cannot be read: ${problem}. Start the service with the master key it was stored under (key id ${failure.keyId}).`,
    );
  }
  const held = keyring.keyIds().join(', ');
  return new SecretKeyUnavailable(
    failure.reason === 'unknown-key'
      ? `Secret ${name} cannot be read: it was stored under master key ${failure.keyId}, and this service holds ${held} (${keyring.describe()}). Start it with the key it was stored under (after a restore: the key file backed up apart from the data).`
      : `Secret ${name} cannot be read: its stored form does not open under master key ${failure.keyId}; it was altered or copied from elsewhere. Store its value again.`,
  );
}

/**
 * A secret's value for a step of a run, by name in the run's workspace: one record in the trail
 * (source WORKER with the run's ids, from `actor`), never the value. A name of another workspace or
 * account is simply not found.
 */
export async function readSecretValue(
  db: Database,
  keyring: SecretsKeyring,
  actor: Actor,
  workspace: string,
  name: string,
  purpose: string,
): Promise<{ id: string; name: string; version: number; value: string }> {
  if (typeof name !== 'string' || !SECRET_NAME.test(name)) {
    throw new InvalidInput(`${JSON.stringify(String(name).slice(0, 80))} is not a secret name.`);
  }
  const row = (await db('secrets')
    .where({ account_id: actor.principal.accountId, workspace, name })
    .first()) as SecretRow | undefined;
  if (!row) throw new NotFound(`Secret ${name} not found in workspace ${workspace}.`);
  const opened = openValue(
    keyring.keys(row.key_id),
    { accountId: row.account_id, secretId: row.id },
    sealed(row),
  );
  if (!('value' in opened)) throw unreadable(keyring, name, opened);
  await recordAudit(db, actor, {
    operation: 'VIEW',
    activity: `Read secret ${name} (${purpose})`,
    entityId: row.id,
    entityType: SECRETS_ENTITY_TYPE,
    entityName: name,
    workspace,
  });
  return { id: row.id, name, version: row.version, value: opened.value };
}

/**
 * `pas secrets rotate-key`: every data key still wrapped under another key is wrapped again under
 * the keyring's current one, in batches, each in its own transaction (the service keeps running and
 * keeps reading secrets). Answers how many were re-wrapped, and those that could not be opened.
 */
export async function rewrapSecrets(
  db: Database,
  keyring: SecretsKeyring,
  options: { batch?: number } = {},
): Promise<{ rewrapped: number; unreadable: Array<{ id: string; name: string; keyId: string }> }> {
  const to = keyring.current();
  const batch = options.batch ?? 200;
  let rewrapped = 0;
  const skipped: Array<{ id: string; name: string; keyId: string }> = [];
  for (;;) {
    const done = await db.transaction(async (trx) => {
      const rows = (await trx('secrets')
        .whereNot({ key_id: to.id })
        .whereNotIn(
          'id',
          skipped.map((s) => s.id),
        )
        .orderBy('id')
        .limit(batch)
        .forUpdate()
        .skipLocked()) as SecretRow[];
      for (const row of rows) {
        const next = rewrap(
          keyring.keys(row.key_id),
          to,
          { accountId: row.account_id, secretId: row.id },
          sealed(row),
        );
        if ('reason' in next) {
          skipped.push({ id: row.id, name: row.name, keyId: row.key_id });
          continue;
        }
        await trx('secrets')
          .where({ id: row.id })
          .update({ key_id: next.keyId, wrapped_key: next.wrappedKey });
        rewrapped += 1;
      }
      return rows.length < batch;
    });
    if (done) break;
  }
  return { rewrapped, unreadable: skipped };
}
