/** The schemas of the workflow routes (api/routes/workflows.ts) and of their runs (workflow-executions.ts). */
import { type TSchema, Type } from '@sinclair/typebox';
import { ID_PREFIXES } from '../../engine/platform/ids';
import { WORKER_TEMPLATE_ID_PREFIX } from '../../engine/kinds/worker-template';
import { TRIGGER_TYPES } from '../../engine/workflows/workflow-store';
import type { WorkerNodeRequest } from '../../engine/workflows/workflow-definition';
import {
  Description,
  IdParams,
  Name,
  NON_BLANK_TEXT,
  StoredObject,
  Tags,
  WorkspaceParam,
} from '../../engine/store/field-schemas';
import { Timestamp } from './common';
import { Nullable } from './entity-lists';

export const NullableNumber = Nullable(Type.Number());
/** Null first: with type coercion on, a null tried against a string first would become "". */
export const OrNull = <T extends TSchema>(schema: T, options: object = {}) =>
  Type.Union([Type.Null(), schema], options);
export const WorkerId = Type.String({ description: 'wrkr_ plus 25 letters or digits.' });
/** A worker's own id (an edge naming anything else is an unknown worker, a rule of the graph). */
const NodeId = Type.String({
  pattern: `^${ID_PREFIXES.worker}[A-Za-z0-9]{25}$`,
  'x-rule': `${ID_PREFIXES.worker} plus 25 letters or digits`,
  description: 'wrkr_ plus 25 letters or digits, unique in the workflow.',
});
/** A template id; empty, like null, means none (some clients and type coercion spell "none" so). */
const TemplateId = Type.Union(
  [Type.Null(), Type.Literal(''), Type.String({ pattern: `^${WORKER_TEMPLATE_ID_PREFIX}[A-Za-z0-9]{25}$` })],
  {
    'x-rule': 'a worker template id (wtpl_…)',
    description: 'A worker template of the account (wtpl_…); or give script.',
  },
);
/** Inline source: not only spaces; empty, like null, means none. */
const InlineScript = Type.Union([Type.Null(), Type.String({ pattern: `^(?:${NON_BLANK_TEXT})?$` })], {
  'x-rule': 'JavaScript source defining main(args)',
  description:
    'Inline JavaScript defining main(args), at most 65536 bytes; or give template_id. args holds script_inputs (for the ' +
    'STARTER overlaid with the run parameters), inputs (the previous result: null for the STARTER, one ' +
    'item inside a FORKER branch, the ordered branch results for a BARRIER), inputs_info ({joined, ' +
    'sources}), parameters, parallel_info ({index, length}; -1 outside a branch), worker_type, ' +
    'worker_id, worker_execution_id, workflow_id, workflow_execution_id and workspace. What main ' +
    'returns is the worker execution result.',
});
export const Edge = Type.Union([Type.Array(WorkerId), WorkerId], {
  description: 'A list of worker ids (a bare id is accepted too).',
});

export const WorkerNode = Type.Object(
  {
    id: NodeId,
    name: Name,
    type: Type.Union(
      ['STARTER', 'BASIC', 'ENDER', 'FORKER', 'BARRIER', 'CONDITIONAL'].map((t) => Type.Literal(t)),
      {
        description:
          'STARTER (one; its script inputs are overlaid with the run parameters), BASIC, ENDER (the result), ' +
          'FORKER (its result — a list, or {items: [...]} — fans out into parallel branches), ' +
          "BARRIER (joins the FORKER's branches; input is the ordered list of branch results), " +
          'CONDITIONAL (its script returns a boolean, or {condition}, choosing next_true or next_false).',
      },
    ),
    template_id: Type.Optional(TemplateId),
    script: Type.Optional(InlineScript),
    script_runtime: Type.Optional(
      Type.Union([Type.Null(), Type.Literal('javascript'), Type.Literal('python3.11')], {
        'x-rule': 'javascript or python3.11',
        description:
          "Extension: the inline script's language, javascript (default) or python3.11 (Python's main(args) " +
          'gets the same args and runs in the bubblewrap sandbox, without requirements).',
      }),
    ),
    script_inputs: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: "Must fit the template's form_inputs." }),
    ),
    next: Type.Optional(Edge),
    next_true: Type.Optional(Edge),
    next_false: Type.Optional(Edge),
  },
  { $id: 'WorkflowWorker', title: 'WorkflowWorker' },
);
/**
 * A worker as a request gives it: its script inputs are stored as sent, so without NUL characters
 * (a recursive rule, which the reply's serializer has no use for).
 */
export const WorkerNodeInput = Type.Object(
  {
    ...WorkerNode.properties,
    script_inputs: Type.Optional(StoredObject({}, { description: "Must fit the template's form_inputs." })),
  },
  { $id: 'WorkflowWorkerInput', title: 'WorkflowWorkerInput' },
);

export const Gui = Type.Object({ offset_x: Type.Number(), offset_y: Type.Number(), zoom: Type.Number() });

export const workflowProperties = {
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  status: Type.String(),
  trigger_type: Type.String({ description: 'MANUAL, API, TIME_BASED or FILE_RECEIVED.' }),
  trigger_config: Type.Record(Type.String(), Type.Unknown()),
  trigger_enabled: Type.Boolean(),
  starter_worker_id: Nullable(Type.String()),
  gui: Gui,
  on_failure: Nullable(
    Type.Union([
      Type.Object({ integration: Type.String(), to: Type.Optional(Type.Array(Type.String())) }),
      Type.Object({ workflow_id: Type.String() }),
    ]),
    { description: 'Where an alert goes when a run ends FAILED (extension); null: nowhere.' },
  ),
  workers: Type.Array(Type.Ref('WorkflowWorker')),
  workspace: Type.String(),
  created: Timestamp,
  updated: Timestamp,
  version: Type.String(),
};
export const Workflow = Type.Object(workflowProperties, { $id: 'Workflow', title: 'Workflow' });

// Python clients send None for fields left unset: null means "not given". Left to the engine: the graph
// rules (one STARTER, paths to an ENDER, no cycle, forks joined), templates, cron and time zone.
export const workflowFields = {
  name: Name,
  description: Type.Optional(OrNull(Description)),
  tags: Type.Optional(Tags),
  trigger_type: Type.Optional(
    Type.Union([...TRIGGER_TYPES.map((t) => Type.Literal(t)), Type.Null()], {
      'x-rule': `one of ${TRIGGER_TYPES.join(', ')}`,
      description: 'MANUAL (default), API, TIME_BASED, FILE_RECEIVED.',
    }),
  ),
  trigger_config: Type.Optional(
    OrNull(StoredObject(), {
      description:
        'Object: what activates the trigger. Default {}. TIME_BASED: {cron, timezone}, a 5-field cron expression ' +
        '(minute hour day-of-month month day-of-week, e.g. "0 7 * * 1-5") and an IANA time zone (default "UTC"); ' +
        'the workflow then has a Temporal Schedule (id schedule-<workflow id>, overlap policy SKIP), paused while ' +
        'trigger_enabled is false.',
    }),
  ),
  trigger_enabled: Type.Optional(OrNull(Type.Boolean(), { description: 'Default false.' })),
  gui: Type.Optional(
    OrNull(
      Type.Object({
        offset_x: Type.Optional(OrNull(Type.Number())),
        offset_y: Type.Optional(OrNull(Type.Number())),
        zoom: Type.Optional(OrNull(Type.Number())),
      }),
      { description: '{offset_x, offset_y, zoom}, numbers.' },
    ),
  ),
  on_failure: Type.Optional(
    OrNull(
      Type.Union([
        Type.Object(
          {
            integration: Type.String({
              minLength: 1,
              maxLength: 200,
              description: 'An HTTP or SMTP integration of the account, by id or name.',
            }),
            to: Type.Optional(
              Type.Array(Type.String({ minLength: 3, maxLength: 320 }), {
                minItems: 1,
                maxItems: 50,
                description: 'SMTP: the addresses alerted (required there; not for HTTP).',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        Type.Object(
          {
            workflow_id: Type.String({
              pattern: '^wrkf_[A-Za-z0-9]{25}$',
              'x-rule': 'a workflow id (wrkf_ and 25 letters or digits)',
              description: 'A handler workflow of the same workspace.',
            }),
          },
          { additionalProperties: false },
        ),
      ]),
      {
        description:
          'Extension: where an alert goes once when a run ends FAILED: {integration, to?} (an HTTP integration gets a chat-style JSON message, an SMTP one an e-mail to `to`) or {workflow_id} (a handler run with the alert as its parameters). null clears it.',
      },
    ),
  ),
  // The engine takes each worker typed as this schema accepts it (WorkerNodeRequest), unchecked.
  workers: Type.Array(Type.Unsafe<WorkerNodeRequest>(Type.Ref('WorkflowWorkerInput')), {
    description:
      'Replaces the whole graph on update. Exactly one STARTER, every path ending at an ENDER, ' +
      'no cycle, each FORKER joined by one BARRIER downstream (forks do not nest).',
  }),
  workspace: WorkspaceParam,
};
export const WorkflowCreate = Type.Object(workflowFields, { description: 'name and workers are required.' });
export const WorkflowUpdate = Type.Partial(
  Type.Object({ ...workflowFields, name: OrNull(Name), workers: OrNull(workflowFields.workers) }),
  { description: 'Every field optional; null keeps the stored value.' },
);

export const WorkflowExecution = Type.Object(
  {
    id: Type.String(),
    run_status: Type.String({
      description:
        'RUNNING, then SUCCEEDED (the ENDER completed) or FAILED (a worker failed for good). Unlike the ' +
        'interface, which lets a failed run stay RUNNING, every run ends.',
    }),
    status: Type.String({ description: 'Deprecated: OK while running, COMPLETED once ended.' }),
    workflow_id: Type.String(),
    workflow_name: Type.String(),
    trigger: Type.String(),
    workspace: Type.String(),
    started_worker_id: Nullable(Type.String()),
    ender_worker_id: Nullable(
      Type.String({ description: 'Null until known when CONDITIONALs pick among ENDERs.' }),
    ),
    ender_worker_execution_id: Nullable(Type.String()),
    created: Timestamp,
    updated: Timestamp,
    started: Nullable(Timestamp),
    ended: Nullable(Timestamp),
    duration: NullableNumber,
    real_execution_time: Nullable(Type.Number({ description: 'CPU seconds of all scripts.' })),
    total_execution_time: Nullable(Type.Number({ description: 'Sum of the worker executions’ seconds.' })),
    resume: Nullable(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          'With with_resume=True, once ended: worker_executions {total, completed, error, running}, workers ' +
          '[{worker_id, worker_name, worker_type, executions, completed, error, duration, cpu_time}], ' +
          'parallel_index_max, failure {worker_id, parallel_index, worker_execution_id, message} or null, ender_result_bytes.',
      }),
    ),
    retry_of: Nullable(
      Type.String({
        description:
          'Extension: the FAILED execution this one re-runs from its failed step (POST …/retry); null for a ' +
          'plain run.',
      }),
    ),
    version: Type.String(),
  },
  { $id: 'WorkflowExecution', title: 'WorkflowExecution' },
);

export const WorkerExecution = Type.Object(
  {
    id: Type.String(),
    status: Type.String({ description: 'RUNNING, COMPLETED or ERROR.' }),
    worker_id: Type.String(),
    worker_name: Type.String(),
    worker_type: Type.String(),
    workflow_execution_id: Type.String(),
    workflow_id: Type.String(),
    workflow_name: Type.String(),
    trigger: Type.String(),
    parallel_index: Type.Integer({ description: 'Branch of a FORKER; -1 when not parallel.' }),
    created: Timestamp,
    updated: Timestamp,
    started: Nullable(Timestamp),
    ended: Nullable(Timestamp),
    duration: NullableNumber,
    cpu_time: NullableNumber,
    result: Type.Optional(Type.Unknown()),
    input_params: Nullable(Type.Record(Type.String(), Type.Unknown())),
    error_message: Nullable(Type.String()),
    logs: Type.Optional(
      Type.Array(
        Type.Object({
          level: Type.String(),
          message: Type.String(),
          at: Type.Number(),
          source: Type.Optional(
            Type.Literal('egress', {
              description:
                'Set on the worker’s own line for each outbound call (sdk.request, sdk.sendEmail).',
            }),
          ),
        }),
        { description: 'The script’s console lines (with the result), and one line per outbound call.' },
      ),
    ),
    reused_from: Nullable(
      Type.String({
        description:
          'Extension, in a retry: the failed execution’s worker execution whose outcome this step reuses ' +
          '(its script was not run again; times are those of the original). Null for a step that ran.',
      }),
    ),
    version: Type.String(),
  },
  { $id: 'WorkerExecution', title: 'WorkerExecution' },
);

export const GroupedWorkerExecutions = Type.Object(
  {
    worker_executions: Type.Array(
      Type.Object({
        worker_id: Type.String(),
        worker_name: Type.String(),
        is_parallel_execution: Type.Boolean(),
        execution: Type.Object({
          id: Type.String(),
          worker_id: Type.String(),
          worker_name: Type.String(),
          worker_type: Type.String(),
          status: Type.String(),
          created: Timestamp,
          started: Nullable(Timestamp),
          ended: Nullable(Timestamp),
          duration: NullableNumber,
          parallel_index: Type.Integer(),
          result: Type.Optional(Type.Unknown()),
        }),
      }),
    ),
    parallel_index_max: Type.Integer({ description: 'Highest parallel_index of the run; -1 without forks.' }),
  },
  { $id: 'GroupedWorkerExecutions', title: 'GroupedWorkerExecutions' },
);

export const IdParam = IdParams('workflow');
export const WorkspaceQuery = Type.Object({ workspace: WorkspaceParam });
export const WorkflowReply = Type.Object({ workflow: Type.Ref('Workflow') });
