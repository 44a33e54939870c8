/**
 * The field shapes that requests share, declared once. Each is the rule the engine applies, written as
 * JSON Schema so that validation, the OpenAPI document and contract tests (schemathesis) agree: a value
 * these schemas accept is one the service accepts. Patterns are written for both JavaScript (Ajv, `u`
 * flag) and Python (the clients' and schemathesis's `re`): plain character classes, no \p{…}, no
 * lookarounds.
 */
import { type ObjectOptions, type TProperties, type TSchema, type TString, Type } from '@sinclair/typebox';
import { type IdPrefix, idPrefixOf, type IdKind } from '../platform/ids';
import { DESCRIPTION_MAX, NAME_MAX, TAGS_MAX } from './entity-fields';

/** A symbol is a path segment too, and the router refuses segments over 100 characters. */
export const SYMBOL_MAX = 64;

/** What a symbol of `prefix` must be, in words (`PRIVATE: followed by …`). */
export const symbolRule = (prefix: string) =>
  `${prefix}: followed by upper-case letters, digits or _ (no spaces), at most ${SYMBOL_MAX} characters in all`;

/** The value or null. */
export const Nullable = <T extends TSchema>(schema: T, options: object = {}) =>
  Type.Union([schema, Type.Null()], options);

/**
 * No NUL (PostgreSQL refuses it in text). Unpaired surrogates, which have no UTF-8 spelling either, are
 * refused by the service itself: a surrogate range in a pattern is more than Python's `re` will read.
 */
const STORABLE_CHAR = '[^\\u0000]';
/** What JavaScript's String.prototype.trim removes, spelled out so Python reads it the same way. */
const SPACE_CHARS =
  '\\t\\n\\u000b\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
const VISIBLE_CHAR = `[^${SPACE_CHARS}\\u0000]`;

export { DESCRIPTION_MAX, NAME_MAX, TAGS_MAX };

/** Text PostgreSQL can store, `min` to `max` code points. */
export function StorableText(options: { minLength?: number; maxLength?: number; description?: string } = {}) {
  return Type.String({
    ...options,
    pattern: `^${STORABLE_CHAR}*$`,
    'x-pattern-rule': 'text (without NUL characters)',
  });
}

/** An object key PostgreSQL can store (as `propertyNames`). */
export const STORABLE_KEY = {
  pattern: `^${STORABLE_CHAR}*$`,
  'x-pattern-message': 'has a key with a NUL character or an unpaired surrogate',
};

/**
 * Any JSON value PostgreSQL can store, at any depth: no NUL character in a string or an object key
 * (the engine's storable-json check, which also refuses unpaired surrogates and nesting past 100
 * levels, neither of which a pattern Python's `re` reads can state). Recursive, so it is one named
 * schema (registered with the OpenAPI plugin) that fields refer to.
 */
export const StorableJson = Type.Unsafe<unknown>({
  $id: 'StorableJson',
  title: 'StorableJson',
  type: ['string', 'number', 'boolean', 'null', 'array', 'object'],
  description: 'Any JSON value without NUL characters in its strings and keys.',
  pattern: `^${STORABLE_CHAR}*$`,
  'x-pattern-message': 'holds a NUL character or an unpaired surrogate',
  items: { $ref: 'StorableJson' },
  propertyNames: STORABLE_KEY,
  additionalProperties: { $ref: 'StorableJson' },
});

/** A JSON value stored as sent (report content, a security's extra_data): see StorableJson. */
export const StoredJson = (options: { description?: string } = {}) =>
  Type.Unsafe<unknown>({ ...options, $ref: 'StorableJson' });

/**
 * A JSON object stored as sent: its keys and everything inside free, but without NUL characters.
 * `properties` are the keys it declares (each with its own schema); any other key is a StorableJson.
 */
export function StoredObject<T extends TProperties>(properties: T = {} as T, options: ObjectOptions = {}) {
  return Type.Object(properties, {
    ...options,
    propertyNames: STORABLE_KEY,
    additionalProperties: Type.Unsafe({ $ref: 'StorableJson' }),
  });
}

/** Text that JavaScript's trim() leaves non-empty, without NUL characters (a pattern's body). */
export const NON_BLANK_TEXT = `${STORABLE_CHAR}*${VISIBLE_CHAR}${STORABLE_CHAR}*`;

/** A name: 1 to 200 characters, not only spaces. */
export const Name = Type.String({
  minLength: 1,
  maxLength: NAME_MAX,
  pattern: `^${NON_BLANK_TEXT}$`,
  'x-rule': 'a name of 1 to 200 characters, not only spaces, without NUL characters',
  description: '1 to 200 characters.',
});

export const Description = StorableText({
  maxLength: DESCRIPTION_MAX,
  description: 'Up to 500 characters; #hashtags written here become tags.',
});

/**
 * Tags as an array of strings, or (as some requests declare it and real clients send it) one string
 * of space- or comma-separated tags. They are lower-cased, non-alphanumerics become `_`, and
 * duplicates are dropped; at most 32 remain.
 */
export const Tags = Type.Union(
  [
    Type.Array(StorableText(), { maxItems: TAGS_MAX }),
    StorableText({ description: 'Space- or comma-separated tags.' }),
    Type.Null(),
  ],
  { description: 'At most 32 tags: an array of strings, or one space-separated string.' },
);

/** 29 February only in leap years; every other month with its own length. */
const monthDay = (sep: string) =>
  `(?:(?:0[13578]|1[02])${sep}(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)${sep}(?:0[1-9]|[12][0-9]|30)|02${sep}(?:0[1-9]|1[0-9]|2[0-8]))`;
const LEAP_YEAR = '(?:[1-9][0-9](?:0[48]|[2468][048]|[13579][26])|(?:[2468][048]|[13579][26])00)';
/** A real calendar day, its parts joined by `sep` (YYYYMMDD, or YYYY-MM-DD with '-'). */
export const datePattern = (sep = '') =>
  `(?:[1-9][0-9]{3}${sep}${monthDay(sep)}|${LEAP_YEAR}${sep}02${sep}29)`;
// Years 1000 to 9999: the calendar the service computes with.
export const DATE_PATTERN = datePattern();
const TIME_PATTERN = '(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]';

/** A calendar day, `YYYYMMDD`. */
export const DateYmd = Type.String({
  pattern: `^${DATE_PATTERN}$`,
  'x-rule': 'a date in the format YYYYMMDD',
  description: 'YYYYMMDD.',
});
export const NullableDate = Type.Union([DateYmd, Type.Null()], {
  description: 'YYYYMMDD, or null: today.',
});

/** A period bound of the list and audit filters: a day, or a day and a time (UTC). */
export const PeriodBound = Type.String({
  pattern: `^${DATE_PATTERN}(?: ${TIME_PATTERN})?$`,
  'x-rule': 'YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), a real day and time',
  description: 'YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC, inclusive). URL-encode the space.',
});

/** A workspace name: no spaces, no control characters, 1 to 200 characters. */
export const WorkspaceName = Type.String({
  pattern: `^[^${SPACE_CHARS}\\u0000-\\u001f\\u007f-\\u009f]{1,200}$`,
  'x-rule': 'a workspace name without spaces',
  description: 'A workspace name (no spaces).',
});

/** An optional `workspace` (body field or query parameter); absent or empty means `main`. */
export const WorkspaceParam = Type.Optional(
  Type.String({
    pattern: `^[^${SPACE_CHARS}\\u0000-\\u001f\\u007f-\\u009f]{0,200}$`,
    'x-rule': 'a workspace name without spaces',
    description: 'A workspace name (no spaces). Default main.',
  }),
);

/** An id of `kind` (or of a declared kind's prefix): its prefix and 25 characters of [a-zA-Z0-9]. */
export function EntityId(kind: IdKind | IdPrefix, description?: string): TString {
  const prefix = idPrefixOf(kind);
  return Type.String({
    pattern: `^${prefix}[A-Za-z0-9]{25}$`,
    'x-rule': `an id: ${prefix} and 25 letters or digits`,
    description: description ?? `Prefix ${prefix} and 25 letters or digits.`,
  });
}

/** A client-named kind's `symbol` (engine/store/resource-kind.ts clientNamed), in a body or a path. */
export function ClientSymbol(prefix: string): TString {
  return Type.String({
    pattern: `^${prefix}:[A-Z0-9_]{0,${SYMBOL_MAX - prefix.length - 1}}$`,
    'x-rule': symbolRule(prefix),
  });
}

/** `{ id }` path parameters holding an id of `kind`. */
export function IdParams(kind: IdKind | IdPrefix) {
  return Type.Object({ id: EntityId(kind) });
}

/** Python clients send booleans as `True`/`False`; JSON clients as true/false. */
export const LooseBoolean = Type.Union([
  Type.Boolean(),
  Type.String({ pattern: '^(true|false|True|False|TRUE|FALSE|1|0)$', 'x-rule': 'true or false' }),
]);

/** ISO 4217: three capital letters. */
export const CurrencyCode = Type.String({
  pattern: '^[A-Z]{3}$',
  'x-rule': 'a 3-letter ISO 4217 currency code',
  description: 'ISO 4217 code.',
});
