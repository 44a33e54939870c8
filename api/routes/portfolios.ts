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
import {
  CurrencyCode,
  Description,
  IdParams,
  LooseBoolean,
  Name,
  NullableDate,
  Tags,
  WorkspaceParam,
} from '../schemas/fields';
import { SECURITIES_MAX_WITH_NLV, SecurityInput } from '../schemas/security';
import { errorResponses, Timestamp } from '../schemas/common';
import { listQuerystring, listReply, listRequest, looseBoolean, Nullable } from '../schemas/entity-lists';

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

// The rules a schema cannot state stay in the engine: distinct position ids, 250 positions without nlv.
const portfolioFields = {
  name: Name,
  description: Type.Optional(Type.Union([Description, Type.Null()])),
  date: Type.Optional(NullableDate),
  base_currency: Type.Optional(Type.Union([CurrencyCode, Type.Null()], { description: 'Default USD.' })),
  nlv: Type.Optional(
    Type.Union([Type.Number(), Type.Null()], {
      description: 'Null: calculated from the cash positions. With nlv, up to 3000 securities.',
    }),
  ),
  securities: Type.Array(SecurityInput, {
    maxItems: SECURITIES_MAX_WITH_NLV,
    description: 'At most 250 securities, or 3000 when nlv is supplied.',
  }),
  tags: Type.Optional(Tags),
  with_securities: Type.Optional(LooseBoolean),
  workspace: WorkspaceParam,
};
const PortfolioCreate = Type.Object(portfolioFields, { description: 'name and securities are required.' });
const PortfolioUpdate = Type.Partial(Type.Object(portfolioFields), { description: 'Every field optional.' });

const IdParam = IdParams('portfolio');
const WorkspaceQuery = Type.Object({ workspace: WorkspaceParam });

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
        body: PortfolioCreate,
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
        body: PortfolioUpdate,
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
