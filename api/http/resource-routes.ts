import { type TProperties, type TSchema, Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/db/database';
import { listEntities, viewEntity } from '../../engine/entities/entity-store';
import {
  createResource,
  deleteResource,
  type ResourceKind,
  updateResource,
} from '../../engine/entities/resource-kind';
import { errorResponses, Timestamp } from '../schemas/common';
import { listQuerystring, listReply, listRequest, looseBoolean, Nullable } from '../schemas/entity-lists';
import {
  Description,
  IdParams,
  LooseBoolean,
  Name,
  NullableDate,
  Tags,
  WorkspaceParam,
} from '../schemas/fields';

/**
 * The HTTP face of a stored resource kind: from its engine declaration (ResourceKind) and the
 * schemas of its own fields, the five CRUD routes with their request and response schemas, so the
 * validation, the OpenAPI document and the TypeScript types come from one place. A kind's route
 * file holds only what differs: its fields' schemas, and any route beyond CRUD.
 */
export interface ResourceRoutes {
  kind: ResourceKind;
  /** `/datastores`. */
  path: string;
  /** The reply's key for one object (`datastore`) and for a list (`datastores`). */
  key: string;
  plural: string;
  /** The OpenAPI tag (`Datastores`) and the response schema's title (`Datastore`). */
  tag: string;
  title: string;
  /** The response schema of the kind's own fields (the body's, as stored and shown). */
  properties: TProperties;
  /** The request schema of the kind's own fields; required ones are required on create. */
  fields: TProperties;
  /** `with_data`: false leaves `data` out of the create reply (it can be large). */
  createOmits?: { flag: string; field: string };
  /** Routes marked as an extension of the interface say why here. */
  extension?: string;
  /** Schemas the properties refer to (`Type.Ref`). */
  schemas?: TSchema[];
  /** Client-named kinds: the schema of the `symbol` a create names and the path carries. */
  symbol?: TSchema;
  /** Rules of the create body across fields (an `anyOf` with its `x-message`). */
  createOptions?: Record<string, unknown>;
  /** The update body's own forms of some fields (a name that may be null, meaning: keep it). */
  updateFields?: TProperties;
  /** Fields an update must carry too. */
  updateRequired?: string[];
  /** Fields accepted and ignored (sent by clients, meaningless for this kind). */
  ignored?: TProperties;
}

/** An account-wide kind takes `workspace` as every route does, and ignores it. */
const IgnoredWorkspace = (plural: string) =>
  Type.Optional(
    Type.String({
      description: `Accepted and ignored: ${plural.replace(/_/g, ' ')} belong to the account, alike from every workspace.`,
    }),
  );

export function resourceRoutes(spec: ResourceRoutes): FastifyPluginAsyncTypebox<{ db: Database }> {
  const { kind, path, key, plural, tag, title } = spec;
  const workspaceBound = kind.scope === 'workspace';
  const properties: TProperties = {
    id: Type.String(),
    name: Type.String(),
    description: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    ...(kind.hasDate ? { date: Nullable(Type.String({ description: 'YYYYMMDD, or null: today.' })) } : {}),
    ...spec.properties,
    ...(workspaceBound ? { workspace: Type.String() } : {}),
    created: Timestamp,
    updated: Timestamp,
    version: Type.String(),
  };
  const View = Type.Object(properties, { $id: title, title });
  const omitted = spec.createOmits;
  const Created = omitted
    ? Type.Object(
        { ...properties, [omitted.field]: Type.Optional(properties[omitted.field]!) },
        {
          $id: `${title}Created`,
          title: `${title}Created`,
          description: `Without ${omitted.field} when ${omitted.flag} is false.`,
        },
      )
    : View;

  const bodyFields: TProperties = {
    name: Name,
    description: Type.Optional(Type.Union([Description, Type.Null()])),
    tags: Type.Optional(Tags),
    ...(kind.hasDate ? { date: Type.Optional(NullableDate) } : {}),
    ...spec.fields,
    ...(omitted ? { [omitted.flag]: Type.Optional(LooseBoolean) } : {}),
    ...spec.ignored,
    workspace: workspaceBound ? WorkspaceParam : IgnoredWorkspace(plural),
  };
  const Create = Type.Object(
    { ...(spec.symbol ? { symbol: spec.symbol } : {}), ...bodyFields },
    spec.createOptions ?? {},
  );
  Create.description = `${(Create.required ?? []).join(' and ')} required.`;
  const updateRequired = spec.updateRequired ?? [];
  const Update = Type.Object(
    Object.fromEntries(
      Object.entries({ ...bodyFields, ...spec.updateFields }).map(([name, schema]) => [
        name,
        updateRequired.includes(name) ? schema : Type.Optional(schema),
      ]),
    ),
    {
      description:
        (updateRequired.length > 0
          ? `${updateRequired.join(' and ')} required; other fields left out keep their values.`
          : 'Every field optional.') + (spec.symbol ? ' The symbol comes from the path.' : ''),
    },
  );
  const IdParam = kind.idPrefix ? IdParams(kind.idPrefix) : Type.Object({ id: spec.symbol ?? Type.String() });
  const Query = Type.Object({ workspace: workspaceBound ? WorkspaceParam : IgnoredWorkspace(plural) });
  const ListQuery = workspaceBound
    ? listQuerystring(true)
    : Type.Object({ ...listQuerystring(false).properties, workspace: IgnoredWorkspace(plural) });
  const Reply = Type.Object({ [key]: Type.Ref(title) });
  const config = { auditEntity: kind.entityType };
  const tags = [tag];
  const suffix = spec.extension ? ' (Extension)' : '';
  const description = spec.extension;
  const noun = kind.noun;
  const omitNote = kind.listOmit.length > 0 ? ` (without ${kind.listOmit.join(', ')})` : '';
  const workspaceOf = (body: { workspace?: unknown }, query: { workspace?: unknown }) =>
    workspaceBound ? (body.workspace ?? query.workspace) : undefined;

  return async (app, { db }) => {
    for (const schema of spec.schemas ?? []) app.addSchema(schema);
    app.addSchema(View);
    if (Created !== View) app.addSchema(Created);

    app.post(
      path,
      {
        config,
        schema: {
          tags,
          summary: `Create a ${noun}${suffix}`,
          description,
          body: Create,
          querystring: Query,
          response: { 200: Type.Object({ [key]: Type.Ref(Created.$id!) }), ...errorResponses(400) },
        },
      },
      async (request) => {
        const body = request.body as Record<string, unknown>;
        const query = request.query as Record<string, unknown>;
        const record = await createResource(db, request.actor, kind, {
          ...body,
          workspace: workspaceOf(body, query),
        });
        const view = kind.view(record);
        if (omitted && !looseBoolean(body[omitted.flag] as boolean | string | undefined, true)) {
          delete view[omitted.field];
        }
        return { [key]: view };
      },
    );

    app.get(
      path,
      {
        config,
        schema: {
          tags,
          summary: `List ${plural.replace(/_/g, ' ')}${omitNote}, most recent first${suffix}`,
          description,
          querystring: ListQuery,
          response: { 200: listReply(plural, View), ...errorResponses(400) },
        },
      },
      async (request) => {
        const { items, next_page_token } = await listEntities(
          db,
          request.actor,
          kind,
          listRequest(request.query),
        );
        return { [plural]: items, next_page_token };
      },
    );

    app.get(
      `${path}/:id`,
      {
        config,
        schema: {
          tags,
          summary: `Retrieve a ${noun}${suffix}`,
          description,
          params: IdParam,
          querystring: Query,
          response: { 200: Reply, ...errorResponses(400, 404) },
        },
      },
      async (request) => {
        const { id } = request.params as { id: string };
        const query = request.query as { workspace?: string };
        return { [key]: kind.view(await viewEntity(db, request.actor, kind, id, query.workspace)) };
      },
    );

    app.put(
      `${path}/:id`,
      {
        config,
        schema: {
          tags,
          summary: `Update a ${noun} (every field optional)${suffix}`,
          description,
          params: IdParam,
          body: Update,
          querystring: Query,
          response: { 200: Reply, ...errorResponses(400, 404) },
        },
      },
      async (request) => {
        const { id } = request.params as { id: string };
        const body = request.body as Record<string, unknown>;
        const query = request.query as Record<string, unknown>;
        const record = await updateResource(db, request.actor, kind, id, {
          ...body,
          workspace: workspaceOf(body, query),
        });
        return { [key]: kind.view(record) };
      },
    );

    app.delete(
      `${path}/:id`,
      {
        config,
        schema: {
          tags,
          summary: `Delete a ${noun}${suffix}`,
          description,
          params: IdParam,
          querystring: Query,
          response: {
            200: Type.Object({
              [key]: Type.Object({
                deleted: Type.Boolean(),
                [kind.idField]: Type.String(),
                name: Type.String(),
              }),
            }),
            ...errorResponses(400, 404),
          },
        },
      },
      async (request) => {
        const { id } = request.params as { id: string };
        const query = request.query as { workspace?: string };
        return { [key]: await deleteResource(db, request.actor, kind, id, query.workspace) };
      },
    );
  };
}
