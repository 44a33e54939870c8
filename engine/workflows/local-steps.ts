import type { Database } from '../platform/database';
import { SYSTEM_ACCOUNT_ID } from '../identity/system-account';
import { isPythonRuntime, LOCAL_STEP_MAX_SECONDS, WORKER_TEMPLATE } from '../kinds/worker-template';
import type { WorkerNode } from './workflow-definition';

/**
 * The longest time limit (seconds) a template may set and still run as a Temporal local activity.
 *
 * A local activity runs inside the workflow task, so consecutive short steps need no task round
 * trip; but it has no heartbeat, and a worker that dies mid-step is noticed only when the workflow
 * task times out (10 s, Temporal's default), after which the step runs again elsewhere (the SDK-call
 * journal answers the calls the dead attempt made). 10 s is that timeout: a step allowed at most
 * that long ends within one workflow task even at its limit, so a lost worker costs no more time
 * than a regular step's 20 s heartbeat timeout would, and the task is not held open far beyond its
 * timeout by the SDK's task heartbeats. Steps allowed longer stay regular activities, with
 * heartbeats, on any worker of the task queue.
 */
export { LOCAL_STEP_MAX_SECONDS };

/**
 * The workers of a definition that run as local activities: inline scripts (glue code, short by
 * default; one that runs longer than the workflow task timeout keeps its task open through the
 * SDK's task heartbeats), workers without a script (they hand on their input), and templates whose
 * own `timeout_seconds` is at most LOCAL_STEP_MAX_SECONDS. Python steps (inline or a template) are
 * never local: each runs a sandboxed process of its own, as a regular activity with heartbeats. Decided when the run starts and carried in
 * its input, so a template edited meanwhile never changes how a started run replays. A template
 * that no longer exists is left a regular activity (its step fails saying so).
 */
export async function localStepsOf(
  db: Database,
  accountId: string,
  workers: WorkerNode[],
): Promise<string[]> {
  const templateIds = [
    ...new Set(workers.map((worker) => worker.template_id).filter((id): id is string => !!id)),
  ];
  const limits = new Map<string, number | null>();
  if (templateIds.length > 0) {
    const rows = (await db('entities')
      .where({ kind: WORKER_TEMPLATE.kind })
      .whereIn('account_id', [accountId, SYSTEM_ACCOUNT_ID])
      .whereIn('id', templateIds)
      // The account's own template wins over a built-in of the same id, as when the step runs.
      .orderByRaw('account_id = ? asc', [accountId])
      .select(
        'id',
        db.raw("body->'timeout_seconds' as timeout_seconds"),
        db.raw("body->>'script_runtime' as script_runtime"),
      )) as Array<{
      id: string;
      timeout_seconds: number | null;
      script_runtime: string | null;
    }>;
    for (const row of rows) {
      // Python steps are regular activities: a process of their own, watched by heartbeats.
      if (isPythonRuntime(row.script_runtime)) limits.set(row.id, null);
      else limits.set(row.id, typeof row.timeout_seconds === 'number' ? row.timeout_seconds : null);
    }
  }
  return workers
    .filter((worker) => {
      if (isPythonRuntime(worker.script_runtime)) return false;
      if (!worker.template_id) return true;
      const limit = limits.get(worker.template_id);
      // Without a limit of its own a template has the worker process's (30 s by default): regular.
      return typeof limit === 'number' && limit <= LOCAL_STEP_MAX_SECONDS;
    })
    .map((worker) => worker.id);
}
