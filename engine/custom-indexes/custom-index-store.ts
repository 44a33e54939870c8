import type { Actor } from '../audit/audit-trail';
import type { Database } from '../db/database';
import { epochSeconds } from '../lists/page-token';
import {
  createEntity,
  deleteEntity,
  type EntityKind,
  type EntityRecord,
  updateEntity,
} from '../entities/entity-store';
import { checkName, isCalendarDay } from '../entities/entity-fields';
import { InvalidInput } from '../errors';
import { checkCurrency } from '../portfolios/security-positions';

export const DATA_TYPES = ['PRICE', 'RETURN', 'RETURN_100'] as const;
export type DataType = (typeof DATA_TYPES)[number];
export const PERIODICITIES = ['D', 'M'] as const;
export type Periodicity = (typeof PERIODICITIES)[number];
export type DataPoint = [string, number];

/** A daily series since 1900 has about 45 000 points; this leaves room without inviting abuse. */
export const DATA_POINTS_MAX = 100_000;

export const CUSTOM_INDEX: EntityKind = {
  kind: 'custom_index',
  // The audit trail files custom indexes and private securities alike under the spec's main type.
  entityType: 'CustomSecurity',
  noun: 'custom index',
  scope: 'account',
  idPrefix: null,
  symbolPattern: /^CUSTOM:[A-Z0-9_]*$/,
  idField: 'symbol',
  hasDate: false,
  listOmit: ['data'],
  auditDigest: ['data'],
  view: (record: EntityRecord) => ({
    symbol: record.id,
    name: record.name,
    description: record.description,
    tags: record.tags,
    data_type: record.body.data_type ?? 'PRICE',
    periodicity: record.body.periodicity ?? 'D',
    currency: record.body.currency ?? 'USD',
    base_price: record.body.base_price ?? 1,
    data: record.body.data ?? [],
    created: epochSeconds(record.createdAt),
    updated: epochSeconds(record.updatedAt),
    version: String(record.version),
  }),
};

export interface CustomIndexInput {
  symbol?: unknown;
  name?: unknown;
  description?: unknown;
  tags?: unknown;
  data_type?: unknown;
  periodicity?: unknown;
  currency?: unknown;
  base_price?: unknown;
  data?: unknown;
  /** Sent by clients; a custom index has no date of its own (its points carry dates), so it is ignored. */
  date?: unknown;
}

/** Python clients send None for every argument left unset: null means "not given" for these fields. */
const given = (value: unknown) => value !== undefined && value !== null;

/** The symbol is a path segment too, and the router refuses segments over 100 characters. */
export const SYMBOL_MAX = 64;

function checkSymbol(symbol: unknown): string {
  if (typeof symbol !== 'string' || symbol.length > SYMBOL_MAX || !CUSTOM_INDEX.symbolPattern!.test(symbol)) {
    throw new InvalidInput(
      `symbol is required: CUSTOM: followed by upper-case letters, digits or _ (no spaces), at most ${SYMBOL_MAX} characters in all.`,
    );
  }
  return symbol;
}

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
    throw new InvalidInput('data is required: an array of [YYYYMMDD, number] pairs.');
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

export async function createCustomIndex(
  db: Database,
  actor: Actor,
  input: CustomIndexInput,
): Promise<EntityRecord> {
  const symbol = checkSymbol(input.symbol);
  checkName(input.name);
  const dataType = given(input.data_type) ? checkDataType(input.data_type) : 'PRICE';
  const body = {
    data_type: dataType,
    periodicity: given(input.periodicity) ? checkPeriodicity(input.periodicity) : 'D',
    currency: given(input.currency) ? checkCurrency(input.currency, 'currency') : 'USD',
    base_price: given(input.base_price) ? checkBasePrice(input.base_price) : 1,
    data: checkData(input.data, dataType),
  };
  return createEntity(db, actor, CUSTOM_INDEX, {
    id: symbol,
    name: input.name,
    description: input.description,
    tags: input.tags,
    body,
  });
}

/**
 * The interface lists `name` and `data` as required on update; every other field keeps its stored
 * value when left out. The symbol is the path's: a `symbol` in the body is ignored.
 */
export async function updateCustomIndex(
  db: Database,
  actor: Actor,
  symbol: string,
  input: CustomIndexInput,
): Promise<EntityRecord> {
  checkName(input.name);
  if (!given(input.data)) throw new InvalidInput('data is required: an array of [YYYYMMDD, number] pairs.');
  return updateEntity(db, actor, CUSTOM_INDEX, symbol, undefined, (current) => {
    const dataType = given(input.data_type)
      ? checkDataType(input.data_type)
      : ((current.body.data_type as DataType | undefined) ?? 'PRICE');
    const body: Record<string, unknown> = {
      ...current.body,
      data_type: dataType,
      data: checkData(input.data, dataType),
    };
    if (given(input.periodicity)) body.periodicity = checkPeriodicity(input.periodicity);
    if (given(input.currency)) body.currency = checkCurrency(input.currency, 'currency');
    if (given(input.base_price)) body.base_price = checkBasePrice(input.base_price);
    return { name: input.name, description: input.description, tags: input.tags, body };
  });
}

export async function deleteCustomIndex(db: Database, actor: Actor, symbol: string) {
  const record = await deleteEntity(db, actor, CUSTOM_INDEX, symbol);
  return { deleted: true, symbol: record.id, name: record.name };
}
