import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/platform/database';
import { checkSymbols } from '../../engine/calculations/symbols-check';
import {
  searchSymbols,
  SEARCH_LIMIT_MAX,
  symbolHistories,
  symbolPrices,
  SYMBOLS_MAX,
} from '../../engine/market-data/symbols';
import { errorResponses } from '../schemas/common';
import { DateYmd } from '../schemas/fields';

/**
 * `POST /market_data/<method>`: what both PyPI clients' `MarketData` helpers post (symbolsSearch,
 * symbolsCheck, symbolsPrice, symbolsHistorical, and everysk 1.0.17's symbolsRealtimePrice), answered
 * from the stored securities master and prices. Fields the clients add (`user_id`, `user_role`,
 * `time_zone`) are accepted and ignored.
 */

const Symbol = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^[^\\u0000-\\u001f\\u007f]*[^\\s\\u0000-\\u001f\\u007f][^\\u0000-\\u001f\\u007f]*$',
  description: 'A symbol: an option is `UNDERLYING YYYYMMDD C|P STRIKE`.',
});
const Symbols = Type.Array(Symbol, {
  minItems: 1,
  maxItems: SYMBOLS_MAX,
  description: `1 to ${SYMBOLS_MAX} symbols.`,
});
const OptionalDate = Type.Optional(Type.Union([DateYmd, Type.Null()]));
const PricePoint = Type.Union([Type.Object({ date: Type.String(), price: Type.Number() }), Type.Null()], {
  description: 'The last price on or before the date and its date; null when there is none.',
});
const PriceMap = Type.Record(Type.String(), PricePoint);
const tags = ['Market data'];

const SearchBody = Type.Object({
  query: Type.String({
    minLength: 1,
    maxLength: 200,
    pattern: '\\S',
    'x-rule': 'a text that is not blank',
    description: 'Start of a symbol, or part of a name.',
  }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: SEARCH_LIMIT_MAX, description: 'Default 10.' })),
});
const SearchReply = Type.Object({
  symbols_search: Type.Array(
    Type.Object({
      symbol: Type.String(),
      name: Type.Union([Type.String(), Type.Null()]),
      currency: Type.Union([Type.String(), Type.Null()]),
      instrument_type: Type.Union([Type.String(), Type.Null()]),
      exchange: Type.Union([Type.String(), Type.Null()]),
      country: Type.Union([Type.String(), Type.Null()]),
      sector: Type.Union([Type.String(), Type.Null()]),
      priced: Type.Boolean({ description: 'Prices are stored for it.' }),
    }),
  ),
});

const CheckBody = Type.Object(
  {
    securities: Type.Optional(
      Type.Array(Type.Object({ symbol: Symbol }), { minItems: 1, maxItems: SYMBOLS_MAX }),
    ),
    symbols: Type.Optional(Symbols),
    date: OptionalDate,
    base_currency: Type.Optional(
      Type.Union([Type.String(), Type.Null()], { description: 'Default USD: which FX a position needs.' }),
    ),
    projection: Type.Optional(
      Type.Union([Symbol, Type.Array(Symbol, { minItems: 1 })], {
        description:
          'The projections of the calculation to check for (the first is its calendar). Default IND:SPX.',
      }),
    ),
  },
  { description: '`securities` (each with a symbol, as a portfolio holds them) or `symbols`.' },
);
const CheckReply = Type.Object({
  symbols_check: Type.Object({
    date: Type.Union([Type.String(), Type.Null()]),
    base_currency: Type.String(),
    results: Type.Array(
      Type.Object({
        symbol: Type.String(),
        known: Type.Boolean({
          description: 'In the securities master, or the account’s CUSTOM:/PRIVATE: symbol.',
        }),
        priced: Type.Boolean({ description: 'A price on or before the date.' }),
        mapped: Type.Boolean({
          description:
            'A calculation at the date uses it: false exactly when it would list it in unmapped_tickers.',
        }),
        price: Type.Union([Type.Number(), Type.Null()]),
        price_date: Type.Union([Type.String(), Type.Null()]),
        reason: Type.Union([Type.String(), Type.Null()], { description: 'Why not mapped.' }),
      }),
    ),
    unmapped_tickers: Type.Array(Type.String()),
  }),
});

const PriceBody = Type.Object({ symbols: Symbols, date: OptionalDate });
const HistoricalBody = Type.Object({
  symbols: Symbols,
  start_date: OptionalDate,
  end_date: OptionalDate,
});
const RealTimeBody = Type.Object({ symbols: Symbols });

const marketData: FastifyPluginAsyncTypebox<{ db: Database }> = async (app, { db }) => {
  const account = (request: { actor: { principal: { accountId: string } } }) =>
    request.actor.principal.accountId;

  app.post(
    '/market_data/symbols_search',
    {
      schema: {
        tags,
        summary: 'Search the securities master by symbol or name (Extension)',
        body: SearchBody,
        response: { 200: SearchReply, ...errorResponses() },
      },
    },
    async (request) => ({ symbols_search: await searchSymbols(db, request.body as Record<string, unknown>) }),
  );

  app.post(
    '/market_data/symbols_check',
    {
      schema: {
        tags,
        summary:
          'Check a book’s symbols at a date: known, priced, mapped as a calculation maps them (Extension)',
        body: CheckBody,
        response: { 200: CheckReply, ...errorResponses() },
      },
    },
    async (request) => ({
      symbols_check: await checkSymbols(
        db,
        account(request),
        request.body as Record<string, unknown>,
        (request.body as { workspace?: unknown }).workspace,
      ),
    }),
  );

  app.post(
    '/market_data/symbols_price',
    {
      schema: {
        tags,
        summary: 'The last stored price of each symbol on or before a date (Extension)',
        body: PriceBody,
        response: { 200: Type.Object({ symbols_price: PriceMap }), ...errorResponses() },
      },
    },
    async (request) => ({
      symbols_price: await symbolPrices(db, account(request), request.body as Record<string, unknown>),
    }),
  );

  app.post(
    '/market_data/symbols_historical',
    {
      schema: {
        tags,
        summary: 'Stored prices of each symbol over a period, as [YYYYMMDD, price] pairs (Extension)',
        body: HistoricalBody,
        response: {
          200: Type.Object({
            symbols_historical: Type.Record(
              Type.String(),
              // Not a Tuple: schemathesis 4.32 takes a 3.1 tuple (prefixItems) in a response for an invalid schema.
              Type.Array(
                Type.Array(Type.Union([Type.String(), Type.Number()]), { minItems: 2, maxItems: 2 }),
                {
                  description: '[YYYYMMDD, price] pairs in ascending date order.',
                },
              ),
            ),
          }),
          ...errorResponses(),
        },
      },
    },
    async (request) => ({
      symbols_historical: await symbolHistories(
        db,
        account(request),
        request.body as Record<string, unknown>,
      ),
    }),
  );

  app.post(
    '/market_data/symbols_real_time_prices',
    {
      schema: {
        tags,
        summary: 'The latest stored price of each symbol (Extension)',
        description:
          'This service holds no real-time feed: the answer is the latest stored price and its date, as symbols_price without a date gives.',
        body: RealTimeBody,
        response: { 200: Type.Object({ symbols_real_time_prices: PriceMap }), ...errorResponses() },
      },
    },
    async (request) => ({
      symbols_real_time_prices: await symbolPrices(db, account(request), {
        symbols: (request.body as { symbols: string[] }).symbols,
      }),
    }),
  );
};

export default marketData;
