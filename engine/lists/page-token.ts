import { InvalidInput } from '../errors';

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
  throw new InvalidInput('Invalid page_token: pass the next_page_token of the previous response unchanged.');
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
