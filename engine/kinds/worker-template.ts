import { createHash } from 'node:crypto';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { type EntityRecord, findEntity } from '../store/entity-store';
import { NAME_MAX } from '../store/entity-fields';
import { newBody, resourceKind } from '../store/resource-kind';
import { Forbidden, InvalidInput } from '../platform/errors';
import { transpileForPublishing } from './script-transpiler';
import { SYSTEM_ACCOUNT_ID } from '../identity/system-account';

export const WORKER_TEMPLATE_TYPES = [
  'STARTER',
  'BASIC',
  'ENDER',
  'FORKER',
  'BARRIER',
  'CONDITIONAL',
] as const;
export type WorkerTemplateType = (typeof WORKER_TEMPLATE_TYPES)[number];

/**
 * JavaScript (and TypeScript transpiled to it) runs in an isolated-vm (V8) sandbox; Python in a
 * bubblewrap sandbox with Debian's interpreter of that version (plugins/sandbox/python-sandbox.ts).
 */
export const SCRIPT_RUNTIMES = ['javascript', 'typescript', 'python3.11'] as const;
export type ScriptRuntime = (typeof SCRIPT_RUNTIMES)[number];
export const PYTHON_RUNTIMES = ['python3.11'] as const;
export type PythonRuntime = (typeof PYTHON_RUNTIMES)[number];

export function isPythonRuntime(runtime: unknown): runtime is PythonRuntime {
  return (PYTHON_RUNTIMES as readonly unknown[]).includes(runtime);
}

/** At most this many requirement specifiers, each at most REQUIREMENT_MAX characters. */
export const REQUIREMENTS_MAX = 100;
export const REQUIREMENT_MAX = 200;
/**
 * One requirement specifier: a distribution name, optional extras, optional version constraints
 * (`numpy==2.2.6`, `pandas>=2.2,<3`, `requests[socks]==2.32.3`). No URLs, paths, options or
 * environment markers: pip must get every package from the index, as a wheel.
 */
export const REQUIREMENT =
  /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[A-Za-z0-9._-]+(?:,[A-Za-z0-9._-]+)*\])?(?:\s*(?:===|==|~=|!=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+(?:\s*,\s*(?:===|==|~=|!=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+)*)?$/;

export const CONTAINER_STATUSES = ['PENDING', 'SUCCESS', 'ERROR'] as const;
export type ContainerStatus = (typeof CONTAINER_STATUSES)[number];

/** Scripts are kept whole in the entity row and copied into runs: 1 MiB keeps both cheap. */
export const SCRIPT_MAX_BYTES = 1024 * 1024;
export const FORM_INPUTS_MAX = 100;
const ENTRY_POINT = /^[A-Za-z_$][A-Za-z0-9_$]{0,99}$/;

/**
 * Bounds of a template's own sandbox limits. Runs are Temporal activities with a 15-minute
 * start-to-close timeout, so a script gets at most 10 minutes; up to 8 scripts run at once on a
 * worker, so 1 GiB each is already a lot of the host's memory.
 */
export const TEMPLATE_LIMIT_BOUNDS = {
  memoryLimitMb: { min: 16, max: 1024 },
  timeoutSeconds: { min: 1, max: 600 },
} as const;

/** One input of the template's form: the workflow engine matches a worker's `script_inputs` by `key`. */
export interface FormInput extends Record<string, unknown> {
  type: string;
}

/** What the workflow engine needs of a template to run it. */
export interface WorkerTemplate {
  id: string;
  name: string;
  type: WorkerTemplateType;
  script: string;
  scriptRuntime: ScriptRuntime;
  scriptEntryPoint: string;
  formInputs: FormInput[];
  /** The JavaScript a TypeScript source was transpiled to when published; null for older rows. */
  compiledScript: string | null;
  /** The template's own sandbox limits; null: the worker process's. */
  memoryLimitMb: number | null;
  timeoutSeconds: number | null;
  requirements: string[];
  containerStatus: ContainerStatus;
  /** The virtualenv's name (the requirements' hash); null: no requirements, the bare interpreter. */
  environmentHash: string | null;
}

export type WorkerTemplateInput = {
  name?: unknown;
  description?: unknown;
  tags?: unknown;
  category?: unknown;
  visible?: unknown;
  type?: unknown;
  script_runtime?: unknown;
  script_entry_point?: unknown;
  script?: unknown;
  /** The field name the hosted product's publishing tool sends the source under. */
  script_source?: unknown;
  form_inputs?: unknown;
  memory_limit_mb?: unknown;
  timeout_seconds?: unknown;
  requirements?: unknown;
};

function checkCategory(value: unknown): string | null {
  if (value === null) return null;
  if (typeof value !== 'string' || value.length > NAME_MAX) {
    throw new InvalidInput(`category must be a string of at most ${NAME_MAX} characters.`);
  }
  return value;
}

function checkVisible(value: unknown): boolean {
  if (typeof value !== 'boolean') throw new InvalidInput('visible must be a boolean.');
  return value;
}

function checkType(value: unknown): WorkerTemplateType {
  if (!(WORKER_TEMPLATE_TYPES as readonly unknown[]).includes(value)) {
    throw new InvalidInput(`type must be one of ${WORKER_TEMPLATE_TYPES.join(', ')}.`);
  }
  return value as WorkerTemplateType;
}

const ACCEPTED_RUNTIMES = `${SCRIPT_RUNTIMES.slice(0, -1).join(', ')} or ${SCRIPT_RUNTIMES.at(-1)}`;

function checkRuntime(value: unknown): ScriptRuntime {
  if (typeof value !== 'string') throw new InvalidInput(`script_runtime must be ${ACCEPTED_RUNTIMES}.`);
  if (!(SCRIPT_RUNTIMES as readonly string[]).includes(value)) {
    throw new InvalidInput(
      `script_runtime "${value.slice(0, 40)}" is not supported: the accepted runtimes are ${ACCEPTED_RUNTIMES}.`,
    );
  }
  return value as ScriptRuntime;
}

function checkEntryPoint(value: unknown): string {
  if (typeof value !== 'string' || !ENTRY_POINT.test(value)) {
    throw new InvalidInput('script_entry_point must be a function name (letters, digits, _ or $).');
  }
  return value;
}

/** Requirement specifiers, trimmed, in the order given; a duplicate or an option is refused. */
export function checkRequirements(value: unknown): string[] {
  if (!Array.isArray(value)) {
    throw new InvalidInput('requirements must be a list of requirement specifiers such as "numpy==2.2.6".');
  }
  if (value.length > REQUIREMENTS_MAX) {
    throw new InvalidInput(`requirements holds at most ${REQUIREMENTS_MAX} specifiers, got ${value.length}.`);
  }
  const names = new Set<string>();
  return value.map((item: unknown, i) => {
    const text = typeof item === 'string' ? item.trim() : null;
    if (text === null || text.length > REQUIREMENT_MAX || !REQUIREMENT.test(text)) {
      throw new InvalidInput(
        `requirements[${i}] must be a requirement specifier such as "numpy==2.2.6" (a package name, ` +
          'optional [extras] and version constraints; no URLs, paths, options or markers).',
      );
    }
    const name = /^[A-Za-z0-9._-]+/
      .exec(text)![0]
      .toLowerCase()
      .replace(/[._-]+/g, '-');
    if (names.has(name)) throw new InvalidInput(`requirements[${i}]: ${name} is listed twice.`);
    names.add(name);
    return text;
  });
}

/**
 * The source is stored as sent and compiled in the sandbox when it runs: nothing a client sends is
 * ever evaluated on the host.
 */
function checkScript(value: unknown): string {
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new InvalidInput('script is required: the source text of the worker, a non-empty string.');
  }
  if (Buffer.byteLength(value, 'utf8') > SCRIPT_MAX_BYTES) {
    throw new InvalidInput(`script must be at most ${SCRIPT_MAX_BYTES} bytes.`);
  }
  return value;
}

/** The key a worker's `script_inputs` use for this input: its `id`, or its `name` when it has no id. */
export function formInputKey(input: FormInput): string {
  return typeof input.id === 'string' && input.id ? input.id : (input.name as string);
}

/**
 * Form inputs are the hosted product's form descriptions (labels, variants, nested fields…), kept
 * as sent; only what the workflow engine relies on is checked: a unique key and a type.
 */
function checkFormInputs(value: unknown): FormInput[] {
  if (!Array.isArray(value)) throw new InvalidInput('form_inputs must be an array of objects.');
  if (value.length > FORM_INPUTS_MAX) {
    throw new InvalidInput(`form_inputs holds at most ${FORM_INPUTS_MAX} inputs, got ${value.length}.`);
  }
  const keys = new Set<string>();
  return value.map((item: unknown, i) => {
    if (!item || typeof item !== 'object' || Array.isArray(item)) {
      throw new InvalidInput(`form_inputs[${i}] must be an object.`);
    }
    const input = item as Record<string, unknown>;
    const named = (field: string) => typeof input[field] === 'string' && (input[field] as string).length > 0;
    if (!named('id') && !named('name')) {
      throw new InvalidInput(`form_inputs[${i}] needs an id or a name (a non-empty string).`);
    }
    if (!named('type')) throw new InvalidInput(`form_inputs[${i}].type is required (a non-empty string).`);
    const key = formInputKey(input as FormInput);
    if (keys.has(key))
      throw new InvalidInput(`form_inputs[${i}]: the key "${key}" is used by another input.`);
    keys.add(key);
    return input as FormInput;
  });
}

function checkLimit(value: unknown, field: string, bounds: { min: number; max: number }): number | null {
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < bounds.min || value > bounds.max) {
    throw new InvalidInput(
      `${field} must be a whole number from ${bounds.min} to ${bounds.max}, or null for the service's default.`,
    );
  }
  return value;
}

const checkMemoryLimit = (value: unknown) =>
  checkLimit(value, 'memory_limit_mb', TEMPLATE_LIMIT_BOUNDS.memoryLimitMb);
const checkTimeout = (value: unknown) =>
  checkLimit(value, 'timeout_seconds', TEMPLATE_LIMIT_BOUNDS.timeoutSeconds);

/**
 * TypeScript is transpiled when published, so a syntax error is the publisher's 400 (naming the
 * line) rather than a failed run, and runs do not transpile again. JavaScript is compiled in the
 * sandbox when it runs: nothing a client sends is ever evaluated on the host.
 */
function compile(body: Record<string, unknown>): void {
  delete body.script_compiled;
  settleEnvironment(body);
  if (body.script_runtime !== 'typescript') return;
  const result = transpileForPublishing(body.script as string);
  if ('error' in result) throw new InvalidInput(`script is not valid TypeScript: ${result.error}`);
  body.script_compiled = result.code;
}

/**
 * A Python template's environment: its requirements' hash names the virtualenv (environment.ts in
 * worker-templates/ builds it in the background). New requirements make the template PENDING until
 * that build ends (SUCCESS or ERROR); unchanged ones keep the status they had. A template without
 * requirements runs on the bare interpreter, and a JavaScript one needs no environment: SUCCESS.
 */
function settleEnvironment(body: Record<string, unknown>): void {
  const requirements = (body.requirements as string[] | undefined) ?? [];
  if (!isPythonRuntime(body.script_runtime)) {
    if (requirements.length > 0) {
      throw new InvalidInput('requirements are for Python templates: set script_runtime to python3.11.');
    }
    body.container_status = 'SUCCESS';
    delete body.environment;
    return;
  }
  if (
    body.script_entry_point !== undefined &&
    !/^[A-Za-z_][A-Za-z0-9_]*$/.test(body.script_entry_point as string)
  ) {
    throw new InvalidInput('script_entry_point of a Python template must be a Python function name.');
  }
  if (requirements.length === 0) {
    body.container_status = 'SUCCESS';
    delete body.environment;
    return;
  }
  const hash = requirementsHash(body.script_runtime, requirements);
  const environment = body.environment as { hash?: string } | undefined;
  if (environment?.hash === hash && body.container_status === 'SUCCESS') return;
  body.container_status = 'PENDING';
  body.environment = { hash, log_tail: null, built_at: null };
}

/** Names a virtualenv: the runtime and the requirements, sorted and normalised (order is not meaning). */
export function requirementsHash(runtime: unknown, requirements: readonly string[]): string {
  const lines = requirements.map((line) => line.replace(/\s+/g, '')).sort();
  return createHash('sha256')
    .update(`${String(runtime)}\n${lines.join('\n')}`)
    .digest('hex');
}

/** Built-in templates belong to the service: an account reads them and changes none. */
async function refuseBuiltin(db: Database, actor: Actor, id: string): Promise<void> {
  if (actor.principal.accountId === SYSTEM_ACCOUNT_ID) return;
  const builtin = await db('entities')
    .where({ account_id: SYSTEM_ACCOUNT_ID, kind: WORKER_TEMPLATE.kind, id })
    .first('name');
  if (builtin) {
    throw new Forbidden(
      `Worker template ${id} (${builtin.name as string}) is built in and read-only: ` +
        'publish a template of your own with its script to change it.',
    );
  }
}

/**
 * A worker template: account-wide, plus the service's built-in ones that every account reads. On
 * update a field left out (or null) keeps its value, except `category`, `memory_limit_mb` and
 * `timeout_seconds`, which null sets back to none (the service's default limits), and tags, which
 * null clears. A JavaScript template's `container_status` is SUCCESS at once; a Python one with
 * requirements is PENDING until its virtualenv is built (see settleEnvironment).
 */
export const WORKER_TEMPLATE = resourceKind({
  kind: 'worker_template',
  entityType: 'WorkerTemplate',
  noun: 'worker template',
  scope: 'account',
  idPrefix: 'workerTemplate',
  idField: 'id',
  hasDate: false,
  listOmit: ['form_inputs', 'script'],
  auditDigest: ['script'],
  sharedAccountId: SYSTEM_ACCOUNT_ID,
  nullClearsTags: true,
  fields: {
    category: { default: () => null, check: checkCategory, nullClears: true },
    visible: { default: () => true, check: checkVisible },
    type: { default: () => 'BASIC', check: checkType },
    script_runtime: { default: () => 'javascript', check: checkRuntime },
    script_entry_point: { default: () => 'main', check: checkEntryPoint },
    // The hosted product's publishing tool sends the source as `script_source`; `script` wins.
    script: {
      from: ['script', 'script_source'],
      check: checkScript,
      required: 'script is required: the source text of the worker, a non-empty string.',
      viewDefault: '',
    },
    form_inputs: { default: () => [], check: checkFormInputs },
    memory_limit_mb: { default: () => null, check: checkMemoryLimit, nullClears: true },
    timeout_seconds: { default: () => null, check: checkTimeout, nullClears: true },
    requirements: { default: () => [], check: checkRequirements },
    container_status: { readOnly: true, default: () => 'SUCCESS' satisfies ContainerStatus },
  },
  // Scripts always run in the service's own sandbox; there is no remote container to run them in.
  extraView: (record) => ({
    run_locally: true,
    builtin: record.accountId === SYSTEM_ACCOUNT_ID,
    ...environmentView(record),
  }),
  finish: compile,
  guard: refuseBuiltin,
});

/** `environment`: the virtualenv's hash, and the tail of its build log (an ERROR says why). */
function environmentView(record: EntityRecord): Record<string, unknown> {
  const environment = record.body.environment as
    { hash: string; log_tail: string | null; built_at: string | null } | undefined;
  if (!environment) return { environment: null };
  return {
    environment: {
      requirements_hash: environment.hash,
      build_log_tail: environment.log_tail,
      built_at: environment.built_at,
    },
  };
}

/** The stored body of a new template, every field checked (the built-in ones are stored so). */
export function newTemplateBody(input: WorkerTemplateInput): Record<string, unknown> {
  const { body } = newBody(WORKER_TEMPLATE, input);
  compile(body);
  return body;
}

/** The runnable parts of a stored template, typed, for the workflow engine. */
export function readWorkerTemplate(record: EntityRecord): WorkerTemplate {
  const view = WORKER_TEMPLATE.view(record);
  return {
    id: record.id,
    name: record.name,
    type: view.type as WorkerTemplateType,
    script: view.script as string,
    scriptRuntime: view.script_runtime as ScriptRuntime,
    scriptEntryPoint: view.script_entry_point as string,
    formInputs: view.form_inputs as FormInput[],
    compiledScript: typeof record.body.script_compiled === 'string' ? record.body.script_compiled : null,
    memoryLimitMb: view.memory_limit_mb as number | null,
    timeoutSeconds: view.timeout_seconds as number | null,
    requirements: (view.requirements as string[] | null) ?? [],
    containerStatus: view.container_status as ContainerStatus,
    environmentHash: (record.body.environment as { hash?: string } | undefined)?.hash ?? null,
  };
}

/** The limits of the sandbox a template's script runs in. */
export interface TemplateSandboxLimits {
  memoryLimitMb?: number;
  timeoutMs?: number;
}

/**
 * A template's limits where it sets them, within the worker process's ceiling; the process's
 * defaults (or the sandbox's own, when those are unset) where it does not.
 */
export function templateSandboxLimits(
  template: Pick<WorkerTemplate, 'memoryLimitMb' | 'timeoutSeconds'>,
  defaults: TemplateSandboxLimits,
  ceiling: Required<TemplateSandboxLimits> = {
    memoryLimitMb: TEMPLATE_LIMIT_BOUNDS.memoryLimitMb.max,
    timeoutMs: TEMPLATE_LIMIT_BOUNDS.timeoutSeconds.max * 1000,
  },
): TemplateSandboxLimits {
  const limits = { ...defaults };
  if (template.memoryLimitMb !== null) {
    limits.memoryLimitMb = Math.min(template.memoryLimitMb, ceiling.memoryLimitMb);
  }
  if (template.timeoutSeconds !== null) {
    limits.timeoutMs = Math.min(template.timeoutSeconds * 1000, ceiling.timeoutMs);
  }
  return limits;
}

/** A template of the account, for running or validating a workflow; another account's is not found. */
export async function loadWorkerTemplate(
  db: Database,
  accountId: string,
  id: string,
): Promise<WorkerTemplate> {
  return readWorkerTemplate(await findEntity(db, accountId, WORKER_TEMPLATE, id));
}
