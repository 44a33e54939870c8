import { Type } from '@sinclair/typebox';
import { resourceKind } from '../store/resource-kind';
import { CurrencyCode, Nullable } from '../store/field-schemas';
import {
  fillSecurityNames,
  type PositionInput,
  positionsOf,
  SECURITIES_MAX_WITH_NLV,
  type Security,
} from './security-positions';
import { StoredSecurityInput } from './security-schemas';

const NullableNumber = Nullable(Type.Number());
const NullableString = Nullable(Type.String());

/** A stored position as a portfolio shows it. */
export const SecurityView = Type.Object(
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
 * A portfolio: positions, a base currency and an optional nlv, workspace-bound and dated; lists
 * leave the positions out. Left to `finish`: distinct position ids, and the position limit, which
 * depends on nlv (250 without, 3000 with).
 */
export const PORTFOLIO = resourceKind({
  kind: 'portfolio',
  plural: 'portfolios',
  scope: 'workspace',
  idPrefix: 'port_',
  idField: 'id',
  hasDate: true,
  listOmit: ['securities'],
  fields: {
    base_currency: {
      schema: Type.Optional(Type.Union([CurrencyCode, Type.Null()], { description: 'Default USD.' })),
      view: Type.String(),
      default: () => 'USD',
    },
    nlv: {
      schema: Type.Optional(
        Type.Union([Type.Number(), Type.Null()], {
          description: 'Null: calculated from the cash positions. With nlv, up to 3000 securities.',
        }),
      ),
      view: NullableNumber,
      default: () => null,
      nullClears: true,
    },
    securities: {
      schema: Type.Array(StoredSecurityInput, {
        maxItems: SECURITIES_MAX_WITH_NLV,
        description: 'At most 250 securities, or 3000 when nlv is supplied.',
      }),
      view: Type.Array(Type.Ref('Security')),
      required: 'securities is required (an array, possibly empty).',
      viewDefault: [],
    },
  },
  // The positions' fields are the request schema's (StoredSecurityInput); what it cannot state is
  // positionsOf's: the limit that follows nlv, and ids that differ.
  async finish(body, { db, given }) {
    const nlv = (body.nlv as number | null | undefined) ?? null;
    if (given.has('securities')) {
      body.securities = await fillSecurityNames(db, positionsOf(body.securities as PositionInput[], nlv));
    } else if (given.has('nlv')) {
      // Dropping nlv must not leave more positions than the lower limit allows.
      positionsOf((body.securities as Security[] | undefined) ?? [], nlv);
    }
  },
  http: {
    schemas: [SecurityView],
    createOmits: { flag: 'with_securities', field: 'securities' },
    filter: true,
  },
});
