import type { RunDefinition } from './execution-records';
import type { InterpreterInput } from './run-input';
import type { WorkflowSchedules } from './workflow-schedules';
import type { ScriptTrialInput, ScriptTrialOutcome } from './script-trial';

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
  /** Runs one script once in a worker's sandbox ("Try it"); absent where no worker is reachable. */
  tryScript?(input: ScriptTrialInput): Promise<ScriptTrialOutcome>;
}
