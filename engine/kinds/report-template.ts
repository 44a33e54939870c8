import { resourceKind } from '../store/resource-kind';
import { InvalidInput } from '../platform/errors';
import { isPlainObject } from '../platform/plain-object';

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

export function checkCategories(value: unknown): string[] {
  if (!Array.isArray(value)) throw new InvalidInput('categories must be an array of strings.');
  return value.map((category: unknown, index) => {
    if (typeof category !== 'string' || category.length === 0 || category.length > CATEGORY_MAX_LENGTH) {
      throw new InvalidInput(
        `categories[${index}] must be a string of 1 to ${CATEGORY_MAX_LENGTH} characters.`,
      );
    }
    return category;
  });
}

function checkLayout(value: unknown): unknown[] {
  if (!Array.isArray(value)) throw new InvalidInput('layout must be an array.');
  return value;
}

/**
 * The shape of `global_parameters` beyond `advanced_settings` is the template author's; that one
 * key is read by the report builder, so its entries must be setting objects (`variant`, `select`).
 */
export function checkGlobalParameters(value: unknown): Record<string, unknown> {
  if (!isPlainObject(value)) throw new InvalidInput('global_parameters must be an object.');
  const settings = value.advanced_settings;
  if (settings === undefined || settings === null) return value;
  if (!isPlainObject(settings)) {
    throw new InvalidInput('global_parameters.advanced_settings must be an object of setting objects.');
  }
  for (const [name, setting] of Object.entries(settings)) {
    if (!isPlainObject(setting)) {
      throw new InvalidInput(
        `global_parameters.advanced_settings.${name} must be an object (with variant and select).`,
      );
    }
  }
  return value;
}

/** A report template (an extension): the layout a report is built from, workspace-bound. */
export const REPORT_TEMPLATE = resourceKind({
  kind: 'report_template',
  entityType: 'ReportTemplate',
  noun: 'report template',
  scope: 'workspace',
  idPrefix: 'reportTemplate',
  idField: 'id',
  hasDate: false,
  listOmit: ['layout', 'global_parameters'],
  fields: {
    status: { readOnly: true, default: () => TEMPLATE_STATUS_OK },
    authorization: { default: () => 'PRIVATE', check: checkAuthorization },
    categories: { default: () => [], check: checkCategories },
    layout: { default: () => [], check: checkLayout },
    global_parameters: { default: () => ({}), check: checkGlobalParameters },
  },
});
