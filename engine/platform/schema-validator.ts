import { AjvCompiler } from '@fastify/ajv-compiler';
import type { TSchema } from '@sinclair/typebox';
import { InvalidInput } from './errors';
import { type ValidationIssue, validationMessage } from './validation-message';

/**
 * The options of every Ajv the service compiles, the API's route validators (api/app.ts) and the
 * engine's own (below) alike, so a request refused over HTTP is refused with the same words when a
 * worker's SDK call sends it.
 */
export const AJV_OPTIONS = {
  useDefaults: true,
  removeAdditional: false,
  allErrors: false,
  // Errors carry their schema, so a message can name the rule in words (validation-message.ts).
  verbose: true,
  // `x-rule` and `x-message` word a rule for error messages (and are valid OpenAPI extensions);
  // `x-document-required` names fields the document requires where the route reads them itself.
  keywords: ['x-rule', 'x-message', 'x-pattern-rule', 'x-pattern-message', 'x-document-required'],
  // StorableJson (any JSON value) lists every type, so that its pattern and object keywords apply.
  allowUnionTypes: true,
};

const pool = AjvCompiler();

/**
 * A JSON body's validator: the Ajv (and options) Fastify compiles a route's body with, with no type
 * coercion (a JSON body carries its types). `schemas` are the named schemas the body refers to
 * (`$ref`). Compiled on first use; throws InvalidInput with the message the API would answer.
 */
export function bodyValidator(schema: TSchema, schemas: TSchema[] = []): (value: unknown) => void {
  let validate: ((value: unknown) => boolean) & { errors?: unknown[] | null };
  return (value) => {
    if (!validate) {
      const external = Object.fromEntries(schemas.map((named) => [named.$id!, named]));
      const compile = pool(external, { customOptions: { ...AJV_OPTIONS, coerceTypes: false } } as never);
      validate = compile({ schema, method: 'POST', url: '/', httpPart: 'body' } as never) as typeof validate;
    }
    if (!validate(value)) {
      throw new InvalidInput(validationMessage('body', (validate.errors ?? []) as ValidationIssue[]));
    }
  };
}
