import type { Actor } from '../../engine/platform/principal';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/platform/database';
import { type LagTolerantReads, primaryReads } from '../../engine/platform/read-replica';
import { InvalidInput } from '../../engine/platform/errors';
import {
  groupedWorkerExecutions,
  listRuns,
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
import { type WorkflowRunner } from '../../engine/workflows/workflow-runner';
import { runWorkflow } from '../../engine/workflows/run-workflow';
import { EntityId, PeriodBound, WorkspaceParam } from '../../engine/store/field-schemas';
import { errorResponses, PageSize } from '../schemas/common';
import { LooseBoolean, looseBoolean, Nullable } from '../schemas/entity-lists';
import { IdParam, WorkspaceQuery } from '../schemas/workflow';

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
/** The body of POST …/retry_failed: the period (the list endpoints' format), a limit, the workspace. */
const RetryFailedFields = Type.Object({
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
});
/** One bound of the period at least (date_time gives both): the runs are chosen by it. */
const PERIOD_GIVEN = Type.Unsafe<unknown>({
  anyOf: ['start', 'end', 'date_time'].map((name) => ({ type: 'object', required: [name] })),
  'x-message': 'Give the period whose failed executions to retry: start, end or date_time.',
});

const tags = ['Workflows'];
const config = { auditEntity: 'Workflow' } as const;

/**
 * The run endpoint's trigger, from the credentials used: an OAuth 2.0 access token is what a person's
 * session (the platform, a user app) holds, so its runs are `MANUAL`; an API key (SID:TOKEN, Bearer
 * or Basic) is a program's, so its runs are `API`. The execution also keeps the credential type.
 */
export function triggerOf(actor: Actor): 'MANUAL' | 'API' {
  // A run started in the web console is a person's, whatever credential opened the session.
  return actor.source === 'PLATFORM' || actor.principal.credentialType === 'OAUTH2' ? 'MANUAL' : 'API';
}

/**
 * The runs of a workflow: start one, retry, list them (waiting for a run to end when asked) and read
 * their worker executions. Registered by the workflow routes, whose schemas these refer to.
 */
const workflowExecutionRoutes: FastifyPluginAsyncTypebox<{
  db: Database;
  workflows: WorkflowRunner;
  /** Where the lists of runs are read: a replica, unless the caller has just written. */
  reads?: LagTolerantReads;
}> = async (app, { db, workflows, reads = primaryReads(db) }) => {
  // Requests waiting for a run to end (wait_seconds) hear of it through PostgreSQL LISTEN.
  const runEnds = startRunEndWaiter(db, (message, error) => app.log.warn({ err: error }, message));
  // Stopping: waiting requests answer the run as it is at once, so they do not hold the shutdown.
  app.addHook('preClose', () => runEnds.close());

  app.get(
    '/workflow_executions',
    {
      config,
      schema: {
        tags,
        summary:
          'Extension: the runs of a workspace, of every workflow, narrowed by workflow, status, trigger and period',
        description:
          "Most recent first, paged like every list. `start`, `end` and `date_time` bound the run's " +
          '`created` time (UTC, inclusive), in the formats of the other lists. The web console pages ' +
          'through this.',
        querystring: Type.Object({
          workflow_id: Type.Optional(EntityId('workflow', 'Only the runs of this workflow.')),
          run_status: Type.Optional(
            Type.Union(['RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED'].map((v) => Type.Literal(v))),
          ),
          trigger: Type.Optional(
            Type.Union(['MANUAL', 'API', 'TIME_BASED', 'FILE_RECEIVED'].map((v) => Type.Literal(v))),
          ),
          start: Type.Optional(PeriodBound),
          end: Type.Optional(PeriodBound),
          date_time: Type.Optional(PeriodBound),
          with_resume: Type.Optional(LooseBoolean),
          page_size: Type.Optional(PageSize),
          page_token: Type.Optional(Type.String()),
          workspace: workspaceField,
        }),
        response: {
          200: Type.Object({
            workflow_executions: Type.Array(Type.Ref('WorkflowExecution')),
            next_page_token: Nullable(Type.String()),
          }),
          ...errorResponses(400),
        },
      },
    },
    async (request) => {
      const { query } = request;
      const principal = request.principal!;
      return reads.read(principal, (source) =>
        listRuns(source, principal.accountId, {
          workspace: query.workspace,
          workflowId: query.workflow_id,
          runStatus: query.run_status,
          trigger: query.trigger,
          start: query.start,
          end: query.end,
          dateTime: query.date_time,
          withResume: looseBoolean(query.with_resume, false),
          pageSize: query.page_size === undefined ? undefined : String(query.page_size),
          pageToken: query.page_token,
        }),
      );
    },
  );

  // Real clients read a worker execution without the workflow id (a static path: it wins over /workflows/:id).
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

  app.post(
    '/workflows/:id/run',
    {
      config: { ...config, auditOperation: 'EXECUTE' },
      schema: {
        tags,
        summary: 'Run a workflow',
        description:
          'Answers 202 with the execution RUNNING as soon as the run is durable (recorded, audited, its start ' +
          'request committed); its start in the workflow engine goes on behind the reply, so the engine may not ' +
          'know the execution id for a moment after the 202. Poll GET /workflows/{id}/workflow_executions until run_status ' +
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
        // The fields, then the rule across them (allOf checks in order, so a field's own rule is told first).
        body: Type.Intersect([RetryFailedFields, PERIOD_GIVEN]),
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
      // The list (not one execution, which a client polls for its end) may lag a little.
      return reads.read(request.principal!, (source) =>
        listWorkflowExecutions(source, accountId, request.params.id, {
          workspace: query.workspace,
          workerId: query.worker_id,
          withResume,
          pageSize: query.page_size,
          pageToken: query.page_token,
        }),
      );
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

export default workflowExecutionRoutes;
