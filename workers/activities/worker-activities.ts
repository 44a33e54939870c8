import { heartbeat } from '@temporalio/activity';
import type { Database } from '../../engine/db/database';
import {
  beginWorkerExecution,
  endWorkerExecution,
  endWorkflowExecution,
  type WorkflowExecutionRow,
  type WorkerExecutionRow,
} from '../../engine/workflows/execution-records';
import type { FinishRunInput, RunWorkerInput, RunWorkerOutput } from '../../engine/workflows/run-input';
import { runScript } from '../../plugins/sandbox/script-sandbox';

async function loadExecution(db: Database, id: string): Promise<WorkflowExecutionRow> {
  const row = (await db('workflow_executions').where({ id }).first()) as WorkflowExecutionRow | undefined;
  if (!row) throw new Error(`workflow execution ${id} is missing from the database`);
  return row;
}

async function previousResult(db: Database, id: string | null): Promise<unknown> {
  if (id === null) return null;
  const row = (await db('worker_executions').where({ id }).first()) as WorkerExecutionRow | undefined;
  if (!row) throw new Error(`worker execution ${id} is missing from the database`);
  return row.result;
}

/** Activities are verbs; each reads and writes PostgreSQL, so Temporal carries only ids. */
export function createWorkerActivities(db: Database) {
  return {
    async runWorker(input: RunWorkerInput): Promise<RunWorkerOutput> {
      const execution = await loadExecution(db, input.executionId);
      const { worker } = input;
      const inputs = await previousResult(db, input.previousWorkerExecutionId);
      const args = {
        workspace: execution.workspace,
        script_inputs: worker.script_inputs ?? {},
        inputs_info: input.previousWorkerExecutionId
          ? { previous_worker_execution_id: input.previousWorkerExecutionId }
          : {},
        worker_type: worker.type,
        parallel_info: { index: input.parallelIndex, length: -1 },
        worker_id: worker.id,
        workflow_id: execution.workflow_id,
        workflow_execution_id: execution.id,
        parameters: execution.parameters,
        inputs,
      };
      const record = await beginWorkerExecution(db, {
        execution,
        workerId: worker.id,
        workerName: worker.name,
        workerType: worker.type,
        parallelIndex: input.parallelIndex,
        inputParams: {
          script_inputs: args.script_inputs,
          parameters: worker.type === 'STARTER' ? execution.parameters : {},
        },
      });
      heartbeat();
      if (!worker.script) {
        // Without a script the starter hands on the run parameters and the ender the last result.
        const result = worker.type === 'STARTER' ? execution.parameters : inputs;
        await endWorkerExecution(db, record.id, {
          status: 'COMPLETED',
          result,
          errorMessage: null,
          cpuTimeSeconds: 0,
          durationSeconds: 0,
          logs: [],
        });
        return { workerExecutionId: record.id, status: 'COMPLETED', errorMessage: null };
      }
      const outcome = await runScript({ source: worker.script, args });
      const errorMessage = outcome.ok ? null : `${outcome.error.kind}: ${outcome.error.message}`;
      await endWorkerExecution(db, record.id, {
        status: outcome.ok ? 'COMPLETED' : 'ERROR',
        result: outcome.ok ? outcome.result : { error: errorMessage },
        errorMessage,
        cpuTimeSeconds: outcome.cpuTimeMs / 1000,
        durationSeconds: outcome.wallTimeMs / 1000,
        logs: outcome.logs,
      });
      return { workerExecutionId: record.id, status: outcome.ok ? 'COMPLETED' : 'ERROR', errorMessage };
    },

    async finishRun(input: FinishRunInput): Promise<void> {
      await endWorkflowExecution(db, input.executionId, {
        runStatus: input.runStatus,
        enderWorkerExecutionId: input.enderWorkerExecutionId,
      });
    },
  };
}

export type WorkerActivities = ReturnType<typeof createWorkerActivities>;
