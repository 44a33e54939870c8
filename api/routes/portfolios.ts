import { Type } from '@sinclair/typebox';
import { PORTFOLIO } from '../../engine/kinds/portfolio';
import { resourceRoutes } from '../http/resource-routes';
import { Nullable } from '../schemas/entity-lists';
import { CurrencyCode } from '../schemas/fields';
import { SECURITIES_MAX_WITH_NLV, StoredSecurityInput } from '../schemas/security';

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

/**
 * Portfolios: positions with a base currency and an optional nlv. The rules a schema cannot state
 * stay in the engine's declaration: distinct position ids, 250 positions without nlv.
 */
export default resourceRoutes({
  kind: PORTFOLIO,
  path: '/portfolios',
  key: 'portfolio',
  plural: 'portfolios',
  tag: 'Portfolios',
  title: 'Portfolio',
  schemas: [Security],
  properties: {
    base_currency: Type.String(),
    nlv: NullableNumber,
    securities: Type.Array(Type.Ref('Security')),
  },
  fields: {
    base_currency: Type.Optional(Type.Union([CurrencyCode, Type.Null()], { description: 'Default USD.' })),
    nlv: Type.Optional(
      Type.Union([Type.Number(), Type.Null()], {
        description: 'Null: calculated from the cash positions. With nlv, up to 3000 securities.',
      }),
    ),
    securities: Type.Array(StoredSecurityInput, {
      maxItems: SECURITIES_MAX_WITH_NLV,
      description: 'At most 250 securities, or 3000 when nlv is supplied.',
    }),
  },
  createOmits: { flag: 'with_securities', field: 'securities' },
  filter: true,
});
