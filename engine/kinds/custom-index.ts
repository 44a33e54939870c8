import { isCalendarDay } from '../store/entity-fields';
import { clientNamed, resourceKind } from '../store/resource-kind';
import { InvalidInput } from '../platform/errors';
import { checkCurrency } from './security-positions';

export const DATA_TYPES = ['PRICE', 'RETURN', 'RETURN_100'] as const;
export type DataType = (typeof DATA_TYPES)[number];
export const PERIODICITIES = ['D', 'M'] as const;
export type Periodicity = (typeof PERIODICITIES)[number];
export type DataPoint = [string, number];

/** A daily series since 1900 has about 45 000 points; this leaves room without inviting abuse. */
export const DATA_POINTS_MAX = 100_000;
const DATA_REQUIRED = 'data is required: an array of [YYYYMMDD, number] pairs.';

function checkDataType(value: unknown): DataType {
  if (!(DATA_TYPES as readonly unknown[]).includes(value)) {
    throw new InvalidInput(`data_type must be one of ${DATA_TYPES.join(', ')}.`);
  }
  return value as DataType;
}

function checkPeriodicity(value: unknown): Periodicity {
  if (!(PERIODICITIES as readonly unknown[]).includes(value)) {
    throw new InvalidInput('periodicity must be D (daily) or M (monthly).');
  }
  return value as Periodicity;
}

function checkBasePrice(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidInput('base_price must be a positive number.');
  }
  return value;
}

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
 * `data` is a list of `[YYYYMMDD, value]` pairs. Stored sorted by date so every reader (and the
 * calculation engine) can rely on the order; a date given twice is ambiguous and refused.
 */
export function checkData(data: unknown, dataType: DataType): DataPoint[] {
  if (!Array.isArray(data)) {
    throw new InvalidInput(DATA_REQUIRED);
  }
  if (data.length === 0) throw new InvalidInput('data must hold at least one [YYYYMMDD, number] pair.');
  if (data.length > DATA_POINTS_MAX) {
    throw new InvalidInput(`data holds at most ${DATA_POINTS_MAX} pairs, got ${data.length}.`);
  }
  const floor = VALUE_FLOOR[dataType];
  const points = data.map((pair: unknown, i): DataPoint => {
    if (!Array.isArray(pair) || pair.length !== 2) {
      throw new InvalidInput(`data[${i}] must be a [YYYYMMDD, number] pair.`);
    }
    const [date, value] = pair as [unknown, unknown];
    if (typeof date !== 'string' || !/^\d{8}$/.test(date) || !isCalendarDay(date)) {
      throw new InvalidInput(`data[${i}][0] must be a date string in the format YYYYMMDD.`);
    }
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new InvalidInput(`data[${i}][1] must be a finite number.`);
    }
    if (value <= floor.above) throw new InvalidInput(`data[${i}][1]: ${floor.rule}.`);
    return [date, value];
  });
  points.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  for (let i = 1; i < points.length; i++) {
    if (points[i]![0] === points[i - 1]![0]) {
      throw new InvalidInput(`data has more than one value for the date ${points[i]![0]}.`);
    }
  }
  return points;
}

/**
 * A custom index: named by the client (`CUSTOM:…`), account-wide, a series of dated points. The
 * interface lists `name` and `data` as required on update too; `data` is checked against the data
 * type the index has once the request is applied. A `date` sent by clients is ignored (the points
 * carry the dates); null tags clear the tags.
 */
export const CUSTOM_INDEX = resourceKind({
  kind: 'custom_index',
  // The audit trail files custom indexes and private securities alike under the spec's main type.
  entityType: 'CustomSecurity',
  noun: 'custom index',
  scope: 'account',
  ...clientNamed('CUSTOM'),
  hasDate: false,
  listOmit: ['data'],
  auditDigest: ['data'],
  nullClearsTags: true,
  updateRequires: ['name', 'data'],
  fields: {
    data_type: { default: () => 'PRICE', check: checkDataType },
    periodicity: { default: () => 'D', check: checkPeriodicity },
    currency: { default: () => 'USD', check: (value) => checkCurrency(value, 'currency') },
    base_price: { default: () => 1, check: checkBasePrice },
    data: { required: DATA_REQUIRED, viewDefault: [] },
  },
  finish(body) {
    body.data = checkData(body.data, body.data_type as DataType);
  },
});
