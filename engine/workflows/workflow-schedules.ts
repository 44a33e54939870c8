import { createHash } from 'node:crypto';
import {
  type Client,
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type ScheduleDescription,
  type ScheduleOptionsAction,
} from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType, TypedSearchAttributes } from '@temporalio/common';
import type { CredentialType } from '../platform/principal';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { DomainError, InvalidInput } from '../platform/errors';
import { parseScheduleConfig } from './schedule-config';
import {
  createWorkflow,
  deleteWorkflow,
  type StoredWorkflow,
  updateWorkflow,
  WORKFLOW,
  type WorkflowCreateInput,
  type WorkflowInput,
} from './workflow-store';

/**
 * Time-based triggers are Temporal Schedules, exactly one per TIME_BASED workflow (paused while its
 * trigger is disabled), id `schedule-<workflow id>`. A firing starts `scheduledLauncherWorkflow`
 * (workers/workflows/), whose one activity records and starts the run as the API does, with trigger
 * TIME_BASED and an actor of source SCHEDULER.
 */
export const SCHEDULE_ID_PREFIX = 'schedule-';
export const LAUNCHER_WORKFLOW = 'scheduledLauncherWorkflow';
/** Temporal appends `-<firing time>` to a scheduled workflow's id, so each firing has its own. */
export const LAUNCHER_ID_PREFIX = 'launch-';
/** How long the API waits for Temporal before answering 503. */
const SCHEDULE_CALL_TIMEOUT_MS = 10_000;
/** A schedule older than this with no workflow row is a leftover, not a save still committing. */
const LEFTOVER_MIN_AGE_MS = 2 * 60_000;

export const scheduleIdOf = (workflowId: string) => SCHEDULE_ID_PREFIX + workflowId;

/** Whom a scheduled run acts for: the user who last saved the schedule, or null for the owner. */
export interface RunAs {
  userId: string;
  credentialId: string;
  credentialType: CredentialType;
}

/** The launcher's input, carried by the Schedule's action. */
export interface ScheduledLaunchInput {
  accountId: string;
  workflowId: string;
  workspace: string;
  runAs: RunAs | null;
}

export interface ScheduledLaunchOutcome {
  /** The run started (or found again on a retry); null when there was nothing to run. */
  executionId: string | null;
  /** Why no run was started. */
  skipped: string | null;
}

/** The fields of a stored workflow its schedule follows. */
export type ScheduledWorkflow = Pick<
  StoredWorkflow,
  'id' | 'accountId' | 'workspace' | 'name' | 'triggerType' | 'triggerConfig' | 'triggerEnabled'
>;

/** One schedule of this service, as a list shows it (reconciliation compares the note). */
export interface ScheduleLine {
  workflowId: string;
  note: string;
  paused: boolean;
  /** When it fires next, soonest first (read with `state`; the listing leaves it out). */
  nextActionTimes?: Date[];
}

/** The Temporal Schedules of TIME_BASED workflows, behind an interface so api/ stays SDK-free. */
export interface WorkflowSchedules {
  /**
   * Makes the workflow's schedule match it: created, updated, paused or unpaused, or removed when its
   * trigger is not TIME_BASED. `runAs` null keeps the user an existing schedule acts for.
   */
  sync(workflow: ScheduledWorkflow, runAs: RunAs | null): Promise<void>;
  /** Removes the workflow's schedule; none there is fine. True when there was one to remove. */
  remove(workflowId: string): Promise<boolean>;
  /** Removes a schedule only if it is older than `minAgeMs`; true when removed. */
  removeIfOlderThan(workflowId: string, minAgeMs: number): Promise<boolean>;
  /** The schedules this service keeps on its task queue. */
  list(): Promise<ScheduleLine[]>;
  /** One schedule's state read directly (the listing is eventually consistent); null when none. */
  state(workflowId: string): Promise<ScheduleLine | null>;
}

class SchedulerUnavailable extends DomainError {
  constructor() {
    super(503, 'The workflow scheduler (Temporal) is unavailable; nothing was saved. Try again.');
  }
}

/**
 * The execution id of a scheduled firing, derived from the launcher's workflow id (unique per
 * firing): a retried launch finds its own execution again instead of starting a second run.
 */
export function scheduledExecutionId(launcherWorkflowId: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let n = BigInt('0x' + createHash('sha256').update(launcherWorkflowId).digest('hex'));
  let id = '';
  // 62^25 < 2^256: every character comes from the digest.
  for (let i = 0; i < 25; i += 1) {
    id += alphabet[Number(n % 62n)];
    n /= 62n;
  }
  return 'wfex_' + id;
}

/** What the schedule says it does, in the Temporal UI; reconciliation compares it too. */
export function scheduleNote(workflow: ScheduledWorkflow): string {
  const { cron, timezone } = parseScheduleConfig(workflow.triggerConfig);
  const paused = workflow.triggerEnabled ? '' : ' Paused: the trigger is disabled.';
  return `Runs workflow "${workflow.name}" (${workflow.id}) at "${cron}" ${timezone}.${paused}`;
}

const keyword = (name: string) => defineSearchAttributeKey(name, SearchAttributeType.KEYWORD);
// The attributes every run carries (run-input.ts SEARCH_ATTRIBUTES), so one UI query finds both.
const KEYS = {
  workflowId: keyword('PasWorkflowId'),
  workspace: keyword('PasWorkspace'),
  trigger: keyword('PasTrigger'),
  account: keyword('PasAccount'),
};

function searchAttributes(workflow: ScheduledWorkflow): TypedSearchAttributes {
  return new TypedSearchAttributes([
    { key: KEYS.workflowId, value: workflow.id },
    { key: KEYS.workspace, value: workflow.workspace },
    { key: KEYS.trigger, value: 'TIME_BASED' },
    { key: KEYS.account, value: workflow.accountId },
  ]);
}

function previousRunAs(previous: ScheduleDescription): RunAs | null {
  const args = previous.action.args as ScheduledLaunchInput[] | undefined;
  return args?.[0]?.runAs ?? null;
}

export function temporalWorkflowSchedules(client: Client, taskQueue: string): WorkflowSchedules {
  /** Temporal's own refusal of a spec is the client's mistake; anything else is an outage. */
  const guarded = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await client.withDeadline(Date.now() + SCHEDULE_CALL_TIMEOUT_MS, call);
    } catch (error) {
      if (error instanceof DomainError) throw error;
      if (error instanceof TypeError) {
        throw new InvalidInput(`trigger_config was refused by the scheduler: ${error.message}`);
      }
      throw Object.assign(new SchedulerUnavailable(), { cause: error });
    }
  };

  const schedule = (workflow: ScheduledWorkflow, runAs: RunAs | null) => {
    const { cron, timezone } = parseScheduleConfig(workflow.triggerConfig);
    const launch: ScheduledLaunchInput = {
      accountId: workflow.accountId,
      workflowId: workflow.id,
      workspace: workflow.workspace,
      runAs,
    };
    const action: ScheduleOptionsAction = {
      type: 'startWorkflow',
      workflowType: LAUNCHER_WORKFLOW,
      workflowId: LAUNCHER_ID_PREFIX + workflow.id,
      taskQueue,
      args: [launch],
      memo: { workflow_id: workflow.id, workflow_name: workflow.name, workspace: workflow.workspace },
      typedSearchAttributes: searchAttributes(workflow),
      // A launcher that cannot finish (no worker polling) gives way to the next firing.
      workflowExecutionTimeout: '30 minutes',
    };
    return {
      spec: { cronExpressions: [cron], timezone },
      action,
      policies: {
        // SKIP: a firing is dropped while the previous launcher is still open (workers or the
        // database down), so an outage never releases a burst of queued runs when it ends.
        overlap: ScheduleOverlapPolicy.SKIP,
        // Firings missed while Temporal itself was down are caught up only if at most an hour late.
        catchupWindow: '1 hour',
      },
      typedSearchAttributes: searchAttributes(workflow),
      state: { paused: !workflow.triggerEnabled, note: scheduleNote(workflow) },
    };
  };

  const remove = (workflowId: string) =>
    guarded(async () => {
      try {
        await client.schedule.getHandle(scheduleIdOf(workflowId)).delete();
        return true;
      } catch (error) {
        if (!(error instanceof ScheduleNotFoundError)) throw error;
        return false;
      }
    });

  return {
    async sync(workflow, runAs) {
      if (workflow.triggerType !== 'TIME_BASED') {
        await remove(workflow.id);
        return;
      }
      // Checked before any call, so a bad config is a 400 even with Temporal down.
      schedule(workflow, runAs);
      const scheduleId = scheduleIdOf(workflow.id);
      const handle = client.schedule.getHandle(scheduleId);
      const update = () => handle.update((previous) => schedule(workflow, runAs ?? previousRunAs(previous)));
      await guarded(async () => {
        try {
          await update();
        } catch (error) {
          if (!(error instanceof ScheduleNotFoundError)) throw error;
          try {
            await client.schedule.create({
              scheduleId,
              ...schedule(workflow, runAs),
              // Fixed at creation (Temporal cannot update a schedule's memo); the note follows renames.
              memo: {
                workflow_id: workflow.id,
                workflow_name: workflow.name,
                workspace: workflow.workspace,
                account: workflow.accountId,
                task_queue: taskQueue,
              },
            });
          } catch (raced) {
            // Another process created it meanwhile (reconciliation at start): bring it in line.
            if (!(raced instanceof ScheduleAlreadyRunning)) throw raced;
            await update();
          }
        }
      });
    },

    remove,

    async removeIfOlderThan(workflowId, minAgeMs) {
      return guarded(async () => {
        const handle = client.schedule.getHandle(scheduleIdOf(workflowId));
        try {
          const { info } = await handle.describe();
          if (Date.now() - info.createdAt.getTime() < minAgeMs) return false;
          await handle.delete();
          return true;
        } catch (error) {
          if (error instanceof ScheduleNotFoundError) return false;
          throw error;
        }
      });
    },

    async state(workflowId) {
      return guarded(async () => {
        try {
          const { state, info } = await client.schedule.getHandle(scheduleIdOf(workflowId)).describe();
          return {
            workflowId,
            note: state.note ?? '',
            paused: state.paused,
            nextActionTimes: info.nextActionTimes,
          };
        } catch (error) {
          if (error instanceof ScheduleNotFoundError) return null;
          throw error;
        }
      });
    },

    async list() {
      return guarded(async () => {
        const lines: ScheduleLine[] = [];
        for await (const summary of client.schedule.list()) {
          // Only this deployment's schedules: another one may share the namespace.
          if (!summary.scheduleId.startsWith(SCHEDULE_ID_PREFIX)) continue;
          if (summary.memo?.task_queue !== taskQueue) continue;
          lines.push({
            workflowId: summary.scheduleId.slice(SCHEDULE_ID_PREFIX.length),
            note: summary.state.note ?? '',
            paused: summary.state.paused,
          });
        }
        return lines;
      });
    },
  };
}

/** For a process that keeps no schedules (the benchmarks): every call fails, saying why. */
export function noWorkflowSchedules(reason: string): WorkflowSchedules {
  const refuse = () => Promise.reject(new Error(reason));
  return { sync: refuse, remove: refuse, removeIfOlderThan: refuse, list: refuse, state: refuse };
}

const runAsOf = (actor: Actor): RunAs => ({
  userId: actor.principal.userId,
  credentialId: actor.principal.credentialId,
  credentialType: actor.principal.credentialType,
});

/** The stored trigger type of a workflow, its row locked until the transaction ends. */
async function lockedTriggerType(db: Database, accountId: string, id: string): Promise<string | null> {
  const row = (await db('entities')
    .where({ account_id: accountId, kind: WORKFLOW.kind, id })
    .forUpdate()
    .first(db.raw("body->>'trigger_type' as trigger_type"))) as { trigger_type: string | null } | undefined;
  return row ? (row.trigger_type ?? 'MANUAL') : null;
}

/*
 * Saves and schedule changes go together: the row is written in a transaction, the schedule is
 * changed before it commits, and a Temporal failure rolls the row back (503, nothing saved, the
 * client retries). The row lock is held across the Temporal call, so two saves of one workflow
 * change its schedule in the order they change its row. The one gap left, a commit failing after
 * the schedule changed, is closed by the launcher (it reads the row at each firing) and by
 * `reconcileSchedules` at start. Workflows that are not and were not TIME_BASED never call Temporal.
 */

export async function createWorkflowWithSchedule(
  db: Database,
  schedules: WorkflowSchedules,
  actor: Actor,
  input: WorkflowCreateInput,
): Promise<StoredWorkflow> {
  return db.transaction(async (trx) => {
    const workflow = await createWorkflow(trx, actor, input);
    if (workflow.triggerType === 'TIME_BASED') await schedules.sync(workflow, runAsOf(actor));
    return workflow;
  });
}

export async function updateWorkflowWithSchedule(
  db: Database,
  schedules: WorkflowSchedules,
  actor: Actor,
  id: string,
  input: WorkflowInput,
): Promise<StoredWorkflow> {
  return db.transaction(async (trx) => {
    const before = await lockedTriggerType(trx, actor.principal.accountId, id);
    const workflow = await updateWorkflow(trx, actor, id, input);
    if (before === 'TIME_BASED' || workflow.triggerType === 'TIME_BASED') {
      await schedules.sync(workflow, runAsOf(actor));
    }
    return workflow;
  });
}

export async function deleteWorkflowWithSchedule(
  db: Database,
  schedules: WorkflowSchedules,
  actor: Actor,
  id: string,
  workspace: unknown,
): Promise<{ deleted: true; id: string; name: string }> {
  return db.transaction(async (trx) => {
    const before = await lockedTriggerType(trx, actor.principal.accountId, id);
    const deleted = await deleteWorkflow(trx, actor, id, workspace);
    if (before === 'TIME_BASED') await schedules.remove(id);
    return deleted;
  });
}

interface TimeBasedRow {
  account_id: string;
  id: string;
  workspace: string;
  name: string;
  trigger_type: string | null;
  trigger_config: Record<string, unknown> | null;
  trigger_enabled: boolean | null;
}

function scheduledWorkflowOf(row: TimeBasedRow): ScheduledWorkflow {
  return {
    id: row.id,
    accountId: row.account_id,
    workspace: row.workspace,
    name: row.name,
    triggerType: (row.trigger_type ?? 'MANUAL') as ScheduledWorkflow['triggerType'],
    triggerConfig: row.trigger_config ?? {},
    triggerEnabled: row.trigger_enabled ?? false,
  };
}

/** The trigger fields only: a definition (`workers`) can be large and is not needed here. */
function workflowRows(db: Database) {
  return db('entities')
    .where({ kind: WORKFLOW.kind })
    .select(
      'account_id',
      'id',
      'workspace',
      'name',
      db.raw("body->>'trigger_type' as trigger_type"),
      db.raw("body->'trigger_config' as trigger_config"),
      db.raw("(body->>'trigger_enabled')::boolean as trigger_enabled"),
    );
}

export interface ReconcileReport {
  unchanged: number;
  synced: number;
  removed: number;
  failed: Array<{ workflowId: string; message: string }>;
}

/**
 * Brings Temporal in line with the database: every TIME_BASED workflow gets its schedule, every
 * schedule of this task queue without one goes. Cheap: one query and one schedule listing; only
 * schedules whose note or paused state differs from the row are touched, each under its row lock
 * (so a save running meanwhile is never overwritten with older settings).
 */
export async function reconcileSchedules(
  db: Database,
  schedules: WorkflowSchedules,
): Promise<ReconcileReport> {
  const report: ReconcileReport = { unchanged: 0, synced: 0, removed: 0, failed: [] };
  const listed = new Map((await schedules.list()).map((line) => [line.workflowId, line]));
  const rows = (await workflowRows(db).whereRaw("body->>'trigger_type' = 'TIME_BASED'")) as TimeBasedRow[];
  const fail = (workflowId: string, error: unknown) =>
    report.failed.push({ workflowId, message: error instanceof Error ? error.message : String(error) });

  for (const row of rows) {
    const line = listed.get(row.id);
    listed.delete(row.id);
    try {
      const workflow = scheduledWorkflowOf(row);
      const matches = (seen: ScheduleLine | null | undefined) =>
        seen?.note === scheduleNote(workflow) && seen.paused === !workflow.triggerEnabled;
      // A listing line that differs may only lag behind a recent change: the schedule itself decides.
      if (matches(line) || matches(await schedules.state(row.id))) {
        report.unchanged += 1;
        continue;
      }
      await db.transaction(async (trx) => {
        const fresh = (await workflowRows(trx)
          .where({ account_id: row.account_id, id: row.id })
          .forUpdate()
          .first()) as TimeBasedRow | undefined;
        if (fresh) await schedules.sync(scheduledWorkflowOf(fresh), null);
        else await schedules.remove(row.id);
      });
      report.synced += 1;
    } catch (error) {
      fail(row.id, error);
    }
  }

  for (const workflowId of listed.keys()) {
    try {
      const removed = await db.transaction(async (trx) => {
        const fresh = (await workflowRows(trx).where({ id: workflowId }).forUpdate().first()) as
          TimeBasedRow | undefined;
        // Made TIME_BASED since the query above: the save that did it keeps its schedule.
        if (fresh?.trigger_type === 'TIME_BASED') return false;
        // The listing lags behind deletes: one already gone is not counted again.
        if (fresh) return schedules.remove(workflowId);
        // No row: perhaps a create still committing, which a young schedule may belong to.
        return schedules.removeIfOlderThan(workflowId, LEFTOVER_MIN_AGE_MS);
      });
      if (removed) report.removed += 1;
    } catch (error) {
      fail(workflowId, error);
    }
  }
  return report;
}
