import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  createDatastore,
  DATASTORE,
  deleteDatastore,
  updateDatastore,
} from '../../engine/datastores/datastore-store';
import type { Database } from '../../engine/db/database';
import { listEntities, viewEntity } from '../../engine/entities/entity-store';
import {
  Description,
  IdParams,
  StorableText,
  Name,
  NullableDate,
  Tags,
  WorkspaceParam,
} from '../schemas/fields';
import { errorResponses, Timestamp } from '../schemas/common';
import {
  listQuerystring,
  listReply,
  listRequest,
  LooseBoolean,
  looseBoolean,
  Nullable,
} from '../schemas/entity-lists';

const Cell = Type.Union([StorableText(), Type.Number(), Type.Null()]);
const Rows = Type.Array(Type.Array(Cell), {
  description: 'Rows, each an array of cells; the first row holds the column headings.',
});

const datastoreProperties = {
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  date: Nullable(Type.String({ description: 'YYYYMMDD, or null: today.' })),
  data: Rows,
  workspace: Type.String(),
  created: Timestamp,
  updated: Timestamp,
  version: Type.String(),
};

const Datastore = Type.Object(datastoreProperties, { $id: 'Datastore', title: 'Datastore' });
// The create response leaves `data` out when with_data is false; a schema of its own says so.
const DatastoreCreated = Type.Object(
  { ...datastoreProperties, data: Type.Optional(Rows) },
  {
    $id: 'DatastoreCreated',
    title: 'DatastoreCreated',
    description: 'Without data when with_data is false.',
  },
);

// Request bodies are validated in the engine (with messages naming the row or field); the schema documents them.
const workspaceField = WorkspaceParam;
const datastoreFields = {
  name: Name,
  description: Type.Optional(Type.Union([Description, Type.Null()])),
  tags: Type.Optional(Tags),
  date: Type.Optional(NullableDate),
  data: Rows,
  with_data: Type.Optional(LooseBoolean),
  workspace: workspaceField,
};
const DatastoreCreate = Type.Object(datastoreFields, { description: 'name and data are required.' });
const DatastoreUpdate = Type.Partial(Type.Object(datastoreFields), { description: 'Every field optional.' });

const IdParam = IdParams('datastore');
const WorkspaceQuery = Type.Object({ workspace: workspaceField });
const DatastoreReply = Type.Object({ datastore: Type.Ref('Datastore') });
const tags = ['Datastores'];
const config = { auditEntity: 'Datastore' } as const;

const datastoreRoutes: FastifyPluginAsyncTypebox<{ db: Database }> = async (app, { db }) => {
  app.addSchema(Datastore);
  app.addSchema(DatastoreCreated);

  app.post(
    '/datastores',
    {
      config,
      schema: {
        tags,
        summary: 'Create a datastore',
        body: DatastoreCreate,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({ datastore: Type.Ref('DatastoreCreated') }),
          ...errorResponses(400),
        },
      },
    },
    async (request) => {
      const { body } = request;
      const record = await createDatastore(db, request.actor, {
        ...body,
        workspace: body.workspace ?? request.query.workspace,
      });
      const view = DATASTORE.view(record);
      if (!looseBoolean(body.with_data, true)) delete view.data;
      return { datastore: view };
    },
  );

  app.get(
    '/datastores',
    {
      config,
      schema: {
        tags,
        summary: 'List datastores (without data), most recent first',
        querystring: listQuerystring(true),
        response: { 200: listReply('datastores', Datastore), ...errorResponses(400) },
      },
    },
    async (request) => {
      const { items, next_page_token } = await listEntities(
        db,
        request.actor,
        DATASTORE,
        listRequest(request.query),
      );
      return { datastores: items, next_page_token };
    },
  );

  app.get(
    '/datastores/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Retrieve a datastore',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: { 200: DatastoreReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => ({
      datastore: DATASTORE.view(
        await viewEntity(db, request.actor, DATASTORE, request.params.id, request.query.workspace),
      ),
    }),
  );

  app.put(
    '/datastores/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Update a datastore (every field optional)',
        params: IdParam,
        body: DatastoreUpdate,
        querystring: WorkspaceQuery,
        response: { 200: DatastoreReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      const { body } = request;
      const record = await updateDatastore(db, request.actor, request.params.id, {
        ...body,
        workspace: body.workspace ?? request.query.workspace,
      });
      return { datastore: DATASTORE.view(record) };
    },
  );

  app.delete(
    '/datastores/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a datastore',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({
            datastore: Type.Object({ deleted: Type.Boolean(), id: Type.String(), name: Type.String() }),
          }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => ({
      datastore: await deleteDatastore(db, request.actor, request.params.id, request.query.workspace),
    }),
  );
};

export default datastoreRoutes;
