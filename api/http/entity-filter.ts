import { type TObject, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Database } from '../../engine/platform/database';
import type { LagTolerantReads } from '../../engine/platform/read-replica';
import { InvalidInput } from '../../engine/platform/errors';
import { listEntities } from '../../engine/store/list-entities';
import type { ListRequest } from '../../engine/store/list-query';
import type { ResourceKind } from '../../engine/store/resource-kind';
import { errorResponses, PageSize } from '../schemas/common';
import { listReply } from '../schemas/entity-lists';
import { PeriodBound, StorableText, Tags, WorkspaceParam } from '../schemas/fields';

/**
 * `POST /<plural>/filter`: the list of a kind with its parameters in a JSON body, as both PyPI
 * clients' `filter()` sends them (`tags`, `link_uid`, `start`, `end`, `date_time`, `limit`), on the
 * list engine: the same query language, workspace scoping and page tokens as `GET /<plural>`.
 */
export const FilterBody = Type.Object(
  {
    workspace: WorkspaceParam,
    query: Type.Optional(
      StorableText({
        maxLength: 10_000,
        description: 'As on the list: an id, `#tags`, `&link_uid`, a JSON query or a name prefix.',
      }),
    ),
    tags: Type.Optional(Tags),
    link_uid: Type.Optional(Type.Union([StorableText({ minLength: 1, maxLength: 200 }), Type.Null()])),
    start: Type.Optional(Type.Union([PeriodBound, Type.Null()])),
    end: Type.Optional(Type.Union([PeriodBound, Type.Null()])),
    date_time: Type.Optional(Type.Union([PeriodBound, Type.Null()])),
    period_field: Type.Optional(
      Type.Union([Type.Literal('date'), Type.Literal('updated_on'), Type.Literal(''), Type.Null()]),
    ),
    limit: Type.Optional(Type.Union([PageSize, Type.Null()], { description: 'page_size by another name.' })),
    page_size: Type.Optional(Type.Union([PageSize, Type.Null()])),
    page_token: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  },
  {
    description:
      'Every field optional. `tags` (every tag) and `link_uid` combine with each other, not with `query`; `limit` is page_size.',
  },
);

interface FilterFields {
  workspace?: string;
  query?: string;
  tags?: string[] | string | null;
  link_uid?: string | null;
  start?: string | null;
  end?: string | null;
  date_time?: string | null;
  period_field?: string | null;
  limit?: number | null;
  page_size?: number | null;
  page_token?: string | null;
}

/** The list request a filter body means. */
export function filterRequest(body: FilterFields): ListRequest & { workspace?: string } {
  const tags = (typeof body.tags === 'string' ? body.tags.split(/[\s,]+/) : (body.tags ?? [])).filter(
    (tag) => tag.trim() !== '',
  );
  const link = body.link_uid ?? null;
  if ((tags.length > 0 || link !== null) && body.query) {
    throw new InvalidInput('query does not combine with tags or link_uid: give one or the other.');
  }
  if (body.limit != null && body.page_size != null && body.limit !== body.page_size) {
    throw new InvalidInput('limit and page_size differ: give one of them.');
  }
  let query = body.query ?? null;
  if (tags.length > 0 && link !== null) {
    // Both at once: a JSON query, scoped to the workspace as the text modes are.
    query = JSON.stringify({
      filters: [
        ['workspace', '=', body.workspace || 'main'],
        ['link_uid', '=', link],
        ...tags.map((tag) => ['tags', '=', tag]),
      ],
    });
  } else if (tags.length > 0) {
    query = '#' + tags.join(' ');
  } else if (link !== null) {
    query = '&' + link;
  }
  return {
    query,
    page_size: body.page_size ?? body.limit ?? null,
    page_token: body.page_token ?? null,
    start: body.start ?? null,
    end: body.end ?? null,
    date_time: body.date_time ?? null,
    period_field: body.period_field ?? null,
    workspace: body.workspace,
  };
}

export function registerFilterRoute(
  app: FastifyInstance,
  db: Database,
  spec: {
    kind: ResourceKind;
    path: string;
    plural: string;
    tag: string;
    view: TObject;
    reads?: LagTolerantReads;
  },
): void {
  const { kind, path, plural } = spec;
  app.post(
    `${path}/filter`,
    {
      // A list: it keeps no caller's reads on the primary (api/http/read-your-writes.ts).
      config: { auditEntity: kind.entityType, readsOnly: true },
      schema: {
        tags: [spec.tag],
        summary: `Filter ${plural} (the list, its parameters in a JSON body)`,
        description:
          'What the PyPI clients\u2019 `filter()` sends. Answers as the list does: most recent first, without the omitted fields, with next_page_token.',
        body: FilterBody,
        response: { 200: listReply(plural, spec.view), ...errorResponses() },
      },
    },
    async (request) => {
      const body = request.body as FilterFields;
      const { items, next_page_token } = await listEntities(db, request.actor, kind, filterRequest(body), {
        reads: spec.reads,
      });
      return { [plural]: items, next_page_token };
    },
  );
}
