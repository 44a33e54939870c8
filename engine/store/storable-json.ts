import { InvalidInput } from '../platform/errors';
import { isStorableText } from './storable-text';

/** Far beyond any real report or datastore, and well inside PostgreSQL's jsonb parser stack. */
export const JSON_DEPTH_MAX = 100;

function check(value: unknown, where: string, field: string, depth: number): void {
  if (typeof value === 'string') {
    if (!isStorableText(value)) {
      throw new InvalidInput(`${where} holds a NUL character or an unpaired surrogate.`);
    }
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if (depth >= JSON_DEPTH_MAX) throw new InvalidInput(`${field} nests deeper than ${JSON_DEPTH_MAX} levels.`);
  if (Array.isArray(value)) {
    value.forEach((item: unknown, index) => check(item, `${where}[${index}]`, field, depth + 1));
    return;
  }
  for (const [key, item] of Object.entries(value)) {
    if (!isStorableText(key)) {
      throw new InvalidInput(`${where} has a key with a NUL character or an unpaired surrogate.`);
    }
    check(item, `${where}.${key}`, field, depth + 1);
  }
}

/**
 * PostgreSQL refuses some JSON that JavaScript accepts (NUL in text, lone surrogates, very deep
 * nesting) with an error that would surface as a 500. Checking each request field first turns
 * that into a 400 that names the field.
 */
export function checkStorableFields(fields: object): void {
  for (const [name, value] of Object.entries(fields)) check(value, name, name, 0);
}
