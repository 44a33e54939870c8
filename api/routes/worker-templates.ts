import { type TSchema, Type } from '@sinclair/typebox';
import { LOCAL_STEP_MAX_SECONDS } from '../../engine/workflows/local-steps';
import {
  FORM_INPUTS_MAX,
  REQUIREMENT,
  REQUIREMENT_MAX,
  REQUIREMENTS_MAX,
  SCRIPT_MAX_BYTES,
  SCRIPT_RUNTIMES,
  TEMPLATE_LIMIT_BOUNDS,
  WORKER_TEMPLATE,
  WORKER_TEMPLATE_TYPES,
} from '../../engine/kinds/worker-template';
import { resourceRoutes } from '../http/resource-routes';
import { Name, NON_BLANK_TEXT, StoredObject } from '../schemas/fields';
import { Nullable } from '../schemas/entity-lists';

const FormInput = Type.Object(
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

const properties = {
  id: Type.String({ description: 'Prefix wtpl_.' }),
  category: Nullable(Type.String()),
  visible: Type.Boolean(),
  type: Type.Union(
    ['STARTER', 'BASIC', 'ENDER', 'FORKER', 'BARRIER', 'CONDITIONAL'].map((t) => Type.Literal(t)),
  ),
  script_runtime: Type.Union(SCRIPT_RUNTIMES.map((runtime) => Type.Literal(runtime))),
  script_entry_point: Type.String(),
  run_locally: Type.Boolean({ description: 'Always true: scripts run in the sandbox of the service.' }),
  container_status: Type.Union([Type.Literal('PENDING'), Type.Literal('SUCCESS'), Type.Literal('ERROR')], {
    description:
      'SUCCESS: the template can run. A Python template with requirements is PENDING while its ' +
      'virtualenv is built in the background, then SUCCESS, or ERROR (environment.build_log_tail says ' +
      'why); a step of a template that is not SUCCESS fails. JavaScript templates are SUCCESS at once.',
  }),
  requirements: Type.Array(Type.String(), {
    description: 'Extension: the requirement specifiers of a Python template (empty for JavaScript).',
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
        description: 'Extension: the Python virtualenv of a template with requirements; null for the others.',
      },
    ),
  ),
  memory_limit_mb: Nullable(
    Type.Integer({
      description:
        'Extension: the memory limit of the sandbox the script runs in, in MB; null: the service default.',
    }),
  ),
  timeout_seconds: Nullable(
    Type.Integer({
      description:
        'Extension: the time limit of one run of the script, in seconds; null: the service default.',
    }),
  ),
  builtin: Type.Boolean({
    description:
      'Extension: true for the templates the service ships (visible to every account, read-only, with ' +
      'the same id in every installation).',
  }),
  form_inputs: Type.Array(Type.Ref('FormInput'), { description: 'Only on retrieve.' }),
  script: Type.String({ description: 'The source text. Only on retrieve.' }),
};

// Python clients send None for every argument left unset: null means "not given" here. Left to the
// engine: the script's size in bytes, TypeScript that does not compile, distinct form input keys.
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
const fields = {
  category: Type.Optional(OrNull(Type.String({ maxLength: 200 }), { description: 'Default null.' })),
  visible: Type.Optional(OrNull(Type.Boolean(), { description: 'Default true.' })),
  type: Type.Optional(
    OrNull(Type.Union(WORKER_TEMPLATE_TYPES.map((t) => Type.Literal(t))), {
      'x-rule': `one of ${WORKER_TEMPLATE_TYPES.join(', ')}`,
      description: 'STARTER, BASIC (default), ENDER, FORKER, BARRIER or CONDITIONAL.',
    }),
  ),
  script_runtime: Type.Optional(
    OrNull(Type.Union(SCRIPT_RUNTIMES.map((runtime) => Type.Literal(runtime))), {
      'x-rule': `one of the accepted runtimes: ${SCRIPT_RUNTIMES.join(', ')}`,
      description:
        'javascript (default), typescript or python3.11; any other runtime (another Python version too) ' +
        'is refused. TypeScript is transpiled when published: a syntax error is a 400 naming the line. ' +
        "python3.11 runs the script with Debian's interpreter in a bubblewrap sandbox (docs/workflows.md).",
    }),
  ),
  requirements: Type.Optional(
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
  script_entry_point: Type.Optional(
    OrNull(
      Type.String({
        pattern: '^[A-Za-z_$][A-Za-z0-9_$]{0,99}$',
        'x-rule': 'a function name (letters, digits, _ or $)',
      }),
      { description: 'Function name, default main.' },
    ),
  ),
  script: Type.Optional(OrNull(Script)),
  script_source: Type.Optional(OrNull(Script, { description: 'Accepted in place of script; script wins.' })),
  memory_limit_mb: SandboxLimit(
    memoryLimitMb,
    `Extension: whole MB from ${memoryLimitMb.min} to ${memoryLimitMb.max}, ` +
      'the sandbox memory limit of this template; null or left out: the service default (128 MB unless ' +
      'configured). The worker process may cap it lower.',
  ),
  timeout_seconds: SandboxLimit(
    timeoutSeconds,
    `Extension: whole seconds from ${timeoutSeconds.min} to ${timeoutSeconds.max}, ` +
      'the time one run of the script may take (a run past it ends ERROR); null or left out: the service ' +
      `default (30 s unless configured). A template allowed at most ${LOCAL_STEP_MAX_SECONDS} s runs its ` +
      'steps as Temporal local activities, inside the workflow task; one allowed longer (or the default) ' +
      'as regular activities with heartbeats.',
  ),
  form_inputs: Type.Optional(
    OrNull(
      Type.Array(
        StoredObject(
          { type: Type.String({ minLength: 1 }) },
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
};
/** Worker templates (publishing is an extension): the account's own and the service's built-in ones. */
export default resourceRoutes({
  kind: WORKER_TEMPLATE,
  path: '/worker_templates',
  key: 'worker_template',
  plural: 'worker_templates',
  tag: 'Worker templates',
  title: 'WorkerTemplate',
  schemas: [FormInput],
  properties,
  fields,
  // The script is required on create, as `script` or `script_source`.
  createOptions: {
    'x-message': 'script is required: the source text of the worker, a non-empty string.',
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
});
