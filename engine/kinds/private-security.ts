import { Type } from '@sinclair/typebox';
import { clientNamed, resourceKind } from '../store/resource-kind';
import { CurrencyCode, Name, StoredObject } from '../store/field-schemas';

/**
 * The values everysk-lib's PrivateSecurity.instrument_type accepts (a choice field): stored and shown as
 * sent, beside the interface's upper-case types (docs/clients.md).
 */
export const CLIENT_INSTRUMENT_TYPES = ['PrivateFixedIncome', 'PrivateCustomIndex'] as const;

const INSTRUMENT_TYPE_RULE =
  'an upper-case instrument type of up to 50 letters, digits or _, such as EQUITY or FIXED_INCOME, ' +
  `or one of everysk-lib's ${CLIENT_INSTRUMENT_TYPES.join(' and ')}`;
const INSTRUMENT_TYPE_REQUIRED = `type is required: ${INSTRUMENT_TYPE_RULE}.`;
const DATA_REQUIRED = 'data is required: a JSON object (possibly empty).';

/**
 * The interface names EQUITY and FIXED_INCOME as examples of an open set: any upper-case word, and
 * the clients' own values.
 */
const InstrumentType = Type.String({
  pattern: `^(?:[A-Z][A-Z0-9_]{0,49}|${CLIENT_INSTRUMENT_TYPES.join('|')})$`,
  'x-rule': INSTRUMENT_TYPE_RULE,
  description:
    'Upper-case instrument type (EQUITY, FIXED_INCOME, …), or everysk-lib’s PrivateFixedIncome or ' +
    'PrivateCustomIndex; stored as sent, shown as instrument_type.',
});
const Data = StoredObject({}, { description: 'A JSON object; replaced whole on update.' });

/**
 * A private security: named by the client (`PRIVATE:…`), account-wide. The request's `type` is
 * stored and shown as `instrument_type` (which a client saving back a retrieved object sends; `type`
 * wins). `data` is replaced whole on update; null keeps a value, except that null tags clear them.
 */
export const PRIVATE_SECURITY = resourceKind({
  kind: 'private_security',
  plural: 'private_securities',
  // The audit trail files custom indexes and private securities alike under the spec's main type.
  entityType: 'CustomSecurity',
  scope: 'account',
  ...clientNamed('PRIVATE'),
  hasDate: false,
  listOmit: ['data'],
  nullClearsTags: true,
  fields: {
    instrument_type: {
      from: ['type', 'instrument_type'],
      schema: Type.Optional(
        Type.Union([InstrumentType, Type.Null()], {
          'x-rule': InstrumentType['x-rule'],
          description: 'Accepted in place of type (as a retrieved object carries it); type wins.',
        }),
      ),
      aliases: {
        type: Type.Optional(
          Type.Union([InstrumentType, Type.Null()], { 'x-rule': InstrumentType['x-rule'] }),
        ),
      },
      view: Type.String({ description: 'Kind of instrument, for example EQUITY or FIXED_INCOME.' }),
      required: INSTRUMENT_TYPE_REQUIRED,
    },
    currency: {
      schema: Type.Optional(Type.Union([CurrencyCode, Type.Null()], { description: 'Default USD.' })),
      view: Type.String({ description: '3-letter ISO 4217 code.' }),
      default: () => 'USD',
    },
    data: {
      schema: Data,
      view: Type.Object({}, { additionalProperties: true, description: 'Custom data. Omitted in lists.' }),
      required: DATA_REQUIRED,
      viewDefault: {},
    },
  },
  http: {
    // The instrument type is required on create, as `type` or (as a retrieved object carries it) `instrument_type`.
    createOptions: {
      'x-message': INSTRUMENT_TYPE_REQUIRED,
      anyOf: [
        { required: ['type'], properties: { type: { type: 'string' } } },
        { required: ['instrument_type'], properties: { instrument_type: { type: 'string' } } },
      ],
    },
    // Python clients send None for every argument left unset: on update, null keeps the stored value.
    updateFields: { name: Type.Union([Name, Type.Null()]), data: Type.Union([Data, Type.Null()]) },
  },
});
