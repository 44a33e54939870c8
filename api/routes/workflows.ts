import type { Actor } from '../../engine/audit/audit-trail';
import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/db/database';
import { InvalidInput } from '../../engine/errors';
import { listEntities, viewEntity } from '../../engine/entities/entity-store';
import {
  groupedWorkerExecutions,
  listWorkflowExecutions,
  workerExecutionOf,
  workflowExecutionOf,
} from '../../engine/workflows/execution-queries';
import { workerExecutionView, workflowExecutionView } from '../../engine/workflows/execution-records';
import {
  RETRY_BATCH_MAX,
  retryExecution,
  retryFailedExecutions,
} from '../../engine/workflows/execution-retries';
import { startRunEndWaiter } from '../../engine/workflows/run-end-waiter';
import { runWorkflow, type WorkflowRunner } from '../../engine/workflows/workflow-runner';
import {
  createWorkflowWithSchedule,
  deleteWorkflowWithSchedule,
  updateWorkflowWithSchedule,
} from '../../engine/workflows/workflow-schedules';
import { TRIGGER_TYPES, WORKFLOW, workflowView } from '../../engine/workflows/workflow-store';
import {
  Description,
  EntityId,
  IdParams,
  Name,
  NON_BLANK_TEXT,
  PeriodBound,
  StoredObject,
  Tags,
  WorkspaceParam,
} from '../schemas/fields';
import { ID_PREFIXES } from '../../engine/ids';
import { errorResponses, Timestamp } from '../schemas/common';
import {
  listQuerystring,
  listReply,
  listRequest,
  LooseBoolean,
  looseBoolean,
  Nullable,
} from '../schemas/entity-lists';

const NullableNumber = Nullable(Type.Number());
/** Null first: with type coercion on, a null tried against a string first would become "". */
const OrNull = <T extends TSchema>(schema: T, options: object = {}) =>
  Type.Union([Type.Null(), schema], options);
const WorkerId = Type.String({ description: 'wrkr_ plus 25 letters or digits.' });
/** A worker's own id (an edge naming anything else is an unknown worker, a rule of the graph). */
const NodeId = Type.String({
  pattern: `^${ID_PREFIXES.worker}[A-Za-z0-9]{25}$`,
  'x-rule': `${ID_PREFIXES.worker} plus 25 letters or digits`,
  description: 'wrkr_ plus 25 letters or digits, unique in the workflow.',
});
/** A template id; empty, like null, means none (some clients and type coercion spell "none" so). */
const TemplateId = Type.Union(
  [Type.Null(), Type.Literal(''), Type.String({ pattern: `^${ID_PREFIXES.workerTemplate}[A-Za-z0-9]{25}$` })],
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
const Edge = Type.Union([Type.Array(WorkerId), WorkerId], {
  description: 'A list of worker ids (a bare id is accepted too).',
});

const WorkerNode = Type.Object(
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
const WorkerNodeInput = Type.Object(
  {
    ...WorkerNode.properties,
    script_inputs: Type.Optional(StoredObject({}, { description: "Must fit the template's form_inputs." })),
  },
  { $id: 'WorkflowWorkerInput', title: 'WorkflowWorkerInput' },
);

const Gui = Type.Object({ offset_x: Type.Number(), offset_y: Type.Number(), zoom: Type.Number() });

const workflowProperties = {
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
  workers: Type.Array(Type.Ref('WorkflowWorker')),
  workspace: Type.String(),
  created: Timestamp,
  updated: Timestamp,
  version: Type.String(),
};
const Workflow = Type.Object(workflowProperties, { $id: 'Workflow', title: 'Workflow' });

// Python clients send None for fields left unset: null means "not given". Left to the engine: the graph
// rules (one STARTER, paths to an ENDER, no cycle, forks joined), templates, cron and time zone.
const workflowFields = {
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
  workers: Type.Array(Type.Ref('WorkflowWorkerInput'), {
    description:
      'Replaces the whole graph on update. Exactly one STARTER, every path ending at an ENDER, ' +
      'no cycle, each FORKER joined by one BARRIER downstream (forks do not nest).',
  }),
  workspace: WorkspaceParam,
};
const WorkflowCreate = Type.Object(workflowFields, { description: 'name and workers are required.' });
const WorkflowUpdate = Type.Partial(
  Type.Object({ ...workflowFields, name: OrNull(Name), workers: OrNull(workflowFields.workers) }),
  { description: 'Every field optional; null keeps the stored value.' },
);

const WorkflowExecution = Type.Object(
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

const WorkerExecution = Type.Object(
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
      Type.Array(Type.Object({ level: Type.String(), message: Type.String(), at: Type.Number() }), {
        description: 'The script’s console lines (with the result).',
      }),
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

const GroupedWorkerExecutions = Type.Object(
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

const workspaceField = WorkspaceParam;
/** The longest a request may wait for a run to end (below common proxy and client timeouts). */
const MAX_WAIT_SECONDS = 30;
/** Whole seconds 0 to 30, written with one or two digits; empty means 0. */
const WaitSeconds = Type.String({
  pattern: '^(?:[0-2]?[0-9]|30)?$',
  'x-rule': `a whole number of seconds from 0 to ${MAX_WAIT_SECONDS}`,
  description:
    `Extension. Whole seconds, 0 to ${MAX_WAIT_SECONDS} (default 0): with workflow_execution_id, ` +
    'wait up to this long for the run to leave RUNNING before answering.',
});
const IdParam = IdParams('workflow');
const WorkspaceQuery = Type.Object({ workspace: WorkspaceParam });
const WorkflowReply = Type.Object({ workflow: Type.Ref('Workflow') });
const tags = ['Workflows'];
const config = { auditEntity: 'Workflow' } as const;

/**
 * The run endpoint's trigger, from the credentials used: an OAuth 2.0 access token is what a person's
 * session (the platform, a user app) holds, so its runs are `MANUAL`; an API key (SID:TOKEN, Bearer
 * or Basic) is a program's, so its runs are `API`. The execution also keeps the credential type.
 */
export function triggerOf(actor: Actor): 'MANUAL' | 'API' {
  return actor.principal.credentialType === 'OAUTH2' ? 'MANUAL' : 'API';
}

const workflowRoutes: FastifyPluginAsyncTypebox<{ db: Database; workflows: WorkflowRunner }> = async (
  app,
  { db, workflows },
) => {
  app.addSchema(WorkerNode);
  app.addSchema(WorkerNodeInput);
  app.addSchema(Workflow);
  app.addSchema(WorkflowExecution);
  app.addSchema(WorkerExecution);
  app.addSchema(GroupedWorkerExecutions);
  // Requests waiting for a run to end (wait_seconds) hear of it through PostgreSQL LISTEN.
  const runEnds = startRunEndWaiter(db, (message, error) => app.log.warn({ err: error }, message));
  // Stopping: waiting requests answer the run as it is at once, so they do not hold the shutdown.
  app.addHook('preClose', () => runEnds.close());

  app.post(
    '/workflows',
    {
      config,
      schema: {
        tags,
        summary: 'Store a workflow (extension)',
        description:
          'Extension: the interface has no way to create workflows. A TIME_BASED workflow gets its schedule ' +
          'in the same step: 503 (and nothing stored) when the scheduler is unavailable.',
        body: WorkflowCreate,
        querystring: WorkspaceQuery,
        response: { 200: WorkflowReply, ...errorResponses(400, 503) },
      },
    },
    async (request) => {
      const workflow = await createWorkflowWithSchedule(db, workflows.schedules, request.actor, {
        ...request.body,
        workspace: request.body.workspace ?? request.query.workspace,
      });
      return { workflow: workflowView(workflow) };
    },
  );

  app.get(
    '/workflows',
    {
      config,
      schema: {
        tags,
        summary: 'List workflows (without workers), most recent first',
        querystring: listQuerystring(true),
        response: { 200: listReply('workflows', Workflow), ...errorResponses(400) },
      },
    },
    async (request) => {
      const { items, next_page_token } = await listEntities(
        db,
        request.actor,
        WORKFLOW,
        listRequest(request.query),
      );
      return { workflows: items, next_page_token };
    },
  );

  // Routed before /workflows/:id: real clients read a worker execution without the workflow id.
  app.get(
    '/workflows/worker_executions',
    {
      config: { auditEntity: 'WorkerExecution' },
      schema: {
        tags,
        summary: 'Retrieve one worker execution (result included by default)',
        querystring: Type.Object({
          worker_execution_id: Type.String(),
          with_result: Type.Optional(LooseBoolean),
          workspace: Type.Optional(
            Type.String({
              description:
                'When given, the execution must belong to a run of that workspace. Without it the id ' +
                '(unique in the account) is found in any workspace: the legacy client asks for the ' +
                "Ender's execution by id alone.",
            }),
          ),
        }),
        response: {
          200: Type.Object({ worker_execution: Type.Ref('WorkerExecution') }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => {
      const { query } = request;
      const row = await workerExecutionOf(
        db,
        request.principal!.accountId,
        null,
        query.worker_execution_id,
        query.workspace,
      );
      return { worker_execution: workerExecutionView(row, looseBoolean(query.with_result, true)) };
    },
  );

  app.get(
    '/workflows/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Retrieve a workflow with its workers',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: { 200: WorkflowReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => ({
      workflow: workflowView(
        await viewEntity(db, request.actor, WORKFLOW, request.params.id, request.query.workspace),
      ),
    }),
  );

  app.put(
    '/workflows/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Update a workflow (extension; every field optional)',
        description:
          'Extension. Runs already started keep the definition they started with. The schedule of a TIME_BASED ' +
          'workflow follows in the same step (503, nothing changed, when the scheduler is unavailable).',
        params: IdParam,
        body: WorkflowUpdate,
        querystring: WorkspaceQuery,
        response: { 200: WorkflowReply, ...errorResponses(400, 404, 503) },
      },
    },
    async (request) => {
      const workflow = await updateWorkflowWithSchedule(
        db,
        workflows.schedules,
        request.actor,
        request.params.id,
        {
          ...request.body,
          workspace: request.body.workspace ?? request.query.workspace,
        },
      );
      return { workflow: workflowView(workflow) };
    },
  );

  app.delete(
    '/workflows/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a workflow (its executions stay readable)',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({
            workflow: Type.Object({ deleted: Type.Boolean(), id: Type.String(), name: Type.String() }),
          }),
          ...errorResponses(400, 404, 503),
        },
      },
    },
    async (request) => ({
      workflow: await deleteWorkflowWithSchedule(
        db,
        workflows.schedules,
        request.actor,
        request.params.id,
        request.query.workspace,
      ),
    }),
  );

  app.post(
    '/workflows/:id/run',
    {
      config: { ...config, auditOperation: 'EXECUTE' },
      schema: {
        tags,
        summary: 'Run a workflow',
        description:
          'Answers 202 with the execution RUNNING. Poll GET /workflows/{id}/workflow_executions until run_status ' +
          'is SUCCEEDED or FAILED, then read the ender_worker_execution_id worker execution. The execution’s ' +
          'trigger is MANUAL when the credentials are an OAuth 2.0 access token (a person’s session) and API ' +
          'for an API key.',
        params: IdParam,
        body: Type.Object({
          parameters: Type.Record(Type.String(), Type.Unknown(), {
            description: "REQUIRED; {} when none. They overlay the STARTER's script inputs.",
          }),
          workspace: workspaceField,
        }),
        response: {
          202: Type.Object({ workflow_execution: Type.Ref('WorkflowExecution') }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request, reply) => {
      const execution = await runWorkflow(db, workflows, request.actor, {
        workflowId: request.params.id,
        workspace: request.body.workspace,
        trigger: triggerOf(request.actor),
        parameters: request.body.parameters,
      });
      return reply.code(202).send({ workflow_execution: workflowExecutionView(execution) });
    },
  );

  app.post(
    '/workflows/:id/workflow_executions/:execution_id/retry',
    {
      config: { auditEntity: 'WorkflowExecution', auditOperation: 'EXECUTE' },
      schema: {
        tags,
        summary: 'Re-run a FAILED execution from its failed step (extension)',
        description:
          'Extension. Starts a new execution (202, RUNNING) of the definition the failed execution ran, even if ' +
          'the workflow was edited since, with the same parameters. The worker executions that COMPLETED in the ' +
          'failed run are not run again: the new execution holds copies of them (reused_from names the original, ' +
          'result included), and the run goes on from the failed worker; in a FORKER, the branches that completed ' +
          'are reused and the failed and stopped ones run again. The new execution names the failed one in ' +
          'retry_of and is audited as EXECUTE; its trigger follows the credentials, as for /run. An execution ' +
          'is retried once: 409 when it is not FAILED or already has a retry (retry that one). 404 for an ' +
          'unknown workflow or an execution that is not one of its runs. With the workflow engine unreachable the ' +
          'retry is still accepted (202, RUNNING): its start request waits in the run outbox and it starts once ' +
          'the engine answers; 503 only when the database is unavailable.',
        params: Type.Object({
          id: EntityId('workflow'),
          execution_id: EntityId('workflowExecution', 'The FAILED execution to re-run (wfex_…).'),
        }),
        // Null when sent without a body (nothing in it is required).
        body: Type.Union([Type.Object({ workspace: workspaceField }), Type.Null()]),
        'x-body-optional': true,
        querystring: WorkspaceQuery,
        response: {
          202: Type.Object({ workflow_execution: Type.Ref('WorkflowExecution') }),
          ...errorResponses(400, 404, 409, 503),
        },
      },
    },
    async (request, reply) => {
      const execution = await retryExecution(db, workflows, request.actor, {
        workflowId: request.params.id,
        executionId: request.params.execution_id,
        workspace: request.body?.workspace ?? request.query.workspace,
        trigger: triggerOf(request.actor),
      });
      return reply.code(202).send({ workflow_execution: workflowExecutionView(execution) });
    },
  );

  app.post(
    '/workflows/:id/retry_failed',
    {
      config: { ...config, auditOperation: 'EXECUTE' },
      schema: {
        tags,
        summary: 'Re-run the FAILED executions of a period, each from its failed step (extension)',
        description:
          'Extension. Does what POST …/workflow_executions/{execution_id}/retry does for every FAILED execution ' +
          `of the workflow started (created) in the period and not retried yet, oldest first, at most limit ` +
          `(default and maximum ${RETRY_BATCH_MAX}) per call. Answers 202 with the executions started, the ones ` +
          'skipped and why, and how many remain: call again until has_more is false (those retried are not ' +
          'picked again). The period takes the list endpoints’ format (start, end or date_time: YYYYMMDD or ' +
          '"YYYYMMDD HH:MM:SS", UTC, both bounds inclusive); one bound at least is required.',
        params: IdParam,
        body: Type.Object({
          start: Type.Optional(PeriodBound),
          end: Type.Optional(PeriodBound),
          date_time: Type.Optional(PeriodBound),
          limit: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: RETRY_BATCH_MAX,
              'x-rule': `an integer from 1 to ${RETRY_BATCH_MAX}`,
              description: `Most executions to retry in this call: 1 to ${RETRY_BATCH_MAX}, default ${RETRY_BATCH_MAX}.`,
            }),
          ),
          workspace: workspaceField,
        }),
        querystring: WorkspaceQuery,
        response: {
          202: Type.Object({
            started: Type.Integer({ description: 'How many retries this call started.' }),
            workflow_executions: Type.Array(Type.Ref('WorkflowExecution'), {
              description: 'The executions started (RUNNING), each with retry_of.',
            }),
            skipped: Type.Array(
              Type.Object({ workflow_execution_id: Type.String(), message: Type.String() }),
              { description: 'Failed executions of this batch that could not be retried, and why.' },
            ),
            remaining: Type.Integer({
              description: 'FAILED executions of the period still without a retry after this call.',
            }),
            has_more: Type.Boolean({ description: 'Whether a further call has executions to retry.' }),
          }),
          ...errorResponses(400, 404, 503),
        },
      },
    },
    async (request, reply) => {
      const { body } = request;
      const outcome = await retryFailedExecutions(db, workflows, request.actor, {
        workflowId: request.params.id,
        workspace: body.workspace ?? request.query.workspace,
        start: body.start,
        end: body.end,
        dateTime: body.date_time,
        limit: body.limit,
        trigger: triggerOf(request.actor),
      });
      return reply.code(202).send({
        started: outcome.started.length,
        workflow_executions: outcome.started.map((row) => workflowExecutionView(row)),
        skipped: outcome.skipped,
        remaining: outcome.remaining,
        has_more: outcome.remaining > outcome.skipped.length,
      });
    },
  );

  app.get(
    '/workflows/:id/workflow_executions',
    {
      config,
      schema: {
        tags,
        summary:
          'List the executions of a workflow, or retrieve one (poll it until run_status is not RUNNING, or wait for that with wait_seconds)',
        description:
          'With `workflow_execution_id` and `wait_seconds` (extension): while the run is RUNNING the ' +
          'request is held until the run ends or `wait_seconds` pass, then answers the execution as ' +
          'it is then (RUNNING if the time ran out). One request instead of a poll loop; the answer is ' +
          'read from the records, as without `wait_seconds`.',
        params: IdParam,
        querystring: Type.Object({
          workflow_execution_id: Type.Optional(Type.String({ description: 'Returns {workflow_execution}.' })),
          wait_seconds: Type.Optional(WaitSeconds),
          worker_id: Type.Optional(Type.String({ description: 'Only executions that ran that worker.' })),
          with_resume: Type.Optional(LooseBoolean),
          page_size: Type.Optional(Type.String({ description: '1 to 100, default 10.' })),
          page_token: Type.Optional(Type.String()),
          workspace: workspaceField,
        }),
        response: {
          200: Type.Union([
            Type.Object({ workflow_execution: Type.Ref('WorkflowExecution') }),
            Type.Object({
              workflow_executions: Type.Array(Type.Ref('WorkflowExecution')),
              next_page_token: Nullable(Type.String()),
            }),
          ]),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => {
      const { query } = request;
      const accountId = request.principal!.accountId;
      const withResume = looseBoolean(query.with_resume, false);
      const waitSeconds = Number(query.wait_seconds || 0);
      if (query.workflow_execution_id) {
        const executionId = query.workflow_execution_id;
        const read = () =>
          workflowExecutionOf(db, accountId, request.params.id, executionId, query.workspace);
        // A plain read (the polling path) never touches the waiter.
        if (waitSeconds === 0) return { workflow_execution: workflowExecutionView(await read(), withResume) };
        const deadline = performance.now() + waitSeconds * 1000;
        for (;;) {
          // Subscribed before the read, so an end committed in between still wakes this request.
          const ended = runEnds.subscribe(executionId);
          try {
            const row = await read();
            const left = deadline - performance.now();
            if (row.run_status !== 'RUNNING' || left <= 0 || request.raw.destroyed || runEnds.closing) {
              return { workflow_execution: workflowExecutionView(row, withResume) };
            }
            await ended.until(left);
          } finally {
            ended.cancel();
          }
        }
      }
      if (waitSeconds > 0) throw new InvalidInput('wait_seconds needs workflow_execution_id.');
      return listWorkflowExecutions(db, accountId, request.params.id, {
        workspace: query.workspace,
        workerId: query.worker_id,
        withResume,
        pageSize: query.page_size,
        pageToken: query.page_token,
      });
    },
  );

  app.get(
    '/workflows/:id/worker_executions',
    {
      config,
      schema: {
        tags,
        summary: 'The worker executions of a run (grouped list), or one with worker_execution_id',
        params: IdParam,
        querystring: Type.Object({
          workflow_execution_id: Type.Optional(Type.String()),
          worker_execution_id: Type.Optional(Type.String()),
          // Default False for the list, True for one execution.
          with_result: Type.Optional(LooseBoolean),
          workspace: workspaceField,
        }),
        response: {
          200: Type.Union([
            Type.Object({ worker_execution: Type.Ref('WorkerExecution') }),
            Type.Ref('GroupedWorkerExecutions'),
          ]),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => {
      const { query } = request;
      const accountId = request.principal!.accountId;
      if (query.worker_execution_id) {
        const row = await workerExecutionOf(
          db,
          accountId,
          request.params.id,
          query.worker_execution_id,
          query.workspace,
        );
        return { worker_execution: workerExecutionView(row, looseBoolean(query.with_result, true)) };
      }
      if (!query.workflow_execution_id) {
        throw new InvalidInput('Pass workflow_execution_id (a list) or worker_execution_id (one execution).');
      }
      return groupedWorkerExecutions(db, accountId, request.params.id, query.workflow_execution_id, {
        workspace: query.workspace,
        withResult: looseBoolean(query.with_result, false),
      });
    },
  );
};

export default workflowRoutes;
