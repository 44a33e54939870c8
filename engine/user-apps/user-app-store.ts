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
import { checkName } from '../entities/entity-fields';
import { InvalidInput } from '../errors';

export const ENV_VARS_MAX = 100;
export const ENV_VAR_VALUE_MAX = 32 * 1024;
/** The shape of a process environment variable name, so apps can export them unchanged. */
const ENV_VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export const USER_APP: EntityKind = {
  kind: 'user_app',
  entityType: 'UserApp',
  noun: 'user app',
  scope: 'account',
  idPrefix: 'userApp',
  idField: 'id',
  hasDate: false,
  // env_vars are secrets: shown only to a caller who retrieves the one app. The audit trail drops
  // them from its snapshots by key (audit-trail's sensitive fields).
  listOmit: ['data', 'env_vars'],
  view: (record: EntityRecord) => ({
    ...commonView(record),
    data: record.body.data ?? {},
    env_vars: record.body.env_vars ?? {},
  }),
};

export interface UserAppInput {
  name?: unknown;
  description?: unknown;
  tags?: unknown;
  data?: unknown;
  env_vars?: unknown;
}

/** Python clients send None for every argument left unset: null means "not given" for these fields. */
const given = (value: unknown) => value !== undefined && value !== null;

function checkData(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidInput('data must be a JSON object.');
  }
  return value as Record<string, unknown>;
}

/** Error messages name the variable, never its value: the value is a secret. */
function checkEnvVars(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidInput('env_vars must be an object of names to string values.');
  }
  const entries = Object.entries(value);
  if (entries.length > ENV_VARS_MAX) {
    throw new InvalidInput(`env_vars holds at most ${ENV_VARS_MAX} variables, got ${entries.length}.`);
  }
  for (const [name, inner] of entries) {
    if (!ENV_VAR_NAME.test(name)) {
      throw new InvalidInput(
        `env_vars: "${name.slice(0, 128)}" is not a variable name (a letter or _, then letters, digits or _; at most 128).`,
      );
    }
    if (typeof inner !== 'string') throw new InvalidInput(`env_vars.${name} must be a string.`);
    if (inner.length > ENV_VAR_VALUE_MAX) {
      throw new InvalidInput(`env_vars.${name} must be at most ${ENV_VAR_VALUE_MAX} characters.`);
    }
  }
  return value as Record<string, string>;
}

export async function createUserApp(db: Database, actor: Actor, input: UserAppInput): Promise<EntityRecord> {
  checkName(input.name);
  const body = {
    data: given(input.data) ? checkData(input.data) : {},
    env_vars: given(input.env_vars) ? checkEnvVars(input.env_vars) : {},
  };
  return createEntity(db, actor, USER_APP, {
    name: input.name,
    description: input.description,
    tags: input.tags,
    body,
  });
}

/**
 * Every field is optional; what is left out (or null) keeps its stored value. `data` and `env_vars`
 * are replaced whole, so a variable is removed by sending the set without it.
 */
export async function updateUserApp(
  db: Database,
  actor: Actor,
  id: string,
  input: UserAppInput,
): Promise<EntityRecord> {
  return updateEntity(db, actor, USER_APP, id, undefined, (current) => {
    const body = { ...current.body };
    if (given(input.data)) body.data = checkData(input.data);
    if (given(input.env_vars)) body.env_vars = checkEnvVars(input.env_vars);
    return {
      name: given(input.name) ? input.name : undefined,
      description: input.description,
      tags: input.tags,
      body,
    };
  });
}

export async function deleteUserApp(db: Database, actor: Actor, id: string) {
  const record = await deleteEntity(db, actor, USER_APP, id);
  return { deleted: true, id: record.id, name: record.name };
}
