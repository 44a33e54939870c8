import type { Actor } from '../audit/audit-trail';
import type { Database } from '../db/database';
import { epochSeconds } from '../lists/page-token';
import {
  createEntity,
  deleteEntity,
  type EntityKind,
  type EntityRecord,
  updateEntity,
} from '../entities/entity-store';
import { checkName } from '../entities/entity-fields';
import { InvalidInput } from '../errors';
import { checkCurrency } from '../portfolios/security-positions';

export const PRIVATE_SECURITY: EntityKind = {
  kind: 'private_security',
  // The audit trail files custom indexes and private securities alike under the spec's main type.
  entityType: 'CustomSecurity',
  noun: 'private security',
  scope: 'account',
  idPrefix: null,
  symbolPattern: /^PRIVATE:[A-Z0-9_]*$/,
  idField: 'symbol',
  hasDate: false,
  listOmit: ['data'],
  view: (record: EntityRecord) => ({
    symbol: record.id,
    name: record.name,
    description: record.description,
    tags: record.tags,
    instrument_type: record.body.instrument_type,
    currency: record.body.currency ?? 'USD',
    data: record.body.data ?? {},
    created: epochSeconds(record.createdAt),
    updated: epochSeconds(record.updatedAt),
    version: String(record.version),
  }),
};

export interface PrivateSecurityInput {
  symbol?: unknown;
  name?: unknown;
  description?: unknown;
  tags?: unknown;
  /** Stored and shown as `instrument_type`. */
  type?: unknown;
  /** Accepted too, so a client that saves back a retrieved object keeps working; `type` wins. */
  instrument_type?: unknown;
  currency?: unknown;
  data?: unknown;
}

/** Python clients send None for every argument left unset: null means "not given" for these fields. */
const given = (value: unknown) => value !== undefined && value !== null;

/** The interface names EQUITY and FIXED_INCOME as examples of an open set: any upper-case word. */
const INSTRUMENT_TYPE = /^[A-Z][A-Z0-9_]{0,49}$/;

/** The symbol is a path segment too, and the router refuses segments over 100 characters. */
export const SYMBOL_MAX = 64;

function checkSymbol(symbol: unknown): string {
  if (
    typeof symbol !== 'string' ||
    symbol.length > SYMBOL_MAX ||
    !PRIVATE_SECURITY.symbolPattern!.test(symbol)
  ) {
    throw new InvalidInput(
      `symbol is required: PRIVATE: followed by upper-case letters, digits or _ (no spaces), at most ${SYMBOL_MAX} characters in all.`,
    );
  }
  return symbol;
}

function instrumentTypeOf(input: PrivateSecurityInput): unknown {
  return given(input.type) ? input.type : input.instrument_type;
}

function checkInstrumentType(value: unknown): string {
  if (typeof value !== 'string' || !INSTRUMENT_TYPE.test(value)) {
    throw new InvalidInput(
      'type is required: an upper-case instrument type of up to 50 letters, digits or _, such as EQUITY or FIXED_INCOME.',
    );
  }
  return value;
}

function checkData(value: unknown): Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidInput('data is required: a JSON object (possibly empty).');
  }
  return value as Record<string, unknown>;
}

export async function createPrivateSecurity(
  db: Database,
  actor: Actor,
  input: PrivateSecurityInput,
): Promise<EntityRecord> {
  const symbol = checkSymbol(input.symbol);
  checkName(input.name);
  const body = {
    instrument_type: checkInstrumentType(instrumentTypeOf(input)),
    currency: given(input.currency) ? checkCurrency(input.currency, 'currency') : 'USD',
    data: checkData(input.data),
  };
  return createEntity(db, actor, PRIVATE_SECURITY, {
    id: symbol,
    name: input.name,
    description: input.description,
    tags: input.tags,
    body,
  });
}

/** Every field is optional; what is left out (or null) keeps its stored value. `data` is replaced whole. */
export async function updatePrivateSecurity(
  db: Database,
  actor: Actor,
  symbol: string,
  input: PrivateSecurityInput,
): Promise<EntityRecord> {
  return updateEntity(db, actor, PRIVATE_SECURITY, symbol, undefined, (current) => {
    const body = { ...current.body };
    const type = instrumentTypeOf(input);
    if (given(type)) body.instrument_type = checkInstrumentType(type);
    if (given(input.currency)) body.currency = checkCurrency(input.currency, 'currency');
    if (given(input.data)) body.data = checkData(input.data);
    return {
      name: given(input.name) ? input.name : undefined,
      description: input.description,
      tags: input.tags,
      body,
    };
  });
}

export async function deletePrivateSecurity(db: Database, actor: Actor, symbol: string) {
  const record = await deleteEntity(db, actor, PRIVATE_SECURITY, symbol);
  return { deleted: true, symbol: record.id, name: record.name };
}
