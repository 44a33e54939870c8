import { setTimeout as delay } from 'node:timers/promises';
import { type Client, Connection, isGrpcServiceError, WorkflowNotFoundError } from '@temporalio/client';
import {
  defaultPayloadConverter,
  defineSearchAttributeKey,
  SearchAttributeType,
  TypedSearchAttributes,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
} from '@temporalio/common';
import { recordAudit } from '../store/audit-trail';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import {
  insertWorkflowExecution,
  type RunDefinition,
  type Trigger,
  type WorkflowExecutionRow,
} from './execution-records';
import { localStepsOf } from './local-steps';
import { dispatchRun, enqueueRun } from './run-dispatcher';
import { INTERPRETER_WORKFLOW, type InterpreterInput } from './run-input';
import { parseDefinition } from './workflow-definition';
import { temporalWorkflowSchedules, type WorkflowSchedules } from './workflow-schedules';
import { findWorkflow } from './workflow-store';

/**
 * Starts interpreter runs on Temporal and keeps the Schedules of TIME_BASED workflows; the API and
 * triggers depend on this, not on the SDK.
 */
export interface WorkflowRunner {
  start(input: InterpreterInput): Promise<void>;
  /**
   * The definition a run was started with, from its Temporal history (for runs recorded before the
   * execution row kept it); null once Temporal no longer has the run (past its retention).
   */
  startedDefinition(executionId: string): Promise<RunDefinition | null>;
  schedules: WorkflowSchedules;
}

/** gRPC status code 5: the service has no such entity. */
const GRPC_NOT_FOUND = 5;

const keyword = (name: string) => defineSearchAttributeKey(name, SearchAttributeType.KEYWORD);
const KEYS = {
  workflowId: keyword('PasWorkflowId'),
  executionId: keyword('PasExecutionId'),
  workspace: keyword('PasWorkspace'),
  trigger: keyword('PasTrigger'),
  runStatus: keyword('PasRunStatus'),
  account: keyword('PasAccount'),
};

/**
 * A client connection that needs no Temporal to exist yet (the API starts, and accepts runs, while it
 * is down) and notices its return within about two seconds: gRPC's reconnect backoff otherwise grows
 * to two minutes during a long outage.
 */
export function lazyTemporalConnection(address: string): Connection {
  return Connection.lazy({
    address,
    channelArgs: { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 2_000 },
  });
}

/** How long a run request waits for its own start before answering 202 (a start takes ~10 ms). */
const INLINE_DISPATCH_WAIT_MS = 300;
/** A start that gets no answer within this is retried by the dispatcher (the gRPC default is ~19 s). */
const START_DEADLINE_MS = 5_000;
/** After a start Temporal did not answer, the next ones fail at once for this long (the outbox waits). */
const UNREACHABLE_COOL_DOWN_MS = 1_000;

class TemporalUnreachable extends Error {
  constructor() {
    super('Temporal did not answer a moment ago; the start waits in the outbox.');
    this.name = 'TemporalUnreachable';
  }
}

export function temporalWorkflowRunner(client: Client, taskQueue: string): WorkflowRunner {
  // While Temporal is down, a run request should not spend a deadline finding out again: its run is
  // already in the outbox, and the dispatcher keeps trying.
  let unreachableUntil = 0;
  return {
    schedules: temporalWorkflowSchedules(client, taskQueue),
    async startedDefinition(executionId) {
      let history;
      try {
        history = await client.workflow.getHandle(executionId).fetchHistory();
      } catch (error) {
        // fetchHistory hands on the gRPC error as it came: NOT_FOUND is a run Temporal does not have.
        if (error instanceof WorkflowNotFoundError) return null;
        if (isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND) return null;
        throw error;
      }
      const payload =
        history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0] ?? null;
      if (payload === null) return null;
      const input = defaultPayloadConverter.fromPayload<Partial<InterpreterInput>>(payload);
      return Array.isArray(input.workers) && input.plan ? { workers: input.workers, plan: input.plan } : null;
    },
    async start(input) {
      if (Date.now() < unreachableUntil) throw new TemporalUnreachable();
      const start = () =>
        client.workflow.start(INTERPRETER_WORKFLOW, {
          taskQueue,
          // The execution id is the Temporal workflow id: one name in the API and the Temporal UI.
          workflowId: input.executionId,
          // An id runs once: a second dispatch of the same run (the outbox row outlived its start)
          // never starts it again, even once it has finished.
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
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
            ...(input.retryOf ? { retry_of: input.retryOf } : {}),
          },
        });
      try {
        await client.withDeadline(Date.now() + START_DEADLINE_MS, start);
        unreachableUntil = 0;
      } catch (error) {
        // Execution ids are never reused, so a run already there under this id is this run.
        if (error instanceof WorkflowExecutionAlreadyStartedError) return;
        unreachableUntil = Date.now() + UNREACHABLE_COOL_DOWN_MS;
        throw error;
      }
    },
  };
}

/**
 * Records a RUNNING execution, its EXECUTE audit entry and its start request (the run outbox) in one
 * transaction, then tries to hand the run to Temporal at once; when Temporal is unreachable the run
 * is accepted all the same and a dispatcher (run-dispatcher.ts) starts it as soon as Temporal
 * answers. Every trigger calls this: the run endpoint (`API`/`MANUAL`), schedules (`TIME_BASED`,
 * with an actor of source SCHEDULER) and webhooks (`FILE_RECEIVED`, source INTEGRATION,
 * `parameters` {body, date}). `parameters` overlay the STARTER's script inputs.
 *
 * A caller that retries (a scheduled launch, as a Temporal activity) passes its own `executionId`:
 * when that execution is already recorded, nothing is recorded again; its start request, if still
 * waiting, is dispatched, so a retry makes one run.
 */
export async function runWorkflow(
  db: Database,
  runner: WorkflowRunner,
  actor: Actor,
  input: {
    workflowId: string;
    workspace?: unknown;
    trigger: Trigger;
    parameters: Record<string, unknown>;
    executionId?: string;
  },
): Promise<WorkflowExecutionRow> {
  const workflow = await findWorkflow(db, actor.principal.accountId, input.workflowId, input.workspace);
  // Stored definitions were checked when saved; this re-derives the plan (and refuses a definition
  // written by an older version that the current rules no longer accept).
  const { workers, plan } = parseDefinition(workflow.workers);
  const localSteps = await localStepsOf(db, workflow.accountId, workers);
  const interpreterInput = (executionId: string): InterpreterInput => ({
    executionId,
    accountId: workflow.accountId,
    workflowId: workflow.id,
    workflowName: workflow.name,
    workspace: workflow.workspace,
    trigger: input.trigger,
    workers,
    plan,
    localSteps,
  });
  if (input.executionId) {
    const existing = (await db('workflow_executions')
      .where({ id: input.executionId, account_id: workflow.accountId })
      .first()) as WorkflowExecutionRow | undefined;
    if (existing) {
      await dispatchRun(db, runner, existing.id);
      return existing;
    }
  }
  const execution = await db.transaction(async (trx) => {
    const row = await insertWorkflowExecution(trx, {
      executionId: input.executionId,
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
      definition: { workers, plan },
    });
    await recordAudit(trx, actor, {
      operation: 'EXECUTE',
      activity: `Started workflow execution of ${workflow.name}`,
      entityId: row.id,
      entityType: 'WorkflowExecution',
      entityName: workflow.name,
      workspace: workflow.workspace,
    });
    await enqueueRun(trx, interpreterInput(row.id));
    return row;
  });
  await dispatchSoon(db, runner, execution.id);
  return execution;
}

/**
 * Dispatches a run whose start request was just committed to the outbox, waiting a moment at most:
 * what is not started by then finishes (or is retried) behind the reply, so a slow or absent
 * Temporal never holds the request, and the accepted run is started once it answers.
 */
export async function dispatchSoon(db: Database, runner: WorkflowRunner, executionId: string): Promise<void> {
  await Promise.race([dispatchRun(db, runner, executionId), delay(INLINE_DISPATCH_WAIT_MS)]);
}
