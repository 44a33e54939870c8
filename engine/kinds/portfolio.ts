import { resourceKind } from '../store/resource-kind';
import { InvalidInput } from '../platform/errors';
import {
  checkCurrency,
  checkNlv,
  checkSecurities,
  fillSecurityNames,
  type Security,
} from './security-positions';

/**
 * A portfolio: positions, a base currency and an optional nlv, workspace-bound and dated; lists
 * leave the positions out. The position limit depends on nlv, so it is checked across fields.
 */
export const PORTFOLIO = resourceKind({
  kind: 'portfolio',
  entityType: 'Portfolio',
  noun: 'portfolio',
  scope: 'workspace',
  idPrefix: 'portfolio',
  idField: 'id',
  hasDate: true,
  listOmit: ['securities'],
  fields: {
    base_currency: { default: () => 'USD', check: checkCurrency },
    nlv: { default: () => null, check: checkNlv, nullClears: true },
    securities: {
      required: 'securities is required (an array, possibly empty).',
      check: (value) => {
        if (!Array.isArray(value)) throw new InvalidInput('securities must be an array of security objects.');
        return value;
      },
      viewDefault: [],
    },
  },
  async finish(body, { db, given }) {
    const nlv = (body.nlv as number | null | undefined) ?? null;
    if (given.has('securities')) {
      body.securities = await fillSecurityNames(db, checkSecurities(body.securities, nlv));
    } else if (given.has('nlv')) {
      // Dropping nlv must not leave more positions than the lower limit allows.
      checkSecurities((body.securities as Security[] | undefined) ?? [], nlv);
    }
  },
});
