import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/db/database';
import { listEntities, viewEntity } from '../../engine/entities/entity-store';
import {
  createPortfolio,
  deletePortfolio,
  PORTFOLIO,
  updatePortfolio,
} from '../../engine/portfolios/portfolio-store';
import { errorResponses, Timestamp } from '../schemas/common';
import {
  listQuerystring,
  listReply,
  listRequest,
  LooseBoolean,
  looseBoolean,
  Nullable,
} from '../schemas/entity-lists';

const NullableNumber = Nullable(Type.Number());
const NullableString = Nullable(Type.String());

export const Security = Type.Object(
  {
    id: Type.String({ description: 'REQUIRED. Unique identifier of the position.' }),
    symbol: Type.String({ description: 'REQUIRED.' }),
    quantity: Type.Number({ description: 'REQUIRED. Positive long, negative short.' }),
    label: Type.String({ default: '' }),
    cost_price: NullableNumber,
    market_price: NullableNumber,
    currency: NullableString,
    fx_rate: NullableNumber,
    multiplier: NullableNumber,
    unrealized_pl: NullableNumber,
    unrealized_pl_in_base: NullableNumber,
    isin: NullableString,
    status: Type.Union([Type.Literal('OK'), Type.Literal('ERROR'), Type.Literal('UNHEALTHY')]),
    exchange: NullableString,
    name: NullableString,
    extra_data: Nullable(Type.Record(Type.String(), Type.Unknown())),
  },
  { $id: 'Security', title: 'Security' },
);

const Portfolio = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: NullableString,
    tags: Type.Array(Type.String()),
    date: NullableString,
    base_currency: Type.String(),
    nlv: NullableNumber,
    securities: Type.Array(Type.Ref('Security')),
    workspace: Type.String(),
    created: Timestamp,
    updated: Timestamp,
    version: Type.String(),
  },
  { $id: 'Portfolio', title: 'Portfolio' },
);

// Request bodies are validated in the engine (with messages naming the field); the schema documents them.
const SecurityInput = Type.Unknown({ description: 'A security object: id, symbol, quantity required.' });
const PortfolioBody = Type.Object({
  name: Type.Optional(Type.Unknown({ description: 'REQUIRED on create. 1 to 200 characters.' })),
  description: Type.Optional(Type.Unknown({ description: 'Up to 500 characters; #hashtags become tags.' })),
  date: Type.Optional(Type.Unknown({ description: 'YYYYMMDD or null (today).' })),
  base_currency: Type.Optional(Type.Unknown({ description: 'Default USD.' })),
  nlv: Type.Optional(Type.Unknown({ description: 'Null: calculated. With nlv, up to 3000 securities.' })),
  securities: Type.Optional(
    Type.Array(SecurityInput, { description: 'REQUIRED on create. At most 250 (3000 with nlv).' }),
  ),
  tags: Type.Optional(Type.Unknown({ description: 'Array of strings (or a space-separated string).' })),
  with_securities: Type.Optional(LooseBoolean),
  workspace: Type.Optional(Type.String({ description: 'Default main; also accepted on the query string.' })),
});

const IdParam = Type.Object({ id: Type.String() });
const WorkspaceQuery = Type.Object({
  workspace: Type.Optional(Type.String({ description: 'Default main.' })),
});

// The create response leaves securities out when with_securities is false.
const PortfolioCreated = Type.Object(
  { ...Portfolio.properties, securities: Type.Optional(Type.Array(Type.Ref('Security'))) },
  { $id: 'PortfolioCreated', title: 'PortfolioCreated' },
);
const PortfolioReply = Type.Object({ portfolio: Type.Ref('Portfolio') });
const tags = ['Portfolios'];
const config = { auditEntity: 'Portfolio' } as const;

const portfolioRoutes: FastifyPluginAsyncTypebox<{ db: Database }> = async (app, { db }) => {
  app.addSchema(Security);
  app.addSchema(Portfolio);
  app.addSchema(PortfolioCreated);

  app.post(
    '/portfolios',
    {
      config,
      schema: {
        tags,
        summary: 'Create a portfolio',
        body: PortfolioBody,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({ portfolio: Type.Ref('PortfolioCreated') }),
          ...errorResponses(400),
        },
      },
    },
    async (request) => {
      const workspace = request.body.workspace ?? request.query.workspace;
      const view = PORTFOLIO.view(await createPortfolio(db, request.actor, { ...request.body, workspace }));
      if (!looseBoolean(request.body.with_securities, true)) delete view.securities;
      return { portfolio: view };
    },
  );

  app.get(
    '/portfolios',
    {
      config,
      schema: {
        tags,
        summary: 'List portfolios (without securities), most recent first',
        querystring: listQuerystring(true),
        response: { 200: listReply('portfolios', Portfolio), ...errorResponses(400) },
      },
    },
    async (request) => {
      const { items, next_page_token } = await listEntities(
        db,
        request.actor,
        PORTFOLIO,
        listRequest(request.query),
      );
      return { portfolios: items, next_page_token };
    },
  );

  app.get(
    '/portfolios/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Retrieve a portfolio',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: { 200: PortfolioReply, ...errorResponses(404) },
      },
    },
    async (request) => ({
      portfolio: PORTFOLIO.view(
        await viewEntity(db, request.actor, PORTFOLIO, request.params.id, request.query.workspace),
      ),
    }),
  );

  app.put(
    '/portfolios/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Update a portfolio (every field optional)',
        params: IdParam,
        body: PortfolioBody,
        querystring: WorkspaceQuery,
        response: { 200: PortfolioReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => ({
      portfolio: PORTFOLIO.view(
        await updatePortfolio(db, request.actor, request.params.id, {
          ...request.body,
          workspace: request.body.workspace ?? request.query.workspace,
        }),
      ),
    }),
  );

  app.delete(
    '/portfolios/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a portfolio',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({
            portfolio: Type.Object({ deleted: Type.Boolean(), id: Type.String(), name: Type.String() }),
          }),
          ...errorResponses(404),
        },
      },
    },
    async (request) => ({
      portfolio: await deletePortfolio(db, request.actor, request.params.id, request.query.workspace),
    }),
  );
};

export default portfolioRoutes;
