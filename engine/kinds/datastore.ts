import { Type } from '@sinclair/typebox';
import { resourceKind } from '../store/resource-kind';
import { StorableText } from '../store/field-schemas';

export type DatastoreCell = string | number | null;

/**
 * Rows, each an array of cells (strings, numbers or null). Rows may differ in length (a heading row
 * can be shorter than the data below it), so only the cell types are stated.
 */
const Rows = Type.Array(Type.Array(Type.Union([StorableText(), Type.Number(), Type.Null()])), {
  description: 'Rows, each an array of cells; the first row holds the column headings.',
});

/** A datastore: a named table of rows, workspace-bound, dated; lists leave the rows out. */
export const DATASTORE = resourceKind({
  kind: 'datastore',
  plural: 'datastores',
  scope: 'workspace',
  idPrefix: 'dats_',
  idField: 'id',
  hasDate: true,
  listOmit: ['data'],
  auditDigest: ['data'],
  fields: {
    data: {
      schema: Rows,
      view: Rows,
      required: 'data is required: an array of rows, each an array of cells.',
      viewDefault: [],
    },
  },
  http: { createOmits: { flag: 'with_data', field: 'data' }, filter: true },
});
