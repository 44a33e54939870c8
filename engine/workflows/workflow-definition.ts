import { InvalidInput } from '../errors';
import { isId } from '../ids';

export const WORKER_TYPES = ['STARTER', 'BASIC', 'ENDER'] as const;
export type WorkerType = (typeof WORKER_TYPES)[number];

/** One node of a stored workflow. The whole list is copied into each run's Temporal input. */
export interface WorkerNode {
  id: string;
  name: string;
  type: WorkerType;
  /** JavaScript defining `main(args)`; optional for the starter and the ender. */
  script?: string | null;
  script_inputs?: Record<string, unknown>;
  /** Ids of the workers that run after this one. */
  next?: string[];
}

/**
 * Checks the graph: exactly one starter, workers reachable from it in a chain ending at an ender,
 * no cycle, every edge pointing at a known worker. Returns the workers in execution order.
 */
export function executionOrder(workers: WorkerNode[]): WorkerNode[] {
  const byId = new Map<string, WorkerNode>();
  for (const worker of workers) {
    if (!isId('worker', worker.id))
      throw new InvalidInput(`Worker id "${worker.id}" must be wrkr_ plus 25 letters or digits.`);
    if (byId.has(worker.id)) throw new InvalidInput(`Worker id ${worker.id} is used twice.`);
    if (!(WORKER_TYPES as readonly string[]).includes(worker.type)) {
      throw new InvalidInput(`Worker ${worker.id} has unknown type "${worker.type}".`);
    }
    if (worker.type === 'BASIC' && !worker.script)
      throw new InvalidInput(`Worker ${worker.id} (BASIC) needs a script.`);
    byId.set(worker.id, worker);
  }
  const starters = workers.filter((worker) => worker.type === 'STARTER');
  if (starters.length !== 1) throw new InvalidInput('A workflow needs exactly one STARTER worker.');
  const order: WorkerNode[] = [];
  const seen = new Set<string>();
  let current: WorkerNode | undefined = starters[0];
  while (current) {
    if (seen.has(current.id))
      throw new InvalidInput(`The workflow has a cycle through worker ${current.id}.`);
    seen.add(current.id);
    order.push(current);
    if (current.type === 'ENDER') return order;
    const next: string[] = current.next ?? [];
    if (next.length !== 1) {
      throw new InvalidInput(`Worker ${current.id} must lead to exactly one next worker.`);
    }
    current = byId.get(next[0]!);
    if (!current)
      throw new InvalidInput(`Worker ${order[order.length - 1]!.id} points at an unknown worker ${next[0]}.`);
  }
  throw new InvalidInput('No ENDER worker is reachable from the STARTER.');
}
