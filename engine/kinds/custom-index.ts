import { type TSchema, Type } from '@sinclair/typebox';
import { clientNamed, resourceKind } from '../store/resource-kind';
import { CurrencyCode, DateYmd } from '../store/field-schemas';
import { InvalidInput } from '../platform/errors';

export const DATA_TYPES = ['PRICE', 'RETURN', 'RETURN_100'] as const;
export type DataType = (typeof DATA_TYPES)[number];
export const PERIODICITIES = ['D', 'M'] as const;
export type Periodicity = (typeof PERIODICITIES)[number];
export type DataPoint = [string, number];

/** A daily series since 1900 has about 45 000 points; this leaves room without inviting abuse. */
export const DATA_POINTS_MAX = 100_000;
const DATA_REQUIRED = 'data is required: an array of [YYYYMMDD, number] pairs.';

/**
 * The smallest value each data type admits: a price is positive, and a return below -100% would
 * take the index (rebuilt from `base_price`) to zero or below.
 */
const VALUE_FLOOR: Record<DataType, { above: number; rule: string }> = {
  PRICE: { above: 0, rule: 'a PRICE must be greater than 0' },
  RETURN: { above: -1, rule: 'a RETURN (decimal) must be greater than -1' },
  RETURN_100: { above: -100, rule: 'a RETURN_100 (percent) must be greater than -100' },
};

/**
 * `data` is a list of `[YYYYMMDD, value]` pairs (its shape is the schema's). Stored sorted by date so
 * every reader (and the calculation engine) can rely on the order; a date given twice is ambiguous
 * and refused, and each value must clear the floor of the index's data type.
 */
export function checkData(data: DataPoint[], dataType: DataType): DataPoint[] {
  const floor = VALUE_FLOOR[dataType];
  data.forEach(([, value], i) => {
    if (value <= floor.above) throw new InvalidInput(`data[${i}][1]: ${floor.rule}.`);
  });
  const points = data.map(([date, value]): DataPoint => [date, value]);
  points.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  for (let i = 1; i < points.length; i++) {
    if (points[i]![0] === points[i - 1]![0]) {
      throw new InvalidInput(`data has more than one value for the date ${points[i]![0]}.`);
    }
  }
  return points;
}

const OrNull = <T extends TSchema>(schema: T, options = {}) => Type.Union([schema, Type.Null()], options);
const DataPoint = Type.Tuple([DateYmd, Type.Number()], {
  'x-rule': 'a [YYYYMMDD, number] pair',
  description: '[YYYYMMDD, number]',
});

/**
 * A custom index: named by the client (`CUSTOM:…`), account-wide, a series of dated points. The
 * interface lists `name` and `data` as required on update too; `data` is checked against the data
 * type the index has once the request is applied (each date once, and the value floor of the data
 * type: PRICE > 0, RETURN > -1), which no schema of one field states. A `date` sent by clients is
 * ignored (the points carry the dates); null tags clear the tags.
 */
export const CUSTOM_INDEX = resourceKind({
  kind: 'custom_index',
  plural: 'custom_indexes',
  // The audit trail files custom indexes and private securities alike under the spec's main type.
  entityType: 'CustomSecurity',
  scope: 'account',
  ...clientNamed('CUSTOM'),
  hasDate: false,
  listOmit: ['data'],
  auditDigest: ['data'],
  nullClearsTags: true,
  updateRequires: ['name', 'data'],
  fields: {
    data_type: {
      schema: Type.Optional(
        Type.Union([...DATA_TYPES.map((t) => Type.Literal(t)), Type.Null()], {
          'x-rule': `one of ${DATA_TYPES.join(', ')}`,
          description: 'PRICE (default), RETURN or RETURN_100.',
        }),
      ),
      view: Type.Union(
        DATA_TYPES.map((t) => Type.Literal(t)),
        { description: 'PRICE, RETURN (decimal) or RETURN_100 (percent).' },
      ),
      default: () => 'PRICE',
    },
    periodicity: {
      schema: Type.Optional(
        Type.Union([Type.Literal('D'), Type.Literal('M'), Type.Null()], {
          'x-rule': 'D (daily) or M (monthly)',
          description: 'D (default) or M.',
        }),
      ),
      view: Type.Union([Type.Literal('D'), Type.Literal('M')], { description: 'D (daily) or M (monthly).' }),
      default: () => 'D',
    },
    currency: {
      schema: Type.Optional(OrNull(CurrencyCode)),
      view: Type.String({ description: '3-letter ISO 4217 code.' }),
      default: () => 'USD',
    },
    base_price: {
      schema: Type.Optional(
        Type.Union([Type.Number({ minimum: Number.MIN_VALUE }), Type.Null()], {
          'x-rule': 'a positive number',
          description: 'Positive, default 1.0.',
        }),
      ),
      view: Type.Number({ description: 'Base price when data_type is RETURN or RETURN_100.' }),
      default: () => 1,
    },
    data: {
      schema: Type.Array(DataPoint, {
        minItems: 1,
        maxItems: DATA_POINTS_MAX,
        description:
          `1 to ${DATA_POINTS_MAX} [YYYYMMDD, number] pairs, each date once; stored in ascending date order. ` +
          'PRICE values are greater than 0, RETURN greater than -1, RETURN_100 greater than -100.',
      }),
      // Not a Tuple: schemathesis 4.32 takes a 3.1 tuple (prefixItems) in a response for an invalid schema.
      view: Type.Array(Type.Array(Type.Union([Type.String(), Type.Number()]), { minItems: 2, maxItems: 2 }), {
        description: '[YYYYMMDD, value] pairs in ascending date order. Omitted in lists.',
      }),
      required: DATA_REQUIRED,
      viewDefault: [],
    },
  },
  finish(body) {
    body.data = checkData(body.data as DataPoint[], body.data_type as DataType);
  },
  http: {
    ignored: {
      date: Type.Optional(
        Type.Unknown({ description: 'Accepted and ignored: the points of data carry the dates.' }),
      ),
    },
  },
});
