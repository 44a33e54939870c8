import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/platform/database';
import {
  createWorkspace,
  deleteWorkspace,
  getWorkspace,
  listWorkspaces,
  updateWorkspace,
} from '../../engine/identity/workspace-store';
import { errorResponses, NextPageToken, PageSize, PageToken, Timestamp } from '../schemas/common';
import { Description, StorableText, WorkspaceName } from '../../engine/store/field-schemas';

const Workspace = Type.Object(
  {
    name: Type.String({ description: 'The identifier: no spaces, cannot be changed.' }),
    description: Type.Union([Type.String(), Type.Null()]),
    created: Timestamp,
    updated: Timestamp,
    version: Type.String(),
  },
  { $id: 'Workspace', title: 'Workspace' },
);

const WorkspaceBody = Type.Object({
  name: WorkspaceName,
  description: Type.Optional(Type.Union([Description, Type.Null()])),
});

const NameParam = Type.Object({ id: WorkspaceName });
const WorkspaceReply = Type.Object({ workspace: Type.Ref('Workspace') });
const audit = { auditEntity: 'Workspace' } as const;

const workspaceRoutes: FastifyPluginAsyncTypebox<{ db: Database }> = async (app, { db }) => {
  app.addSchema(Workspace);

  app.post(
    '/workspaces',
    {
      config: audit,
      schema: {
        tags: ['Workspaces'],
        summary: 'Create a workspace',
        body: WorkspaceBody,
        response: { 200: WorkspaceReply, ...errorResponses(400, 409) },
      },
    },
    async (request) => ({ workspace: await createWorkspace(db, request.actor, request.body) }),
  );

  app.get(
    '/workspaces',
    {
      config: audit,
      schema: {
        tags: ['Workspaces'],
        summary: 'List workspaces, most recent first',
        querystring: Type.Object({
          query: Type.Optional(
            StorableText({ maxLength: 200, description: 'Workspaces whose name starts with this text.' }),
          ),
          page_size: Type.Optional(PageSize),
          page_token: Type.Optional(PageToken),
        }),
        response: {
          200: Type.Object({ workspaces: Type.Array(Type.Ref('Workspace')), next_page_token: NextPageToken }),
          ...errorResponses(400),
        },
      },
    },
    async (request) =>
      listWorkspaces(db, request.actor, {
        query: request.query.query ?? null,
        pageSize: request.query.page_size,
        pageToken: request.query.page_token ?? null,
      }),
  );

  app.get(
    '/workspaces/:id',
    {
      config: audit,
      schema: {
        tags: ['Workspaces'],
        summary: 'Retrieve a workspace by name',
        params: NameParam,
        response: { 200: WorkspaceReply, ...errorResponses(404) },
      },
    },
    async (request) => ({ workspace: await getWorkspace(db, request.actor, request.params.id) }),
  );

  app.put(
    '/workspaces/:id',
    {
      config: audit,
      schema: {
        tags: ['Workspaces'],
        summary: 'Update a workspace description (the name cannot change)',
        params: NameParam,
        body: WorkspaceBody,
        response: { 200: WorkspaceReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => ({
      workspace: await updateWorkspace(db, request.actor, request.params.id, request.body),
    }),
  );

  app.delete(
    '/workspaces/:id',
    {
      config: audit,
      schema: {
        tags: ['Workspaces'],
        summary: 'Delete a workspace (its objects are kept)',
        params: NameParam,
        response: {
          200: Type.Object({ workspace: Type.Object({ deleted: Type.Boolean(), name: Type.String() }) }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => ({ workspace: await deleteWorkspace(db, request.actor, request.params.id) }),
  );
};

export default workspaceRoutes;
