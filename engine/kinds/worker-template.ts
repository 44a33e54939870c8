import { createHash } from 'node:crypto';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { type TSchema, Type } from '@sinclair/typebox';
import { type EntityRecord, findEntity } from '../store/entity-store';
import { NAME_MAX } from '../store/entity-fields';
import { Name, NON_BLANK_TEXT, Nullable, StorableText, StoredObject } from '../store/field-schemas';
import { newBody, resourceKind, validateRequest } from '../store/resource-kind';
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
/**
 * A template allowed at most this many seconds runs its steps as Temporal local activities
 * (engine/workflows/local-steps.ts).
 */
export const LOCAL_STEP_MAX_SECONDS = 10;
const ENTRY_POINT = '^[A-Za-z_$][A-Za-z0-9_$]{0,99}$';
export const WORKER_TEMPLATE_ID_PREFIX = 'wtpl_';
const SCRIPT_REQUIRED = 'script is required: the source text of the worker, a non-empty string.';

/**
 * Bounds of a template's own sandbox limits. Runs are Temporal activities with a 15-minute
 * start-to-close timeout, so a script gets at most 10 minutes; up to 8 scripts run at once on a
 * worker, so 1 GiB each is already a lot of the host's memory.
 */
export const TEMPLATE_LIMIT_BOUNDS = {
  memoryLimitMb: { min: 16, max: 1024 },
  timeoutSeconds: { min: 1, max: 600 },
} as const;

const OrNull = <T extends TSchema>(schema: T, options: object = {}) =>
  Type.Union([schema, Type.Null()], options);
const { memoryLimitMb, timeoutSeconds } = TEMPLATE_LIMIT_BOUNDS;
/** A template's own sandbox limit: a whole number within its bounds, or null for the service's default. */
const SandboxLimit = (bounds: { min: number; max: number }, description: string) =>
  Type.Optional(
    OrNull(Type.Integer({ minimum: bounds.min, maximum: bounds.max }), {
      'x-rule': `a whole number from ${bounds.min} to ${bounds.max}, or null for the service's default`,
      description,
    }),
  );
const Script = Type.String({
  minLength: 1,
  pattern: `^${NON_BLANK_TEXT}$`,
  'x-rule': 'the source text of the worker, a non-empty string',
  description: `Source text, non-empty, at most ${SCRIPT_MAX_BYTES} bytes; compiled in the sandbox when it runs.`,
});
const FormInputView = Type.Object(
  {
    id: Type.Optional(Type.String()),
    name: Type.Optional(Type.String()),
    type: Type.String(),
  },
  {
    $id: 'FormInput',
    title: 'FormInput',
    additionalProperties: true,
    description:
      'One input of the template form: an id (or a name) that keys script_inputs of a worker, a type, ' +
      'and any further form settings, kept as published.',
  },
);

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

/**
 * Requirement specifiers, trimmed, in the order given. The schema states each one's form; left
 * here: a package listed twice, which no JSON Schema states.
 */
export function normaliseRequirements(value: unknown): string[] {
  const names = new Set<string>();
  return (value as string[]).map((item, i) => {
    const text = item.trim();
    const name = /^[A-Za-z0-9._-]+/
      .exec(text)![0]
      .toLowerCase()
      .replace(/[._-]+/g, '-');
    if (names.has(name)) throw new InvalidInput(`requirements[${i}]: ${name} is listed twice.`);
    names.add(name);
    return text;
  });
}

/** What the schema cannot count: the script's size in bytes (its maxLength would count characters). */
function checkScriptBytes(value: unknown): string {
  if (Buffer.byteLength(value as string, 'utf8') > SCRIPT_MAX_BYTES) {
    throw new InvalidInput(`script must be at most ${SCRIPT_MAX_BYTES} bytes.`);
  }
  return value as string;
}

/** The key a worker's `script_inputs` use for this input: its `id`, or its `name` when it has no id. */
export function formInputKey(input: FormInput): string {
  return typeof input.id === 'string' && input.id ? input.id : (input.name as string);
}

/**
 * Form inputs are the hosted product's form descriptions (labels, variants, nested fields…), kept
 * as sent; the schema states what each must hold (an id or a name, a type). Left here: a key used
 * by two inputs, which no JSON Schema states.
 */
function checkFormInputKeys(value: unknown): FormInput[] {
  const keys = new Set<string>();
  return (value as FormInput[]).map((input, i) => {
    const key = formInputKey(input);
    if (keys.has(key))
      throw new InvalidInput(`form_inputs[${i}]: the key "${key}" is used by another input.`);
    keys.add(key);
    return input;
  });
}

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
  plural: 'worker_templates',
  scope: 'account',
  idPrefix: WORKER_TEMPLATE_ID_PREFIX,
  idField: 'id',
  hasDate: false,
  listOmit: ['form_inputs', 'script'],
  auditDigest: ['script'],
  sharedAccountId: SYSTEM_ACCOUNT_ID,
  nullClearsTags: true,
  // Python clients send None for every argument left unset: null means "not given" here.
  fields: {
    category: {
      schema: Type.Optional(OrNull(StorableText({ maxLength: NAME_MAX }), { description: 'Default null.' })),
      view: Nullable(Type.String()),
      default: () => null,
      nullClears: true,
    },
    visible: {
      schema: Type.Optional(OrNull(Type.Boolean(), { description: 'Default true.' })),
      view: Type.Boolean(),
      default: () => true,
    },
    type: {
      schema: Type.Optional(
        OrNull(Type.Union(WORKER_TEMPLATE_TYPES.map((t) => Type.Literal(t))), {
          'x-rule': `one of ${WORKER_TEMPLATE_TYPES.join(', ')}`,
          description: 'STARTER, BASIC (default), ENDER, FORKER, BARRIER or CONDITIONAL.',
        }),
      ),
      view: Type.Union(WORKER_TEMPLATE_TYPES.map((t) => Type.Literal(t))),
      default: () => 'BASIC',
    },
    script_runtime: {
      schema: Type.Optional(
        OrNull(Type.Union(SCRIPT_RUNTIMES.map((t) => Type.Literal(t))), {
          'x-rule': `one of the accepted runtimes: ${SCRIPT_RUNTIMES.join(', ')}`,
          description:
            'javascript (default), typescript or python3.11; any other runtime (another Python version too) ' +
            'is refused. TypeScript is transpiled when published: a syntax error is a 400 naming the line. ' +
            "python3.11 runs the script with Debian's interpreter in a bubblewrap sandbox (docs/workflows.md).",
        }),
      ),
      view: Type.Union(SCRIPT_RUNTIMES.map((t) => Type.Literal(t))),
      default: () => 'javascript',
    },
    script_entry_point: {
      schema: Type.Optional(
        OrNull(
          Type.String({
            pattern: ENTRY_POINT,
            'x-rule': 'a function name (letters, digits, _ or $)',
          }),
          { description: 'Function name, default main.' },
        ),
      ),
      view: Type.String(),
      default: () => 'main',
    },
    // The hosted product's publishing tool sends the source as `script_source`; `script` wins.
    script: {
      from: ['script', 'script_source'],
      schema: Type.Optional(OrNull(Script)),
      aliases: {
        script_source: Type.Optional(
          OrNull(Script, { description: 'Accepted in place of script; script wins.' }),
        ),
      },
      view: Type.String({ description: 'The source text. Only on retrieve.' }),
      normalise: checkScriptBytes,
      required: SCRIPT_REQUIRED,
      viewDefault: '',
    },
    form_inputs: {
      schema: Type.Optional(
        OrNull(
          Type.Array(
            StoredObject(
              // Declared, so its own schema: the other keys' (StorableJson) does not reach it.
              { type: StorableText({ minLength: 1 }) },
              {
                description: 'An input: id (or name) and type, and any further settings, kept as sent.',
                // Not `properties`: a non-string id beside a good name is still an input with a key.
                anyOf: [
                  { required: ['id'], properties: { id: { type: 'string', minLength: 1 } } },
                  { required: ['name'], properties: { name: { type: 'string', minLength: 1 } } },
                ],
                'x-message': '{field} needs an id or a name (a non-empty string).',
              },
            ),
            { maxItems: FORM_INPUTS_MAX },
          ),
          {
            description: `Up to ${FORM_INPUTS_MAX} objects, each with a unique id (or name) and a type. Default [].`,
          },
        ),
      ),
      view: Type.Array(Type.Ref('FormInput'), { description: 'Only on retrieve.' }),
      default: () => [],
      normalise: checkFormInputKeys,
    },
    memory_limit_mb: {
      schema: SandboxLimit(
        memoryLimitMb,
        `Extension: whole MB from ${memoryLimitMb.min} to ${memoryLimitMb.max}, ` +
          'the sandbox memory limit of this template; null or left out: the service default (128 MB unless ' +
          'configured). The worker process may cap it lower.',
      ),
      view: Nullable(Type.Integer(), {
        description:
          'Extension: the memory limit of the sandbox the script runs in, in MB; null: the service default.',
      }),
      default: () => null,
      nullClears: true,
    },
    timeout_seconds: {
      schema: SandboxLimit(
        timeoutSeconds,
        `Extension: whole seconds from ${timeoutSeconds.min} to ${timeoutSeconds.max}, ` +
          'the time one run of the script may take (a run past it ends ERROR); null or left out: the service ' +
          `default (30 s unless configured). A template allowed at most ${LOCAL_STEP_MAX_SECONDS} s runs its ` +
          'steps as Temporal local activities, inside the workflow task; one allowed longer (or the default) ' +
          'as regular activities with heartbeats.',
      ),
      view: Nullable(Type.Integer(), {
        description:
          'Extension: the time limit of one run of the script, in seconds; null: the service default.',
      }),
      default: () => null,
      nullClears: true,
    },
    requirements: {
      schema: Type.Optional(
        OrNull(
          Type.Array(
            Type.String({
              minLength: 1,
              maxLength: REQUIREMENT_MAX,
              pattern: REQUIREMENT.source,
              'x-rule': 'a requirement specifier such as numpy==2.2.6 (no URLs, paths, options or markers)',
            }),
            { maxItems: REQUIREMENTS_MAX },
          ),
          {
            description:
              'Extension, Python templates only: requirement specifiers such as "numpy==2.2.6" (pins ' +
              'recommended; no URLs, paths or options), installed from the package index as wheels into the ' +
              "template's own virtualenv. Publishing sets container_status PENDING until it is built. Default [].",
          },
        ),
      ),
      view: Type.Array(Type.String(), {
        description: 'Extension: the requirement specifiers of a Python template (empty for JavaScript).',
      }),
      default: () => [],
      normalise: normaliseRequirements,
    },
    container_status: {
      readOnly: true,
      default: () => 'SUCCESS' satisfies ContainerStatus,
      view: Type.Union(
        CONTAINER_STATUSES.map((t) => Type.Literal(t)),
        {
          description:
            'SUCCESS: the template can run. A Python template with requirements is PENDING while its ' +
            'virtualenv is built in the background, then SUCCESS, or ERROR (environment.build_log_tail says ' +
            'why); a step of a template that is not SUCCESS fails. JavaScript templates are SUCCESS at once.',
        },
      ),
    },
  },
  // Scripts always run in the service's own sandbox; there is no remote container to run them in.
  extraView: (record) => ({
    run_locally: true,
    builtin: record.accountId === SYSTEM_ACCOUNT_ID,
    ...environmentView(record),
  }),
  finish: compile,
  guard: refuseBuiltin,
  http: {
    schemas: [FormInputView],
    extraViewSchema: {
      run_locally: Type.Boolean({ description: 'Always true: scripts run in the sandbox of the service.' }),
      builtin: Type.Boolean({
        description:
          'Extension: true for the templates the service ships (visible to every account, read-only, with ' +
          'the same id in every installation).',
      }),
      environment: Nullable(
        Type.Object(
          {
            requirements_hash: Type.String({
              description: 'Names the virtualenv: templates with the same requirements share one.',
            }),
            build_log_tail: Nullable(
              Type.String({ description: "The end of the build's log (pip's output and pip freeze)." }),
            ),
            built_at: Nullable(Type.String()),
          },
          {
            description:
              'Extension: the Python virtualenv of a template with requirements; null for the others.',
          },
        ),
      ),
    },
    // The script is required on create, as `script` or `script_source`.
    createOptions: {
      'x-message': SCRIPT_REQUIRED,
      anyOf: [
        { required: ['script'], properties: { script: { type: 'string' } } },
        { required: ['script_source'], properties: { script_source: { type: 'string' } } },
      ],
    },
    updateFields: { name: OrNull(Name) },
    operations: {
      create: {
        summary: 'Publish a worker template (extension)',
        description:
          'Extension: the interface has worker templates read-only; the publishing tools of the hosted product ' +
          'create them here. Unknown keys (icon, ports, form_outputs, …) are ignored.',
      },
      list: {
        summary: 'List worker templates (without form_inputs and script), most recent first',
        description: "The account's own templates and the service's built-in ones (builtin: true).",
      },
      retrieve: { summary: 'Retrieve a worker template, with form_inputs and script' },
      update: {
        summary: 'Republish a worker template (extension)',
        description:
          'Extension: every field optional; fields left out (or null) keep their values (a null ' +
          'memory_limit_mb or timeout_seconds returns to the default). The version increases. Built-in ' +
          'templates are read-only: 403.',
        errors: [403],
      },
      delete: {
        summary: 'Delete a worker template (extension)',
        description:
          'Extension: the interface has worker templates read-only. Built-in templates cannot be deleted: 403.',
        errors: [403],
      },
    },
  },
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
  validateRequest(WORKER_TEMPLATE, 'create', input);
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
