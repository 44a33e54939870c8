import { proxyActivities } from '@temporalio/workflow';
import type { ScriptTrialInput, ScriptTrialOutcome } from '../../engine/workflows/script-trial';
import type { WorkerActivities } from '../activities/worker-activities';

// One attempt: a trial that fails is answered as it failed, never run twice (its SDK calls take
// effect). The sandbox's own limits (at most 600 s) end the script first.
const { tryScript } = proxyActivities<WorkerActivities>({
  startToCloseTimeout: '630 seconds',
  heartbeatTimeout: '20 seconds',
  retry: { maximumAttempts: 1 },
});

/** "Try it" from the web console: one script run once in this worker's sandbox (engine/workflows/script-trial.ts). */
export async function scriptTrialWorkflow(input: ScriptTrialInput): Promise<ScriptTrialOutcome> {
  return tryScript(input);
}
