import type { Actor } from '../audit/audit-trail';
import type { Database } from '../db/database';
import {
  commonView,
  createEntity,
  deleteEntity,
  type EntityKind,
  type EntityRecord,
  findEntity,
  updateEntity,
} from '../entities/entity-store';
import { checkName, NAME_MAX } from '../entities/entity-fields';
import { InvalidInput } from '../errors';

export const WORKER_TEMPLATE_TYPES = [
  'STARTER',
  'BASIC',
  'ENDER',
  'FORKER',
  'BARRIER',
  'CONDITIONAL',
] as const;
export type WorkerTemplateType = (typeof WORKER_TEMPLATE_TYPES)[number];

/** Scripts run in an isolated-vm (V8) sandbox: JavaScript, or TypeScript transpiled to it. */
export const SCRIPT_RUNTIMES = ['javascript', 'typescript'] as const;
export type ScriptRuntime = (typeof SCRIPT_RUNTIMES)[number];

export const CONTAINER_STATUSES = ['PENDING', 'SUCCESS', 'ERROR'] as const;
export type ContainerStatus = (typeof CONTAINER_STATUSES)[number];

/** Scripts are kept whole in the entity row and copied into runs: 1 MiB keeps both cheap. */
export const SCRIPT_MAX_BYTES = 1024 * 1024;
export const FORM_INPUTS_MAX = 100;
const ENTRY_POINT = /^[A-Za-z_$][A-Za-z0-9_$]{0,99}$/;

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
}

export const WORKER_TEMPLATE: EntityKind = {
  kind: 'worker_template',
  entityType: 'WorkerTemplate',
  noun: 'worker template',
  scope: 'account',
  idPrefix: 'workerTemplate',
  idField: 'id',
  hasDate: false,
  listOmit: ['form_inputs', 'script'],
  auditDigest: ['script'],
  view: (record: EntityRecord) => ({
    ...commonView(record),
    category: record.body.category ?? null,
    visible: record.body.visible ?? true,
    type: record.body.type ?? 'BASIC',
    script_runtime: record.body.script_runtime ?? 'javascript',
    script_entry_point: record.body.script_entry_point ?? 'main',
    // Scripts always run in the service's own sandbox; there is no remote container to run them in.
    run_locally: true,
    container_status: record.body.container_status ?? 'SUCCESS',
    form_inputs: record.body.form_inputs ?? [],
    script: record.body.script ?? '',
  }),
};

export interface WorkerTemplateInput {
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
}

/** Python clients send None for every argument left unset: null means "not given" for these fields. */
const given = (value: unknown) => value !== undefined && value !== null;

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

function checkRuntime(value: unknown): ScriptRuntime {
  if (typeof value !== 'string') throw new InvalidInput('script_runtime must be javascript or typescript.');
  if (!(SCRIPT_RUNTIMES as readonly string[]).includes(value)) {
    throw new InvalidInput(
      `script_runtime "${value.slice(0, 40)}" is not supported: scripts run in a JavaScript sandbox, use javascript or typescript.`,
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

function scriptOf(input: WorkerTemplateInput): unknown {
  return given(input.script) ? input.script : input.script_source;
}

export async function createWorkerTemplate(
  db: Database,
  actor: Actor,
  input: WorkerTemplateInput,
): Promise<EntityRecord> {
  checkName(input.name);
  const body = {
    category: input.category === undefined ? null : checkCategory(input.category),
    visible: given(input.visible) ? checkVisible(input.visible) : true,
    type: given(input.type) ? checkType(input.type) : 'BASIC',
    script_runtime: given(input.script_runtime) ? checkRuntime(input.script_runtime) : 'javascript',
    script_entry_point: given(input.script_entry_point) ? checkEntryPoint(input.script_entry_point) : 'main',
    script: checkScript(scriptOf(input)),
    form_inputs: given(input.form_inputs) ? checkFormInputs(input.form_inputs) : [],
    // Publishing builds nothing (scripts are compiled in the sandbox at run time): ready at once.
    container_status: 'SUCCESS' satisfies ContainerStatus,
  };
  return createEntity(db, actor, WORKER_TEMPLATE, {
    name: input.name,
    description: input.description,
    tags: input.tags,
    body,
  });
}

/** Every field is optional; what is left out (or null, except `category`) keeps its stored value. */
export async function updateWorkerTemplate(
  db: Database,
  actor: Actor,
  id: string,
  input: WorkerTemplateInput,
): Promise<EntityRecord> {
  return updateEntity(db, actor, WORKER_TEMPLATE, id, undefined, (current) => {
    const body = { ...current.body };
    if (input.category !== undefined) body.category = checkCategory(input.category);
    if (given(input.visible)) body.visible = checkVisible(input.visible);
    if (given(input.type)) body.type = checkType(input.type);
    if (given(input.script_runtime)) body.script_runtime = checkRuntime(input.script_runtime);
    if (given(input.script_entry_point)) body.script_entry_point = checkEntryPoint(input.script_entry_point);
    const script = scriptOf(input);
    if (given(script)) body.script = checkScript(script);
    if (given(input.form_inputs)) body.form_inputs = checkFormInputs(input.form_inputs);
    return {
      name: given(input.name) ? input.name : undefined,
      description: input.description,
      tags: input.tags,
      body,
    };
  });
}

export async function deleteWorkerTemplate(db: Database, actor: Actor, id: string) {
  const record = await deleteEntity(db, actor, WORKER_TEMPLATE, id);
  return { deleted: true, id: record.id, name: record.name };
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
  };
}

/** A template of the account, for running or validating a workflow; another account's is not found. */
export async function loadWorkerTemplate(
  db: Database,
  accountId: string,
  id: string,
): Promise<WorkerTemplate> {
  return readWorkerTemplate(await findEntity(db, accountId, WORKER_TEMPLATE, id));
}
