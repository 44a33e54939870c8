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
import {
  checkCurrency,
  checkNlv,
  checkSecurities,
  fillSecurityNames,
  type Security,
} from './security-positions';

export const PORTFOLIO: EntityKind = {
  kind: 'portfolio',
  entityType: 'Portfolio',
  noun: 'portfolio',
  scope: 'workspace',
  idPrefix: 'portfolio',
  idField: 'id',
  hasDate: true,
  listOmit: ['securities'],
  view: (record: EntityRecord) => ({
    ...commonView(record),
    date: record.date,
    base_currency: record.body.base_currency ?? 'USD',
    nlv: record.body.nlv ?? null,
    securities: record.body.securities ?? [],
    workspace: record.workspace,
  }),
};

export interface PortfolioInput {
  name?: unknown;
  description?: unknown;
  date?: unknown;
  base_currency?: unknown;
  nlv?: unknown;
  securities?: unknown;
  tags?: unknown;
  workspace?: unknown;
}

export async function createPortfolio(
  db: Database,
  actor: Actor,
  input: PortfolioInput,
): Promise<EntityRecord> {
  if (input.securities === undefined)
    throw new InvalidInput('securities is required (an array, possibly empty).');
  const nlv = checkNlv(input.nlv);
  const securities = await fillSecurityNames(db, checkSecurities(input.securities, nlv));
  return createEntity(db, actor, PORTFOLIO, {
    workspace: input.workspace,
    name: input.name,
    description: input.description,
    tags: input.tags,
    date: input.date,
    body: {
      base_currency:
        input.base_currency === undefined || input.base_currency === null
          ? 'USD'
          : checkCurrency(input.base_currency),
      nlv,
      securities,
    },
  });
}

export async function updatePortfolio(
  db: Database,
  actor: Actor,
  id: string,
  input: PortfolioInput,
): Promise<EntityRecord> {
  return updateEntity(db, actor, PORTFOLIO, id, input.workspace, async (current) => {
    const body = { ...current.body };
    if (input.base_currency !== undefined && input.base_currency !== null)
      body.base_currency = checkCurrency(input.base_currency);
    if (input.nlv !== undefined) body.nlv = checkNlv(input.nlv);
    if (input.securities !== undefined) {
      body.securities = await fillSecurityNames(
        db,
        checkSecurities(input.securities, (body.nlv as number | null) ?? null),
      );
    } else if (input.nlv !== undefined) {
      // Dropping nlv must not leave more positions than the lower limit allows.
      checkSecurities(body.securities as Security[], (body.nlv as number | null) ?? null);
    }
    return { name: input.name, description: input.description, tags: input.tags, date: input.date, body };
  });
}

export async function deletePortfolio(db: Database, actor: Actor, id: string, workspace: unknown) {
  const record = await deleteEntity(db, actor, PORTFOLIO, id, workspace);
  return { deleted: true, id: record.id, name: record.name };
}
