import { type Client } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType, TypedSearchAttributes } from '@temporalio/common';
import { type Actor, recordAudit } from '../audit/audit-trail';
import type { Database } from '../db/database';
import { DomainError } from '../errors';
import {
  endWorkflowExecution,
  insertWorkflowExecution,
  type Trigger,
  type WorkflowExecutionRow,
} from './execution-records';
import { INTERPRETER_WORKFLOW, type InterpreterInput } from './run-input';
import { parseDefinition } from './workflow-definition';
import { findWorkflow } from './workflow-store';

/** Starts interpreter runs on Temporal; the API and triggers depend on this, not on the SDK. */
export interface WorkflowRunner {
  start(input: InterpreterInput): Promise<void>;
}

const keyword = (name: string) => defineSearchAttributeKey(name, SearchAttributeType.KEYWORD);
const KEYS = {
  workflowId: keyword('PasWorkflowId'),
  executionId: keyword('PasExecutionId'),
  workspace: keyword('PasWorkspace'),
  trigger: keyword('PasTrigger'),
  runStatus: keyword('PasRunStatus'),
  account: keyword('PasAccount'),
};

export function temporalWorkflowRunner(client: Client, taskQueue: string): WorkflowRunner {
  return {
    async start(input) {
      await client.workflow.start(INTERPRETER_WORKFLOW, {
        taskQueue,
        // The execution id is the Temporal workflow id: one name in the API and the Temporal UI.
        workflowId: input.executionId,
        args: [input],
        typedSearchAttributes: new TypedSearchAttributes([
          { key: KEYS.workflowId, value: input.workflowId },
          { key: KEYS.executionId, value: input.executionId },
          { key: KEYS.workspace, value: input.workspace },
          { key: KEYS.trigger, value: input.trigger },
          { key: KEYS.runStatus, value: 'RUNNING' },
          { key: KEYS.account, value: input.accountId },
        ]),
        memo: {
          workflow_id: input.workflowId,
          workflow_name: input.workflowName,
          workspace: input.workspace,
          trigger: input.trigger,
        },
      });
    },
  };
}

class WorkflowStartFailed extends DomainError {
  constructor() {
    super(503, 'The workflow engine is unavailable; the execution was recorded as FAILED. Try again.');
  }
}

/**
 * Records a RUNNING execution and its EXECUTE audit entry, then hands the run to Temporal. Every
 * trigger calls this: the run endpoint (`API`/`MANUAL`), schedules (`TIME_BASED`, with an actor of
 * source SCHEDULER) and webhooks (`FILE_RECEIVED`, source INTEGRATION, `parameters` {body, date}).
 * `parameters` overlay the STARTER's script inputs.
 */
export async function runWorkflow(
  db: Database,
  runner: WorkflowRunner,
  actor: Actor,
  input: { workflowId: string; workspace?: unknown; trigger: Trigger; parameters: Record<string, unknown> },
): Promise<WorkflowExecutionRow> {
  const workflow = await findWorkflow(db, actor.principal.accountId, input.workflowId, input.workspace);
  // Stored definitions were checked when saved; this re-derives the plan (and refuses a definition
  // written by an older version that the current rules no longer accept).
  const { workers, plan } = parseDefinition(workflow.workers);
  const execution = await db.transaction(async (trx) => {
    const row = await insertWorkflowExecution(trx, {
      accountId: workflow.accountId,
      workflowId: workflow.id,
      workflowName: workflow.name,
      workspace: workflow.workspace,
      trigger: input.trigger,
      startedWorkerId: plan.starterId,
      enderWorkerId: plan.enderId,
      parameters: input.parameters,
      userId: actor.principal.userId,
      credentialId: actor.principal.credentialId,
      credentialType: actor.principal.credentialType,
    });
    await recordAudit(trx, actor, {
      operation: 'EXECUTE',
      activity: `Started workflow execution of ${workflow.name}`,
      entityId: row.id,
      entityType: 'WorkflowExecution',
      entityName: workflow.name,
      workspace: workflow.workspace,
    });
    return row;
  });
  try {
    await runner.start({
      executionId: execution.id,
      accountId: workflow.accountId,
      workflowId: workflow.id,
      workflowName: workflow.name,
      workspace: workflow.workspace,
      trigger: input.trigger,
      workers,
      plan,
    });
  } catch (error) {
    await endWorkflowExecution(db, execution.id, {
      runStatus: 'FAILED',
      enderWorkerExecutionId: null,
      failure: {
        workerId: null,
        parallelIndex: -1,
        workerExecutionId: null,
        message: 'The workflow engine was unavailable; the run never started.',
      },
    });
    throw Object.assign(new WorkflowStartFailed(), { cause: error });
  }
  return execution;
}
