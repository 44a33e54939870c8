import { Type } from '@sinclair/typebox';
import { ENV_VAR_VALUE_MAX, ENV_VARS_MAX, USER_APP } from '../../engine/kinds/user-app';
import { resourceRoutes } from '../http/resource-routes';
import { Name, StoredObject } from '../schemas/fields';

/** User apps: the interface reads them; publishing tools create them here (an extension). */
export default resourceRoutes({
  kind: USER_APP,
  path: '/user_apps',
  key: 'user_app',
  plural: 'user_apps',
  tag: 'User apps',
  title: 'UserApp',
  properties: {
    id: Type.String({ description: 'Prefix uapp_.' }),
    data: Type.Object({}, { additionalProperties: true, description: 'Omitted in lists.' }),
    env_vars: Type.Record(Type.String(), Type.String(), {
      description: 'Secrets: omitted in lists and never kept in the audit trail.',
    }),
  },
  // Python clients send None for every argument left unset: null means "not given" here.
  fields: {
    data: Type.Optional(
      Type.Union([StoredObject(), Type.Null()], {
        'x-rule': 'a JSON object',
        description: 'A JSON object, default {}; replaced whole on update.',
      }),
    ),
    env_vars: Type.Optional(
      Type.Union(
        [
          // propertyNames, not patternProperties: OpenAPI 3.0 has no patternProperties, and the
          // document would lose the names' rule.
          Type.Object(
            {},
            {
              propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' },
              additionalProperties: Type.String({ maxLength: ENV_VAR_VALUE_MAX }),
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
  },
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
});
