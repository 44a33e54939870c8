import { InvalidInput } from '../platform/errors';
import { isStorableText } from './storable-text';

const INVALID_TOKEN = 'Invalid page_token: pass the next_page_token of the previous response unchanged.';

/**
 * Keyset cursors: the (created_at, key) of the last row returned. Rows inserted or deleted while a
 * client pages neither repeat nor vanish, which an offset cannot promise.
 */
export interface Cursor {
  createdAtMs: number;
  key: string;
}

export function encodePageToken(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAtMs, cursor.key]), 'utf8').toString('base64url');
}

export function decodePageToken(token: string | null | undefined): Cursor | null {
  if (token === null || token === undefined || token === '') return null;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (
      Array.isArray(parsed) &&
      parsed.length === 2 &&
      Number.isFinite(parsed[0]) &&
      typeof parsed[1] === 'string'
    ) {
      return { createdAtMs: parsed[0] as number, key: parsed[1] };
    }
  } catch {
    // fall through to the error below
  }
  throw new InvalidInput(INVALID_TOKEN);
}

/**
 * The keyset cursor of an entity list: the order it was issued for (so a token is never read against
 * another order, where the same values would mean another position) and, per order key, the jsonb
 * text PostgreSQL printed for the last row returned. Texts, not JS values, so numbers keep every
 * digit PostgreSQL has (a JS double would round a 17-digit numeric, and equality would then fail).
 */
export interface KeysetToken {
  order: string;
  keys: string[];
}

/** Far deeper than any key an order produces, far shallower than PostgreSQL's stack limit. */
const KEY_DEPTH_MAX = 64;

export function encodeKeysetToken(token: KeysetToken): string {
  return Buffer.from(JSON.stringify({ o: token.order, k: token.keys }), 'utf8').toString('base64url');
}

/** True when PostgreSQL reads `value` back as the same jsonb (no NUL, no lone surrogate, finite). */
function isReadableJson(value: unknown, depth: number): boolean {
  if (depth > KEY_DEPTH_MAX) return false;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value === 'string') return isStorableText(value);
  if (Array.isArray(value)) return value.every((item) => isReadableJson(item, depth + 1));
  if (value && typeof value === 'object') {
    return Object.entries(value).every(
      ([key, item]) => isReadableJson(key, depth) && isReadableJson(item, depth + 1),
    );
  }
  return true;
}

/**
 * The key texts of a token issued for `order` with `keyCount` keys; null for the first page. A token
 * from another order or a forged one is a 400. Every text is checked to be JSON that PostgreSQL
 * reads as jsonb; what is left (a numeric overflow such as 1e-400000) the list maps to a 400 too.
 */
export function decodeKeysetToken(
  token: string | null | undefined,
  order: string,
  keyCount: number,
): string[] | null {
  if (token === null || token === undefined || token === '') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidInput(INVALID_TOKEN);
  }
  const { o, k } = (parsed && typeof parsed === 'object' ? parsed : {}) as { o?: unknown; k?: unknown };
  if (typeof o !== 'string' || !Array.isArray(k)) throw new InvalidInput(INVALID_TOKEN);
  if (o !== order) {
    throw new InvalidInput(
      'Invalid page_token: it belongs to a list in another order; repeat the same query with it.',
    );
  }
  if (k.length !== keyCount) throw new InvalidInput(INVALID_TOKEN);
  for (const text of k) {
    if (typeof text !== 'string') throw new InvalidInput(INVALID_TOKEN);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new InvalidInput(INVALID_TOKEN);
    }
    if (!isReadableJson(value, 0)) throw new InvalidInput(INVALID_TOKEN);
  }
  return k as string[];
}

export const PAGE_SIZE_DEFAULT = 10;
export const PAGE_SIZE_MAX = 100;

export function checkPageSize(pageSize: number | undefined): number {
  const size = pageSize ?? PAGE_SIZE_DEFAULT;
  if (!Number.isInteger(size) || size < 1 || size > PAGE_SIZE_MAX) {
    throw new InvalidInput(`page_size must be an integer from 1 to ${PAGE_SIZE_MAX}.`);
  }
  return size;
}

/** Escapes LIKE wildcards so a name prefix matches literally. */
export function likePrefix(text: string): string {
  return text.replace(/[\\%_]/g, (c) => '\\' + c) + '%';
}

export function epochSeconds(date: Date | null | undefined): number | null {
  return date ? Math.floor(date.getTime() / 1000) : null;
}
