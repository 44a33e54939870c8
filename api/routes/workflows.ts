import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/db/database';
import { InvalidInput } from '../../engine/errors';
import {
  findWorkerExecution,
  findWorkflowExecution,
  workerExecutionView,
  workflowExecutionView,
  type WorkerExecutionRow,
} from '../../engine/workflows/execution-records';
import { runWorkflow, type WorkflowRunner } from '../../engine/workflows/workflow-runner';
import { createWorkflow, findWorkflow, workflowView } from '../../engine/workflows/workflow-store';
import { errorResponses, Timestamp } from '../schemas/common';

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);
const NullableNumber = Type.Union([Type.Number(), Type.Null()]);

const WorkerNode = Type.Object({
  id: Type.String({ description: 'wrkr_ plus 25 letters or digits.' }),
  name: Type.String(),
  type: Type.Union([Type.Literal('STARTER'), Type.Literal('BASIC'), Type.Literal('ENDER')]),
  script: Type.Optional(Nullable(Type.String({ description: 'JavaScript defining main(args).' }))),
  script_inputs: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  next: Type.Optional(Type.Array(Type.String())),
});

const Workflow = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    status: Type.String(),
    trigger_type: Type.String(),
    trigger_config: Type.Record(Type.String(), Type.Unknown()),
    trigger_enabled: Type.Boolean(),
    starter_worker_id: Nullable(Type.String()),
    gui: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
    workers: Type.Array(WorkerNode),
    workspace: Type.String(),
    created: Timestamp,
    updated: Timestamp,
    version: Type.String(),
  },
  { $id: 'Workflow', title: 'Workflow' },
);

const WorkflowExecution = Type.Object(
  {
    id: Type.String(),
    run_status: Type.String({ description: 'RUNNING, SUCCEEDED or FAILED.' }),
    status: Type.String({ description: 'Deprecated: OK while running, COMPLETED once ended.' }),
    workflow_id: Type.String(),
    workflow_name: Type.String(),
    trigger: Type.String(),
    workspace: Type.String(),
    started_worker_id: Nullable(Type.String()),
    ender_worker_id: Nullable(Type.String()),
    ender_worker_execution_id: Nullable(Type.String()),
    created: Timestamp,
    updated: Timestamp,
    started: Type.Union([Timestamp, Type.Null()]),
    duration: NullableNumber,
    real_execution_time: NullableNumber,
    total_execution_time: NullableNumber,
    resume: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
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
    created: Timestamp,
    updated: Timestamp,
    started: Type.Union([Timestamp, Type.Null()]),
    duration: NullableNumber,
    cpu_time: NullableNumber,
    result: Type.Optional(Type.Unknown()),
    input_params: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
    version: Type.String(),
  },
  { $id: 'WorkerExecution', title: 'WorkerExecution' },
);

const Workspace = Type.Optional(Type.String({ default: 'main' }));
const IdParam = Type.Object({ id: Type.String() });
const audit = { auditEntity: 'Workflow' } as const;

/** `True`/`true`/`1`: Python clients send booleans capitalised. */
function flag(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  const normalised = value.toLowerCase();
  if (normalised === 'true' || normalised === '1') return true;
  if (normalised === 'false' || normalised === '0') return false;
  throw new InvalidInput(`Expected a boolean, got "${value}".`);
}

const workflowRoutes: FastifyPluginAsyncTypebox<{ db: Database; workflows: WorkflowRunner }> = async (
  app,
  { db, workflows },
) => {
  app.addSchema(Workflow);
  app.addSchema(WorkflowExecution);
  app.addSchema(WorkerExecution);

  app.post(
    '/workflows',
    {
      config: audit,
      schema: {
        tags: ['Workflows'],
        summary: 'Store a workflow (extension)',
        description:
          'Extension: the interface has no way to create workflows. Workers run STARTER → BASIC… → ENDER.',
        body: Type.Object({
          name: Type.String({ minLength: 1, maxLength: 200 }),
          description: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
          workspace: Workspace,
          workers: Type.Array(WorkerNode, { minItems: 2 }),
        }),
        response: { 200: Type.Object({ workflow: Type.Ref('Workflow') }), ...errorResponses(400) },
      },
    },
    async (request) => ({ workflow: workflowView(await createWorkflow(db, request.actor, request.body)) }),
  );

  // Routed before /workflows/:id: real clients read a worker execution without the workflow id.
  app.get(
    '/workflows/worker_executions',
    {
      config: { auditEntity: 'WorkerExecution' },
      schema: {
        tags: ['Workflows'],
        summary: 'Retrieve one worker execution',
        querystring: Type.Object({
          worker_execution_id: Type.String(),
          with_result: Type.Optional(Type.String({ description: 'Default true.' })),
          workspace: Workspace,
        }),
        response: {
          200: Type.Object({ worker_execution: Type.Ref('WorkerExecution') }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => {
      const row = await findWorkerExecution(
        db,
        request.principal!.accountId,
        request.query.worker_execution_id,
      );
      return { worker_execution: workerExecutionView(row, flag(request.query.with_result, true)) };
    },
  );

  app.post(
    '/workflows/:id/run',
    {
      config: { ...audit, auditOperation: 'EXECUTE' },
      schema: {
        tags: ['Workflows'],
        summary: 'Run a workflow',
        params: IdParam,
        body: Type.Object({
          parameters: Type.Record(Type.String(), Type.Unknown(), { description: 'REQUIRED; {} when none.' }),
          workspace: Workspace,
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
        trigger: 'API',
        parameters: request.body.parameters,
      });
      return reply.code(202).send({ workflow_execution: workflowExecutionView(execution) });
    },
  );

  app.get(
    '/workflows/:id/workflow_executions',
    {
      config: audit,
      schema: {
        tags: ['Workflows'],
        summary: 'Retrieve a workflow execution (poll it until run_status is not RUNNING)',
        params: IdParam,
        querystring: Type.Object({
          workflow_execution_id: Type.String(),
          with_resume: Type.Optional(Type.String()),
          workspace: Workspace,
        }),
        response: {
          200: Type.Object({ workflow_execution: Type.Ref('WorkflowExecution') }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => {
      const accountId = request.principal!.accountId;
      await findWorkflow(db, accountId, request.params.id, request.query.workspace);
      const row = await findWorkflowExecution(db, accountId, request.query.workflow_execution_id);
      if (row.workflow_id !== request.params.id)
        throw new InvalidInput('That execution belongs to another workflow.');
      return { workflow_execution: workflowExecutionView(row, flag(request.query.with_resume, false)) };
    },
  );

  app.get(
    '/workflows/:id/worker_executions',
    {
      config: audit,
      schema: {
        tags: ['Workflows'],
        summary: 'Worker executions of a run, or one with worker_execution_id',
        params: IdParam,
        querystring: Type.Object({
          workflow_execution_id: Type.Optional(Type.String()),
          worker_execution_id: Type.Optional(Type.String()),
          with_result: Type.Optional(Type.String()),
          workspace: Workspace,
        }),
        response: {
          200: Type.Union([
            Type.Object({ worker_execution: Type.Ref('WorkerExecution') }),
            Type.Object({
              worker_executions: Type.Array(Type.Ref('WorkerExecution')),
              parallel_index_max: Type.Integer(),
            }),
          ]),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => {
      const accountId = request.principal!.accountId;
      await findWorkflow(db, accountId, request.params.id, request.query.workspace);
      if (request.query.worker_execution_id) {
        const row = await findWorkerExecution(db, accountId, request.query.worker_execution_id);
        if (row.workflow_id !== request.params.id)
          throw new InvalidInput('That execution belongs to another workflow.');
        return { worker_execution: workerExecutionView(row, flag(request.query.with_result, true)) };
      }
      if (!request.query.workflow_execution_id) {
        throw new InvalidInput('Pass workflow_execution_id (a list) or worker_execution_id (one execution).');
      }
      const execution = await findWorkflowExecution(db, accountId, request.query.workflow_execution_id);
      const rows = (await db('worker_executions')
        .where({ account_id: accountId, workflow_execution_id: execution.id })
        .orderBy('created_at')) as WorkerExecutionRow[];
      const withResult = flag(request.query.with_result, false);
      return {
        worker_executions: rows.map((row) => workerExecutionView(row, withResult)),
        parallel_index_max: rows.reduce((max, row) => Math.max(max, row.parallel_index), -1),
      };
    },
  );

  app.get(
    '/workflows/:id',
    {
      config: audit,
      schema: {
        tags: ['Workflows'],
        summary: 'Retrieve a workflow with its workers',
        params: IdParam,
        querystring: Type.Object({ workspace: Workspace }),
        response: { 200: Type.Object({ workflow: Type.Ref('Workflow') }), ...errorResponses(404) },
      },
    },
    async (request) => ({
      workflow: workflowView(
        await findWorkflow(db, request.principal!.accountId, request.params.id, request.query.workspace),
      ),
    }),
  );
};

export default workflowRoutes;
