import { InvalidInput } from '../platform/errors';
import { isStorableText } from './storable-text';

export const NAME_MAX = 200;
export const DESCRIPTION_MAX = 500;
export const TAGS_MAX = 32;

/** Lower case, every non-alphanumeric character turned into `_`. */
export function normaliseTag(tag: string): string {
  return tag
    .trim()
    .replace(/^#/, '')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '_');
}

/** `#hashtags` written in a description become tags. */
export function hashtagsIn(description: string | null | undefined): string[] {
  if (!description) return [];
  return [...description.matchAll(/(?:^|\s)#([\p{L}\p{N}_-]+)/gu)].map((m) => m[1]!);
}

/**
 * Tags may arrive as an array or (in some requests) a space- or comma-separated string. They are
 * normalised, merged with the description's hashtags, de-duplicated in order, and capped at 32.
 */
export function normaliseTags(tags: unknown, description?: string | null): string[] {
  let raw: unknown[];
  if (tags === undefined || tags === null) raw = [];
  else if (typeof tags === 'string') raw = tags.split(/[\s,]+/);
  else if (Array.isArray(tags)) raw = tags;
  else throw new InvalidInput('tags must be an array of strings.');
  const out: string[] = [];
  for (const tag of [...raw, ...hashtagsIn(description)]) {
    if (typeof tag !== 'string') throw new InvalidInput('tags must be an array of strings.');
    // normaliseTag keeps only [a-z0-9_], so NUL and lone surrogates cannot reach the database.
    const normalised = normaliseTag(tag);
    if (normalised && !out.includes(normalised)) out.push(normalised);
  }
  if (out.length > TAGS_MAX)
    throw new InvalidInput(`At most ${TAGS_MAX} tags are allowed, got ${out.length}.`);
  return out;
}

/** Characters (code points), as the request schemas count them: an emoji is one. */
function characters(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

export function checkName(name: unknown, field = 'name'): string {
  if (typeof name !== 'string' || name.trim().length === 0 || characters(name) > NAME_MAX) {
    throw new InvalidInput(`${field} is required: a string of 1 to ${NAME_MAX} characters.`);
  }
  if (!isStorableText(name))
    throw new InvalidInput(`${field} holds a NUL character or an unpaired surrogate.`);
  return name;
}

export function checkDescription(description: unknown): string | null {
  if (description === undefined || description === null) return null;
  if (typeof description !== 'string') throw new InvalidInput('description must be a string.');
  if (characters(description) > DESCRIPTION_MAX) {
    throw new InvalidInput(`description must be at most ${DESCRIPTION_MAX} characters.`);
  }
  if (!isStorableText(description)) {
    throw new InvalidInput('description holds a NUL character or an unpaired surrogate.');
  }
  return description;
}

/** `YYYYMMDD` for a real calendar day, or null (today's market conditions). */
export function checkDate(date: unknown, field = 'date'): string | null {
  if (date === undefined || date === null) return null;
  if (typeof date !== 'string' || !/^\d{8}$/.test(date) || !isCalendarDay(date)) {
    throw new InvalidInput(`${field} must be a date in the format YYYYMMDD.`);
  }
  return date;
}

export function isCalendarDay(yyyymmdd: string): boolean {
  const year = Number(yyyymmdd.slice(0, 4));
  const month = Number(yyyymmdd.slice(4, 6));
  const day = Number(yyyymmdd.slice(6, 8));
  const parsed = new Date(Date.UTC(year, month - 1, day));
  return (
    parsed.getUTCFullYear() === year && parsed.getUTCMonth() === month - 1 && parsed.getUTCDate() === day
  );
}

export function todayYYYYMMDD(now: Date = new Date()): string {
  return now.toISOString().slice(0, 10).replace(/-/g, '');
}

export function checkLinkUid(linkUid: unknown): string | null {
  if (linkUid === undefined || linkUid === null || linkUid === '') return null;
  if (typeof linkUid !== 'string' || linkUid.length > 200 || !isStorableText(linkUid))
    throw new InvalidInput('link_uid must be a string of at most 200 characters.');
  return linkUid;
}

export function checkWorkspaceName(workspace: unknown): string {
  if (workspace === undefined || workspace === null || workspace === '') return 'main';
  // Control characters (NUL above all, which PostgreSQL refuses in text) are no more a name than spaces.
  if (
    typeof workspace !== 'string' ||
    !/^[^\s\p{Cc}]{1,200}$/u.test(workspace) ||
    !isStorableText(workspace)
  ) {
    throw new InvalidInput('workspace must be a workspace name without spaces.');
  }
  return workspace;
}
