import type { Client } from '@temporalio/client';
import type { Database } from './database';

export type DependencyStatus = 'up' | 'down';

export interface DependencyReport {
  status: DependencyStatus;
  detail: string;
}

/** A probe must answer within this, or the dependency counts as down: a health check never hangs. */
const PROBE_TIMEOUT_MS = 1_000;

export async function withinTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)),
          PROBE_TIMEOUT_MS,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The first line of an error's message, for a report. */
export function failureReason(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? 'unknown error';
}

export async function databaseHealth(db: Database): Promise<DependencyReport> {
  try {
    await withinTimeout(db.raw('select 1'));
    return { status: 'up', detail: 'answers queries' };
  } catch (error) {
    return { status: 'down', detail: failureReason(error) };
  }
}

export interface TemporalHealth {
  temporal: DependencyReport;
  workers: DependencyReport;
}

/**
 * Temporal answers, and some worker polls the task queue (DescribeTaskQueue lists the pollers Temporal
 * saw recently, for workflow tasks): without one, accepted runs would wait and nothing would say why.
 */
export function temporalHealthProbe(
  client: Client,
  namespace: string,
  taskQueue: string,
): () => Promise<TemporalHealth> {
  return async () => {
    try {
      const described = await withinTimeout(
        client.workflowService.describeTaskQueue({
          namespace,
          taskQueue: { name: taskQueue },
          // 1: TASK_QUEUE_TYPE_WORKFLOW.
          taskQueueType: 1,
        }),
      );
      const pollers = described.pollers?.length ?? 0;
      return {
        temporal: { status: 'up', detail: `namespace ${namespace} answers` },
        workers:
          pollers > 0
            ? { status: 'up', detail: `${pollers} poller(s) on task queue ${taskQueue}` }
            : { status: 'down', detail: `no worker polls task queue ${taskQueue}` },
      };
    } catch (error) {
      return {
        temporal: { status: 'down', detail: failureReason(error) },
        workers: { status: 'down', detail: 'unknown while Temporal does not answer' },
      };
    }
  };
}
