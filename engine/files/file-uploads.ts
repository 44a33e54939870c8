import type { Knex } from 'knex';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { createEntity, type EntityRecord, findEntity, updateEntity } from '../store/entity-store';
import {
  checkDate,
  checkDescription,
  checkLinkUid,
  checkName,
  checkWorkspaceName,
  normaliseTags,
  todayYYYYMMDD,
} from '../store/entity-fields';
import { DomainError, InvalidInput } from '../platform/errors';
import { deleteBlob, moveBlob, newBlobId, writeBlob } from './file-blobs';
import { FILE, FILE_MAX_BYTES, type FileBody, fileBody, newFileUid } from './file-store';
import {
  contentTypeRule,
  CREATE_CONTENT_TYPES,
  type FileOperation,
  UPDATE_CONTENT_TYPES,
} from './file-schemas';

/**
 * Multipart upload: a file of up to 300 MB sent as up to 300 parts, each its own request, in order.
 *
 * Each request runs in one transaction that holds the upload's row lock: the part's chunks, the
 * upload's counters and, on the last part, the file record commit together or not at all. A part
 * that fails half-way (a dropped connection, a refused size) leaves the upload exactly as it was,
 * and two copies of one part sent at once serialise (the second then finds it received).
 */

export const PART_MIN_BYTES = 1_048_576;
export const TOTAL_PARTS_MAX = 300;
/** An upload with no part for this long expires and its bytes are freed. */
export const UPLOAD_IDLE_MS = 2 * 60 * 60 * 1000;
/**
 * How long the row of a finished upload is kept after its last part: a done one answers a resent
 * final part with the file id, an aborted or expired one refuses its upload_id. Afterwards the
 * upload_id is free again.
 */
export const UPLOAD_TOMBSTONE_MS = 24 * 60 * 60 * 1000;
const UPLOAD_ID = /^[A-Za-z0-9_-]{1,128}$/;
const WHOLE_NUMBER = /^\d{1,9}$/;
const NEW_UPLOAD_ID = 'a new upload_id is needed';

/** One field of the form, in the order it arrived; `bytes` of a file must be read before the next item. */
export type FormItem =
  | { kind: 'field'; name: string; value: string }
  | { kind: 'file'; name: string; bytes: AsyncIterable<Buffer> };

export type UploadTarget = { kind: 'create' } | { kind: 'replace'; fileId: string };

export interface PartRequest {
  target: UploadTarget;
  /** `workspace` from the query string; a `workspace` field of part 1 wins. */
  queryWorkspace?: string;
  form: AsyncIterable<FormItem>;
}

export type PartOutcome =
  /** A part before the last was stored, or one already received was sent again. */
  | { status: 'staged'; parts_received: number; total_parts: number; upload_id: string }
  /** A part of an upload that already made its file: nothing changes. */
  | { status: 'done'; fileId: string }
  /** The last part: the file was created (POST) or its content replaced (PUT). */
  | { status: 'completed'; record: EntityRecord; withData: boolean };

type UploadState = 'staged' | 'done' | 'aborted' | 'expired';

interface UploadRow {
  account_id: string;
  upload_id: string;
  target: string;
  workspace: string;
  total_parts: number;
  parts_received: number;
  bytes_received: number;
  blob_id: string | null;
  state: UploadState;
  file_id: string | null;
  metadata: UploadMetadata;
  last_part_at: Date;
}

/** What part 1 says about the file; a PUT keeps the current value of whatever it leaves out. */
interface UploadMetadata {
  name?: string;
  description?: string;
  tags?: string[];
  content_type?: string;
  date?: string;
  link_uid?: string | null;
}

interface PartControl {
  uploadId: string;
  partNumber: number;
  totalParts: number;
}

type Fields = Map<string, string[]>;

function single(fields: Fields, name: string): string | undefined {
  const values = fields.get(name);
  if (!values) return undefined;
  if (values.length > 1) throw new InvalidInput(`${name} is given more than once.`);
  return values[0];
}

/** An optional text field: an empty value (a form input left blank) is the same as none. */
function optional(fields: Fields, name: string): string | undefined {
  const value = single(fields, name);
  return value === '' ? undefined : value;
}

function wholeNumber(fields: Fields, name: string, max: number, what: string): number {
  const text = single(fields, name)!;
  const value = WHOLE_NUMBER.test(text) ? Number(text) : NaN;
  if (!(value >= 1 && value <= max)) throw new InvalidInput(`${name} must be an integer from 1 to ${what}.`);
  return value;
}

/** upload_id, part_number and total_parts, once all three have arrived; null before. */
function partControl(fields: Fields): PartControl | null {
  if (!fields.has('upload_id') || !fields.has('part_number') || !fields.has('total_parts')) return null;
  const uploadId = single(fields, 'upload_id')!;
  if (!UPLOAD_ID.test(uploadId)) {
    throw new InvalidInput('upload_id must be 1 to 128 characters: letters, digits, _ or -.');
  }
  const totalParts = wholeNumber(
    fields,
    'total_parts',
    TOTAL_PARTS_MAX,
    `${TOTAL_PARTS_MAX} (a file is at most 300 MB)`,
  );
  const partNumber = wholeNumber(fields, 'part_number', totalParts, `total_parts (${totalParts})`);
  return { uploadId, partNumber, totalParts };
}

function requirePartControl(fields: Fields): PartControl {
  const control = partControl(fields);
  if (control) return control;
  const missing = ['upload_id', 'part_number', 'total_parts'].filter((name) => !fields.has(name));
  throw new InvalidInput(
    `Every part needs upload_id, part_number and total_parts (missing: ${missing.join(', ')}).`,
  );
}

function uploadWorkspace(fields: Fields, queryWorkspace: string | undefined): string {
  return checkWorkspaceName(optional(fields, 'workspace') ?? queryWorkspace);
}

/** A form's content_type, in the words of the JSON body's schema (file-schemas.ts). */
function checkContentType(value: string, allowed: readonly string[], operation: FileOperation): string {
  if (!allowed.includes(value)) {
    throw new InvalidInput(`content_type must be ${contentTypeRule(operation, allowed)}.`);
  }
  return value;
}

/**
 * Part 1's metadata. `complete` is false for the early look taken when the chunk starts, before
 * any field that follows it: what is there must be valid, but a required name may still come.
 */
function readMetadata(fields: Fields, target: UploadTarget, complete: boolean): UploadMetadata {
  const creating = target.kind === 'create';
  const metadata: UploadMetadata = {};
  const name = single(fields, 'name');
  if (name !== undefined || (creating && complete)) {
    metadata.name = checkName(name, creating ? 'name (on part 1 of a POST)' : 'name');
  }
  const description = single(fields, 'description');
  if (description !== undefined) metadata.description = checkDescription(description) ?? '';
  else if (creating) metadata.description = '';
  const tags = fields.get('tags');
  if (tags) metadata.tags = normaliseTags(tags, metadata.description);
  const contentType = optional(fields, 'content_type') ?? (creating ? 'application/octet-stream' : undefined);
  if (contentType !== undefined) {
    metadata.content_type = creating
      ? checkContentType(contentType, CREATE_CONTENT_TYPES, 'create')
      : checkContentType(contentType, UPDATE_CONTENT_TYPES, 'update');
  }
  const date = optional(fields, 'date');
  if (date !== undefined) metadata.date = checkDate(date)!;
  else if (creating) metadata.date = todayYYYYMMDD();
  const linkUid = optional(fields, 'link_uid');
  if (linkUid !== undefined) metadata.link_uid = checkLinkUid(linkUid);
  return metadata;
}

function looseTrue(value: string | undefined): boolean {
  return value !== undefined && /^(true|1)$/i.test(value);
}

/** Thrown by the chunk writer when the upload passes 300 MB; turned into an abort. */
class UploadTooLarge extends Error {}

/** A refusal that changes the upload (aborted, expired) and so commits before it is answered. */
class CommittedRefusal extends DomainError {}

function targetOf(target: UploadTarget): string {
  return target.kind === 'create' ? 'create' : target.fileId;
}

function describeTarget(target: string): string {
  return target === 'create' ? 'POST /files' : `PUT /files/${target}`;
}

type Decision = { accept: UploadRow } | { answer: PartOutcome };

/**
 * Receives one part. Fields may come before or after the `chunk` file field:
 * - upload_id, part_number and total_parts before `chunk` (as the Python client and most form
 *   encoders send them): order, upload state and, on part 1 of a PUT, the file's existence are
 *   checked before a byte of the chunk is read, and the bytes stream straight into the upload.
 * - otherwise the chunk streams into scratch rows of this request's transaction and the checks
 *   run when the form ends; a refused part's rows roll back with the transaction.
 * Part 1's metadata is read from every field of the form, wherever it stands.
 */
export async function receivePart(
  db: Database,
  actor: Actor,
  request: PartRequest,
  now: () => Date = () => new Date(),
): Promise<PartOutcome> {
  const accountId = actor.principal.accountId;
  const target = targetOf(request.target);
  const fields: Fields = new Map();
  const trx = await db.transaction();
  let settled = false;
  let scratchBlobId: string | null = null;

  const lockUpload = async (uploadId: string) =>
    (await trx('file_uploads').where({ account_id: accountId, upload_id: uploadId }).forUpdate().first()) as
      UploadRow | undefined;

  /** Ends the upload for good (frees its bytes), commits that, then refuses the part. */
  const endUpload = async (row: UploadRow, state: 'aborted' | 'expired', message: string): Promise<never> => {
    if (row.blob_id) await deleteBlob(trx, accountId, row.blob_id);
    if (scratchBlobId) await deleteBlob(trx, accountId, scratchBlobId);
    await trx('file_uploads')
      .where({ account_id: accountId, upload_id: row.upload_id })
      .update({ state, blob_id: null });
    await trx.commit();
    settled = true;
    throw new CommittedRefusal(400, message);
  };

  const checkFileExists = async (workspace: string) => {
    if (request.target.kind === 'replace') {
      await findEntity(trx, accountId, FILE, request.target.fileId, workspace);
    }
  };

  /** Order and state checks under the upload's row lock: accept the part, or answer without it. */
  const decide = async (control: PartControl, complete: boolean): Promise<Decision> => {
    let row = await lockUpload(control.uploadId);
    if (!row) {
      if (control.partNumber !== 1) {
        throw new InvalidInput(
          `Part ${control.partNumber} skips ahead: expected part 1 of upload ${control.uploadId}.`,
        );
      }
      const workspace = uploadWorkspace(fields, request.queryWorkspace);
      const metadata = readMetadata(fields, request.target, complete);
      // A PUT to an unknown id fails here, on part 1, before anything is stored.
      await checkFileExists(workspace);
      const at = now();
      const [inserted] = (await trx('file_uploads')
        .insert({
          account_id: accountId,
          upload_id: control.uploadId,
          target,
          workspace,
          total_parts: control.totalParts,
          parts_received: 0,
          bytes_received: 0,
          blob_id: newBlobId(),
          state: 'staged',
          metadata: JSON.stringify(metadata),
          created_at: at,
          last_part_at: at,
        })
        .onConflict(['account_id', 'upload_id'])
        .ignore()
        .returning('*')) as UploadRow[];
      if (inserted) return { accept: inserted };
      // Another request with this upload_id committed part 1 meanwhile: continue with its row.
      row = (await lockUpload(control.uploadId))!;
    }
    if (row.target !== target) {
      throw new InvalidInput(
        `upload_id ${row.upload_id} belongs to an upload to ${describeTarget(row.target)}; use a new upload_id.`,
      );
    }
    if (row.total_parts !== control.totalParts) {
      throw new InvalidInput(
        `total_parts must be the same on every part: upload ${row.upload_id} has ${row.total_parts}.`,
      );
    }
    switch (row.state) {
      case 'done':
        return { answer: { status: 'done', fileId: row.file_id! } };
      case 'aborted':
        throw new InvalidInput(
          `Upload ${row.upload_id} was aborted when it passed 300 MB: ${NEW_UPLOAD_ID}.`,
        );
      case 'expired':
        throw new InvalidInput(
          `Upload ${row.upload_id} expired after 2 hours without a part: ${NEW_UPLOAD_ID}.`,
        );
    }
    if (now().getTime() - row.last_part_at.getTime() > UPLOAD_IDLE_MS) {
      // The sweep has not run yet; the rule holds all the same.
      return endUpload(
        row,
        'expired',
        `Upload ${row.upload_id} expired after 2 hours without a part: ${NEW_UPLOAD_ID}.`,
      );
    }
    if (control.partNumber <= row.parts_received) return { answer: stagedStatus(row) };
    if (control.partNumber > row.parts_received + 1) {
      throw new InvalidInput(
        `Part ${control.partNumber} skips ahead: expected part ${row.parts_received + 1} of upload ${row.upload_id}.`,
      );
    }
    return { accept: row };
  };

  const overflow = () => new UploadTooLarge();

  try {
    let decision: Decision | null = null;
    let partBytes: number | null = null;
    for await (const item of request.form) {
      if (item.kind === 'field') {
        if (item.name === 'chunk')
          throw new InvalidInput('chunk must be a file field (a part with a filename).');
        fields.set(item.name, [...(fields.get(item.name) ?? []), item.value]);
        continue;
      }
      if (item.name !== 'chunk') {
        throw new InvalidInput(`The part's bytes go in the file field chunk, not ${item.name}.`);
      }
      const control = partControl(fields);
      if (control) {
        decision = await decide(control, false);
        // A part already received is not read again: the caller discards its bytes.
        if ('answer' in decision) {
          partBytes = 0;
          continue;
        }
        const row = decision.accept;
        try {
          partBytes = await writeBlob(trx, accountId, row.blob_id!, row.bytes_received, item.bytes, {
            maxBytes: FILE_MAX_BYTES - row.bytes_received,
            overflow,
          });
        } catch (error) {
          if (error instanceof UploadTooLarge) {
            return await endUpload(
              row,
              'aborted',
              `Upload ${row.upload_id} passed 300 MB (${FILE_MAX_BYTES} bytes) and was aborted: ${NEW_UPLOAD_ID}.`,
            );
          }
          throw error;
        }
      } else {
        scratchBlobId = newBlobId();
        try {
          partBytes = await writeBlob(trx, accountId, scratchBlobId, 0, item.bytes, {
            maxBytes: FILE_MAX_BYTES,
            overflow,
          });
        } catch (error) {
          if (error instanceof UploadTooLarge) {
            throw new InvalidInput(`A part cannot pass 300 MB (${FILE_MAX_BYTES} bytes).`);
          }
          throw error;
        }
      }
    }

    if (partBytes === null)
      throw new InvalidInput('chunk is required: a file field with the bytes of the part.');
    const control = requirePartControl(fields);
    if (decision === null) {
      decision = await decide(control, true);
      if ('accept' in decision) {
        const row = decision.accept;
        await moveBlob(trx, accountId, scratchBlobId!, row.blob_id!, row.bytes_received);
        scratchBlobId = null;
      }
    }
    if ('answer' in decision) {
      await trx.rollback();
      settled = true;
      return decision.answer;
    }

    const row = decision.accept;
    const last = control.partNumber === control.totalParts;
    if (!last && partBytes < PART_MIN_BYTES) {
      throw new InvalidInput(
        `Part ${control.partNumber} has ${partBytes} bytes: every part but the last must have at least ${PART_MIN_BYTES}.`,
      );
    }
    const total = row.bytes_received + partBytes;
    if (total > FILE_MAX_BYTES) {
      return await endUpload(
        row,
        'aborted',
        `Upload ${row.upload_id} passed 300 MB (${FILE_MAX_BYTES} bytes) and was aborted: ${NEW_UPLOAD_ID}.`,
      );
    }
    if (control.partNumber === 1) {
      // Every field of the form is in now, including any that followed the chunk.
      row.workspace = uploadWorkspace(fields, request.queryWorkspace);
      row.metadata = readMetadata(fields, request.target, true);
      await checkFileExists(row.workspace);
    }
    const update: Partial<Record<keyof UploadRow, unknown>> = {
      parts_received: control.partNumber,
      bytes_received: total,
      last_part_at: now(),
      workspace: row.workspace,
      metadata: JSON.stringify(row.metadata),
    };
    let outcome: PartOutcome;
    if (last) {
      const record = await completeUpload(trx, actor, request.target, row, total);
      Object.assign(update, { state: 'done', file_id: record.id, blob_id: null });
      outcome = { status: 'completed', record, withData: looseTrue(single(fields, 'with_data')) };
    } else {
      outcome = stagedStatus({ ...row, parts_received: control.partNumber });
    }
    await trx('file_uploads').where({ account_id: accountId, upload_id: row.upload_id }).update(update);
    await trx.commit();
    settled = true;
    return outcome;
  } finally {
    if (!settled) await trx.rollback().catch(() => undefined);
  }
}

function stagedStatus(row: Pick<UploadRow, 'parts_received' | 'total_parts' | 'upload_id'>): PartOutcome {
  return {
    status: 'staged',
    parts_received: row.parts_received,
    total_parts: row.total_parts,
    upload_id: row.upload_id,
  };
}

/**
 * The last part landed: the staged blob becomes the file's content (one CREATE or UPDATE in the
 * audit trail, for the whole upload). On a PUT the previous content is freed.
 */
async function completeUpload(
  trx: Knex.Transaction,
  actor: Actor,
  target: UploadTarget,
  row: UploadRow,
  size: number,
): Promise<EntityRecord> {
  const metadata = row.metadata;
  const accountId = actor.principal.accountId;
  if (target.kind === 'create') {
    const body: FileBody = {
      uid: newFileUid(),
      blob_id: row.blob_id!,
      size,
      content_type: metadata.content_type ?? 'application/octet-stream',
    };
    return createEntity(trx, actor, FILE, {
      workspace: row.workspace,
      // Part 1 of a POST carries the name (readMetadata refuses a create without it).
      name: metadata.name!,
      description: metadata.description ?? '',
      tags: metadata.tags,
      linkUid: metadata.link_uid,
      date: metadata.date,
      body,
    });
  }
  let replaced: string | null = null;
  const record = await updateEntity(trx, actor, FILE, target.fileId, row.workspace, (current) => {
    const previous = fileBody(current);
    replaced = previous.blob_id;
    const body: FileBody = {
      ...previous,
      blob_id: row.blob_id!,
      size,
      content_type: metadata.content_type ?? previous.content_type,
    };
    return {
      name: metadata.name,
      description: metadata.description,
      tags: metadata.tags,
      linkUid: metadata.link_uid,
      date: metadata.date,
      body,
    };
  });
  if (replaced) await deleteBlob(trx, accountId, replaced);
  return record;
}

/**
 * Housekeeping (node-cron, every minute on every api replica): staged uploads idle for 2 hours
 * expire and their bytes are freed; rows of finished uploads go after a day. Uploads whose part is
 * arriving right now hold their row lock and are skipped, so replicas never fight over one.
 */
export async function expireIdleUploads(
  db: Database,
  now: Date = new Date(),
): Promise<{ expired: number; purged: number }> {
  return db.transaction(async (trx) => {
    const idleSince = new Date(now.getTime() - UPLOAD_IDLE_MS);
    const { rows } = (await trx.raw(
      `WITH idle AS (
         SELECT account_id, upload_id, blob_id FROM file_uploads
         WHERE state = 'staged' AND last_part_at < ?
         FOR UPDATE SKIP LOCKED)
       UPDATE file_uploads AS u SET state = 'expired', blob_id = NULL
       FROM idle WHERE u.account_id = idle.account_id AND u.upload_id = idle.upload_id
       RETURNING idle.account_id, idle.blob_id`,
      [idleSince],
    )) as { rows: Array<{ account_id: string; blob_id: string | null }> };
    for (const row of rows) {
      if (row.blob_id) await deleteBlob(trx, row.account_id, row.blob_id);
    }
    const purged = await trx('file_uploads')
      .whereNot({ state: 'staged' })
      .where('last_part_at', '<', new Date(now.getTime() - UPLOAD_TOMBSTONE_MS))
      .delete();
    return { expired: rows.length, purged };
  });
}
