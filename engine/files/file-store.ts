import { recordAudit } from '../store/audit-trail';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import {
  commonView,
  createEntity,
  deleteEntity,
  type EntityKind,
  type EntityRecord,
  findEntity,
  updateEntity,
  viewEntity,
} from '../store/entity-store';
import { normaliseTags, todayYYYYMMDD } from '../store/entity-fields';
import { checkStorableFields } from '../store/storable-json';
import { InvalidInput, NotFound } from '../platform/errors';
import { randomAlphanumeric } from '../platform/ids';
import { deleteBlob, newBlobId, readBlob, readBlobBase64, writeBlobFromBuffer } from './file-blobs';
import type { FileCreateBody, FileUpdateBody } from './file-schemas';

/** 300 MB: the largest file, reached in parts (`total_parts` at most 300). */
export const FILE_MAX_BYTES = 314_572_800;

/** What a file record keeps besides the common fields; the bytes are in `file_chunks`. */
export interface FileBody extends Record<string, unknown> {
  /** Names the file in its URL `/file/<uid>`. */
  uid: string;
  blob_id: string;
  size: number;
  content_type: string;
}

export function fileBody(record: EntityRecord): FileBody {
  return record.body as FileBody;
}

/** A uid of any other shape names no file (and never reaches SQL). */
export const FILE_UID = /^[A-Za-z0-9]{32}$/;

export function newFileUid(): string {
  return randomAlphanumeric(32);
}

/**
 * The file kind. Its view never holds the bytes (`data` is added by the caller that streams them),
 * so audit snapshots, which are built from the view, never hold them either.
 */
export const FILE: EntityKind = {
  kind: 'file',
  entityType: 'File',
  noun: 'file',
  scope: 'workspace',
  idPrefix: 'file',
  idField: 'id',
  hasDate: true,
  listOmit: ['data'],
  view: (record: EntityRecord) => {
    const body = fileBody(record);
    return {
      ...commonView(record),
      content_type: body.content_type,
      date: record.date,
      url: `/file/${body.uid}`,
      workspace: record.workspace,
      link_uid: record.linkUid,
      size: body.size,
    };
  },
};

const BASE64_BODY = /^[A-Za-z0-9+/]*$/;
const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
/** Slices the text is checked in: a regular expression over 100 MB at once risks its backtrack stack. */
const BASE64_SLICE = 1 << 20;

/**
 * Strict Base64 (RFC 4648 section 4): the standard alphabet, padded to a multiple of 4, no
 * whitespace, and no stray bits in the last character. Node's decoder skips what it does not
 * understand, so a damaged upload would otherwise be stored silently.
 */
export function decodeBase64Strict(value: string, field: string): Buffer {
  const invalid = () =>
    new InvalidInput(`${field} is not valid Base64 (standard alphabet, padded with =, no whitespace).`);
  if (value.length % 4 !== 0) throw invalid();
  const padding = value.endsWith('==') ? 2 : value.endsWith('=') ? 1 : 0;
  const body = value.length - padding;
  for (let from = 0; from < body; from += BASE64_SLICE) {
    if (!BASE64_BODY.test(value.slice(from, Math.min(from + BASE64_SLICE, body)))) throw invalid();
  }
  if (padding > 0) {
    // The last data character carries 4 (`==`) or 2 (`=`) bits that must be zero in canonical Base64.
    const last = BASE64_ALPHABET.indexOf(value[body - 1]!);
    if (last % (padding === 2 ? 16 : 4) !== 0) throw invalid();
  }
  return Buffer.from(value, 'base64');
}

/**
 * The text fields of a body that PostgreSQL must be able to store. The body's schema refuses NUL
 * characters but cannot state the other half of the rule, unpaired surrogates (a surrogate range in
 * a pattern is more than Python's `re`, which the clients and schemathesis read the schema with,
 * accepts), and tags are stored normalised, so a lone surrogate in a tag would otherwise pass
 * silently: checkStorableFields refuses them with a 400 naming the field, before a byte is decoded.
 */
function checkStorableText(body: FileCreateBody | FileUpdateBody): void {
  const { name, description, tags, workspace, link_uid } = body;
  checkStorableFields({ name, description, tags, workspace, link_uid });
}

/**
 * The one rule across fields: the tags and the description's #hashtags make at most 32 tags
 * together. Checked before a byte is decoded or written (the entity store applies it again as it
 * stores them).
 */
function checkTagCount(tags: FileCreateBody['tags'], description: string): void {
  normaliseTags(tags, description);
}

/**
 * JSON create, from a body its schema has accepted (the route's, or validateFileBody for a caller
 * without one): what no schema states is checked before a byte is written (text PostgreSQL cannot
 * store, the tag count across fields, strict Base64), then the chunks and the record commit together.
 */
export async function createFile(db: Database, actor: Actor, input: FileCreateBody): Promise<EntityRecord> {
  checkStorableText(input);
  checkTagCount(input.tags, input.description);
  const bytes = decodeBase64Strict(input.data, 'data');
  const blobId = newBlobId();
  const accountId = actor.principal.accountId;
  return db.transaction(async (trx) => {
    const body: FileBody = {
      uid: newFileUid(),
      blob_id: blobId,
      size: bytes.length,
      content_type: input.content_type,
    };
    // The record first: the entity store's own checks refuse it before a byte is written.
    const record = await createEntity(trx, actor, FILE, {
      workspace: input.workspace,
      name: input.name,
      description: input.description,
      tags: input.tags,
      linkUid: input.link_uid,
      date: input.date ?? todayYYYYMMDD(),
      body,
    });
    await writeBlobFromBuffer(trx, accountId, blobId, bytes);
    return record;
  });
}

/**
 * JSON update, from a body its schema has accepted: name, description, data and content_type are
 * required (the interface's PUT), tags, date and link_uid optional (absent keeps them). The new
 * bytes replace the old in one transaction.
 */
export async function updateFile(
  db: Database,
  actor: Actor,
  id: string,
  input: FileUpdateBody,
): Promise<EntityRecord> {
  checkStorableText(input);
  if (input.tags !== undefined && input.tags !== null) checkTagCount(input.tags, input.description);
  const bytes = decodeBase64Strict(input.data, 'data');
  const accountId = actor.principal.accountId;
  // An unknown id answers 404 before any byte is written.
  await findEntity(db, accountId, FILE, id, input.workspace);
  const blobId = newBlobId();
  return db.transaction(async (trx) => {
    let replaced: string | null = null;
    const record = await updateEntity(trx, actor, FILE, id, input.workspace, (current) => {
      replaced = fileBody(current).blob_id;
      const body: FileBody = {
        ...fileBody(current),
        blob_id: blobId,
        size: bytes.length,
        content_type: input.content_type,
      };
      return {
        name: input.name,
        description: input.description,
        tags: input.tags ?? undefined,
        linkUid: input.link_uid,
        date: input.date ?? undefined,
        body,
      };
    });
    // The record first, as on create: the entity store's checks refuse it before a byte is written.
    await writeBlobFromBuffer(trx, accountId, blobId, bytes);
    if (replaced) await deleteBlob(trx, accountId, replaced);
    return record;
  });
}

/** Deletes the record and frees its bytes in one transaction. */
export async function deleteFile(
  db: Database,
  actor: Actor,
  id: string,
  workspace: unknown,
): Promise<{ deleted: true; id: string; name: string }> {
  return db.transaction(async (trx) => {
    const record = await deleteEntity(trx, actor, FILE, id, workspace);
    await deleteBlob(trx, actor.principal.accountId, fileBody(record).blob_id);
    return { deleted: true, id: record.id, name: record.name };
  });
}

/** The bytes `[start, end)` of a file (all of it by default), streamed from its chunks. */
export function fileBytes(
  db: Database,
  record: EntityRecord,
  start = 0,
  end = fileBody(record).size,
): AsyncGenerator<Buffer> {
  return readBlob(db, record.accountId, fileBody(record).blob_id, start, end);
}

/** The same bytes as `fileBytes`, as pieces of Base64 text that join into one valid Base64 string. */
export function fileBase64(
  db: Database,
  record: EntityRecord,
  start = 0,
  end = fileBody(record).size,
): AsyncGenerator<string> {
  return readBlobBase64(db, record.accountId, fileBody(record).blob_id, start, end);
}

/** Default, least and greatest `part_size` of a download in parts. */
export const DOWNLOAD_PART_SIZE_DEFAULT = 33_554_432;
export const DOWNLOAD_PART_SIZE_MIN = 1_048_576;
export const DOWNLOAD_PART_SIZE_MAX = 67_108_864;

export interface FilePart {
  record: EntityRecord;
  partNumber: number;
  totalParts: number;
  partSize: number;
  size: number;
  start: number;
  end: number;
}

/** A file of N bytes has ceil(N / part_size) parts; an empty file still has one (empty) part. */
export function totalPartsOf(size: number, partSize: number): number {
  return Math.max(1, Math.ceil(size / partSize));
}

/**
 * One part of a download in parts: checks the range, records the VIEW, and says which bytes to
 * send. Joining the parts in order rebuilds the file.
 */
export async function viewFilePart(
  db: Database,
  actor: Actor,
  id: string,
  workspace: unknown,
  partNumber: number,
  partSize = DOWNLOAD_PART_SIZE_DEFAULT,
): Promise<FilePart> {
  if (!Number.isInteger(partSize) || partSize < DOWNLOAD_PART_SIZE_MIN || partSize > DOWNLOAD_PART_SIZE_MAX) {
    throw new InvalidInput(
      `part_size must be an integer from ${DOWNLOAD_PART_SIZE_MIN} to ${DOWNLOAD_PART_SIZE_MAX} bytes.`,
    );
  }
  const found = await findEntity(db, actor.principal.accountId, FILE, id, workspace);
  const size = fileBody(found).size;
  const totalParts = totalPartsOf(size, partSize);
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > totalParts) {
    throw new InvalidInput(
      `part_number must be from 1 to total_parts (${totalParts} for ${size} bytes in parts of ${partSize}).`,
    );
  }
  const record = await viewEntity(db, actor, FILE, id, workspace);
  const start = (partNumber - 1) * partSize;
  return {
    record,
    partNumber,
    totalParts,
    partSize,
    size,
    start,
    end: Math.min(size, start + partSize),
  };
}

/**
 * `GET /file/<uid>`: the file of the caller's account with that uid, in any of its workspaces (the
 * uid names one file). Another account's file, like an unknown uid, is not found.
 */
export async function viewFileByUid(db: Database, actor: Actor, uid: string): Promise<EntityRecord> {
  const notFound = () => new NotFound(`File /file/${uid} not found.`);
  if (!FILE_UID.test(uid)) throw notFound();
  const row = (await db('entities')
    .select('id', 'workspace')
    .where({ account_id: actor.principal.accountId, kind: FILE.kind })
    .whereRaw("body->>'uid' = ?", [uid])
    .first()) as { id: string; workspace: string } | undefined;
  if (!row) throw notFound();
  const record = await findEntity(db, actor.principal.accountId, FILE, row.id, row.workspace);
  await recordAudit(db, actor, {
    operation: 'VIEW',
    activity: `Downloaded file ${record.name}`,
    entityId: record.id,
    entityType: FILE.entityType,
    entityName: record.name,
    workspace: record.workspace,
  });
  return record;
}
