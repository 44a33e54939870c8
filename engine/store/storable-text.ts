/** A UTF-16 surrogate without its partner: no UTF-8 spelling exists for it. */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * PostgreSQL refuses NUL in text and unpaired surrogates in jsonb with an error, which would
 * surface as a 500: text that fails this check is the client's mistake, answered with a 400.
 */
export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && !UNPAIRED_SURROGATE.test(text);
}
