import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/db/database';
import { listEntities, viewEntity } from '../../engine/entities/entity-store';
import {
  createUserApp,
  deleteUserApp,
  ENV_VAR_VALUE_MAX,
  ENV_VARS_MAX,
  updateUserApp,
  USER_APP,
} from '../../engine/user-apps/user-app-store';
import { Description, IdParams, Name, Tags } from '../schemas/fields';
import { errorResponses, Timestamp } from '../schemas/common';
import { listQuerystring, listReply, listRequest, Nullable } from '../schemas/entity-lists';

const UserApp = Type.Object(
  {
    id: Type.String({ description: 'Prefix uapp_.' }),
    name: Type.String(),
    description: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    data: Type.Object({}, { additionalProperties: true, description: 'Omitted in lists.' }),
    env_vars: Type.Record(Type.String(), Type.String(), {
      description: 'Secrets: omitted in lists and never kept in the audit trail.',
    }),
    created: Timestamp,
    updated: Timestamp,
    version: Type.String(),
  },
  { $id: 'UserApp', title: 'UserApp' },
);

// Python clients send None for every argument left unset: null means "not given" here.
const publishFields = {
  name: Name,
  description: Type.Optional(Type.Union([Description, Type.Null()])),
  tags: Type.Optional(Tags),
  data: Type.Optional(
    Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
      'x-rule': 'a JSON object',
      description: 'A JSON object, default {}; replaced whole on update.',
    }),
  ),
  env_vars: Type.Optional(
    Type.Union(
      [
        Type.Record(
          Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' }),
          Type.String({ maxLength: ENV_VAR_VALUE_MAX }),
          { maxProperties: ENV_VARS_MAX, additionalProperties: false },
        ),
        Type.Null(),
      ],
      {
        'x-rule':
          'an object of variable names (a letter or _, then letters, digits or _; at most 128) to string values',
        description: `Up to ${ENV_VARS_MAX} NAME: string value pairs, default {}; replaced whole on update.`,
      },
    ),
  ),
};
const PublishCreate = Type.Object(publishFields, { description: 'name is required.' });
const PublishUpdate = Type.Partial(Type.Object({ ...publishFields, name: Type.Union([Name, Type.Null()]) }), {
  description: 'Every field optional; null keeps the stored value.',
});

const IgnoredWorkspace = Type.Optional(
  Type.String({
    description: 'Accepted and ignored: user apps belong to the account, alike from every workspace.',
  }),
);
const IdParam = IdParams('userApp');
const WorkspaceQuery = Type.Object({ workspace: IgnoredWorkspace });
const ListQuery = Type.Object({ ...listQuerystring(false).properties, workspace: IgnoredWorkspace });
const UserAppReply = Type.Object({ user_app: Type.Ref('UserApp') });
const tags = ['User apps'];
const config = { auditEntity: 'UserApp' } as const;

const userAppRoutes: FastifyPluginAsyncTypebox<{ db: Database }> = async (app, { db }) => {
  app.addSchema(UserApp);

  app.post(
    '/user_apps',
    {
      config,
      schema: {
        tags,
        summary: 'Publish a user app (extension)',
        description: 'Extension: the interface has user apps read-only; publishing tools create them here.',
        body: PublishCreate,
        response: { 200: UserAppReply, ...errorResponses(400) },
      },
    },
    async (request) => ({ user_app: USER_APP.view(await createUserApp(db, request.actor, request.body)) }),
  );

  app.get(
    '/user_apps',
    {
      config,
      schema: {
        tags,
        summary: 'List user apps (without data and env_vars), most recent first',
        querystring: ListQuery,
        response: { 200: listReply('user_apps', UserApp), ...errorResponses(400) },
      },
    },
    async (request) => {
      const { items, next_page_token } = await listEntities(
        db,
        request.actor,
        USER_APP,
        listRequest(request.query),
      );
      return { user_apps: items, next_page_token };
    },
  );

  app.get(
    '/user_apps/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Retrieve a user app, with data and env_vars',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: { 200: UserAppReply, ...errorResponses(404) },
      },
    },
    async (request) => ({
      user_app: USER_APP.view(await viewEntity(db, request.actor, USER_APP, request.params.id)),
    }),
  );

  app.put(
    '/user_apps/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Republish a user app (extension)',
        description:
          'Extension: every field optional; fields left out (or null) keep their values. The version increases.',
        params: IdParam,
        body: PublishUpdate,
        response: { 200: UserAppReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => ({
      user_app: USER_APP.view(await updateUserApp(db, request.actor, request.params.id, request.body)),
    }),
  );

  app.delete(
    '/user_apps/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a user app (extension)',
        description: 'Extension: the interface has user apps read-only.',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({
            user_app: Type.Object({ deleted: Type.Boolean(), id: Type.String(), name: Type.String() }),
          }),
          ...errorResponses(404),
        },
      },
    },
    async (request) => ({ user_app: await deleteUserApp(db, request.actor, request.params.id) }),
  );
};

export default userAppRoutes;
