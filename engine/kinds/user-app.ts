import { Type } from '@sinclair/typebox';
import { resourceKind } from '../store/resource-kind';
import { Name, StorableText, StoredObject } from '../store/field-schemas';

export const ENV_VARS_MAX = 100;
export const ENV_VAR_VALUE_MAX = 32 * 1024;
/** The shape of a process environment variable name, so apps can export them unchanged. */
export const ENV_VAR_NAME = '^[A-Za-z_][A-Za-z0-9_]{0,127}$';

/**
 * A user app (published by tools; the interface reads them): account-wide. `data` and `env_vars`
 * are replaced whole on update, so a variable is removed by sending the set without it. Python
 * clients send None for every argument left unset: null means "not given" here.
 */
export const USER_APP = resourceKind({
  kind: 'user_app',
  plural: 'user_apps',
  scope: 'account',
  idPrefix: 'uapp_',
  idField: 'id',
  hasDate: false,
  // env_vars are secrets: shown only to a caller who retrieves the one app. The audit trail drops
  // them from its snapshots by key (audit-trail's sensitive fields).
  listOmit: ['data', 'env_vars'],
  nullClearsTags: true,
  fields: {
    data: {
      schema: Type.Optional(
        Type.Union([StoredObject(), Type.Null()], {
          'x-rule': 'a JSON object',
          description: 'A JSON object, default {}; replaced whole on update.',
        }),
      ),
      view: Type.Object({}, { additionalProperties: true, description: 'Omitted in lists.' }),
      default: () => ({}),
    },
    env_vars: {
      schema: Type.Optional(
        Type.Union(
          [
            // propertyNames, not patternProperties: every key must be a variable name, where
            // patternProperties would let other keys through. Messages never show a value.
            Type.Object(
              {},
              {
                propertyNames: { pattern: ENV_VAR_NAME },
                additionalProperties: StorableText({ maxLength: ENV_VAR_VALUE_MAX }),
                maxProperties: ENV_VARS_MAX,
              },
            ),
            Type.Null(),
          ],
          {
            'x-rule':
              'an object of variable names (a letter or _, then letters, digits or _; at most 128) to string values',
            description: `Up to ${ENV_VARS_MAX} NAME: string value pairs, default {}; replaced whole on update.`,
          },
        ),
      ),
      view: Type.Record(Type.String(), Type.String(), {
        description: 'Secrets: omitted in lists and never kept in the audit trail.',
      }),
      default: () => ({}),
    },
  },
  http: {
    updateFields: { name: Type.Union([Name, Type.Null()]) },
    operations: {
      create: {
        summary: 'Publish a user app (extension)',
        description: 'Extension: the interface has user apps read-only; publishing tools create them here.',
      },
      list: { summary: 'List user apps (without data and env_vars), most recent first' },
      retrieve: { summary: 'Retrieve a user app, with data and env_vars' },
      update: {
        summary: 'Republish a user app (extension)',
        description:
          'Extension: every field optional; fields left out (or null) keep their values. The version increases.',
      },
      delete: {
        summary: 'Delete a user app (extension)',
        description: 'Extension: the interface has user apps read-only.',
      },
    },
  },
});
