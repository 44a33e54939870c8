import { type TSchema, Type } from '@sinclair/typebox';
import { CUSTOM_INDEX, DATA_POINTS_MAX } from '../../engine/kinds/custom-index';
import { resourceRoutes } from '../http/resource-routes';
import { ClientSymbol, CurrencyCode, DateYmd } from '../schemas/fields';

// Left to the engine: each date once, and the value floor of the data type (PRICE > 0, RETURN > -1).
const OrNull = <T extends TSchema>(schema: T, options = {}) => Type.Union([schema, Type.Null()], options);
const DataPoint = Type.Tuple([DateYmd, Type.Number()], {
  'x-rule': 'a [YYYYMMDD, number] pair',
  description: '[YYYYMMDD, number]',
});

/** Custom indexes: client-named (CUSTOM:…), account-wide series; name and data required on update. */
export default resourceRoutes({
  kind: CUSTOM_INDEX,
  path: '/custom_indexes',
  key: 'custom_index',
  plural: 'custom_indexes',
  tag: 'Custom indexes',
  title: 'CustomIndex',
  symbol: ClientSymbol('CUSTOM'),
  properties: {
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
  },
  fields: {
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
  },
  ignored: {
    date: Type.Optional(
      Type.Unknown({ description: 'Accepted and ignored: the points of data carry the dates.' }),
    ),
  },
  updateRequired: ['name', 'data'],
});
