import { type TProperties, Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/platform/database';
import type { LagTolerantReads } from '../../engine/platform/read-replica';
import { listRoute, retrieveRoute } from './entity-routes';
import {
  createResource,
  type ResourceInput,
  deleteResource,
  ignoredWorkspaceText,
  type Operation,
  type OperationDoc,
  type ResourceKind,
  updateResource,
} from '../../engine/store/resource-kind';
import { IdParams, Nullable, WorkspaceParam } from '../../engine/store/field-schemas';
import { errorResponses, Timestamp } from '../schemas/common';
import { listQuerystring, looseBoolean } from '../schemas/entity-lists';
import { registerFilterRoute } from './entity-filter';

/** An account-wide kind takes `workspace` as every route does, and ignores it. */
const IgnoredWorkspace = (plural: string) =>
  Type.Optional(Type.String({ description: ignoredWorkspaceText(plural) }));

/**
 * The HTTP face of a stored resource kind: from its declaration (engine/kinds/), the five CRUD
 * routes with their request schemas (the kind's own, which the engine validates other callers with)
 * and response schemas, so the validation, the OpenAPI document and the TypeScript types come from
 * one place. A kind needs no route file unless it has a route beyond CRUD.
 */
export function resourceRoutes(
  kind: ResourceKind,
): FastifyPluginAsyncTypebox<{ db: Database; reads?: LagTolerantReads }> {
  const { path, key, plural, tag, title } = kind.names;
  const spec = kind.http ?? {};
  const workspaceBound = kind.scope === 'workspace';
  const ownProperties: TProperties = Object.fromEntries(
    Object.entries(kind.fields).map(([name, field]) => [name, field.view]),
  );
  const properties: TProperties = {
    [kind.idField]: kind.symbolPattern
      ? Type.String({ description: `The identifier. Matches ${kind.symbolPattern.source}.` })
      : Type.String({ description: `Prefix ${kind.idPrefix}.` }),
    name: Type.String(),
    description: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    ...(kind.hasDate ? { date: Nullable(Type.String({ description: 'YYYYMMDD, or null: today.' })) } : {}),
    ...ownProperties,
    ...spec.extraViewSchema,
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

  const { create: Create, update: Update } = kind.request;
  const updateRequired = kind.updateRequires ?? [];
  const IdParam = kind.idPrefix
    ? IdParams(kind.idPrefix)
    : Type.Object({ id: kind.symbolSchema ?? Type.String() });
  const Query = Type.Object({ workspace: workspaceBound ? WorkspaceParam : IgnoredWorkspace(plural) });
  const ListQuery = workspaceBound
    ? listQuerystring(true, kind.hasDate)
    : Type.Object({
        ...listQuerystring(false, kind.hasDate).properties,
        workspace: IgnoredWorkspace(plural),
      });
  const Reply = Type.Object({ [key]: Type.Ref(title) });
  const config = { auditEntity: kind.entityType };
  const tags = [tag];
  const suffix = spec.extension ? ' (Extension)' : '';
  const noun = kind.noun;
  const omitNote = kind.listOmit.length > 0 ? ` (without ${kind.listOmit.join(', ')})` : '';
  const optionalNote = updateRequired.length > 0 ? '' : ' (every field optional)';
  const generic: Record<Operation, Required<Pick<OperationDoc, 'summary' | 'errors'>>> = {
    // A client-named kind's create meets the names already taken.
    create: { summary: `Create a ${noun}${suffix}`, errors: kind.symbolSchema ? [409] : [] },
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
  const workspaceOf = (body: { workspace?: string }, query: { workspace?: string }) =>
    workspaceBound ? (body.workspace ?? query.workspace) : undefined;

  return async (app, { db, reads }) => {
    for (const schema of spec.schemas ?? []) app.addSchema(schema);
    app.addSchema(View);
    if (Created !== View) app.addSchema(Created);

    if (spec.filter) registerFilterRoute(app, db, { kind, path, plural, tag, view: View, reads });

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
          // The kind's request schema (Create, Update) accepted the body, and Query the query.
          const body = request.body as ResourceInput;
          const query = request.query as { workspace?: string };
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
      listRoute(app, db, {
        ...routeDoc('list'),
        config,
        errors: errors('list'),
        kind,
        path,
        plural,
        item: View,
        querystring: ListQuery,
        reads,
      });

    if (routed('retrieve'))
      retrieveRoute(app, db, {
        ...routeDoc('retrieve'),
        config,
        errors: errors('retrieve'),
        kind,
        path,
        key,
        params: IdParam,
        querystring: Query,
        reply: Reply,
      });

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
          // The kind's request schema (Create, Update) accepted the body, and Query the query.
          const body = request.body as ResourceInput;
          const query = request.query as { workspace?: string };
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
