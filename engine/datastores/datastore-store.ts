import type { Actor } from '../audit/audit-trail';
import type { Database } from '../db/database';
import {
  commonView,
  createEntity,
  deleteEntity,
  type EntityKind,
  type EntityRecord,
  updateEntity,
} from '../entities/entity-store';
import { InvalidInput } from '../errors';
import { checkStorableFields } from '../entities/storable-json';

export type DatastoreCell = string | number | null;

export const DATASTORE: EntityKind = {
  kind: 'datastore',
  entityType: 'Datastore',
  noun: 'datastore',
  scope: 'workspace',
  idPrefix: 'datastore',
  idField: 'id',
  hasDate: true,
  listOmit: ['data'],
  auditDigest: ['data'],
  view: (record: EntityRecord) => ({
    ...commonView(record),
    date: record.date,
    data: record.body.data ?? [],
    workspace: record.workspace,
  }),
};

export interface DatastoreInput {
  name?: unknown;
  description?: unknown;
  tags?: unknown;
  date?: unknown;
  data?: unknown;
  workspace?: unknown;
}

/**
 * A datastore is a table: rows, each an array of cells (strings, numbers or null). Rows may differ
 * in length (a heading row can be shorter than the data below it), so only the cell types are checked.
 */
export function checkDatastoreData(value: unknown): DatastoreCell[][] {
  if (!Array.isArray(value)) {
    throw new InvalidInput('data is required: an array of rows, each an array of cells.');
  }
  value.forEach((row: unknown, r) => {
    if (!Array.isArray(row)) throw new InvalidInput(`data[${r}] must be an array of cells.`);
    row.forEach((cell: unknown, c) => {
      if (cell !== null && typeof cell !== 'string' && typeof cell !== 'number') {
        throw new InvalidInput(`data[${r}][${c}] must be a string, a number or null.`);
      }
    });
  });
  return value as DatastoreCell[][];
}

/** The request fields this resource reads; other keys of a body are ignored, never checked. */
function knownFields(input: DatastoreInput): DatastoreInput {
  const { name, description, tags, date, data, workspace } = input;
  return { name, description, tags, date, data, workspace };
}

export async function createDatastore(
  db: Database,
  actor: Actor,
  input: DatastoreInput,
): Promise<EntityRecord> {
  checkStorableFields(knownFields(input));
  return createEntity(db, actor, DATASTORE, {
    workspace: input.workspace,
    name: input.name,
    description: input.description,
    tags: input.tags,
    date: input.date,
    body: { data: checkDatastoreData(input.data) },
  });
}

/** Every field optional; `tags` and `data` given as null keep their current value (the spec's default). */
export async function updateDatastore(
  db: Database,
  actor: Actor,
  id: string,
  input: DatastoreInput,
): Promise<EntityRecord> {
  checkStorableFields(knownFields(input));
  const data = input.data === undefined || input.data === null ? undefined : checkDatastoreData(input.data);
  return updateEntity(db, actor, DATASTORE, id, input.workspace, (current) => ({
    name: input.name,
    description: input.description,
    tags: input.tags ?? undefined,
    date: input.date,
    body: data === undefined ? undefined : { ...current.body, data },
  }));
}

export async function deleteDatastore(
  db: Database,
  actor: Actor,
  id: string,
  workspace: unknown,
): Promise<{ deleted: true; id: string; name: string }> {
  const record = await deleteEntity(db, actor, DATASTORE, id, workspace);
  return { deleted: true, id: record.id, name: record.name };
}
