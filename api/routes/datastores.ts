import { Type } from '@sinclair/typebox';
import { DATASTORE } from '../../engine/kinds/datastore';
import { resourceRoutes } from '../http/resource-routes';
import { StorableText } from '../schemas/fields';

const Cell = Type.Union([StorableText(), Type.Number(), Type.Null()]);
const Rows = Type.Array(Type.Array(Cell), {
  description: 'Rows, each an array of cells; the first row holds the column headings.',
});

/** Datastores: a table of rows, nothing beyond CRUD. */
export default resourceRoutes({
  kind: DATASTORE,
  path: '/datastores',
  key: 'datastore',
  plural: 'datastores',
  tag: 'Datastores',
  title: 'Datastore',
  properties: { data: Rows },
  fields: { data: Rows },
  createOmits: { flag: 'with_data', field: 'data' },
  filter: true,
});
