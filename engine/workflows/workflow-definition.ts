import { checkStorableFields } from '../store/storable-json';
import { InvalidInput } from '../platform/errors';

/**
 * A workflow definition is a graph of workers (nodes) joined by edges to the next workers.
 *
 * - STARTER: the one entry point. Its script inputs are the stored ones overlaid with the run's
 *   `parameters`; without a script its result is those inputs.
 * - BASIC: runs a script (inline `script` or a worker template `template_id`) on the previous result.
 * - FORKER: its result is a list (an array, or an object holding the array in `items`); the workers
 *   after it run once per item, in parallel branches numbered by `parallel_index`. Without a
 *   script it forks its input.
 * - BARRIER: joins the branches of the FORKER upstream; its input is the ordered list of the branch
 *   results. Without a script its result is that list.
 * - CONDITIONAL: its script returns a boolean (or `{condition: boolean}`); the run goes on at
 *   `next_true` or `next_false`, and that worker receives the CONDITIONAL's own input.
 * - ENDER: the result of the run. Without a script it hands on its input. Several ENDERs may
 *   exist (one per conditional route); the run ends at the one it reaches.
 *
 * Every worker but an ENDER has exactly one way on (`next`, or `next_true` and `next_false`), so a
 * run is one path (copied per branch between a FORKER and its BARRIER) and no worker runs twice
 * in a branch. Paths may merge after a CONDITIONAL: only one of them is ever taken.
 */
export const WORKER_TYPES = ['STARTER', 'BASIC', 'ENDER', 'FORKER', 'BARRIER', 'CONDITIONAL'] as const;
export type WorkerType = (typeof WORKER_TYPES)[number];

/** One node of a stored workflow. The whole list is copied into each run's Temporal input. */
export interface WorkerNode {
  id: string;
  name: string;
  type: WorkerType;
  /** A worker template of the account (`wtpl_…`): its script, runtime and form_inputs. */
  template_id: string | null;
  /** Inline JavaScript (or Python, see script_runtime) defining `main(args)`, for workers without a template. */
  script: string | null;
  /** Set only for an inline Python script (`python3.11`); absent: JavaScript. */
  script_runtime?: 'python3.11';
  script_inputs: Record<string, unknown>;
  /** The worker that runs after this one (one id; empty for an ENDER and a CONDITIONAL). */
  next: string[];
  /** CONDITIONAL only: where a true and a false result lead (one id each). */
  next_true?: string[];
  next_false?: string[];
}

/** What the interpreter needs beyond the nodes, worked out once when a run starts. */
export interface WorkflowPlan {
  starterId: string;
  /** The ENDER when there is only one; null when a CONDITIONAL chooses between several. */
  enderId: string | null;
  /** The BARRIER that joins the branches of each FORKER. */
  barrierOf: Record<string, string>;
}

export const WORKERS_MAX = 200;
/** Inline scripts travel in every run's Temporal input; larger code belongs in a worker template. */
export const INLINE_SCRIPT_MAX_BYTES = 64 * 1024;
/** Temporal refuses payloads of 2 MB; the copied definition stays well below. */
export const DEFINITION_MAX_BYTES = 1024 * 1024;

/** Types that cannot do their job without a script: BASIC runs one, CONDITIONAL decides with one. */
const NEEDS_SCRIPT: ReadonlySet<WorkerType> = new Set(['BASIC', 'CONDITIONAL']);

/**
 * A worker as a request's schema (WorkflowWorkerInput, api/schemas/workflow.ts) accepted it, or as a
 * stored definition holds it: the shape of every field is the schema's, not checked again here.
 */
export interface WorkerNodeRequest {
  readonly id: string;
  readonly name: string;
  readonly type: WorkerType;
  readonly template_id?: string | null;
  readonly script?: string | null;
  readonly script_runtime?: 'javascript' | 'python3.11' | null;
  readonly script_inputs?: Record<string, unknown>;
  readonly next?: string | readonly string[];
  readonly next_true?: string | readonly string[];
  readonly next_false?: string | readonly string[];
}

/** `next` may come as one id or a list of ids (the skeleton and GUI clients write both). */
function edgeList(value: string | readonly string[] | undefined): string[] {
  if (value === undefined) return [];
  return [...new Set(typeof value === 'string' ? [value] : value)];
}

/**
 * One worker normalised: "none" spelled empty or null, one edge or a list. Only the rules across its
 * fields are checked, which no schema states: template or script (one of them, and one where the
 * type needs it), a Python runtime only for an inline script, the script's size in bytes, and edges
 * that fit the type.
 */
function parseNode(raw: WorkerNodeRequest, index: number): WorkerNode {
  const where = `workers[${index}]`;
  const { id, type } = raw;
  // An empty string is how some clients (and type coercion) spell "none".
  const templateId = raw.template_id || null;
  const script = raw.script || null;
  if (script !== null && Buffer.byteLength(script, 'utf8') > INLINE_SCRIPT_MAX_BYTES) {
    throw new InvalidInput(
      `${where}.script is over ${INLINE_SCRIPT_MAX_BYTES} bytes: publish it as a worker template.`,
    );
  }
  if (templateId !== null && script !== null) {
    throw new InvalidInput(`${where} has both template_id and script: give one of them.`);
  }
  if (NEEDS_SCRIPT.has(type) && templateId === null && script === null) {
    throw new InvalidInput(`${where} (${type}) needs a template_id or a script.`);
  }
  const runtime = raw.script_runtime ?? null;
  if (runtime === 'python3.11' && script === null) {
    throw new InvalidInput(
      `${where}.script_runtime is for an inline script: give script (a template has its own).`,
    );
  }
  const node: WorkerNode = {
    id,
    name: raw.name,
    type,
    template_id: templateId,
    script,
    script_inputs: raw.script_inputs ?? {},
    next: edgeList(raw.next),
  };
  if (runtime === 'python3.11') node.script_runtime = runtime;
  if (type === 'CONDITIONAL') {
    node.next_true = edgeList(raw.next_true);
    node.next_false = edgeList(raw.next_false);
  } else if (raw.next_true !== undefined || raw.next_false !== undefined) {
    throw new InvalidInput(`${where}: only a CONDITIONAL has next_true and next_false.`);
  }
  return node;
}

/** Every edge of a node, whatever its kind. */
export function successors(node: WorkerNode): string[] {
  return [...node.next, ...(node.next_true ?? []), ...(node.next_false ?? [])];
}

/** Finds a cycle with a depth-first search; returns a worker on it, or null. */
function workerOnCycle(workers: WorkerNode[], byId: Map<string, WorkerNode>): string | null {
  const state = new Map<string, 'open' | 'done'>();
  const visit = (id: string): string | null => {
    const seen = state.get(id);
    if (seen === 'open') return id;
    if (seen === 'done') return null;
    state.set(id, 'open');
    for (const next of successors(byId.get(id)!)) {
      const found = visit(next);
      if (found !== null) return found;
    }
    state.set(id, 'done');
    return null;
  };
  for (const worker of workers) {
    const found = visit(worker.id);
    if (found !== null) return found;
  }
  return null;
}

function reachableFrom(startId: string, byId: Map<string, WorkerNode>): Set<string> {
  const seen = new Set<string>();
  const stack = [startId];
  while (stack.length) {
    const id = stack.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    stack.push(...successors(byId.get(id)!));
  }
  return seen;
}

function checkWayOn(node: WorkerNode): void {
  const label = `Worker ${node.id} (${node.type})`;
  if (node.type === 'ENDER') {
    if (node.next.length) throw new InvalidInput(`${label} ends the run: it cannot have next workers.`);
    return;
  }
  if (node.type === 'CONDITIONAL') {
    if (node.next.length) {
      throw new InvalidInput(`${label} routes with next_true and next_false, not next.`);
    }
    if (node.next_true!.length !== 1 || node.next_false!.length !== 1) {
      throw new InvalidInput(`${label} needs exactly one next_true and one next_false worker.`);
    }
    return;
  }
  if (node.next.length !== 1) {
    throw new InvalidInput(
      `${label} must have exactly one next worker` +
        (node.next.length > 1 ? ': a parallel fan-out needs a FORKER and a BARRIER.' : '.'),
    );
  }
}

/**
 * Works out which FORKER's branches each worker belongs to, walking every path from the starter.
 * A branch must end at one BARRIER (the FORKER's join) before any ENDER; forks do not nest; and no
 * worker may be both inside and outside a fork, or the BARRIER could be reached without one.
 */
function matchBarriers(starterId: string, byId: Map<string, WorkerNode>): Record<string, string> {
  const contextOf = new Map<string, string | null>();
  const barrierOf: Record<string, string> = {};
  const visit = (id: string, fork: string | null): void => {
    if (contextOf.has(id)) {
      if (contextOf.get(id) !== fork) {
        throw new InvalidInput(
          `Worker ${id} is reachable both inside and outside the branches of FORKER ${fork ?? contextOf.get(id)}.`,
        );
      }
      return;
    }
    contextOf.set(id, fork);
    const node = byId.get(id)!;
    let after = fork;
    if (node.type === 'FORKER') {
      if (fork !== null) {
        throw new InvalidInput(`FORKER ${id} is inside the branches of FORKER ${fork}: forks do not nest.`);
      }
      after = id;
    } else if (node.type === 'BARRIER') {
      if (fork === null) throw new InvalidInput(`BARRIER ${id} has no FORKER upstream to join.`);
      if (barrierOf[fork] !== undefined && barrierOf[fork] !== id) {
        throw new InvalidInput(
          `The branches of FORKER ${fork} reach two BARRIERs: ${barrierOf[fork]} and ${id}.`,
        );
      }
      barrierOf[fork] = id;
      after = null;
    } else if (node.type === 'ENDER' && fork !== null) {
      throw new InvalidInput(
        `FORKER ${fork} has no matching BARRIER downstream: a branch reaches ENDER ${id}.`,
      );
    }
    for (const next of successors(node)) visit(next, after);
  };
  visit(starterId, null);
  return barrierOf;
}

/**
 * Checks the graph of workers a request's schema accepted (or a stored definition) and returns it
 * normalised, with the plan the interpreter follows. Templates and their form inputs are checked by
 * the caller (they need the database).
 */
export function parseDefinition(raw: readonly WorkerNodeRequest[]): {
  workers: WorkerNode[];
  plan: WorkflowPlan;
} {
  if (raw.length > WORKERS_MAX) {
    throw new InvalidInput(`A workflow has at most ${WORKERS_MAX} workers, got ${raw.length}.`);
  }
  const workers = raw.map(parseNode);
  checkStorableFields({ workers });
  if (Buffer.byteLength(JSON.stringify(workers), 'utf8') > DEFINITION_MAX_BYTES) {
    throw new InvalidInput(`workers is over ${DEFINITION_MAX_BYTES} bytes of JSON.`);
  }
  const byId = new Map<string, WorkerNode>();
  for (const worker of workers) {
    if (byId.has(worker.id)) throw new InvalidInput(`Worker id ${worker.id} is used twice.`);
    byId.set(worker.id, worker);
  }
  for (const worker of workers) {
    for (const next of successors(worker)) {
      if (!byId.has(next)) throw new InvalidInput(`Worker ${worker.id} points at an unknown worker ${next}.`);
    }
  }
  const starters = workers.filter((worker) => worker.type === 'STARTER');
  if (starters.length !== 1) {
    throw new InvalidInput(`A workflow needs exactly one STARTER worker, got ${starters.length}.`);
  }
  const cyclic = workerOnCycle(workers, byId);
  if (cyclic !== null) throw new InvalidInput(`The workflow has a cycle through worker ${cyclic}.`);
  const starterId = starters[0]!.id;
  const reachable = reachableFrom(starterId, byId);
  const enders = [...reachable].filter((id) => byId.get(id)!.type === 'ENDER');
  if (enders.length === 0) throw new InvalidInput('No ENDER worker is reachable from the STARTER.');
  for (const worker of workers) {
    if (!reachable.has(worker.id)) {
      throw new InvalidInput(`Worker ${worker.id} is not reachable from the STARTER.`);
    }
    checkWayOn(worker);
  }
  const barrierOf = matchBarriers(starterId, byId);
  for (const worker of workers) {
    if (worker.type === 'FORKER' && barrierOf[worker.id] === undefined) {
      throw new InvalidInput(`FORKER ${worker.id} has no matching BARRIER downstream.`);
    }
  }
  return { workers, plan: { starterId, enderId: enders.length === 1 ? enders[0]! : null, barrierOf } };
}

/** Nodes as stored, including those written before templates and forks existed. */
export function storedWorkers(raw: unknown): WorkerNode[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((item: Record<string, unknown>) => {
    const node: WorkerNode = {
      id: item.id as string,
      name: item.name as string,
      type: item.type as WorkerType,
      template_id: (item.template_id as string | null | undefined) ?? null,
      script: (item.script as string | null | undefined) ?? null,
      script_inputs: (item.script_inputs as Record<string, unknown> | undefined) ?? {},
      next: (item.next as string[] | undefined) ?? [],
    };
    if (item.script_runtime === 'python3.11') node.script_runtime = 'python3.11';
    if (node.type === 'CONDITIONAL') {
      node.next_true = (item.next_true as string[] | undefined) ?? [];
      node.next_false = (item.next_false as string[] | undefined) ?? [];
    }
    return node;
  });
}
