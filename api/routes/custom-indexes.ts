import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  CUSTOM_INDEX,
  createCustomIndex,
  DATA_POINTS_MAX,
  SYMBOL_MAX,
  deleteCustomIndex,
  updateCustomIndex,
} from '../../engine/custom-indexes/custom-index-store';
import type { Database } from '../../engine/db/database';
import { listEntities, viewEntity } from '../../engine/entities/entity-store';
import { errorResponses, Timestamp } from '../schemas/common';
import { CurrencyCode, DateYmd, Description, Name, Tags } from '../schemas/fields';
import { listQuerystring, listReply, listRequest, Nullable } from '../schemas/entity-lists';

const CustomIndex = Type.Object(
  {
    symbol: Type.String({ description: 'The identifier. Matches ^CUSTOM:[A-Z0-9_]*$.' }),
    name: Type.String(),
    description: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    data_type: Type.Union([Type.Literal('PRICE'), Type.Literal('RETURN'), Type.Literal('RETURN_100')], {
      description: 'PRICE, RETURN (decimal) or RETURN_100 (percent).',
    }),
    periodicity: Type.Union([Type.Literal('D'), Type.Literal('M')], {
      description: 'D (daily) or M (monthly).',
    }),
    currency: Type.String({ description: '3-letter ISO 4217 code.' }),
    base_price: Type.Number({ description: 'Base price when data_type is RETURN or RETURN_100.' }),
    data: Type.Array(Type.Tuple([Type.String(), Type.Number()]), {
      description: '[YYYYMMDD, value] pairs in ascending date order. Omitted in lists.',
    }),
    created: Timestamp,
    updated: Timestamp,
    version: Type.String(),
  },
  { $id: 'CustomIndex', title: 'CustomIndex' },
);

// Left to the engine: each date once, and the value floor of the data type (PRICE > 0, RETURN > -1).
const OrNull = <T extends TSchema>(schema: T, options = {}) => Type.Union([schema, Type.Null()], options);
const DataPoint = Type.Tuple([DateYmd, Type.Number()], {
  'x-rule': 'a [YYYYMMDD, number] pair',
  description: '[YYYYMMDD, number]',
});
const fields = {
  name: Name,
  description: Type.Optional(OrNull(Description)),
  tags: Type.Optional(Tags),
  data_type: Type.Optional(
    Type.Union([Type.Literal('PRICE'), Type.Literal('RETURN'), Type.Literal('RETURN_100'), Type.Null()], {
      'x-rule': 'one of PRICE, RETURN, RETURN_100',
      description: 'PRICE (default), RETURN or RETURN_100.',
    }),
  ),
  periodicity: Type.Optional(
    Type.Union([Type.Literal('D'), Type.Literal('M'), Type.Null()], {
      'x-rule': 'D (daily) or M (monthly)',
      description: 'D (default) or M.',
    }),
  ),
  currency: Type.Optional(OrNull(CurrencyCode)),
  base_price: Type.Optional(
    Type.Union([Type.Number({ minimum: Number.MIN_VALUE }), Type.Null()], {
      'x-rule': 'a positive number',
      description: 'Positive, default 1.0.',
    }),
  ),
  data: Type.Array(DataPoint, {
    minItems: 1,
    maxItems: DATA_POINTS_MAX,
    description:
      `1 to ${DATA_POINTS_MAX} [YYYYMMDD, number] pairs, each date once; stored in ascending date order. ` +
      'PRICE values are greater than 0, RETURN greater than -1, RETURN_100 greater than -100.',
  }),
  date: Type.Optional(
    Type.Unknown({ description: 'Accepted and ignored: the points of data carry the dates.' }),
  ),
};
const SymbolPattern = Type.String({
  pattern: `^CUSTOM:[A-Z0-9_]{0,${SYMBOL_MAX - 7}}$`,
  'x-rule': `CUSTOM: followed by upper-case letters, digits or _ (no spaces), at most ${SYMBOL_MAX} characters in all`,
});
const CreateBody = Type.Object({ symbol: SymbolPattern, ...fields });
const UpdateBody = Type.Object(fields, {
  description:
    'name and data are required; other fields left out keep their values. The symbol comes from the path.',
});

const IgnoredWorkspace = Type.Optional(
  Type.String({
    description: 'Accepted and ignored: custom indexes belong to the account, alike from every workspace.',
  }),
);
const SymbolParam = Type.Object({ id: SymbolPattern });
const WorkspaceQuery = Type.Object({ workspace: IgnoredWorkspace });
const ListQuery = Type.Object({ ...listQuerystring(false).properties, workspace: IgnoredWorkspace });
const CustomIndexReply = Type.Object({ custom_index: Type.Ref('CustomIndex') });
const tags = ['Custom indexes'];
const config = { auditEntity: 'CustomSecurity' } as const;

const customIndexRoutes: FastifyPluginAsyncTypebox<{ db: Database }> = async (app, { db }) => {
  app.addSchema(CustomIndex);

  app.post(
    '/custom_indexes',
    {
      config,
      schema: {
        tags,
        summary: 'Create a custom index',
        body: CreateBody,
        response: { 200: CustomIndexReply, ...errorResponses(400, 409) },
      },
    },
    async (request) => ({
      custom_index: CUSTOM_INDEX.view(await createCustomIndex(db, request.actor, request.body)),
    }),
  );

  app.get(
    '/custom_indexes',
    {
      config,
      schema: {
        tags,
        summary: 'List custom indexes (without data), most recent first',
        querystring: ListQuery,
        response: { 200: listReply('custom_indexes', CustomIndex), ...errorResponses(400) },
      },
    },
    async (request) => {
      const { items, next_page_token } = await listEntities(
        db,
        request.actor,
        CUSTOM_INDEX,
        listRequest(request.query),
      );
      return { custom_indexes: items, next_page_token };
    },
  );

  app.get(
    '/custom_indexes/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Retrieve a custom index',
        params: SymbolParam,
        querystring: WorkspaceQuery,
        response: { 200: CustomIndexReply, ...errorResponses(404) },
      },
    },
    async (request) => ({
      custom_index: CUSTOM_INDEX.view(await viewEntity(db, request.actor, CUSTOM_INDEX, request.params.id)),
    }),
  );

  app.put(
    '/custom_indexes/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Update a custom index',
        params: SymbolParam,
        body: UpdateBody,
        response: { 200: CustomIndexReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => ({
      custom_index: CUSTOM_INDEX.view(
        await updateCustomIndex(db, request.actor, request.params.id, request.body),
      ),
    }),
  );

  app.delete(
    '/custom_indexes/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a custom index',
        params: SymbolParam,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({
            custom_index: Type.Object({
              deleted: Type.Boolean(),
              symbol: Type.String(),
              name: Type.String(),
            }),
          }),
          ...errorResponses(404),
        },
      },
    },
    async (request) => ({ custom_index: await deleteCustomIndex(db, request.actor, request.params.id) }),
  );
};

export default customIndexRoutes;
