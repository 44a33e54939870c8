import { InterceptingCall, type Interceptor, Metadata, status } from '@grpc/grpc-js';
import {
  type Client,
  Connection,
  type ConnectionOptions,
  defaultGrpcRetryOptions,
  isGrpcServiceError,
  makeGrpcRetryInterceptor,
  WorkflowNotFoundError,
} from '@temporalio/client';
import {
  defaultPayloadConverter,
  defineSearchAttributeKey,
  SearchAttributeType,
  TypedSearchAttributes,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
} from '@temporalio/common';
import { INTERPRETER_WORKFLOW, type InterpreterInput } from './run-input';
import type { WorkflowRunner } from './workflow-runner';
import { SCRIPT_TRIAL_WORKFLOW, type ScriptTrialOutcome } from './script-trial';
import { randomAlphanumeric } from '../platform/ids';
import { ServiceUnavailable } from '../platform/errors';
import { temporalWorkflowSchedules } from './workflow-schedules';
import { runStartsEager } from '../platform/metrics';

/** gRPC status code 5: the service has no such entity. */
const GRPC_NOT_FOUND = 5;

const keyword = (name: string) => defineSearchAttributeKey(name, SearchAttributeType.KEYWORD);
const KEYS = {
  workflowId: keyword('PasWorkflowId'),
  executionId: keyword('PasExecutionId'),
  workspace: keyword('PasWorkspace'),
  trigger: keyword('PasTrigger'),
  runStatus: keyword('PasRunStatus'),
  account: keyword('PasAccount'),
};

/**
 * A client connection that needs no Temporal to exist yet (the API starts, and accepts runs, while it
 * is down) and notices its return within about two seconds: gRPC's reconnect backoff otherwise grows
 * to two minutes during a long outage.
 */
export function lazyTemporalConnection(address: string): Connection {
  const guard = closeGuard();
  return guard.watch(
    Connection.lazy({
      address,
      channelArgs: { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 2_000 },
      interceptors: guard.interceptors,
    }),
  );
}

/** `Connection.connect` with the same guard (see closeGuard). */
export async function connectTemporal(options: ConnectionOptions): Promise<Connection> {
  const guard = closeGuard();
  return guard.watch(await Connection.connect({ ...options, interceptors: guard.interceptors }));
}

/**
 * The SDK's retry interceptor waits on a timer between attempts and then asks the channel for a new
 * call; once the connection is closed (the process is stopping, a request's start to an unreachable
 * Temporal still backing off) that throws from the timer, an uncaught exception. Below the retry
 * interceptor, this one answers such a late attempt (a retry, from its timer) with CANCELLED instead,
 * which ends the call (CANCELLED is not retried) and reaches its caller as an ordinary error. A call
 * made after close is refused at once, as without the guard.
 */
function closeGuard(): { interceptors: Interceptor[]; watch(connection: Connection): Connection } {
  let closed = false;
  // The call a late attempt gets instead of the channel's: it does nothing, and is never started.
  const inert: ConstructorParameters<typeof InterceptingCall>[0] = {
    cancelWithStatus() {},
    getPeer: () => '',
    start() {},
    sendMessageWithContext() {},
    sendMessage() {},
    startRead() {},
    halfClose() {},
    getAuthContext: () => null,
  };
  // Calls being created: their first attempt is made at once, inside the interceptors; after close it
  // still goes to the channel, which refuses it synchronously, and the caller gets that error as ever.
  let creating = 0;
  const marker: Interceptor = (options, nextCall) => {
    creating++;
    try {
      return new InterceptingCall(nextCall(options));
    } finally {
      creating--;
    }
  };
  const guard: Interceptor = (options, nextCall) => {
    if (!closed || creating > 0) return new InterceptingCall(nextCall(options));
    return new InterceptingCall(inert, {
      start(_metadata, listener) {
        setImmediate(() =>
          listener.onReceiveStatus({
            code: status.CANCELLED,
            details: 'The Temporal connection was closed.',
            metadata: new Metadata(),
          }),
        );
      },
      sendMessage() {},
      halfClose() {},
    });
  };
  return {
    interceptors: [marker, makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), guard],
    watch(connection) {
      const close = connection.close.bind(connection);
      connection.close = async () => {
        closed = true;
        await close();
      };
      return connection;
    },
  };
}

/** A start that gets no answer within this is retried by the dispatcher (the gRPC default is ~19 s). */
const START_DEADLINE_MS = 5_000;
/** After a start Temporal did not answer, the next ones fail at once for this long (the outbox waits). */
const UNREACHABLE_COOL_DOWN_MS = 1_000;

class TemporalUnreachable extends Error {
  constructor() {
    super('Temporal did not answer a moment ago; the start waits in the outbox.');
    this.name = 'TemporalUnreachable';
  }
}

export function temporalWorkflowRunner(
  client: Client,
  taskQueue: string,
  options: {
    /**
     * Ask for Temporal's eager start: the run's first workflow task comes back in the start's answer,
     * to a worker of this process that shares `client`'s connection (a NativeConnection), instead of
     * through the task queue. Only a worker process's handoff runner sets it (run-handoff.ts).
     */
    eagerStart?: boolean;
  } = {},
): WorkflowRunner {
  // While Temporal is down, a run request should not spend a deadline finding out again: its run is
  // already in the outbox, and the dispatcher keeps trying.
  let unreachableUntil = 0;
  return {
    schedules: temporalWorkflowSchedules(client, taskQueue),
    async startedDefinition(executionId) {
      let history;
      try {
        history = await client.workflow.getHandle(executionId).fetchHistory();
      } catch (error) {
        // fetchHistory hands on the gRPC error as it came: NOT_FOUND is a run Temporal does not have.
        if (error instanceof WorkflowNotFoundError) return null;
        if (isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND) return null;
        throw error;
      }
      const payload =
        history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0] ?? null;
      if (payload === null) return null;
      const input = defaultPayloadConverter.fromPayload<Partial<InterpreterInput>>(payload);
      return Array.isArray(input.workers) && input.plan ? { workers: input.workers, plan: input.plan } : null;
    },
    async tryScript(input) {
      if (Date.now() < unreachableUntil) throw new TemporalUnreachable();
      // A trial waits for its answer: without a worker polling it would wait out its timeout.
      const described = await client.workflowService.describeTaskQueue({
        namespace: client.options.namespace,
        taskQueue: { name: taskQueue },
        // 1: TASK_QUEUE_TYPE_WORKFLOW.
        taskQueueType: 1,
      });
      if ((described.pollers?.length ?? 0) === 0) {
        throw new ServiceUnavailable(
          `Try it needs a worker process: none polls task queue ${taskQueue}. Start one (npm start starts it).`,
        );
      }
      return client.workflow.execute(SCRIPT_TRIAL_WORKFLOW, {
        taskQueue,
        workflowId: `trial-${randomAlphanumeric(25)}`,
        args: [input],
        // A step's longest timeout (600 s) and some room; a trial is never retried.
        workflowExecutionTimeout: '11 minutes',
      }) as Promise<ScriptTrialOutcome>;
    },

    async start(input) {
      if (Date.now() < unreachableUntil) throw new TemporalUnreachable();
      const start = () =>
        client.workflow.start(INTERPRETER_WORKFLOW, {
          taskQueue,
          // The execution id is the Temporal workflow id: one name in the API and the Temporal UI.
          workflowId: input.executionId,
          // An id runs once: a second dispatch of the same run (the outbox row outlived its start)
          // never starts it again, even once it has finished.
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          args: [input],
          typedSearchAttributes: new TypedSearchAttributes([
            { key: KEYS.workflowId, value: input.workflowId },
            { key: KEYS.executionId, value: input.executionId },
            { key: KEYS.workspace, value: input.workspace },
            { key: KEYS.trigger, value: input.trigger },
            { key: KEYS.runStatus, value: 'RUNNING' },
            { key: KEYS.account, value: input.accountId },
          ]),
          memo: {
            workflow_id: input.workflowId,
            workflow_name: input.workflowName,
            workspace: input.workspace,
            trigger: input.trigger,
            ...(input.retryOf ? { retry_of: input.retryOf } : {}),
          },
          ...(options.eagerStart ? { requestEagerStart: true } : {}),
        });
      try {
        const handle = await client.withDeadline(Date.now() + START_DEADLINE_MS, start);
        if (handle.eagerlyStarted) runStartsEager.inc();
        unreachableUntil = 0;
      } catch (error) {
        // Execution ids are never reused, so a run already there under this id is this run.
        if (error instanceof WorkflowExecutionAlreadyStartedError) return;
        unreachableUntil = Date.now() + UNREACHABLE_COOL_DOWN_MS;
        throw error;
      }
    },
  };
}
