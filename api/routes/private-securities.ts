import { Type } from '@sinclair/typebox';
import { PRIVATE_SECURITY } from '../../engine/kinds/private-security';
import { resourceRoutes } from '../http/resource-routes';
import { ClientSymbol, CurrencyCode, Name, StoredObject } from '../schemas/fields';

const InstrumentType = Type.String({
  pattern: '^[A-Z][A-Z0-9_]{0,49}$',
  'x-rule': 'an upper-case instrument type of up to 50 letters, digits or _, such as EQUITY or FIXED_INCOME',
  description: 'Upper-case instrument type (EQUITY, FIXED_INCOME, …), shown as instrument_type.',
});
const Data = StoredObject({}, { description: 'A JSON object; replaced whole on update.' });

/** Private securities: client-named (PRIVATE:…), account-wide, nothing beyond CRUD. */
export default resourceRoutes({
  kind: PRIVATE_SECURITY,
  path: '/private_securities',
  key: 'private_security',
  plural: 'private_securities',
  tag: 'Private securities',
  title: 'PrivateSecurity',
  symbol: ClientSymbol('PRIVATE'),
  properties: {
    instrument_type: Type.String({ description: 'Kind of instrument, for example EQUITY or FIXED_INCOME.' }),
    currency: Type.String({ description: '3-letter ISO 4217 code.' }),
    data: Type.Object({}, { additionalProperties: true, description: 'Custom data. Omitted in lists.' }),
  },
  fields: {
    type: Type.Optional(Type.Union([InstrumentType, Type.Null()], { 'x-rule': InstrumentType['x-rule'] })),
    instrument_type: Type.Optional(
      Type.Union([InstrumentType, Type.Null()], {
        'x-rule': InstrumentType['x-rule'],
        description: 'Accepted in place of type (as a retrieved object carries it); type wins.',
      }),
    ),
    currency: Type.Optional(Type.Union([CurrencyCode, Type.Null()], { description: 'Default USD.' })),
    data: Data,
  },
  // The instrument type is required on create, as `type` or (as a retrieved object carries it) `instrument_type`.
  createOptions: {
    'x-message': PRIVATE_SECURITY.fields.instrument_type!.required,
    anyOf: [
      { required: ['type'], properties: { type: { type: 'string' } } },
      { required: ['instrument_type'], properties: { instrument_type: { type: 'string' } } },
    ],
  },
  // Python clients send None for every argument left unset: on update, null keeps the stored value.
  updateFields: { name: Type.Union([Name, Type.Null()]), data: Type.Union([Data, Type.Null()]) },
});
