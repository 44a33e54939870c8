import type { RunFailure, Trigger } from './execution-records';
import type { WorkerNode, WorkflowPlan } from './workflow-definition';

/**
 * The input of one Temporal run of the interpreter workflow. The definition is copied in, so
 * editing a stored workflow never changes (or breaks the replay of) a run already started.
 * Results travel through PostgreSQL by id, never in Temporal payloads.
 */
export interface InterpreterInput {
  executionId: string;
  accountId: string;
  workflowId: string;
  workflowName: string;
  workspace: string;
  trigger: Trigger;
  workers: WorkerNode[];
  plan: WorkflowPlan;
  /**
   * Workers whose steps run as Temporal local activities (engine/workflows/local-steps.ts), decided
   * at start. Absent in runs started by older code: every step is then a regular activity.
   */
  localSteps?: string[];
  /** A retry's failed execution (shown in the run's memo as `retry_of`); the workflow ignores it. */
  retryOf?: string;
}

/**
 * Where a worker's input comes from, by id: nothing (the STARTER), the stored result of an earlier
 * worker execution (`item`: one element of a FORKER's list), or a BARRIER's ordered branch outputs.
 */
export type InputRef =
  | { kind: 'none' }
  | { kind: 'result'; workerExecutionId: string; workerId: string; item: number | null }
  | { kind: 'join'; parts: InputRef[] };

/** `{index, length}` of a forked branch; both -1 outside a fork. */
export interface ParallelInfo {
  index: number;
  length: number;
}

export interface RunWorkerInput {
  executionId: string;
  worker: WorkerNode;
  parallel: ParallelInfo;
  inputs: InputRef;
  /**
   * The ENDER of the main path: a COMPLETED outcome also closes the run as SUCCEEDED in the same
   * activity, saving the interpreter a separate finishRun round trip. Absent in runs started by
   * interpreter code older than the `ender-closes-run` patch, which still call finishRun.
   */
  closesRun?: boolean;
}

export interface RunWorkerOutput {
  workerExecutionId: string;
  status: 'COMPLETED' | 'ERROR';
  errorMessage: string | null;
  /** A CONDITIONAL's decision. */
  condition: boolean | null;
  /** How many branches a FORKER's list makes. */
  branchCount: number | null;
  /** The run's status after the step when the step closed the run (`closesRun`); absent otherwise. */
  runStatus?: 'SUCCEEDED' | 'FAILED';
}

export interface FinishRunInput {
  executionId: string;
  runStatus: 'SUCCEEDED' | 'FAILED';
  enderWorkerExecutionId: string | null;
  failure: RunFailure | null;
}

/** The workflow type every new run starts (workers/workflows/interpreter-workflow.ts). */
export const INTERPRETER_WORKFLOW = 'interpreterWorkflowV2';
/** Every interpreter type a run may have: runs started by older code are `interpreterWorkflow`. */
export const INTERPRETER_WORKFLOWS = ['interpreterWorkflow', INTERPRETER_WORKFLOW] as const;

/** Search attributes on every run, so an operator finds it in the Temporal UI (all Keyword). */
export const SEARCH_ATTRIBUTES = {
  PasWorkflowId: 'Keyword',
  PasExecutionId: 'Keyword',
  PasWorkspace: 'Keyword',
  PasTrigger: 'Keyword',
  PasRunStatus: 'Keyword',
  PasAccount: 'Keyword',
} as const;
