import { Type } from '@sinclair/typebox';
import { CATEGORY_MAX_LENGTH, REPORT_TEMPLATE } from '../../engine/kinds/report-template';
import { resourceRoutes } from '../http/resource-routes';
import { STORABLE_KEY, StorableText, StoredJson, StoredObject } from '../schemas/fields';

const AdvancedSetting = Type.Record(Type.String(), Type.Unknown(), {
  description: 'A setting: `variant` and `select` with `value` and `label`.',
});

/** Report templates (an extension): the interface reads templates but has no way to publish one. */
export default resourceRoutes({
  kind: REPORT_TEMPLATE,
  path: '/report_templates',
  key: 'report_template',
  plural: 'report_templates',
  tag: 'Report templates',
  title: 'ReportTemplate',
  extension: 'Extension: the interface has no way to publish report templates; this one does.',
  properties: {
    status: Type.String({ description: 'OK.' }),
    authorization: Type.Union([Type.Literal('PRIVATE'), Type.Literal('PUBLIC')]),
    categories: Type.Array(Type.String()),
    layout: Type.Array(Type.Unknown(), { description: 'Left out of lists.' }),
    global_parameters: Type.Object(
      { advanced_settings: Type.Optional(Type.Record(Type.String(), AdvancedSetting)) },
      {
        additionalProperties: true,
        description: 'Left out of lists. Holds advanced_settings (for example confidence).',
      },
    ),
  },
  fields: {
    authorization: Type.Optional(
      Type.String({
        pattern: '^([Pp][Rr][Ii][Vv][Aa][Tt][Ee]|[Pp][Uu][Bb][Ll][Ii][Cc])$',
        'x-rule': 'PRIVATE or PUBLIC',
        description: 'PRIVATE (default) or PUBLIC, any letter case.',
      }),
    ),
    categories: Type.Optional(
      Type.Array(StorableText({ minLength: 1, maxLength: CATEGORY_MAX_LENGTH }), {
        description: `Array of strings of 1 to ${CATEGORY_MAX_LENGTH} characters. Default [].`,
      }),
    ),
    layout: Type.Optional(Type.Array(StoredJson(), { description: 'Array. Default [].' })),
    global_parameters: Type.Optional(
      StoredObject(
        {
          advanced_settings: Type.Optional(
            Type.Union(
              [
                Type.Object(
                  {},
                  {
                    propertyNames: STORABLE_KEY,
                    additionalProperties: StoredObject(
                      {},
                      { 'x-rule': 'an object (with variant and select)' },
                    ),
                  },
                ),
                Type.Null(),
              ],
              {
                'x-rule': 'an object of setting objects',
              },
            ),
          ),
        },
        {
          description: 'Object; `advanced_settings`, when given, maps names to setting objects. Default {}.',
        },
      ),
    ),
  },
});
