import { sandboxLimitKills, stepDuration } from '../../engine/platform/metrics';
import {
  activityInfo,
  CancelledFailure,
  cancellationSignal,
  heartbeat as heartbeatActivity,
} from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { SimulationBackend } from '../../calc';
import type { Actor } from '../../engine/platform/principal';
import type { Database } from '../../engine/platform/database';
import { type EntityRow, findEntity, toRecord } from '../../engine/store/entity-store';
import { NotFound } from '../../engine/platform/errors';
import {
  beginStep,
  endStepClosingRun,
  endWorkerExecution,
  endWorkflowExecution,
  restartWorkerExecution,
  type WorkerExecutionRow,
  type WorkflowExecutionRow,
} from '../../engine/workflows/execution-records';
import type {
  FinishRunInput,
  InputRef,
  RunWorkerInput,
  RunWorkerOutput,
} from '../../engine/workflows/run-input';
import { scriptInputProblem, withDefaults } from '../../engine/workflows/script-inputs';
import type { WorkerNode } from '../../engine/workflows/workflow-definition';
import { conditionOf, forkItems } from '../../engine/workflows/worker-results';
import {
  type FormInput,
  isPythonRuntime,
  type PythonRuntime,
  readWorkerTemplate,
  templateSandboxLimits,
  type TemplateSandboxLimits,
  WORKER_TEMPLATE,
} from '../../engine/kinds/worker-template';
import {
  resolveLimits,
  runScript,
  type SandboxLimits,
  type ScriptOutcome,
} from '../../plugins/sandbox/script-sandbox';
import type { WorkflowRunner } from '../../engine/workflows/workflow-runner';
import type { ScriptTrialInput, ScriptTrialOutcome } from '../../engine/workflows/script-trial';
import { runPythonScript } from '../../plugins/sandbox/python-sandbox';
import {
  DEFAULT_ENVIRONMENT_ROOT,
  ensureEnvironment,
} from '../../engine/worker-templates/python-environments';
import { transpileTypeScript } from '../../engine/kinds/script-transpiler';
import { createSdkBridge } from './sdk-bridge';
import { everyskSdkChannel } from './sdk-channel';
import { dropJournal, SdkJournal } from './sdk-journal';
import { type OutboundSettings, StepOutbound } from '../../engine/integrations/outbound-calls';
import { SecretsKeyring } from '../../engine/secrets/master-key';

export interface WorkerActivityOptions {
  /** The service's base URL (reports' views carry absolute addresses). */
  publicUrl: string;
  /** Sandbox limits for every script this process runs; the sandbox's defaults otherwise. */
  sandboxLimits?: Partial<SandboxLimits>;
  /**
   * The most a template's own limits (memory_limit_mb, timeout_seconds) may raise them to; the
   * publishing bounds otherwise.
   */
  sandboxCeiling?: Required<TemplateSandboxLimits>;
  /** Where scripts' calculations simulate (chosen at start-up); the engine's reference otherwise. */
  simulation?: SimulationBackend;
  /** Where the Python templates' virtualenvs live (DATA_DIR/python-environments). */
  pythonEnvironments?: string;
  /** Starts runs for a step's everysk.sdk Workflow.run; without one, that call says it is not offered. */
  workflows?: WorkflowRunner | null;
  /**
   * Scripts' outbound calls and secrets (sdk.request, sdk.sendEmail, sdk.secret): the master keys and
   * the egress policy. Without it those calls say no master key is configured and reach nothing
   * private.
   */
  outbound?: OutboundSettings;
}

/** Outbound settings when a caller gives none: no key, public addresses only. */
const NO_OUTBOUND: OutboundSettings = {
  keyring: SecretsKeyring.unavailable('this worker was started without a master key'),
  policy: { privateAllow: [], maxResponseBytes: 10 * 1024 * 1024, extraCa: null },
};

/** The sandbox outcomes that are a limit stopping the step (pas_sandbox_limit_kills_total). */
const LIMIT_KINDS: ReadonlySet<string> = new Set(['timeout', 'memory', 'output']);
/** A quarter of the interpreter's 20-second heartbeat timeout, so a long script never looks lost. */
const HEARTBEAT_INTERVAL_MS = 5_000;

/**
 * Aborts when the workflow cancelled this step (its run failed elsewhere), not for the other
 * reasons an activity is cancelled: a worker shutting down lets its steps finish (or be retried).
 */
function cancelledByRun(): AbortSignal {
  const step = cancellationSignal();
  const run = new AbortController();
  const onAbort = () => {
    const reason: unknown = step.reason;
    if (reason instanceof CancelledFailure && reason.message === 'CANCELLED') run.abort(reason);
  };
  if (step.aborted) onAbort();
  else step.addEventListener('abort', onAbort, { once: true });
  return run.signal;
}

/** Local activities (short steps) have no heartbeat: their workflow task's timeout watches them. */
function heartbeat(): void {
  if (!activityInfo().isLocal) heartbeatActivity();
}

function sourcesOf(
  ref: InputRef,
): Array<{ worker_id: string; worker_execution_id: string; item: number | null }> {
  if (ref.kind === 'none') return [];
  if (ref.kind === 'result') {
    return [{ worker_id: ref.workerId, worker_execution_id: ref.workerExecutionId, item: ref.item }];
  }
  return ref.parts.flatMap(sourcesOf);
}

/** `inputs_info`: which worker executions (and which item of a FORKER's list) made `inputs`. */
function inputsInfo(ref: InputRef) {
  return { joined: ref.kind === 'join', sources: sourcesOf(ref) };
}

/** Assembles an input from the stored results it is made of (`results`: this run's, by id). */
function assembleInputs(ref: InputRef, results: Map<string, unknown>): unknown {
  const value = (part: InputRef): unknown => {
    if (part.kind === 'none') return null;
    if (part.kind === 'join') return part.parts.map(value);
    if (!results.has(part.workerExecutionId)) {
      throw new Error(`worker execution ${part.workerExecutionId} is missing from the database`);
    }
    const result = results.get(part.workerExecutionId);
    if (part.item === null) return result;
    const fork = forkItems(result);
    if ('error' in fork) throw new Error(`worker execution ${part.workerExecutionId} holds no list to fork`);
    return fork.items[part.item];
  };
  return value(ref);
}

/** What steers the run, read back from a stored result (also for a retried, already-ended step). */
function steering(
  worker: WorkerNode,
  result: unknown,
): { condition: boolean | null; branchCount: number | null; error?: string } {
  if (worker.type === 'FORKER') {
    const fork = forkItems(result);
    return 'error' in fork
      ? { condition: null, branchCount: null, error: fork.error }
      : { condition: null, branchCount: fork.items.length };
  }
  if (worker.type === 'CONDITIONAL') {
    const decision = conditionOf(result);
    return 'error' in decision
      ? { condition: null, branchCount: null, error: decision.error }
      : { condition: decision.condition, branchCount: null };
  }
  return { condition: null, branchCount: null };
}

function outputOf(worker: WorkerNode, row: WorkerExecutionRow): RunWorkerOutput {
  const steer =
    row.status === 'COMPLETED' ? steering(worker, row.result) : { condition: null, branchCount: null };
  return {
    workerExecutionId: row.id,
    status: row.status === 'COMPLETED' ? 'COMPLETED' : 'ERROR',
    errorMessage: row.error_message,
    condition: steer.condition,
    branchCount: steer.branchCount,
  };
}

/** The worker acts for whoever started the run, as source WORKER, naming the run in the trail. */
function workerActor(execution: WorkflowExecutionRow): Actor {
  return {
    principal: {
      accountId: execution.account_id,
      userId: execution.user_id ?? '',
      userEmail: 'System',
      isOwner: false,
      permissions: [],
      credentialId: execution.credential_id ?? '',
      credentialType: execution.credential_type ?? 'API_KEY',
    },
    source: 'WORKER',
    ip: null,
    userAgent: null,
    workflow: { id: execution.workflow_id, name: execution.workflow_name, executionId: execution.id },
  };
}

interface Program {
  source: string;
  entryPoint: string;
  /** python3.11 for a Python step (with its template's virtualenv, if it has requirements). */
  python: { runtime: PythonRuntime; environment: { hash: string; requirements: string[] } | null } | null;
  formInputs: FormInput[] | null;
  /** The template's own sandbox limits; null for an inline script. */
  limits: Pick<ReturnType<typeof readWorkerTemplate>, 'memoryLimitMb' | 'timeoutSeconds'> | null;
}

/** The script a worker runs: its template's (TypeScript transpiled) or its inline one; null for none. */
async function programOf(
  db: Database,
  accountId: string,
  worker: WorkerNode,
  /** The template's row when the caller read it already (null: not found). */
  templateRow?: EntityRow | null,
): Promise<Program | { error: string } | null> {
  if (worker.template_id) {
    const missing = { error: `Worker template ${worker.template_id} no longer exists.` };
    let record;
    if (templateRow !== undefined) {
      if (templateRow === null) return missing;
      record = toRecord(templateRow);
    } else {
      try {
        record = await findEntity(db, accountId, WORKER_TEMPLATE, worker.template_id);
      } catch (error) {
        if (error instanceof NotFound) return missing;
        throw error;
      }
    }
    const template = readWorkerTemplate(record);
    if (isPythonRuntime(template.scriptRuntime)) {
      if (template.containerStatus !== 'SUCCESS') {
        return {
          error:
            template.containerStatus === 'PENDING'
              ? `Worker template ${template.id} (${template.name}) is not ready: its Python environment is still being built (container_status PENDING); run it again once it is SUCCESS.`
              : `Worker template ${template.id} (${template.name}) cannot run: its Python environment failed to build (container_status ERROR); its build_log_tail says why.`,
        };
      }
      return {
        source: template.script,
        entryPoint: template.scriptEntryPoint,
        python: {
          runtime: template.scriptRuntime,
          environment: template.environmentHash
            ? { hash: template.environmentHash, requirements: template.requirements }
            : null,
        },
        formInputs: template.formInputs,
        limits: { memoryLimitMb: template.memoryLimitMb, timeoutSeconds: template.timeoutSeconds },
      };
    }
    // TypeScript is transpiled when published; rows stored before that are transpiled here.
    let source = template.compiledScript ?? template.script;
    if (template.scriptRuntime === 'typescript' && template.compiledScript === null) {
      const transpiled = transpileTypeScript(`${template.id}@${record.version}`, template.script);
      if ('error' in transpiled) return transpiled;
      source = transpiled.code;
    }
    return {
      source,
      entryPoint: template.scriptEntryPoint,
      python: null,
      formInputs: template.formInputs,
      limits: { memoryLimitMb: template.memoryLimitMb, timeoutSeconds: template.timeoutSeconds },
    };
  }
  if (worker.script) {
    const python = isPythonRuntime(worker.script_runtime)
      ? { runtime: worker.script_runtime, environment: null }
      : null;
    return { source: worker.script, entryPoint: 'main', python, formInputs: null, limits: null };
  }
  return null;
}

/**
 * The outcome with every secret value the step used replaced by `[secret:NAME]`: its result, its
 * error and its log lines are what gets stored, shown and handed to Temporal.
 */
function withoutSecrets(step: StepOutbound, outcome: ScriptOutcome): ScriptOutcome {
  const redactor = step.redactor;
  if (redactor.size === 0) return outcome;
  const logs = outcome.logs.map((line) => ({ ...line, message: redactor.text(line.message) }));
  return outcome.ok
    ? { ...outcome, logs, result: redactor.value(outcome.result) }
    : { ...outcome, logs, error: { ...outcome.error, message: redactor.text(outcome.error.message) } };
}

function describeFailure(outcome: Extract<ScriptOutcome, { ok: false }>): string {
  return `${outcome.error.kind}: ${outcome.error.message}`;
}

/** Activities are verbs; each reads and writes PostgreSQL, so Temporal carries only ids. */
export function createWorkerActivities(db: Database, options: WorkerActivityOptions) {
  return {
    /**
     * Runs one worker of one branch. A script's own failure (error, timeout, memory, bad output) is
     * an ERROR outcome, not an exception: retrying would fail the same way. Exceptions are for the
     * infrastructure (database, a lost process), which Temporal retries with backoff.
     */
    async runWorker(input: RunWorkerInput): Promise<RunWorkerOutput> {
      const { worker, parallel } = input;
      const stored = worker.script_inputs;
      // One statement: the run's row, the step's row created (or found again by a retry), the
      // results its input is made of, and its template.
      const start = await beginStep(db, {
        executionId: input.executionId,
        workerId: worker.id,
        workerName: worker.name,
        workerType: worker.type,
        parallelIndex: parallel.index,
        inputParams: {
          script_inputs: stored,
          inputs_info: inputsInfo(input.inputs),
          parallel_info: parallel,
        },
        inputIds: [...new Set(sourcesOf(input.inputs).map((source) => source.worker_execution_id))],
        templateId: worker.template_id ?? null,
      });
      const execution = start.execution;
      if (!execution) throw new Error(`workflow execution ${input.executionId} is missing from the database`);
      if (execution.run_status !== 'RUNNING') {
        // A retried ENDER that had already closed the run (the process died before Temporal heard
        // back) answers what it recorded.
        const closedBy = execution.ender_worker_execution_id;
        if (input.closesRun && input.worker.type === 'ENDER' && closedBy) {
          const row =
            start.row?.id === closedBy
              ? start.row
              : ((await db('worker_executions').where({ id: closedBy }).first()) as
                  WorkerExecutionRow | undefined);
          if (row && row.worker_id === input.worker.id) {
            return {
              ...outputOf(input.worker, row),
              runStatus: execution.run_status === 'FAILED' ? 'FAILED' : 'SUCCEEDED',
            };
          }
        }
        throw ApplicationFailure.nonRetryable(`Workflow execution ${execution.id} has already ended.`);
      }
      if (!start.row) throw new Error(`worker execution of ${worker.id} could not be recorded`);
      const begun = { row: start.row, fresh: start.fresh };
      // An attempt that died mid-script: this one starts the script again.
      if (!begun.fresh && begun.row.status === 'RUNNING') await restartWorkerExecution(db, begun.row.id);
      /**
       * The main path's ENDER closes the run when its step COMPLETED (`closesRun`): no worker can
       * still be running then (branches end at their BARRIER before the run goes on), so SUCCEEDED
       * is final. Idempotent: an ended run is left as it is, and its status is what is answered.
       */
      const closing = (status: 'COMPLETED' | 'ERROR') =>
        input.closesRun === true && worker.type === 'ENDER' && status === 'COMPLETED';
      async function closeRun(output: RunWorkerOutput): Promise<RunWorkerOutput> {
        if (!closing(output.status)) return output;
        const closed = await endWorkflowExecution(db, execution!.id, {
          runStatus: 'SUCCEEDED',
          enderWorkerExecutionId: output.workerExecutionId,
          failure: null,
        });
        return { ...output, runStatus: closed.run_status === 'FAILED' ? 'FAILED' : 'SUCCEEDED' };
      }

      // A retry after the step had ended (the process died before Temporal heard back) hands back
      // the recorded outcome instead of running the script, and its side effects, again.
      if (!begun.fresh && begun.row.status !== 'RUNNING') {
        return closeRun(outputOf(worker, begun.row));
      }
      const record = begun.row;
      heartbeat();
      let journal: SdkJournal | null = null;

      const end = async (
        status: 'COMPLETED' | 'ERROR',
        result: unknown,
        errorMessage: string | null,
        measured: { cpuTimeMs: number; wallTimeMs: number; logs: unknown } = {
          cpuTimeMs: 0,
          wallTimeMs: 0,
          logs: [],
        },
      ): Promise<RunWorkerOutput> => {
        let finalStatus = status;
        let message = errorMessage;
        let steer: ReturnType<typeof steering> = { condition: null, branchCount: null };
        if (status === 'COMPLETED') {
          steer = steering(worker, result);
          if (steer.error !== undefined) {
            finalStatus = 'ERROR';
            message = steer.error;
          }
        }
        const output: RunWorkerOutput = {
          workerExecutionId: record.id,
          status: finalStatus,
          errorMessage: message,
          condition: finalStatus === 'COMPLETED' ? steer.condition : null,
          branchCount: finalStatus === 'COMPLETED' ? steer.branchCount : null,
        };
        const measures = {
          cpuTimeSeconds: measured.cpuTimeMs / 1000,
          durationSeconds: measured.wallTimeMs / 1000,
          logs: measured.logs,
        };
        // The main path's ENDER that COMPLETED ends its row and closes the run together.
        const closed = closing(finalStatus)
          ? await endStepClosingRun(db, execution!.id, record.id, { result, ...measures })
          : null;
        if (!closed) {
          await endWorkerExecution(db, record.id, {
            status: finalStatus,
            result: finalStatus === 'COMPLETED' ? result : { error: message },
            errorMessage: message,
            ...measures,
          });
        }
        // Ended: a retry answers the recorded outcome and never runs the script again. A fresh
        // execution whose script made no SDK call has no journal rows to drop.
        if (!begun.fresh || (journal?.calls ?? 0) > 0) await dropJournal(db, record.id);
        if (!closed) return output;
        return { ...output, runStatus: closed.run.run_status === 'FAILED' ? 'FAILED' : 'SUCCEEDED' };
      };

      const inputs = assembleInputs(input.inputs, start.results);
      const program = await programOf(db, execution.account_id, worker, start.template);
      if (program !== null && 'error' in program) return end('ERROR', null, program.error);
      let scriptInputs = program?.formInputs ? withDefaults(program.formInputs, stored) : stored;
      // The run's parameters (a webhook's body and date, say) are the STARTER's inputs too.
      if (worker.type === 'STARTER') scriptInputs = { ...scriptInputs, ...execution.parameters };
      if (program?.formInputs) {
        const problem = scriptInputProblem(program.formInputs, scriptInputs, {
          requireMandatory: true,
          allowUnknown: worker.type === 'STARTER',
        });
        if (problem !== null) return end('ERROR', null, `Invalid script inputs: ${problem}.`);
      }
      if (program === null) {
        // Without a script the STARTER hands on its inputs, and the others their input.
        return end('COMPLETED', worker.type === 'STARTER' ? scriptInputs : inputs, null);
      }

      const args = {
        workspace: execution.workspace,
        script_inputs: scriptInputs,
        inputs_info: inputsInfo(input.inputs),
        worker_type: worker.type,
        parallel_info: parallel,
        worker_id: worker.id,
        worker_execution_id: record.id,
        workflow_id: execution.workflow_id,
        workflow_execution_id: execution.id,
        parameters: execution.parameters,
        inputs,
      };
      // Calls an earlier attempt of this execution made (its process died mid-script) answer from
      // the journal instead of taking effect twice.
      // (A fresh execution, just created by this attempt, has none: no read.)
      journal = begun.fresh ? SdkJournal.empty(db, record.id) : await SdkJournal.open(db, record.id);
      // The step's secrets and outbound calls; every value it reads is kept out of what it leaves.
      const step = new StepOutbound(
        db,
        options.outbound ?? NO_OUTBOUND,
        workerActor(execution),
        execution.workspace,
        worker.name,
        execution.id,
      );
      journal.redact = (value) => step.redactor.value(value);
      const bridge = createSdkBridge(
        {
          db,
          actor: workerActor(execution),
          workspace: execution.workspace,
          publicUrl: options.publicUrl,
          simulation: options.simulation,
          outbound: step,
        },
        journal,
      );
      const beat = setInterval(() => heartbeat(), HEARTBEAT_INTERVAL_MS);
      let outcome: ScriptOutcome;
      const limits = program.limits
        ? {
            ...options.sandboxLimits,
            ...templateSandboxLimits(program.limits, options.sandboxLimits ?? {}, options.sandboxCeiling),
          }
        : options.sandboxLimits;
      try {
        if (program.python) {
          // A template whose environment was built on another machine is built here (same hash,
          // same requirements) before its first step runs on this one.
          let venvDir: string | null = null;
          const environment = program.python.environment;
          if (environment) {
            const built = await ensureEnvironment(
              options.pythonEnvironments ?? DEFAULT_ENVIRONMENT_ROOT,
              program.python.runtime,
              environment.requirements,
              environment.hash,
            );
            if (!built.ok) {
              return end(
                'ERROR',
                null,
                `The template's Python environment failed to build here: ${built.log}`,
              );
            }
            venvDir = built.dir;
          }
          // everysk-lib's own SDK layer (everysk.sdk) reaches the service through the step's channel.
          const everysk = everyskSdkChannel(
            { db, workflows: options.workflows ?? null, publicUrl: options.publicUrl },
            workerActor(execution),
            record.id,
            resolveLimits(limits).maxInputBytes,
          );
          outcome = await runPythonScript({
            source: program.source,
            entryPoint: program.entryPoint,
            runtime: program.python.runtime,
            venvDir,
            args,
            limits,
            bridge,
            routes: everysk.routes,
            environment: everysk.environment,
            signal: cancelledByRun(),
          });
        } else {
          outcome = await runScript({
            source: program.source,
            entryPoint: program.entryPoint,
            args,
            limits,
            bridge,
            signal: cancelledByRun(),
          });
        }
      } finally {
        clearInterval(beat);
      }
      // The run gave up on this step (another branch failed): the step records nothing of its own;
      // the run's close marks it stopped. A local step hears of it at once, a regular one at its
      // next heartbeat.
      if (!outcome.ok && outcome.error.kind === 'cancelled') {
        throw new CancelledFailure('The step was cancelled: its run stopped it.');
      }
      // The step's call records and journal rows are written before its own end is.
      await step.settle();
      await journal.settle();
      outcome = withoutSecrets(step, { ...outcome, logs: journal.withLogs([...outcome.logs, ...step.logs]) });
      const runtime = program.python ? 'python' : 'javascript';
      stepDuration.observe(
        { runtime, outcome: outcome.ok ? 'completed' : 'error' },
        outcome.wallTimeMs / 1000,
      );
      if (!outcome.ok && LIMIT_KINDS.has(outcome.error.kind)) {
        sandboxLimitKills.inc({ runtime, limit: outcome.error.kind });
      }
      return outcome.ok
        ? end('COMPLETED', outcome.result, null, outcome)
        : end('ERROR', null, describeFailure(outcome), outcome);
    },

    /**
     * "Try it": one JavaScript or TypeScript script (a template, or a draft's source) run once in
     * this process's sandbox with a step's limits, on inputs given, with no run and no step record.
     * Its SDK calls act as the user who tried it (audited as the web app's) and take effect.
     */
    async tryScript(input: ScriptTrialInput): Promise<ScriptTrialOutcome> {
      const failed = (message: string): ScriptTrialOutcome => ({
        status: 'ERROR',
        result: null,
        error_message: message,
        logs: [],
        duration: 0,
        cpu_time: 0,
      });
      let program: Program;
      if (input.templateId) {
        const found = await programOf(db, input.principal.accountId, {
          id: 'trial',
          name: 'Try it',
          type: 'BASIC',
          template_id: input.templateId,
        } as WorkerNode);
        if (found === null) return failed('The template has no script.');
        if ('error' in found) return failed(found.error);
        if (found.python) {
          return failed(
            'Try it runs JavaScript and TypeScript; run a Python template in a workflow step to try it.',
          );
        }
        program = found;
      } else {
        let source = input.script ?? '';
        if (input.scriptRuntime === 'typescript') {
          const transpiled = transpileTypeScript('draft', source);
          if ('error' in transpiled) return failed(transpiled.error);
          source = transpiled.code;
        }
        program = { source, entryPoint: 'main', python: null, formInputs: null, limits: null };
      }
      const scriptInputs = program.formInputs
        ? withDefaults(program.formInputs, input.scriptInputs)
        : input.scriptInputs;
      if (program.formInputs) {
        const problem = scriptInputProblem(program.formInputs, scriptInputs, {
          requireMandatory: true,
          allowUnknown: false,
        });
        if (problem !== null) return failed(`Invalid script inputs: ${problem}.`);
      }
      const actor: Actor = { principal: input.principal, source: 'PLATFORM', ip: null, userAgent: null };
      const step = new StepOutbound(
        db,
        options.outbound ?? NO_OUTBOUND,
        actor,
        input.workspace,
        'Try it',
        null,
      );
      const bridge = createSdkBridge({
        db,
        actor,
        workspace: input.workspace,
        publicUrl: options.publicUrl,
        simulation: options.simulation,
        outbound: step,
      });
      const limits = program.limits
        ? {
            ...options.sandboxLimits,
            ...templateSandboxLimits(program.limits, options.sandboxLimits ?? {}, options.sandboxCeiling),
          }
        : options.sandboxLimits;
      const beat = setInterval(() => heartbeat(), HEARTBEAT_INTERVAL_MS);
      let outcome: ScriptOutcome;
      try {
        outcome = await runScript({
          source: program.source,
          entryPoint: program.entryPoint,
          args: {
            workspace: input.workspace,
            script_inputs: scriptInputs,
            inputs: input.inputs,
            inputs_info: { joined: false, sources: [] },
            worker_type: 'BASIC',
            parallel_info: { index: -1, length: -1 },
            worker_id: null,
            worker_execution_id: null,
            workflow_id: null,
            workflow_execution_id: null,
            parameters: {},
          },
          limits,
          bridge,
          signal: new AbortController().signal,
        });
      } finally {
        clearInterval(beat);
      }
      await step.settle();
      outcome = withoutSecrets(step, {
        ...outcome,
        logs: [...outcome.logs, ...step.logs].sort((a, b) => a.at - b.at),
      });
      return {
        status: outcome.ok ? 'COMPLETED' : 'ERROR',
        result: outcome.ok ? outcome.result : null,
        error_message: outcome.ok ? null : describeFailure(outcome),
        logs: outcome.logs as unknown[],
        duration: outcome.wallTimeMs / 1000,
        cpu_time: outcome.cpuTimeMs / 1000,
      };
    },

    /** Closes the run's records; retried until the database takes it, so no run stays RUNNING. */
    async finishRun(input: FinishRunInput): Promise<'SUCCEEDED' | 'FAILED'> {
      const closed = await endWorkflowExecution(db, input.executionId, {
        runStatus: input.runStatus,
        enderWorkerExecutionId: input.enderWorkerExecutionId,
        failure: input.failure,
      });
      // A run closed earlier (by its ENDER) keeps its status; the interpreter reports that one.
      return closed.run_status === 'FAILED' ? 'FAILED' : 'SUCCEEDED';
    },
  };
}

export type WorkerActivities = ReturnType<typeof createWorkerActivities>;
