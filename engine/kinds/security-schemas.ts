import { Type } from '@sinclair/typebox';
import { CurrencyCode, StorableText, StoredObject } from '../store/field-schemas';

const Num = (description?: string) =>
  Type.Optional(Type.Union([Type.Number(), Type.Null()], description ? { description } : {}));
const Str = (description?: string) =>
  Type.Optional(
    Type.Union([StorableText({ maxLength: 1000 }), Type.Null()], description ? { description } : {}),
  );

const securityFields = {
  id: StorableText({ minLength: 1, maxLength: 200, description: 'REQUIRED. Unique in the list.' }),
  symbol: StorableText({ minLength: 1, maxLength: 200, description: 'REQUIRED.' }),
  quantity: Type.Number({ description: 'REQUIRED. Positive is long, negative is short.' }),
  label: Str('Aggregation label (aggregation=custom); default empty.'),
  cost_price: Num(),
  market_price: Num('Price in local currency.'),
  currency: Type.Optional(Type.Union([CurrencyCode, Type.Null()])),
  fx_rate: Num(),
  multiplier: Num(),
  unrealized_pl: Num(),
  unrealized_pl_in_base: Num(),
  isin: Type.Optional(
    Type.Union(
      [Type.String({ pattern: '^[A-Za-z0-9]{12}$', 'x-rule': '12 letters or digits' }), Type.Null()],
      {
        description: '12 letters or digits.',
      },
    ),
  ),
  status: Type.Optional(
    Type.Union([Type.Literal('OK'), Type.Literal('ERROR'), Type.Literal('UNHEALTHY'), Type.Null()]),
  ),
  exchange: Str(),
  name: Str('Filled in from the securities master on stored portfolios.'),
  extra_data: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
};

/**
 * A security object in a calculation: `id`, `symbol` and `quantity` required; unknown keys are
 * ignored. Position ids must differ from each other (checked by the service).
 */
export const SecurityInput = Type.Object(
  {
    ...securityFields,
    // The model converts with it: a rate must be positive (a stored portfolio keeps what it is given).
    fx_rate: Type.Optional(
      Type.Union([Type.Number({ exclusiveMinimum: 0, 'x-rule': 'greater than 0' }), Type.Null()]),
    ),
  },
  { description: 'A position: id, symbol, quantity required.' },
);

/**
 * A security object of a portfolio: as in a calculation, but stored as sent, unknown keys included,
 * so no key or text anywhere in it may hold a NUL character.
 */
export const StoredSecurityInput = StoredObject(
  {
    ...securityFields,
    extra_data: Type.Optional(Type.Union([StoredObject(), Type.Null()])),
  },
  { description: 'A position: id, symbol, quantity required. Stored with any further keys.' },
);

export { SECURITIES_MAX_WITH_NLV } from './security-positions';
