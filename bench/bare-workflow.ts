/**
 * The baseline of bench/workflow.bench.ts: a bare Temporal workflow of three no-op activities in a
 * row, the shape of a STARTER → BASIC → ENDER run without the service around it (no HTTP, no
 * PostgreSQL, no isolates, no closing activity). Workflow code: only @temporalio/workflow.
 */
import { proxyActivities } from '@temporalio/workflow';

export interface BareActivities {
  noop(step: number): Promise<number>;
}

const { noop } = proxyActivities<BareActivities>({ startToCloseTimeout: '1 minute' });

export async function bareWorkflow(): Promise<number> {
  let sum = 0;
  for (let step = 0; step < 3; step++) sum += await noop(step);
  return sum;
}
