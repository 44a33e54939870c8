import type { Principal } from '../platform/principal';

/**
 * "Try it" (the web console, POST /v2/worker_templates/try): one script run once in the sandbox of
 * a worker process, with a step's limits, without a workflow run or any record of a step. The
 * worker runs it (workers/activities/worker-activities.ts, `tryScript`) as a short Temporal
 * workflow, so the sandbox stays where the scripts run.
 */
export interface ScriptTrialInput {
  /** Who tries it: SDK calls act as this user, audited as the web app's. */
  principal: Principal;
  workspace: string;
  /** A published template of the account (or a built-in); or else the draft below. */
  templateId: string | null;
  /** A draft's source and runtime (JavaScript or TypeScript). */
  script: string | null;
  scriptRuntime: 'javascript' | 'typescript' | null;
  scriptInputs: Record<string, unknown>;
  /** What the step would receive as `args.inputs` (the previous step's result). */
  inputs: unknown;
}

export interface ScriptTrialOutcome {
  status: 'COMPLETED' | 'ERROR';
  result: unknown;
  error_message: string | null;
  logs: unknown[];
  /** Wall-clock and CPU seconds of the script. */
  duration: number;
  cpu_time: number;
}

/** Temporal's name for the workflow that runs a trial (workers/workflows/script-trial-workflow.ts). */
export const SCRIPT_TRIAL_WORKFLOW = 'scriptTrialWorkflow';
