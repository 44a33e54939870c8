import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { readOneAudited, recordAudit } from './audit-trail';
import type { Actor } from '../platform/principal';
import { type EntityKey, viewOneBatched } from './view-batch';
import type { Database } from '../platform/database';
import { Conflict, NotFound } from '../platform/errors';
import { type IdKind, type IdPrefix, isId, newId } from '../platform/ids';
import { epochSeconds } from './page-token';
import { checkWorkspaceName, hashtagsIn, normaliseTag, normaliseTags } from './entity-fields';
import { checkStorableFields } from './storable-json';

/** One stored resource kind: how it is identified, scoped, shown and audited. */
export interface EntityKind {
  kind: string;
  /** `entity_type` in the audit trail. */
  entityType: string;
  /** Readable noun for messages and audit activities ("portfolio", "custom index"). */
  noun: string;
  scope: 'workspace' | 'account';
  /** Generated ids use this prefix; null when the client names the object (a symbol). */
  idPrefix: IdKind | IdPrefix | null;
  /** Symbol-keyed kinds: the pattern a symbol must match. */
  symbolPattern?: RegExp;
  /** The property that holds the identifier in responses: `id`, or `symbol`. */
  idField: 'id' | 'symbol';
  hasDate: boolean;
  /** The response object of one stored record (every field, list omissions applied separately). */
  view(record: EntityRecord): Record<string, unknown>;
  /** Fields left out of list responses (for example a portfolio's securities). */
  listOmit: string[];
  /**
   * Large fields kept in audit snapshots only as a digest (`{sha256, bytes}`), so a 100,000-point
   * series or a 1 MB script is not stored twice more on every update.
   */
  auditDigest?: string[];
  /**
   * An account whose records of this kind every account may read (find, view, list) but only that
   * account may change: the service's own account, for the built-in worker templates.
   */
  sharedAccountId?: string;
}

export interface EntityRecord {
  accountId: string;
  kind: string;
  id: string;
  workspace: string | null;
  name: string;
  description: string | null;
  tags: string[];
  linkUid: string | null;
  date: string | null;
  body: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
  version: number;
}

/** A row of the `entities` table as PostgreSQL returns it. */
export interface EntityRow {
  account_id: string;
  kind: string;
  id: string;
  workspace: string | null;
  name: string;
  description: string | null;
  tags: string[];
  link_uid: string | null;
  date: string | null;
  body: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
  version: number;
}

export function toRecord(row: EntityRow): EntityRecord {
  return {
    accountId: row.account_id,
    kind: row.kind,
    id: row.id,
    workspace: row.workspace,
    name: row.name,
    description: row.description,
    tags: row.tags,
    linkUid: row.link_uid,
    date: row.date,
    body: row.body ?? {},
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    version: row.version,
  };
}

/** The fields every resource shares, as the API shows them. */
export function commonView(record: EntityRecord): Record<string, unknown> {
  return {
    id: record.id,
    name: record.name,
    description: record.description,
    tags: record.tags,
    created: epochSeconds(record.createdAt),
    updated: epochSeconds(record.updatedAt),
    version: String(record.version),
  };
}

/**
 * A record's common fields as a request's schema (the route's, or the same schema compiled for a
 * caller without one) accepted them, or as an edge of its own checked them (a multipart upload's
 * fields): typed, and not checked for shape again here. What no schema states is checked when
 * stored: text PostgreSQL cannot hold (an unpaired surrogate), and the tags with the description's
 * hashtags, at most 32.
 */
export interface EntityInput {
  /** Symbol-keyed kinds only: the symbol the request's schema accepted. */
  id?: string;
  workspace?: unknown;
  name: string;
  description?: string | null;
  /** An array, or one space- or comma-separated string (normalised when stored). */
  tags?: string | readonly string[] | null;
  /** Empty, like null, is none. */
  linkUid?: string | null;
  /** YYYYMMDD, or null: none. */
  date?: string | null;
  body: Record<string, unknown>;
}

/** What an update changes; a field left undefined keeps its value (null clears description and link_uid). */
export interface EntityChanges {
  name?: string;
  description?: string | null;
  tags?: string | readonly string[] | null;
  linkUid?: string | null;
  date?: string | null;
  body?: Record<string, unknown>;
}

/** Text no schema can refuse (an unpaired surrogate, which PostgreSQL cannot store) is refused by name. */
function checkStorableText(fields: Record<string, string | null | undefined>): void {
  checkStorableFields(fields);
}

export function scopeWorkspace(kind: EntityKind, workspace: unknown): string | null {
  return kind.scope === 'workspace' ? checkWorkspaceName(workspace) : null;
}

export function isKindId(kind: EntityKind, value: string): boolean {
  if (kind.idPrefix) return isId(kind.idPrefix, value);
  return kind.symbolPattern ? kind.symbolPattern.test(value) : false;
}

function notFound(kind: EntityKind, id: string): NotFound {
  const noun = kind.noun.charAt(0).toUpperCase() + kind.noun.slice(1);
  return new NotFound(`${noun} ${id} not found.`);
}

function whereOne(
  q: Knex.QueryBuilder,
  accountId: string,
  kind: EntityKind,
  id: string,
  workspace: string | null,
) {
  // An id of the wrong shape names nothing (and may hold text PostgreSQL refuses, such as NUL).
  if (!isKindId(kind, id)) throw notFound(kind, id);
  q.where({ account_id: accountId, kind: kind.kind, id });
  if (kind.scope === 'workspace') q.where({ workspace });
  return q;
}

function auditSnapshot(kind: EntityKind, record: EntityRecord): Record<string, unknown> {
  const snapshot: Record<string, unknown> = {
    ...kind.view(record),
    workspace: record.workspace ?? undefined,
  };
  for (const field of kind.auditDigest ?? []) {
    if (snapshot[field] === undefined || snapshot[field] === null) continue;
    const text = JSON.stringify(snapshot[field]);
    snapshot[field] = {
      sha256: createHash('sha256').update(text).digest('hex'),
      bytes: Buffer.byteLength(text),
    };
  }
  return snapshot;
}

export async function createEntity(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  input: EntityInput,
): Promise<EntityRecord> {
  const workspace = scopeWorkspace(kind, input.workspace);
  const id = kind.idPrefix ? newId(kind.idPrefix) : input.id!;
  const description = input.description ?? null;
  checkStorableText({ name: input.name, description, link_uid: input.linkUid });
  checkStorableFields(input.body);
  const now = new Date();
  return db.transaction(async (trx) => {
    const [row] = (await trx('entities')
      .insert({
        account_id: actor.principal.accountId,
        kind: kind.kind,
        id,
        workspace,
        name: input.name,
        description,
        tags: normaliseTags(input.tags, description),
        link_uid: input.linkUid || null,
        date: kind.hasDate ? (input.date ?? null) : null,
        body: JSON.stringify(input.body),
        created_at: now,
        updated_at: now,
      })
      .onConflict(['account_id', 'kind', 'id'])
      .ignore()
      .returning('*')) as EntityRow[];
    if (!row) throw new Conflict(`A ${kind.noun} with ${kind.idField} ${id} already exists.`);
    const record = toRecord(row);
    await recordAudit(trx, actor, {
      operation: 'CREATE',
      activity: `Created ${kind.noun} ${record.name}`,
      entityId: record.id,
      entityType: kind.entityType,
      entityName: record.name,
      workspace: record.workspace,
      after: auditSnapshot(kind, record),
    });
    return record;
  });
}

/** The accounts whose records of `kind` the caller reads: its own, and the kind's shared one. */
export function readableAccounts(kind: EntityKind, accountId: string): string[] {
  return kind.sharedAccountId && kind.sharedAccountId !== accountId
    ? [accountId, kind.sharedAccountId]
    : [accountId];
}

/**
 * Reads one record of the caller's account (or of the kind's shared account); another account's is
 * simply not found.
 */
/** The statement that finds one record of `kind` readable by `accountId`. */
function entityQuery(
  db: Database,
  accountId: string,
  kind: EntityKind,
  id: string,
  workspace?: unknown,
): Knex.QueryBuilder {
  const accounts = readableAccounts(kind, accountId);
  const q = db('entities');
  if (accounts.length === 1) {
    whereOne(q, accountId, kind, id, scopeWorkspace(kind, workspace));
  } else {
    if (!isKindId(kind, id)) throw notFound(kind, id);
    // The caller's own record wins should the shared account hold the same id.
    q.whereIn('account_id', accounts)
      .where({ kind: kind.kind, id })
      .orderByRaw('account_id = ? desc', [accountId]);
    if (kind.scope === 'workspace') q.where({ workspace: scopeWorkspace(kind, workspace) });
  }
  return q;
}

export async function findEntity(
  db: Database,
  accountId: string,
  kind: EntityKind,
  id: string,
  workspace?: unknown,
): Promise<EntityRecord> {
  const row = (await entityQuery(db, accountId, kind, id, workspace).first()) as EntityRow | undefined;
  if (!row) throw notFound(kind, id);
  return toRecord(row);
}

/** Finds a record and writes its VIEW record in the same statement (one round trip). */
export async function viewEntity(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  id: string,
  workspace?: unknown,
): Promise<EntityRecord> {
  const entry = { entityType: kind.entityType, activityPrefix: `Viewed ${kind.noun} ` };
  const accountId = actor.principal.accountId;
  const statement = () => entityQuery(db, accountId, kind, id, workspace);
  // Outside a transaction, a read of the caller's own account joins this turn's batch.
  const row =
    db.isTransaction || readableAccounts(kind, accountId).length > 1
      ? await readOneAudited<EntityRow>(db, statement(), actor, entry)
      : await viewOneBatched<EntityRow>(
          db,
          batchKey(accountId, kind, id, workspace),
          actor,
          entry,
          statement,
        );
  if (!row) throw notFound(kind, id);
  return toRecord(row);
}

/** The batch key of one read (the checks `whereOne` makes, first). */
function batchKey(accountId: string, kind: EntityKind, id: string, workspace: unknown): EntityKey {
  const scope = scopeWorkspace(kind, workspace);
  if (!isKindId(kind, id)) throw notFound(kind, id);
  return { accountId, kind: kind.kind, id, workspace: scope };
}

/**
 * Read-modify-write under a row lock: two concurrent updates of one object serialise, so neither
 * silently overwrites the other. `change` sees the current record and returns what to change.
 */
export async function updateEntity(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  id: string,
  workspace: unknown,
  change: (current: EntityRecord) => EntityChanges | Promise<EntityChanges>,
  audit: { operation?: 'UPDATE' | 'SHARE'; activity?: string } = {},
): Promise<EntityRecord> {
  const scope = scopeWorkspace(kind, workspace);
  return db.transaction(async (trx) => {
    const row = (await whereOne(
      trx('entities').forUpdate().first(),
      actor.principal.accountId,
      kind,
      id,
      scope,
    )) as EntityRow | undefined;
    if (!row) throw notFound(kind, id);
    const before = toRecord(row);
    const changes = await change(before);
    checkStorableText({ name: changes.name, description: changes.description, link_uid: changes.linkUid });
    const description = changes.description !== undefined ? changes.description : before.description;
    const update: Record<string, unknown> = { updated_at: new Date(), version: before.version + 1 };
    if (changes.name !== undefined) update.name = changes.name;
    if (changes.description !== undefined) update.description = description;
    if (changes.tags !== undefined || changes.description !== undefined) {
      // Tags that came from the old description's hashtags go when the description changes.
      const oldHashtags = new Set(hashtagsIn(before.description).map(normaliseTag));
      const kept =
        changes.tags !== undefined ? changes.tags : before.tags.filter((tag) => !oldHashtags.has(tag));
      update.tags = normaliseTags(kept, description);
    }
    if (changes.linkUid !== undefined) update.link_uid = changes.linkUid || null;
    if (changes.date !== undefined && kind.hasDate) update.date = changes.date;
    if (changes.body !== undefined) {
      checkStorableFields(changes.body);
      update.body = JSON.stringify(changes.body);
    }
    const [updated] = (await whereOne(trx('entities'), actor.principal.accountId, kind, id, scope)
      .update(update)
      .returning('*')) as EntityRow[];
    const after = toRecord(updated!);
    await recordAudit(trx, actor, {
      operation: audit.operation ?? 'UPDATE',
      activity: audit.activity ?? `Updated ${kind.noun} ${after.name}`,
      entityId: after.id,
      entityType: kind.entityType,
      entityName: after.name,
      workspace: after.workspace,
      before: auditSnapshot(kind, before),
      after: auditSnapshot(kind, after),
    });
    return after;
  });
}

export async function deleteEntity(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  id: string,
  workspace?: unknown,
): Promise<EntityRecord> {
  const scope = scopeWorkspace(kind, workspace);
  return db.transaction(async (trx) => {
    const [row] = (await whereOne(trx('entities'), actor.principal.accountId, kind, id, scope)
      .delete()
      .returning('*')) as EntityRow[];
    if (!row) throw notFound(kind, id);
    const record = toRecord(row);
    await recordAudit(trx, actor, {
      operation: 'DELETE',
      activity: `Deleted ${kind.noun} ${record.name}`,
      entityId: record.id,
      entityType: kind.entityType,
      entityName: record.name,
      workspace: record.workspace,
      before: auditSnapshot(kind, record),
    });
    return record;
  });
}
