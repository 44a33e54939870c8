import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/platform/database';
import type { LagTolerantReads } from '../../engine/platform/read-replica';
import { listRoute, retrieveRoute } from '../http/entity-routes';
import { type WorkflowRunner } from '../../engine/workflows/workflow-runner';
import {
  createWorkflowWithSchedule,
  deleteWorkflowWithSchedule,
  updateWorkflowWithSchedule,
} from '../../engine/workflows/workflow-schedules';
import { findWorkflow, WORKFLOW, workflowView } from '../../engine/workflows/workflow-store';
import { NotFound } from '../../engine/platform/errors';
import { errorResponses } from '../schemas/common';
import { listQuerystring } from '../schemas/entity-lists';
import {
  WorkerNode,
  WorkerNodeInput,
  Workflow,
  WorkflowExecution,
  WorkerExecution,
  GroupedWorkerExecutions,
  WorkflowCreate,
  WorkflowUpdate,
  IdParam,
  WorkspaceQuery,
  WorkflowReply,
} from '../schemas/workflow';
import workflowExecutionRoutes from './workflow-executions';

const tags = ['Workflows'];
const config = { auditEntity: 'Workflow' } as const;

/** Workflows: store, list, read, update and delete definitions (their runs: workflow-executions.ts). */
const workflowRoutes: FastifyPluginAsyncTypebox<{
  db: Database;
  workflows: WorkflowRunner;
  reads?: LagTolerantReads;
}> = async (app, { db, workflows, reads }) => {
  app.addSchema(WorkerNode);
  app.addSchema(WorkerNodeInput);
  app.addSchema(Workflow);
  app.addSchema(WorkflowExecution);
  app.addSchema(WorkerExecution);
  app.addSchema(GroupedWorkerExecutions);

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

  listRoute(app, db, {
    tags,
    summary: 'List workflows (without workers), most recent first',
    config,
    errors: errorResponses(400),
    kind: WORKFLOW,
    path: '/workflows',
    plural: 'workflows',
    item: Workflow,
    querystring: listQuerystring(true, WORKFLOW.hasDate),
    reads,
  });
  retrieveRoute(app, db, {
    tags,
    summary: 'Retrieve a workflow with its workers',
    config,
    errors: errorResponses(400, 404),
    kind: WORKFLOW,
    path: '/workflows',
    key: 'workflow',
    params: IdParam,
    querystring: WorkspaceQuery,
    reply: WorkflowReply,
    view: workflowView,
  });

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

  app.get(
    '/workflows/:id/schedule',
    {
      config,
      schema: {
        tags,
        summary: 'A TIME_BASED workflow’s schedule, with its next firing times (extension)',
        description:
          'Extension: the cron expression and time zone, whether the schedule is paused (trigger_enabled ' +
          'false), and its next five firing times as the scheduler (a Temporal Schedule) computes them. ' +
          '404 for a workflow that is not TIME_BASED.',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({
            schedule: Type.Object({
              cron: Type.String(),
              timezone: Type.String(),
              paused: Type.Boolean(),
              next_firings: Type.Array(Type.String({ description: 'ISO 8601, UTC.' })),
            }),
          }),
          ...errorResponses(404, 503),
        },
      },
    },
    async (request) => {
      const workflow = await findWorkflow(
        db,
        request.principal!.accountId,
        request.params.id,
        request.query.workspace,
      );
      const notScheduled = () =>
        new NotFound(`Workflow ${workflow.id} has no schedule: its trigger is ${workflow.triggerType}.`);
      if (workflow.triggerType !== 'TIME_BASED') throw notScheduled();
      const state = await workflows.schedules.state(workflow.id);
      if (!state) throw notScheduled();
      const trigger = workflow.triggerConfig as { cron?: unknown; timezone?: unknown };
      return {
        schedule: {
          cron: String(trigger.cron ?? ''),
          timezone: typeof trigger.timezone === 'string' && trigger.timezone ? trigger.timezone : 'UTC',
          paused: state.paused,
          next_firings: (state.nextActionTimes ?? []).slice(0, 5).map((at) => at.toISOString()),
        },
      };
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

  await app.register(workflowExecutionRoutes, { db, workflows, reads });
};

export default workflowRoutes;
