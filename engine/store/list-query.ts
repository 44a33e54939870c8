import { normaliseTag } from './entity-fields';
import { InvalidInput } from '../platform/errors';
import { PAGE_SIZE_MAX } from './page-token';
import { isStorableText } from './storable-text';
import { type Period, parsePeriod } from './period';

export const FILTER_OPERATORS = ['=', '!=', '<', '<=', '>', '>=', 'IN', 'NOT_IN'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];
export const PROJECTION_MAX = 15;
/** Not in the spec: they keep one request's SQL small (the keyset condition grows as the order squared). */
export const ORDER_MAX = 15;
export const DISTINCT_ON_MAX = 15;
export const FILTERS_MAX = 100;

export interface Filter {
  property: string;
  operator: FilterOperator;
  value: unknown;
}

export interface OrderKey {
  property: string;
  descending: boolean;
}

export interface ListQuery {
  /** Exactly one entity, by id (or symbol). */
  id: string | null;
  /** Entities carrying every one of these tags. */
  tags: string[];
  linkUid: string | null;
  namePrefix: string | null;
  filters: Filter[];
  order: OrderKey[];
  projection: { mode: 'include' | 'exclude'; fields: string[] } | null;
  distinctOn: string[];
  pageSize: number;
  period: (Period & { field: 'date' | 'updated_on' }) | null;
  /** True when a JSON query was given: then only its filters scope the list (no default workspace). */
  json: boolean;
}

export interface ListRequest {
  query?: string | null;
  page_size?: number | string | null;
  page_token?: string | null;
  start?: string | null;
  end?: string | null;
  date_time?: string | null;
  period_field?: string | null;
}

export interface ListOptions {
  /** Recognises `query` values that are an entity id: the kind's prefix, or a symbol pattern. */
  isId: (value: string) => boolean;
  /** Entities without a date take only `updated_on`. */
  hasDate: boolean;
}

const PROPERTY = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$/;

function checkText(text: string, where: string): string {
  if (!isStorableText(text))
    throw new InvalidInput(`${where} holds a NUL character or an unpaired surrogate.`);
  return text;
}

function checkProperty(value: unknown, where: string): string {
  if (typeof value !== 'string' || !PROPERTY.test(value)) {
    throw new InvalidInput(`${where}: "${String(value)}" is not a property name.`);
  }
  return value;
}

function parsePageSize(raw: unknown, fallback: number): number {
  if (raw === undefined || raw === null || raw === '') return fallback;
  const value = typeof raw === 'number' ? raw : /^\d+$/.test(String(raw)) ? Number(raw) : NaN;
  if (!Number.isInteger(value) || value < 1 || value > PAGE_SIZE_MAX) {
    throw new InvalidInput(`page_size must be an integer from 1 to ${PAGE_SIZE_MAX}.`);
  }
  return value;
}

function isPlainValue(value: unknown): value is string | number | boolean | null {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

function parseFilters(raw: unknown): Filter[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw))
    throw new InvalidInput('query.filters must be an array of [property, operator, value].');
  if (raw.length > FILTERS_MAX) {
    throw new InvalidInput(`query.filters has ${raw.length} elements; at most ${FILTERS_MAX} are allowed.`);
  }
  return raw.map((item, index) => {
    const where = `query.filters[${index}]`;
    if (!Array.isArray(item) || item.length !== 3) {
      throw new InvalidInput(`${where} must be [property, operator, value].`);
    }
    const [property, operator, value] = item as [unknown, unknown, unknown];
    // Clients write "in", "not in" or "NOT_IN" alike.
    const op = typeof operator === 'string' ? operator.trim().toUpperCase().replace(/\s+/g, '_') : operator;
    if (!(FILTER_OPERATORS as readonly unknown[]).includes(op)) {
      throw new InvalidInput(`${where}: operator must be one of ${FILTER_OPERATORS.join(', ')}.`);
    }
    const list = op === 'IN' || op === 'NOT_IN';
    if (list && !Array.isArray(value)) {
      throw new InvalidInput(`${where}: ${String(op)} needs a list value.`);
    }
    if (list && !(value as unknown[]).every(isPlainValue)) {
      throw new InvalidInput(
        `${where}: the values of ${String(op)} must be strings, numbers, booleans or null.`,
      );
    }
    if (!list && !isPlainValue(value)) {
      throw new InvalidInput(`${where}: the value must be a string, number, boolean or null.`);
    }
    // A range over null matches nothing in SQL and everything in jsonb order: neither is meant.
    if (value === null && op !== '=' && op !== '!=') {
      throw new InvalidInput(`${where}: ${String(op)} compares with a string, number or boolean, not null.`);
    }
    for (const v of list ? (value as unknown[]) : [value]) {
      // JSON.parse turns 1e400 into Infinity, which JSON.stringify would send as null.
      if (typeof v === 'number' && !Number.isFinite(v))
        throw new InvalidInput(`${where}: numbers must be finite.`);
      if (typeof v === 'string') checkText(v, where);
    }
    return {
      property: checkProperty(property, where),
      operator: op as FilterOperator,
      value,
    };
  });
}

function stringList(raw: unknown, where: string, max: number): string[] {
  if (raw === undefined || raw === null) return [];
  const list = typeof raw === 'string' ? [raw] : raw;
  if (!Array.isArray(list)) throw new InvalidInput(`${where} must be a list of property names.`);
  if (list.length > max) {
    throw new InvalidInput(`${where} has ${list.length} elements; at most ${max} are allowed.`);
  }
  return list.map((item) => {
    if (typeof item !== 'string') throw new InvalidInput(`${where} must be a list of property names.`);
    return item;
  });
}

function parseProjection(raw: unknown): ListQuery['projection'] {
  const fields = stringList(raw, 'query.projection', PROJECTION_MAX);
  if (fields.length === 0) return null;
  const excluded = fields.filter((f) => f.startsWith('-'));
  if (excluded.length > 0 && excluded.length < fields.length) {
    throw new InvalidInput(
      'query.projection either lists properties to return or, with a "-" prefix, to leave out; not both.',
    );
  }
  const mode = excluded.length > 0 ? 'exclude' : 'include';
  return {
    mode,
    fields: fields.map((f) => checkProperty(mode === 'exclude' ? f.slice(1) : f, 'query.projection')),
  };
}

/** Clients send the JSON object as the `query` string: JSON is tried first. */
function parseJsonQuery(text: string): Record<string, unknown> | null {
  if (!text.trimStart().startsWith('{')) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InvalidInput(
      `query looks like a JSON object but is not valid JSON: ${(error as Error).message}`,
    );
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new InvalidInput('A JSON query must be an object.');
  }
  return parsed as Record<string, unknown>;
}

/**
 * Reads the list parameters every list shares: `query` in its five modes (entity id, `#tags`,
 * `&link_uid`, name prefix, JSON object), `page_size` (the URL's wins), and the period filter.
 */
export function parseListQuery(request: ListRequest, options: ListOptions): ListQuery {
  const result: ListQuery = {
    id: null,
    tags: [],
    linkUid: null,
    namePrefix: null,
    filters: [],
    order: [],
    projection: null,
    distinctOn: [],
    pageSize: 10,
    period: null,
    json: false,
  };
  const text = checkText(request.query ?? '', 'query');
  const json = text ? parseJsonQuery(text) : null;
  if (json) {
    const known = ['filters', 'order', 'projection', 'distinct_on', 'page_size'];
    const unknown = Object.keys(json).filter((k) => !known.includes(k));
    if (unknown.length) throw new InvalidInput(`Unknown key in the JSON query: ${unknown.join(', ')}.`);
    result.json = true;
    result.filters = parseFilters(json.filters);
    result.order = stringList(json.order, 'query.order', ORDER_MAX).map((item) => ({
      property: checkProperty(item.replace(/^[-+]/, ''), 'query.order'),
      descending: item.startsWith('-'),
    }));
    result.projection = parseProjection(json.projection);
    result.distinctOn = stringList(json.distinct_on, 'query.distinct_on', DISTINCT_ON_MAX).map((p) =>
      checkProperty(p, 'query.distinct_on'),
    );
    result.pageSize = parsePageSize(json.page_size, 10);
  } else if (text.startsWith('#')) {
    // Normalised exactly as stored tags are ("US-Large" is stored as us_large), duplicates dropped.
    const tags = text
      .slice(1)
      .split(/[\s,]+/)
      .map(normaliseTag)
      .filter(Boolean);
    result.tags = [...new Set(tags)];
    if (result.tags.length === 0) throw new InvalidInput('A tag query needs at least one tag after "#".');
  } else if (text.startsWith('&')) {
    result.linkUid = text.slice(1);
    if (!result.linkUid) throw new InvalidInput('A link query needs a link UID after "&".');
  } else if (text && options.isId(text)) {
    result.id = text;
  } else if (text) {
    result.namePrefix = text;
  }
  // A page_size in the URL takes precedence over the JSON query's.
  result.pageSize = parsePageSize(request.page_size, result.pageSize);

  const period = parsePeriod({ start: request.start, end: request.end, dateTime: request.date_time });
  // An empty parameter (`period_field=`) is an absent one, as for the other parameters.
  const field = request.period_field || (options.hasDate ? 'date' : 'updated_on');
  if (field !== 'date' && field !== 'updated_on') {
    throw new InvalidInput('period_field must be date or updated_on.');
  }
  if (field === 'date' && !options.hasDate) {
    throw new InvalidInput('These entities have no date: use period_field=updated_on.');
  }
  if (period) {
    if (field === 'date' && result.namePrefix !== null) {
      throw new InvalidInput(
        'A period on date does not combine with a name search; use period_field=updated_on.',
      );
    }
    result.period = { ...period, field };
  }
  return result;
}
