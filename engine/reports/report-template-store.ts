import type { Actor } from '../audit/audit-trail';
import type { Database } from '../db/database';
import {
  commonView,
  createEntity,
  deleteEntity,
  type EntityKind,
  type EntityRecord,
  updateEntity,
} from '../entities/entity-store';
import { InvalidInput } from '../errors';
import { checkAuthorization } from './report-store';
import { checkStorableFields } from '../entities/storable-json';

/** The only state the service gives a stored template (the interface's sample value). */
export const TEMPLATE_STATUS_OK = 'OK';
const CATEGORY_MAX_LENGTH = 100;

export const REPORT_TEMPLATE: EntityKind = {
  kind: 'report_template',
  entityType: 'ReportTemplate',
  noun: 'report template',
  scope: 'workspace',
  idPrefix: 'reportTemplate',
  idField: 'id',
  hasDate: false,
  listOmit: ['layout', 'global_parameters'],
  view: (record: EntityRecord) => ({
    ...commonView(record),
    status: record.body.status ?? TEMPLATE_STATUS_OK,
    authorization: record.body.authorization ?? 'PRIVATE',
    categories: record.body.categories ?? [],
    layout: record.body.layout ?? [],
    global_parameters: record.body.global_parameters ?? {},
    workspace: record.workspace,
  }),
};

export interface ReportTemplateInput {
  name?: unknown;
  description?: unknown;
  tags?: unknown;
  authorization?: unknown;
  categories?: unknown;
  layout?: unknown;
  global_parameters?: unknown;
  workspace?: unknown;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

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

/** The request fields this resource reads; other keys of a body are ignored, never checked. */
function knownFields(input: ReportTemplateInput): ReportTemplateInput {
  const { name, description, tags, authorization, categories, layout, global_parameters, workspace } = input;
  return { name, description, tags, authorization, categories, layout, global_parameters, workspace };
}

export async function createReportTemplate(
  db: Database,
  actor: Actor,
  input: ReportTemplateInput,
): Promise<EntityRecord> {
  checkStorableFields(knownFields(input));
  return createEntity(db, actor, REPORT_TEMPLATE, {
    workspace: input.workspace,
    name: input.name,
    description: input.description,
    tags: input.tags,
    body: {
      status: TEMPLATE_STATUS_OK,
      authorization:
        input.authorization === undefined || input.authorization === null
          ? 'PRIVATE'
          : checkAuthorization(input.authorization),
      categories:
        input.categories === undefined || input.categories === null ? [] : checkCategories(input.categories),
      layout: input.layout === undefined || input.layout === null ? [] : checkLayout(input.layout),
      global_parameters:
        input.global_parameters === undefined || input.global_parameters === null
          ? {}
          : checkGlobalParameters(input.global_parameters),
    },
  });
}

/** Every field optional; a field given as null keeps its current value, except description. */
export async function updateReportTemplate(
  db: Database,
  actor: Actor,
  id: string,
  input: ReportTemplateInput,
): Promise<EntityRecord> {
  checkStorableFields(knownFields(input));
  const changes: Record<string, unknown> = {};
  if (input.authorization !== undefined && input.authorization !== null) {
    changes.authorization = checkAuthorization(input.authorization);
  }
  if (input.categories !== undefined && input.categories !== null) {
    changes.categories = checkCategories(input.categories);
  }
  if (input.layout !== undefined && input.layout !== null) changes.layout = checkLayout(input.layout);
  if (input.global_parameters !== undefined && input.global_parameters !== null) {
    changes.global_parameters = checkGlobalParameters(input.global_parameters);
  }
  return updateEntity(db, actor, REPORT_TEMPLATE, id, input.workspace, (current) => ({
    name: input.name,
    description: input.description,
    tags: input.tags ?? undefined,
    body: { ...current.body, ...changes },
  }));
}

export async function deleteReportTemplate(
  db: Database,
  actor: Actor,
  id: string,
  workspace: unknown,
): Promise<{ deleted: true; id: string; name: string }> {
  const record = await deleteEntity(db, actor, REPORT_TEMPLATE, id, workspace);
  return { deleted: true, id: record.id, name: record.name };
}
