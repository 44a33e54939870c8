import { clientNamed, jsonObject, resourceKind } from '../store/resource-kind';
import { InvalidInput } from '../platform/errors';
import { checkCurrency } from './security-positions';

/** The interface names EQUITY and FIXED_INCOME as examples of an open set: any upper-case word. */
const INSTRUMENT_TYPE = /^[A-Z][A-Z0-9_]{0,49}$/;
const INSTRUMENT_TYPE_REQUIRED =
  'type is required: an upper-case instrument type of up to 50 letters, digits or _, such as EQUITY or FIXED_INCOME.';
const DATA_REQUIRED = 'data is required: a JSON object (possibly empty).';

function checkInstrumentType(value: unknown): string {
  if (typeof value !== 'string' || !INSTRUMENT_TYPE.test(value))
    throw new InvalidInput(INSTRUMENT_TYPE_REQUIRED);
  return value;
}

/**
 * A private security: named by the client (`PRIVATE:…`), account-wide. The request's `type` is
 * stored and shown as `instrument_type` (which a client saving back a retrieved object sends; `type`
 * wins). `data` is replaced whole on update; null keeps a value, except that null tags clear them.
 */
export const PRIVATE_SECURITY = resourceKind({
  kind: 'private_security',
  // The audit trail files custom indexes and private securities alike under the spec's main type.
  entityType: 'CustomSecurity',
  noun: 'private security',
  scope: 'account',
  ...clientNamed('PRIVATE'),
  hasDate: false,
  listOmit: ['data'],
  nullClearsTags: true,
  fields: {
    instrument_type: {
      from: ['type', 'instrument_type'],
      check: checkInstrumentType,
      required: INSTRUMENT_TYPE_REQUIRED,
    },
    currency: { default: () => 'USD', check: (value) => checkCurrency(value, 'currency') },
    data: {
      check: jsonObject(DATA_REQUIRED),
      required: DATA_REQUIRED,
      viewDefault: {},
    },
  },
});
