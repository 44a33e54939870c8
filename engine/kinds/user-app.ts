import { jsonObject, resourceKind } from '../store/resource-kind';
import { InvalidInput } from '../platform/errors';

export const ENV_VARS_MAX = 100;
export const ENV_VAR_VALUE_MAX = 32 * 1024;
/** The shape of a process environment variable name, so apps can export them unchanged. */
const ENV_VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Error messages name the variable, never its value: the value is a secret. */
function checkEnvVars(value: unknown): Record<string, string> {
  const entries = Object.entries(jsonObject('env_vars must be an object of names to string values.')(value));
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

/**
 * A user app (published by tools; the interface reads them): account-wide. `data` and `env_vars`
 * are replaced whole on update, so a variable is removed by sending the set without it.
 */
export const USER_APP = resourceKind({
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
  nullClearsTags: true,
  fields: {
    data: { default: () => ({}), check: jsonObject('data must be a JSON object.') },
    env_vars: { default: () => ({}), check: checkEnvVars },
  },
});
