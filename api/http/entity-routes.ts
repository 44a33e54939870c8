import type { TObject, TSchema } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Database } from '../../engine/platform/database';
import type { LagTolerantReads } from '../../engine/platform/read-replica';
import { type EntityKind, type EntityRecord, viewEntity } from '../../engine/store/entity-store';
import { listEntities } from '../../engine/store/list-entities';
import { listReply, listRequest } from '../schemas/entity-lists';

/** What a list or retrieve route of a stored kind shows in the OpenAPI document. */
interface RouteDoc {
  tags: string[];
  summary: string;
  description?: string;
  /** `errorResponses(...)` of the route. */
  errors: Record<number, unknown>;
  config: { auditEntity: string };
}

/**
 * `GET <path>`: the kind's list (the query language, keyset paging), answering
 * `{<plural>: [...], next_page_token}`. Declared kinds (resource-routes.ts), files, reports and
 * workflows all list through it; from the read replica when `reads` has one.
 */
export function listRoute(
  app: FastifyInstance,
  db: Database,
  spec: RouteDoc & {
    kind: EntityKind;
    path: string;
    plural: string;
    item: TObject;
    querystring: TSchema;
    reads?: LagTolerantReads;
  },
): void {
  const { kind, plural, tags, summary, description, errors, config } = spec;
  app.get(
    spec.path,
    {
      config,
      schema: {
        tags,
        summary,
        ...(description ? { description } : {}),
        querystring: spec.querystring,
        response: { 200: listReply(plural, spec.item), ...errors },
      },
    },
    async (request) => {
      const { items, next_page_token } = await listEntities(
        db,
        request.actor,
        kind,
        listRequest(request.query as Parameters<typeof listRequest>[0]),
        { reads: spec.reads },
      );
      return { [plural]: items, next_page_token };
    },
  );
}

/**
 * `GET <path>/:id`: one record of the kind in the caller's account (and workspace), audited as a
 * view, answering `{<key>: view}`.
 */
export function retrieveRoute(
  app: FastifyInstance,
  db: Database,
  spec: RouteDoc & {
    kind: EntityKind;
    path: string;
    key: string;
    params: TSchema;
    querystring: TSchema;
    reply: TSchema;
    /** The record as shown; default: the kind's view. */
    view?: (record: EntityRecord) => unknown;
  },
): void {
  const { kind, key, tags, summary, description, errors, config } = spec;
  const view = spec.view ?? ((record: EntityRecord) => kind.view(record));
  app.get(
    `${spec.path}/:id`,
    {
      config,
      schema: {
        tags,
        summary,
        ...(description ? { description } : {}),
        params: spec.params,
        querystring: spec.querystring,
        response: { 200: spec.reply, ...errors },
      },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      const { workspace } = request.query as { workspace?: string };
      return { [key]: view(await viewEntity(db, request.actor, kind, id, workspace)) };
    },
  );
}
