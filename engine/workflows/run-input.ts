import type { Trigger } from './execution-records';
import type { WorkerNode } from './workflow-definition';

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
}

export interface RunWorkerInput {
  executionId: string;
  worker: WorkerNode;
  parallelIndex: number;
  /** The worker execution whose result feeds this worker; null for the starter. */
  previousWorkerExecutionId: string | null;
}

export interface RunWorkerOutput {
  workerExecutionId: string;
  status: 'COMPLETED' | 'ERROR';
  errorMessage: string | null;
}

export interface FinishRunInput {
  executionId: string;
  runStatus: 'SUCCEEDED' | 'FAILED';
  enderWorkerExecutionId: string | null;
}

export const INTERPRETER_WORKFLOW = 'interpreterWorkflow';

/** Search attributes on every run, so an operator finds it in the Temporal UI (all Keyword). */
export const SEARCH_ATTRIBUTES = {
  PasWorkflowId: 'Keyword',
  PasExecutionId: 'Keyword',
  PasWorkspace: 'Keyword',
  PasTrigger: 'Keyword',
  PasRunStatus: 'Keyword',
  PasAccount: 'Keyword',
} as const;
