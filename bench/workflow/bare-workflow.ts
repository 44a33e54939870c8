/**
 * The baselines of bench/workflow.bench.ts: a bare Temporal workflow of three no-op activities in a
 * row, the shape of a STARTER → BASIC → ENDER run without the service around it (no HTTP, no
 * PostgreSQL, no isolates, no closing activity). Workflow code: only @temporalio/workflow.
 *
 * - `bareLocalWorkflow` (issue 20, the fair baseline): three local activities, as the service's steps
 *   run (one workflow task holds them all, as ours does).
 * - `bareWorkflow` (the issue-6 baseline, kept as a labelled second row): three regular activities,
 *   i.e. three activity tasks and four workflow tasks.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';

export interface BareActivities {
  noop(step: number): Promise<number>;
  /** A no-op too, answering when it ran (the bench's first-step gap reads the first one). */
  stamp(step: number): Promise<number>;
}

const { noop } = proxyActivities<BareActivities>({ startToCloseTimeout: '1 minute' });
const local = proxyLocalActivities<BareActivities>({ startToCloseTimeout: '1 minute' });

export async function bareWorkflow(): Promise<number> {
  let sum = 0;
  for (let step = 0; step < 3; step++) sum += await noop(step);
  return sum;
}

/** Answers when each of its three local activities ran (epoch milliseconds, the worker's clock). */
export async function bareLocalWorkflow(): Promise<number[]> {
  const ran: number[] = [];
  for (let step = 0; step < 3; step++) ran.push(await local.stamp(step));
  return ran;
}
