import { setTimeout as delay } from 'node:timers/promises';
import { auditRow } from '../store/audit-trail';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { insertWorkflowExecutionWith, type Trigger, type WorkflowExecutionRow } from './execution-records';
import { localStepsOf } from './local-steps';
import { dispatchEnqueuedRun, dispatchRun, HANDOFF_HOLD_MS, runOutboxInsert } from './run-dispatcher';
import { workersListen } from './run-handoff';
import type { InterpreterInput } from './run-input';
import { parseDefinition } from './workflow-definition';
import type { WorkflowRunner } from './workflow-runner';
import { findWorkflow } from './workflow-store';

/** How long a caller that awaits the start waits for it at most (a start takes ~10 ms). */
const INLINE_DISPATCH_WAIT_MS = 300;

/**
 * When a run's Temporal start is asked for: behind the reply (the caller returns once the run is
 * durable, its start request committed to the outbox, and Temporal's start proceeds behind it), or
 * awaited (the caller returns once Temporal has started the run, or after INLINE_DISPATCH_WAIT_MS
 * with the start still going on behind it).
 */
export type StartMode = 'behind-reply' | 'awaited';

/**
 * Records a RUNNING execution, its EXECUTE audit entry and its start request (the run outbox) in one
 * statement (atomic, as a transaction), then hands the run to Temporal at once: behind the reply by
 * default (an HTTP request's 202 does not wait for Temporal), awaited where the caller needs the run
 * started (a scheduled launch). When Temporal is unreachable the run is accepted all the same and a
 * dispatcher (run-dispatcher.ts) starts it as soon as Temporal answers. Every trigger calls this:
 * the run endpoint (`API`/`MANUAL`), schedules (`TIME_BASED`, with an actor of source SCHEDULER)
 * and webhooks (`FILE_RECEIVED`, source INTEGRATION, `parameters` {body, date}). `parameters`
 * overlay the STARTER's script inputs.
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
  start: StartMode = 'behind-reply',
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
      if (start === 'awaited') await dispatchRun(db, runner, existing.id);
      else behindReply(dispatchRun(db, runner, existing.id));
      return existing;
    }
  }
  let enqueued: InterpreterInput | undefined;
  // A start behind the reply goes to a listening worker, for Temporal's eager start (run-handoff.ts).
  const handoff = start === 'behind-reply' && workersListen(db);
  // The execution, its audit entry and its start request: one statement, so one round trip.
  const execution = await insertWorkflowExecutionWith(
    db,
    {
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
    },
    (executionId) => {
      enqueued = interpreterInput(executionId);
      return [
        db('audit_logs').insert(
          auditRow(actor, {
            operation: 'EXECUTE',
            activity: `Started workflow execution of ${workflow.name}`,
            entityId: executionId,
            entityType: 'WorkflowExecution',
            entityName: workflow.name,
            workspace: workflow.workspace,
          }),
        ),
        runOutboxInsert(db, enqueued, handoff),
      ];
    },
  );
  await dispatchSoon(db, runner, enqueued!, start, handoff);
  return execution;
}

/** Starts handed to Temporal behind a reply and not answered yet (this process's). */
const startsBehindReplies = new Set<Promise<unknown>>();

function behindReply(dispatch: Promise<unknown>): void {
  startsBehindReplies.add(dispatch);
  void dispatch.finally(() => startsBehindReplies.delete(dispatch));
}

/** Fallback starts of handed-off runs, waiting out their hold (this process's). */
const handoffFallbacks = new Set<NodeJS.Timeout>();

/**
 * Dispatches a run whose start request was just committed to the outbox. Behind the reply: the
 * caller returns at once. Awaited: it waits a moment at most, and what is not started by then
 * finishes (or is retried) behind the reply. Either way a slow or absent Temporal never holds the
 * caller, and the accepted run is started once it answers (the dispatch never throws; what fails
 * stays in the outbox for the dispatcher). The wait is for Temporal's answer only, not for the
 * outbox row's delete. Handed off (`handoff`, the row written so): a listening worker starts it;
 * this process starts it only if none has claimed it once its hold is over.
 */
export async function dispatchSoon(
  db: Database,
  runner: WorkflowRunner,
  input: InterpreterInput,
  start: StartMode,
  handoff = false,
): Promise<void> {
  if (handoff) {
    const timer = setTimeout(() => {
      handoffFallbacks.delete(timer);
      behindReply(dispatchRun(db, runner, input.executionId));
    }, HANDOFF_HOLD_MS + 10);
    handoffFallbacks.add(timer);
    return;
  }
  const dispatch = dispatchEnqueuedRun(db, runner, input);
  behindReply(dispatch);
  if (start === 'awaited') await Promise.race([dispatch, delay(INLINE_DISPATCH_WAIT_MS)]);
}

/**
 * Resolves once every start this process handed to Temporal behind a reply has been answered: a
 * stopping API awaits it before it closes its Temporal connection and its pool, so an accepted run
 * is not left for the next process's dispatcher. (It would not be lost: its start request stays in
 * the outbox until Temporal has the run.)
 */
export async function settleStartsBehindReplies(): Promise<void> {
  // A handed-off run's fallback is not waited for: its row stays in the outbox, due once its short
  // hold is over, for the worker that claims it or any dispatcher.
  for (const timer of handoffFallbacks) clearTimeout(timer);
  handoffFallbacks.clear();
  while (startsBehindReplies.size > 0) await Promise.allSettled([...startsBehindReplies]);
}
