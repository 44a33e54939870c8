import { type TProperties, type TSchema, Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/platform/database';
import { viewEntity } from '../../engine/store/entity-store';
import { listEntities } from '../../engine/store/list-entities';
import {
  createResource,
  deleteResource,
  type ResourceKind,
  updateResource,
} from '../../engine/store/resource-kind';
import { errorResponses, Timestamp } from '../schemas/common';
import { registerFilterRoute } from './entity-filter';
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
  /**
   * Per CRUD route: `false` leaves the route out (a kind that is never updated); otherwise the
   * route's own summary and description in place of the generic ones, and the statuses it may
   * answer beyond the generic ones (403 for a read-only record, 409 for a referenced one).
   */
  operations?: Partial<Record<Operation, false | OperationDoc>>;
  /** `POST <path>/filter`: the list with its parameters in a JSON body (the PyPI clients' `filter()`). */
  filter?: boolean;
}

export type Operation = 'create' | 'list' | 'retrieve' | 'update' | 'delete';
export interface OperationDoc {
  summary?: string;
  description?: string;
  errors?: number[];
}

/** An account-wide kind takes `workspace` as every route does, and ignores it. */
const ignoredWorkspaceText = (plural: string) =>
  `Accepted and ignored: ${plural.replace(/_/g, ' ')} belong to the account, alike from every workspace.`;
const IgnoredWorkspace = (plural: string) =>
  Type.Optional(Type.String({ description: ignoredWorkspaceText(plural) }));
/** In a body, whatever it holds. */
const IgnoredBodyWorkspace = (plural: string) =>
  Type.Optional(Type.Unknown({ description: ignoredWorkspaceText(plural) }));

export function resourceRoutes(spec: ResourceRoutes): FastifyPluginAsyncTypebox<{ db: Database }> {
  const { kind, path, key, plural, tag, title } = spec;
  const workspaceBound = kind.scope === 'workspace';
  const properties: TProperties = {
    [kind.idField]: kind.symbolPattern
      ? Type.String({ description: `The identifier. Matches ${kind.symbolPattern.source}.` })
      : Type.String(),
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
    workspace: workspaceBound ? WorkspaceParam : IgnoredBodyWorkspace(plural),
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
  const noun = kind.noun;
  const omitNote = kind.listOmit.length > 0 ? ` (without ${kind.listOmit.join(', ')})` : '';
  const optionalNote = updateRequired.length > 0 ? '' : ' (every field optional)';
  const generic: Record<Operation, Required<Pick<OperationDoc, 'summary' | 'errors'>>> = {
    // A client-named kind's create meets the names already taken.
    create: { summary: `Create a ${noun}${suffix}`, errors: spec.symbol ? [409] : [] },
    list: { summary: `List ${plural.replace(/_/g, ' ')}${omitNote}, most recent first${suffix}`, errors: [] },
    retrieve: { summary: `Retrieve a ${noun}${suffix}`, errors: [404] },
    update: { summary: `Update a ${noun}${optionalNote}${suffix}`, errors: [404] },
    delete: { summary: `Delete a ${noun}${suffix}`, errors: [404] },
  };
  const routeDoc = (operation: Operation) => {
    const own = spec.operations?.[operation] || {};
    return {
      tags,
      summary: own.summary ?? generic[operation].summary,
      description: own.description ?? spec.extension,
    };
  };
  const errors = (operation: Operation) =>
    errorResponses(...generic[operation].errors, ...((spec.operations?.[operation] || {}).errors ?? []));
  const routed = (operation: Operation) => spec.operations?.[operation] !== false;
  const workspaceOf = (body: { workspace?: unknown }, query: { workspace?: unknown }) =>
    workspaceBound ? (body.workspace ?? query.workspace) : undefined;

  return async (app, { db }) => {
    for (const schema of spec.schemas ?? []) app.addSchema(schema);
    app.addSchema(View);
    if (Created !== View) app.addSchema(Created);

    if (spec.filter) registerFilterRoute(app, db, { kind, path, plural, tag, view: View });

    if (routed('create'))
      app.post(
        path,
        {
          config,
          schema: {
            ...routeDoc('create'),
            body: Create,
            querystring: Query,
            response: { 200: Type.Object({ [key]: Type.Ref(Created.$id!) }), ...errors('create') },
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

    if (routed('list'))
      app.get(
        path,
        {
          config,
          schema: {
            ...routeDoc('list'),
            querystring: ListQuery,
            response: { 200: listReply(plural, View), ...errors('list') },
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

    if (routed('retrieve'))
      app.get(
        `${path}/:id`,
        {
          config,
          schema: {
            ...routeDoc('retrieve'),
            params: IdParam,
            querystring: Query,
            response: { 200: Reply, ...errors('retrieve') },
          },
        },
        async (request) => {
          const { id } = request.params as { id: string };
          const query = request.query as { workspace?: string };
          return { [key]: kind.view(await viewEntity(db, request.actor, kind, id, query.workspace)) };
        },
      );

    if (routed('update'))
      app.put(
        `${path}/:id`,
        {
          config,
          schema: {
            ...routeDoc('update'),
            params: IdParam,
            body: Update,
            querystring: Query,
            response: { 200: Reply, ...errors('update') },
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

    if (routed('delete'))
      app.delete(
        `${path}/:id`,
        {
          config,
          schema: {
            ...routeDoc('delete'),
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
              ...errors('delete'),
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
