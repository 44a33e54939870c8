/**
 * The workflow draft itself, with no DOM: its types, the worker types and edge kinds, making one (new,
 * or from the workflow the API answered) and the body sent back, and reading it (edges, steps, what a
 * step runs). The changes are in draft-edits.ts; workflow-draft.ts is the model's one door.
 */

export type EdgeKind = 'next' | 'next_true' | 'next_false';
export const EDGE_KINDS: readonly EdgeKind[] = ['next', 'next_true', 'next_false'];

/** Every worker type the API takes (docs/workflows.md). */
export const WORKER_TYPES = ['STARTER', 'BASIC', 'CONDITIONAL', 'FORKER', 'BARRIER', 'ENDER'] as const;
/** Types that cannot do their job without a script or template (the API refuses them bare). */
export const NEEDS_SCRIPT: readonly string[] = ['BASIC', 'CONDITIONAL'];
/** The inline runtimes the API takes (`script_runtime`; absent means JavaScript). */
export const INLINE_RUNTIMES = ['javascript', 'python3.11'] as const;
export type InlineRuntime = (typeof INLINE_RUNTIMES)[number];

export interface DraftWorker {
  id: string;
  name: string;
  type: string;
  template_id?: string | null;
  script?: string | null;
  script_runtime?: string | null;
  script_inputs?: Record<string, unknown>;
  next?: string | string[];
  next_true?: string | string[];
  next_false?: string | string[];
  /** Whatever else a client stored on a step: kept as it came. */
  [field: string]: unknown;
}

/** The fields of a workflow a client writes (POST/PUT), in the order the API lists them. */
export const WRITABLE_FIELDS = [
  'name',
  'description',
  'tags',
  'trigger_type',
  'trigger_config',
  'trigger_enabled',
  'gui',
  'on_failure',
  'workers',
] as const;

export interface WorkflowDraft {
  /** Absent only in a body that never had one (an update of the steps alone). */
  name?: string;
  description?: string | null;
  tags?: unknown;
  trigger_type?: string;
  trigger_config?: Record<string, unknown>;
  trigger_enabled?: boolean;
  gui?: unknown;
  on_failure?: unknown;
  workers: DraftWorker[];
}

/** A deep copy, as JSON: what the API sends and takes. */
export const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** The draft of a workflow as the API answered it: its writable fields, as they are. */
export function fromWorkflow(workflow: Record<string, unknown>): WorkflowDraft {
  const draft: Record<string, unknown> = {};
  for (const key of WRITABLE_FIELDS) if (key in workflow) draft[key] = clone(workflow[key]);
  if (!Array.isArray(draft.workers)) draft.workers = [];
  return draft as unknown as WorkflowDraft;
}

/** What POST or PUT /v2/workflows is sent (the workspace is added by the page). */
export function toWorkflowBody(draft: WorkflowDraft): Record<string, unknown> {
  return clone(draft) as unknown as Record<string, unknown>;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A fresh worker id, `wrkr_` and 25 letters or digits, as the API wants them. */
export function newWorkerId(): string {
  const out: string[] = [];
  while (out.length < 25) {
    for (const byte of globalThis.crypto.getRandomValues(new Uint8Array(32))) {
      // 248 = 4 × 62: dropping the bytes above keeps every character equally likely.
      if (byte < 248 && out.length < 25) out.push(ALNUM[byte % 62]!);
    }
  }
  return `wrkr_${out.join('')}`;
}

/** A new workflow: a STARTER and an ENDER joined, nothing else. */
export function newDraft(makeId: () => string = newWorkerId): WorkflowDraft {
  const [start, end] = [makeId(), makeId()];
  return {
    name: '',
    description: null,
    trigger_type: 'MANUAL',
    trigger_config: {},
    trigger_enabled: false,
    on_failure: null,
    workers: [
      { id: start, name: 'Start', type: 'STARTER', next: [end] },
      { id: end, name: 'End', type: 'ENDER' },
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// Reading a draft
// ---------------------------------------------------------------------------------------------

/** An edge as a list, whether stored as a list, a bare id or not at all. */
export function targets(worker: DraftWorker, kind: EdgeKind): string[] {
  const edge = worker[kind];
  if (edge === undefined || edge === null) return [];
  return Array.isArray(edge) ? edge.filter((id): id is string => typeof id === 'string') : [String(edge)];
}

export interface Edge {
  from: string;
  kind: EdgeKind;
  to: string;
}

export function edgesOf(worker: DraftWorker): Edge[] {
  return EDGE_KINDS.flatMap((kind) => targets(worker, kind).map((to) => ({ from: worker.id, kind, to })));
}

/** The edges a step of this type may have: a CONDITIONAL routes by its result, an ENDER ends. */
export function edgeKindsOf(type: string): EdgeKind[] {
  if (type === 'ENDER') return [];
  return type === 'CONDITIONAL' ? ['next_true', 'next_false'] : ['next'];
}

export function findWorker(draft: WorkflowDraft, id: string): DraftWorker | undefined {
  return draft.workers.find((w) => w.id === id);
}

/** The steps with an edge into `id`. */
export function predecessors(draft: WorkflowDraft, id: string): Edge[] {
  return draft.workers.flatMap((w) => edgesOf(w).filter((edge) => edge.to === id));
}

/** What a step runs: a template, an inline script (and its language), or nothing. */
export type StepSource =
  | { kind: 'template'; templateId: string }
  | { kind: 'script'; runtime: InlineRuntime | string }
  | { kind: 'none' };

export function sourceOf(worker: DraftWorker): StepSource {
  if (typeof worker.template_id === 'string' && worker.template_id !== '') {
    return { kind: 'template', templateId: worker.template_id };
  }
  if (typeof worker.script === 'string' && worker.script !== '') {
    return { kind: 'script', runtime: worker.script_runtime ?? 'javascript' };
  }
  return { kind: 'none' };
}

/** Unchanged drafts serialise the same, so this is how the editor tells unsaved changes. */
export function sameDraft(a: WorkflowDraft, b: WorkflowDraft): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
