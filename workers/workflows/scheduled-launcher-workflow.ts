import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ScheduledLaunchInput, ScheduledLaunchOutcome } from '../../engine/workflows/workflow-schedules';
import type { TriggerActivities } from '../activities/trigger-activities';

// Bounded retries (about five minutes): with the SKIP overlap policy a launcher that hangs on would
// make the schedule skip its next firings. The activity records and starts one run (well under a
// second); a 15-second attempt timeout lets a launch whose worker process died (kill -9) be retried
// on another within the minute, instead of holding the launcher past the next firing.
const { launchScheduledRun } = proxyActivities<TriggerActivities>({
  startToCloseTimeout: '15 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 12,
  },
});

/**
 * What a TIME_BASED workflow's Schedule starts at each firing. Temporal names it
 * `launch-<workflow id>-<firing time>`; that id is handed to the one activity, which derives the
 * execution id from it, so a retried activity never makes a second run. Deterministic: the work
 * (reading the workflow, recording and starting the run) is the activity's.
 */
export async function scheduledLauncherWorkflow(
  input: ScheduledLaunchInput,
): Promise<ScheduledLaunchOutcome> {
  return launchScheduledRun({ ...input, launcherWorkflowId: workflowInfo().workflowId });
}
