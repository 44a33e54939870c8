import { ApplicationFailure } from '@temporalio/common';
import type { Principal } from '../../engine/platform/principal';
import type { Actor } from '../../engine/platform/principal';
import type { Database } from '../../engine/platform/database';
import { DomainError, NotFound } from '../../engine/platform/errors';
import { type WorkflowRunner } from '../../engine/workflows/workflow-runner';
import { runWorkflow } from '../../engine/workflows/run-workflow';
import {
  type ScheduledLaunchInput,
  type ScheduledLaunchOutcome,
  scheduledExecutionId,
} from '../../engine/workflows/workflow-schedules';
import { findWorkflow } from '../../engine/workflows/workflow-store';

export interface LaunchScheduledRunInput extends ScheduledLaunchInput {
  /** The launcher's Temporal workflow id, unique per firing: the execution id derives from it. */
  launcherWorkflowId: string;
}

/**
 * The user a scheduled run acts for (its scripts' SDK calls are theirs): the one who last saved the
 * schedule, or the account owner for a schedule rebuilt by reconciliation. Null when that user is
 * gone or disabled: a schedule never outlives the rights of whoever set it up.
 */
async function principalOf(db: Database, input: ScheduledLaunchInput): Promise<Principal | null> {
  const query = db('users').where({ account_id: input.accountId }).whereNull('disabled_at');
  const user = (await (
    input.runAs ? query.where({ id: input.runAs.userId }) : query.where({ is_owner: true })
  )
    .orderBy('created_at')
    .first('id', 'is_owner', 'permissions')) as
    { id: string; is_owner: boolean; permissions: Principal['permissions'] } | undefined;
  if (!user) return null;
  return {
    accountId: input.accountId,
    userId: user.id,
    userEmail: 'System',
    isOwner: user.is_owner,
    permissions: user.permissions,
    credentialId: input.runAs?.credentialId ?? '',
    credentialType: input.runAs?.credentialType ?? 'API_KEY',
  };
}

/** Activities of triggers that fire inside Temporal (time-based schedules). */
export function createTriggerActivities(db: Database, runner: WorkflowRunner | null) {
  return {
    /**
     * Starts one scheduled run exactly as the run endpoint does (execution record, EXECUTE audit
     * entry of source SCHEDULER, interpreter run), or nothing when the workflow was deleted, disabled
     * or switched to another trigger since the schedule fired. Safe to retry: the execution id is
     * derived from the launcher's id, and `runWorkflow` finds an execution it already recorded.
     */
    async launchScheduledRun(input: LaunchScheduledRunInput): Promise<ScheduledLaunchOutcome> {
      if (!runner) {
        throw ApplicationFailure.nonRetryable(
          'This worker was created without a Temporal client (createTemporalWorker `client`): it cannot launch scheduled runs.',
        );
      }
      let workflow;
      try {
        workflow = await findWorkflow(db, input.accountId, input.workflowId, input.workspace);
      } catch (error) {
        if (error instanceof NotFound) return { executionId: null, skipped: 'The workflow was deleted.' };
        throw error;
      }
      if (workflow.triggerType !== 'TIME_BASED') {
        return { executionId: null, skipped: `The workflow's trigger is now ${workflow.triggerType}.` };
      }
      if (!workflow.triggerEnabled) {
        return { executionId: null, skipped: "The workflow's trigger is disabled." };
      }
      const principal = await principalOf(db, input);
      if (!principal) {
        return { executionId: null, skipped: 'The user the schedule acts for is disabled or gone.' };
      }
      const actor: Actor = { principal, source: 'SCHEDULER', ip: null, userAgent: null };
      try {
        const execution = await runWorkflow(
          db,
          runner,
          actor,
          {
            workflowId: workflow.id,
            workspace: workflow.workspace,
            trigger: 'TIME_BASED',
            parameters: {},
            executionId: scheduledExecutionId(input.launcherWorkflowId),
          },
          // The launch returns the run started, as the schedule's launcher records it.
          'awaited',
        );
        return { executionId: execution.id, skipped: null };
      } catch (error) {
        // A definition the current rules refuse fails the same way on every attempt.
        if (error instanceof DomainError && error.status < 500) {
          throw ApplicationFailure.nonRetryable(error.message, error.name);
        }
        throw error;
      }
    },
  };
}

export type TriggerActivities = ReturnType<typeof createTriggerActivities>;
