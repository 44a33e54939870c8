import { Type } from '@sinclair/typebox';
import { resourceKind } from '../store/resource-kind';
import { STORABLE_KEY, StorableText, StoredJson, StoredObject } from '../store/field-schemas';
import { InvalidInput } from '../platform/errors';

export const REPORT_AUTHORIZATIONS = ['PRIVATE', 'PUBLIC'] as const;
export type ReportAuthorization = (typeof REPORT_AUTHORIZATIONS)[number];

/** `PRIVATE` or `PUBLIC` (any letter case, stored upper case); reports and templates share it. */
export function checkAuthorization(value: unknown): ReportAuthorization {
  const upper = typeof value === 'string' ? value.toUpperCase() : value;
  if (!(REPORT_AUTHORIZATIONS as readonly unknown[]).includes(upper)) {
    throw new InvalidInput(`authorization must be ${REPORT_AUTHORIZATIONS.join(' or ')}.`);
  }
  return upper as ReportAuthorization;
}

/** The only state the service gives a stored template (the interface's sample value). */
export const TEMPLATE_STATUS_OK = 'OK';
export const CATEGORY_MAX_LENGTH = 100;

const AdvancedSetting = Type.Record(Type.String(), Type.Unknown(), {
  description: 'A setting: `variant` and `select` with `value` and `label`.',
});

/**
 * A report template (an extension): the layout a report is built from, workspace-bound. The shape
 * of `global_parameters` beyond `advanced_settings` is the template author's; that one key is read
 * by the report builder, so its entries must be setting objects (`variant`, `select`).
 */
export const REPORT_TEMPLATE = resourceKind({
  kind: 'report_template',
  plural: 'report_templates',
  scope: 'workspace',
  idPrefix: 'rtpl_',
  idField: 'id',
  hasDate: false,
  listOmit: ['layout', 'global_parameters'],
  fields: {
    status: { readOnly: true, default: () => TEMPLATE_STATUS_OK, view: Type.String({ description: 'OK.' }) },
    authorization: {
      schema: Type.Optional(
        Type.String({
          pattern: '^([Pp][Rr][Ii][Vv][Aa][Tt][Ee]|[Pp][Uu][Bb][Ll][Ii][Cc])$',
          'x-rule': 'PRIVATE or PUBLIC',
          description: 'PRIVATE (default) or PUBLIC, any letter case.',
        }),
      ),
      view: Type.Union([Type.Literal('PRIVATE'), Type.Literal('PUBLIC')]),
      default: () => 'PRIVATE',
      normalise: checkAuthorization,
    },
    categories: {
      schema: Type.Optional(
        Type.Array(StorableText({ minLength: 1, maxLength: CATEGORY_MAX_LENGTH }), {
          description: `Array of strings of 1 to ${CATEGORY_MAX_LENGTH} characters. Default [].`,
        }),
      ),
      view: Type.Array(Type.String()),
      default: () => [],
    },
    layout: {
      schema: Type.Optional(Type.Array(StoredJson(), { description: 'Array. Default [].' })),
      view: Type.Array(Type.Unknown(), { description: 'Left out of lists.' }),
      default: () => [],
    },
    global_parameters: {
      schema: Type.Optional(
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
                { 'x-rule': 'an object of setting objects' },
              ),
            ),
          },
          {
            description:
              'Object; `advanced_settings`, when given, maps names to setting objects. Default {}.',
          },
        ),
      ),
      view: Type.Object(
        { advanced_settings: Type.Optional(Type.Record(Type.String(), AdvancedSetting)) },
        {
          additionalProperties: true,
          description: 'Left out of lists. Holds advanced_settings (for example confidence).',
        },
      ),
      default: () => ({}),
    },
  },
  http: { extension: 'Extension: the interface has no way to publish report templates; this one does.' },
});
