import { InvalidInput } from '../platform/errors';
import { isPlainObject } from '../platform/plain-object';

/**
 * The values of everysk-lib's SDK wire format (its `everysk.core.serialize`, JSON flavour), read and
 * written: a missing argument is `{"__undefined__": null}`, a date `{"__date__": "YYYY-MM-DD"}`, a
 * date and time `{"__datetime__": ISO 8601}`, bytes `{"__bytes__": {encoding, value}}`, and an
 * object names its class in `__class_path__` beside its fields.
 */

/** A date and time as the client sent it (kept apart from strings so each field can convert it). */
export class SdkDateTime {
  constructor(readonly iso: string) {}

  get instant(): Date {
    return new Date(this.iso);
  }

  /** The calendar day as written (the client's own time zone), YYYYMMDD. */
  get day(): string {
    return this.iso.slice(0, 10).replace(/-/g, '');
  }
}

export const CLASS_PATH = '__class_path__';
const MAX_DEPTH = 64;

/** Decodes the wire's tagged values; `undefined` for `__undefined__` (an argument left out). */
export function decodeWire(value: unknown, depth = 0): unknown {
  if (depth > MAX_DEPTH) throw new InvalidInput('The request nests deeper than 64 levels.');
  if (Array.isArray(value)) return value.map((item) => decodeWire(item, depth + 1));
  if (!isPlainObject(value)) return value;
  const keys = Object.keys(value);
  if (keys.length === 1) {
    const [key] = keys;
    const inner = value[key!];
    if (key === '__undefined__') return undefined;
    if (key === '__date__' && typeof inner === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(inner)) {
      return inner.replace(/-/g, '');
    }
    if (key === '__datetime__' && typeof inner === 'string' && !Number.isNaN(Date.parse(inner))) {
      return new SdkDateTime(inner);
    }
    if (key === '__bytes__' && isPlainObject(inner) && typeof inner.value === 'string') {
      return inner.encoding === 'base64'
        ? Buffer.from(inner.value, 'base64').toString('base64')
        : inner.value;
    }
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const decoded = decodeWire(value[key], depth + 1);
    if (decoded !== undefined) out[key] = decoded;
  }
  return out;
}

/** A date and time for the client: it reads `{"__datetime__": …}` back as its own DateTime. */
export function wireDateTime(epochSeconds: number): { __datetime__: string } {
  return { __datetime__: new Date(epochSeconds * 1000).toISOString().replace('Z', '+00:00') };
}

/** A value for a stored field: a date and time becomes its day (YYYYMMDD) or its ISO text. */
export function plainValue(value: unknown, asDay: boolean): unknown {
  if (value instanceof SdkDateTime) return asDay ? value.day : value.iso;
  if (Array.isArray(value)) return value.map((item) => plainValue(item, false));
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value))
      if (key !== CLASS_PATH) out[key] = plainValue(inner, false);
    return out;
  }
  return value;
}
