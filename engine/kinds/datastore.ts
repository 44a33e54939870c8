import { resourceKind } from '../store/resource-kind';
import { InvalidInput } from '../platform/errors';

export type DatastoreCell = string | number | null;

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

/** A datastore: a named table of rows, workspace-bound, dated; lists leave the rows out. */
export const DATASTORE = resourceKind({
  kind: 'datastore',
  entityType: 'Datastore',
  noun: 'datastore',
  scope: 'workspace',
  idPrefix: 'datastore',
  idField: 'id',
  hasDate: true,
  listOmit: ['data'],
  auditDigest: ['data'],
  fields: {
    data: {
      check: checkDatastoreData,
      required: 'data is required: an array of rows, each an array of cells.',
      viewDefault: [],
    },
  },
});
