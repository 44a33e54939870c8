import { type FormInput, formInputKey } from '../kinds/worker-template';

/**
 * How a worker's `script_inputs` must match its template's `form_inputs`. Form inputs are the hosted
 * product's form descriptions, with many widget types (assembler, select, metaString…); only the
 * primitive ones below say what JSON type the value has, so only those are type-checked.
 */
const PRIMITIVE_TYPES: Record<string, (value: unknown) => boolean> = {
  string: (value) => typeof value === 'string',
  str: (value) => typeof value === 'string',
  text: (value) => typeof value === 'string',
  textarea: (value) => typeof value === 'string',
  number: (value) => typeof value === 'number' && Number.isFinite(value),
  float: (value) => typeof value === 'number' && Number.isFinite(value),
  integer: (value) => Number.isInteger(value),
  int: (value) => Number.isInteger(value),
  boolean: (value) => typeof value === 'boolean',
  bool: (value) => typeof value === 'boolean',
  checkbox: (value) => typeof value === 'boolean',
  object: (value) => value !== null && typeof value === 'object' && !Array.isArray(value),
  dict: (value) => value !== null && typeof value === 'object' && !Array.isArray(value),
  array: (value) => Array.isArray(value),
  list: (value) => Array.isArray(value),
};

/** The hosted product marks required inputs `mandatory`; JSON-schema habits write `required`. */
function isRequired(input: FormInput): boolean {
  return input.mandatory === true || input.required === true;
}

function hasDefault(input: FormInput): boolean {
  return Object.hasOwn(input, 'default') && input.default !== null && input.default !== undefined;
}

export interface ScriptInputRules {
  /** A STARTER's required inputs may arrive with the run's parameters, so storing may skip them. */
  requireMandatory: boolean;
  /** At run time the STARTER also receives the run's parameters, which the form need not declare. */
  allowUnknown: boolean;
}

/** The first mismatch between values and a form, described for a person; null when they match. */
export function scriptInputProblem(
  formInputs: FormInput[],
  values: Record<string, unknown>,
  rules: ScriptInputRules,
): string | null {
  const byKey = new Map(formInputs.map((input) => [formInputKey(input), input]));
  if (!rules.allowUnknown) {
    const unknown = Object.keys(values).filter((key) => !byKey.has(key));
    if (unknown.length) {
      return `unknown script input ${unknown.map((key) => JSON.stringify(key)).join(', ')} (the template's form_inputs are ${[...byKey.keys()].join(', ') || 'empty'})`;
    }
  }
  for (const [key, input] of byKey) {
    const value = values[key];
    if (value === undefined || value === null) {
      if (rules.requireMandatory && isRequired(input) && !hasDefault(input)) {
        return `the required script input "${key}" is missing`;
      }
      continue;
    }
    const check = PRIMITIVE_TYPES[input.type.toLowerCase()];
    if (check && !check(value)) {
      return `script input "${key}" must be of type ${input.type}, got ${Array.isArray(value) ? 'array' : typeof value}`;
    }
  }
  return null;
}

/** The values a script receives: each form input's `default`, overlaid with the given values. */
export function withDefaults(
  formInputs: FormInput[],
  values: Record<string, unknown>,
): Record<string, unknown> {
  const defaults: Record<string, unknown> = {};
  for (const input of formInputs) {
    if (hasDefault(input)) defaults[formInputKey(input)] = input.default;
  }
  return { ...defaults, ...values };
}
