/**
 * Turns Ajv's validation errors into one message a client can act on: the field by its wire name
 * (`securities[2].quantity`, `page_size`) and the rule it broke, in words, never raw Ajv text or regexes.
 */

export interface ValidationIssue {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  /** Present because the app's Ajv runs with `verbose: true`. */
  schemaPath?: string;
  data?: unknown;
  parentSchema?: {
    description?: string;
    'x-rule'?: string;
    'x-message'?: string;
    /** Words only a `pattern` failure (the string's other rules have words of their own). */
    'x-pattern-rule'?: string;
    /** What a `pattern` failure says after the field's name, when "must be …" does not fit. */
    'x-pattern-message'?: string;
    anyOf?: Array<{ const?: unknown; type?: string }>;
  };
}

/** `/securities/2/quantity` → `securities[2].quantity`. */
function fieldName(instancePath: string, missing?: string): string {
  const parts = instancePath.split('/').slice(1);
  if (missing !== undefined) parts.push(missing);
  let out = '';
  for (const part of parts) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(key) ? `[${key}]` : out === '' ? key : `.${key}`;
  }
  return out;
}

function allowedValues(issue: ValidationIssue): string | null {
  const options = issue.parentSchema?.anyOf;
  if (!options || !options.every((option) => 'const' in option || option.type === 'null')) return null;
  return options.map((option) => ('const' in option ? JSON.stringify(option.const) : 'null')).join(', ');
}

const TYPE_WORDS: Record<string, string> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'a boolean',
  array: 'an array',
  object: 'an object',
  null: 'null',
};

function rule(issue: ValidationIssue): string {
  const p = issue.params;
  // A schema that words its own rule says it best, whichever keyword failed.
  const worded = issue.parentSchema?.['x-rule'];
  if (worded && !['minLength', 'maxLength', 'additionalProperties'].includes(issue.keyword))
    return `must be ${worded}`;
  const description = issue.parentSchema?.['x-rule'] ?? issue.parentSchema?.description;
  switch (issue.keyword) {
    case 'type':
      return `must be ${TYPE_WORDS[String(p.type)] ?? `of type ${String(p.type)}`}`;
    case 'minLength':
      return Number(p.limit) === 1
        ? 'must not be empty'
        : `must be at least ${String(p.limit)} characters long`;
    case 'maxLength':
      return `must be at most ${String(p.limit)} characters long`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `must be ${String(p.comparison)} ${String(p.limit)}`;
    case 'minItems':
      return `must hold at least ${String(p.limit)} item${Number(p.limit) === 1 ? '' : 's'}`;
    case 'maxItems':
      return `must hold at most ${String(p.limit)} item${Number(p.limit) === 1 ? '' : 's'}`;
    case 'pattern':
      if (issue.parentSchema?.['x-pattern-message']) return issue.parentSchema['x-pattern-message'];
      if (issue.parentSchema?.['x-pattern-rule']) return `must be ${issue.parentSchema['x-pattern-rule']}`;
      return description ? `must be ${description.replace(/\.$/, '')}` : 'is not in the expected format';
    case 'format':
      return description ? `must be ${description.replace(/\.$/, '')}` : 'is not in the expected format';
    case 'enum':
      return `must be one of ${((p.allowedValues as unknown[]) ?? []).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case 'anyOf': {
      const values = allowedValues(issue);
      if (values) return `must be one of ${values}`;
      return `must be ${listForms(issue.parentSchema?.anyOf ?? [])}`;
    }
    case 'uniqueItems':
      return `must not hold the same value twice (items ${Math.min(Number(p.i), Number(p.j))} and ${Math.max(Number(p.i), Number(p.j))})`;
    case 'maxProperties':
      return `must hold at most ${String(p.limit)} entries`;
    case 'additionalProperties':
      return `does not take the property ${String(p.additionalProperty)}`;
    default:
      return issue.message ?? 'is invalid';
  }
}

/**
 * One sentence for the first thing wrong. Ajv reports a union's branches before the union itself;
 * the union's own error (with every allowed form) says more than any one branch's.
 */
export function validationMessage(context: string | undefined, issues: ValidationIssue[]): string {
  const issue = mostTelling(issues);
  if (!issue) return 'Invalid request.';
  // A rule no single field carries (one of two fields required, say), or one with its own wording
  // (an OAuth error code), words its whole message; `{field}` in it is the value's name, `{value}` the
  // string given.
  const whole = issue.parentSchema?.['x-message'];
  if (whole && ['anyOf', 'enum', 'const', 'pattern'].includes(issue.keyword)) {
    return whole
      .replace('{field}', () => fieldName(issue.instancePath))
      .replace('{value}', () => (typeof issue.data === 'string' ? issue.data : ''));
  }
  if (issue.keyword === 'required') {
    const field = fieldName(issue.instancePath, String(issue.params.missingProperty));
    return `${field} is required${context === 'querystring' ? ' (query parameter)' : ''}.`;
  }
  const field = fieldName(issue.instancePath);
  if (field === '') {
    const what =
      context === 'body' ? 'The request body' : context === 'params' ? 'The path' : 'The query string';
    return `${what} ${rule(issue)}.`;
  }
  return `${field} ${rule(issue)}.`;
}

/**
 * Ajv reports a union's branches before the union itself. A union of constants is best told by the
 * union (every allowed value); a value-or-null union by its one real branch (why the value failed).
 */
function mostTelling(issues: ValidationIssue[]): ValidationIssue | undefined {
  // Ajv reports inner unions before the ones around them: the outermost says what the field takes.
  const union = issues.findLast((issue) => issue.keyword === 'anyOf');
  if (!union) return issues[0];
  const worded = Boolean(union.parentSchema?.['x-rule'] || union.parentSchema?.['x-message']);
  const options = union.parentSchema?.anyOf ?? [];
  if (allowedValues(union)) return union;
  // The branch written for the value's own JSON type tells why that value failed.
  const kind = jsonType(union.data);
  const matching = options.filter(
    (option) => option.type === kind || (kind === 'integer' && option.type === 'number'),
  );
  if (matching.length === 1 && union.schemaPath) {
    const prefix = `${union.schemaPath}/${options.indexOf(matching[0]!)}/`;
    // Inside that branch the same reading applies again (a nullable number inside a nullable object).
    // Errors inside a named schema the branch refers to (StorableJson) carry that schema's own path.
    const inBranch = issues.filter(
      (issue) =>
        issue.instancePath.startsWith(union.instancePath) &&
        (issue.schemaPath?.startsWith(prefix) ||
          (!issue.schemaPath?.startsWith(union.schemaPath!) &&
            issue.instancePath.startsWith(`${union.instancePath}/`))),
    );
    const branch = mostTelling(inBranch);
    // A union that words its rule speaks for the field itself; a deeper field speaks for itself, and so
    // does a rule with its own words about the value (a key holding a NUL character).
    if (
      branch &&
      (!(worded && branch.instancePath === union.instancePath) || branch.parentSchema?.['x-pattern-message'])
    )
      return branch;
  }
  return union;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** `a string, a number or null`: the forms a union allows, in words. */
function listForms(options: Array<{ const?: unknown; type?: string }>): string {
  const words = [
    ...new Set(
      options.map((option) =>
        'const' in option ? JSON.stringify(option.const) : (TYPE_WORDS[option.type ?? ''] ?? 'another form'),
      ),
    ),
  ];
  return words.length <= 1 ? (words[0] ?? 'valid') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}
