import { setTimeout as sleep } from 'node:timers/promises';
import { type Client, type WorkflowHandle, WorkflowNotFoundError } from '@temporalio/client';

/**
 * The Temporal handle of a run the API accepted. A 202 returns once the run is durable (recorded, its
 * start request in the outbox); Temporal's start goes on behind the reply, so a client that goes to
 * Temporal with the execution id at once waits here until Temporal has the run, as any client that
 * reads Temporal right after a 202 must.
 */
export async function startedRun(
  client: Client,
  executionId: string,
  timeoutMs = 30_000,
): Promise<WorkflowHandle> {
  const handle = client.workflow.getHandle(executionId);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await handle.describe();
      return handle;
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError) || Date.now() > deadline) throw error;
    }
    await sleep(20);
  }
}
