/**
 * The workflow editor's model, with no DOM (jest imports it): a draft is the body that POST and PUT
 * /v2/workflows take, kept as it was read. Each step stays the very object the API answered, extra
 * fields and their order included, and an operation changes only the fields it is about, so a
 * workflow opened and saved without a change goes back identical. Operations return a new draft;
 * the undo history keeps the old ones.
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

const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

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

// ---------------------------------------------------------------------------------------------
// Changing a draft: each returns a new draft, the one given untouched
// ---------------------------------------------------------------------------------------------

function edit(draft: WorkflowDraft, change: (copy: WorkflowDraft) => void): WorkflowDraft {
  const copy = clone(draft);
  change(copy);
  return copy;
}

function worker(draft: WorkflowDraft, id: string): DraftWorker {
  const found = findWorker(draft, id);
  if (!found) throw new Error(`No step ${id} in the draft.`);
  return found;
}

/**
 * Writes an edge, keeping how it was written: a bare id stays one while the edge has one target;
 * an edge that was absent and stays empty stays absent.
 */
function writeTargets(w: DraftWorker, kind: EdgeKind, list: string[]): void {
  const unique = [...new Set(list)];
  const before = w[kind];
  if (unique.length === 0 && (before === undefined || before === null)) return;
  if (typeof before === 'string' && unique.length === 1) w[kind] = unique[0]!;
  else w[kind] = unique;
}

function dropEdgeKind(w: DraftWorker, kind: EdgeKind): void {
  if (kind === 'next') {
    // Stored steps carry `next: []` even where they have none: keep the key, empty.
    if (w.next !== undefined) w.next = [];
  } else {
    delete w[kind];
  }
}

export function setName(draft: WorkflowDraft, fields: { name?: string; description?: string | null }) {
  return edit(draft, (d) => {
    if (fields.name !== undefined) d.name = fields.name;
    if (fields.description !== undefined) d.description = fields.description;
  });
}

/** Changes a workflow-level field (trigger, enabled, on_failure…): anything but the steps. */
export function setField(
  draft: WorkflowDraft,
  key: Exclude<(typeof WRITABLE_FIELDS)[number], 'workers'>,
  value: unknown,
): WorkflowDraft {
  return edit(draft, (d) => {
    (d as unknown as Record<string, unknown>)[key] = clone(value);
  });
}

export function renameStep(draft: WorkflowDraft, id: string, name: string): WorkflowDraft {
  return edit(draft, (d) => (worker(d, id).name = name));
}

/**
 * A new type, its edges made to fit: a CONDITIONAL's one way on becomes its `true` edge, a step that
 * stops being a CONDITIONAL keeps its `true` edge as `next`, an ENDER has none.
 */
export function setStepType(draft: WorkflowDraft, id: string, type: string): WorkflowDraft {
  return edit(draft, (d) => {
    const w = worker(d, id);
    if (w.type === type) return;
    const wasConditional = w.type === 'CONDITIONAL';
    const onward = wasConditional
      ? [...targets(w, 'next_true'), ...targets(w, 'next_false')]
      : targets(w, 'next');
    w.type = type;
    if (type === 'ENDER') {
      dropEdgeKind(w, 'next');
      delete w.next_true;
      delete w.next_false;
    } else if (type === 'CONDITIONAL') {
      dropEdgeKind(w, 'next');
      w.next_true = onward.slice(0, 1);
      w.next_false = onward.slice(1, 2);
    } else {
      delete w.next_true;
      delete w.next_false;
      w.next = wasConditional ? onward.slice(0, 1) : targets(w, 'next');
    }
  });
}

/** What a step runs: a template (its inputs start empty), an inline script, or nothing. */
export function setSource(
  draft: WorkflowDraft,
  id: string,
  source:
    | { kind: 'template'; templateId: string }
    | { kind: 'script'; runtime: string; script: string }
    | { kind: 'none' },
): WorkflowDraft {
  return edit(draft, (d) => {
    const w = worker(d, id);
    const previous = sourceOf(w);
    if (source.kind === 'template') {
      w.template_id = source.templateId;
      if ('script' in w) w.script = null;
      delete w.script_runtime;
      if (previous.kind !== 'template' || previous.templateId !== source.templateId) w.script_inputs = {};
    } else if (source.kind === 'script') {
      if ('template_id' in w) w.template_id = null;
      w.script = source.script;
      if (source.runtime === 'javascript') delete w.script_runtime;
      else w.script_runtime = source.runtime;
      if (previous.kind === 'template') w.script_inputs = {};
    } else {
      if ('template_id' in w) w.template_id = null;
      if ('script' in w) w.script = null;
      delete w.script_runtime;
    }
  });
}

export function setScript(draft: WorkflowDraft, id: string, script: string): WorkflowDraft {
  return edit(draft, (d) => (worker(d, id).script = script));
}

/** One script input: a value, or undefined to leave it out. */
export function setScriptInput(draft: WorkflowDraft, id: string, key: string, value: unknown): WorkflowDraft {
  return edit(draft, (d) => {
    const w = worker(d, id);
    const inputs = { ...(w.script_inputs ?? {}) };
    if (value === undefined) delete inputs[key];
    else inputs[key] = clone(value);
    w.script_inputs = inputs;
  });
}

/** Renames a script input, keeping its place among the others. */
export function renameScriptInput(draft: WorkflowDraft, id: string, from: string, to: string): WorkflowDraft {
  return edit(draft, (d) => {
    const w = worker(d, id);
    const entries = Object.entries(w.script_inputs ?? {}).map(([k, v]) => [k === from ? to : k, v] as const);
    w.script_inputs = Object.fromEntries(entries);
  });
}

/**
 * An edge from `from` to `to`. `next` takes several targets (a list; the API says where it wants
 * one); a CONDITIONAL's `next_true` and `next_false` have one each, so the new one replaces the old.
 */
export function connect(draft: WorkflowDraft, from: string, kind: EdgeKind, to: string): WorkflowDraft {
  return edit(draft, (d) => {
    const w = worker(d, from);
    const list = kind === 'next' ? [...targets(w, kind), to] : [to];
    writeTargets(w, kind, list);
  });
}

export function disconnect(draft: WorkflowDraft, from: string, kind: EdgeKind, to: string): WorkflowDraft {
  return edit(draft, (d) => {
    const w = worker(d, from);
    writeTargets(
      w,
      kind,
      targets(w, kind).filter((id) => id !== to),
    );
  });
}

export interface NewStep {
  id: string;
  name: string;
  type: string;
  source:
    | { kind: 'template'; templateId: string }
    | { kind: 'script'; runtime: string; script: string }
    | { kind: 'none' };
}

/** A new step as the API stores one: every field present, edges empty. */
function makeWorker(step: NewStep): DraftWorker {
  const w: DraftWorker = {
    id: step.id,
    name: step.name,
    type: step.type,
    template_id: step.source.kind === 'template' ? step.source.templateId : null,
    script: step.source.kind === 'script' ? step.source.script : null,
  };
  if (step.source.kind === 'script' && step.source.runtime !== 'javascript')
    w.script_runtime = step.source.runtime;
  w.script_inputs = {};
  w.next = [];
  if (step.type === 'CONDITIONAL') {
    w.next_true = [];
    w.next_false = [];
  }
  return w;
}

/**
 * Adds a step on the edge `kind` of `after`, between it and what followed: the new step takes over
 * that edge's targets as its way on (a CONDITIONAL as its `true` edge; an ENDER ends there, so what
 * followed is left for the author to reconnect). Without `after`, the step stands alone, last.
 */
export function addStep(
  draft: WorkflowDraft,
  step: NewStep,
  after?: { id: string; kind: EdgeKind },
): WorkflowDraft {
  return edit(draft, (d) => {
    const added = makeWorker(step);
    if (!after) {
      d.workers.push(added);
      return;
    }
    const from = worker(d, after.id);
    const onward = targets(from, after.kind);
    if (step.type === 'CONDITIONAL') added.next_true = onward.slice(0, 1);
    else if (step.type !== 'ENDER') added.next = onward;
    writeTargets(from, after.kind, [added.id]);
    d.workers.splice(d.workers.indexOf(from) + 1, 0, added);
  });
}

/**
 * Removes a step and every edge into it. A step with one way on (`next`) leaves its predecessors
 * pointing where it pointed, so removing a link of a chain keeps the chain whole.
 */
export function removeStep(draft: WorkflowDraft, id: string): WorkflowDraft {
  return edit(draft, (d) => {
    const gone = worker(d, id);
    const onward = gone.type === 'CONDITIONAL' ? [] : targets(gone, 'next');
    d.workers = d.workers.filter((w) => w.id !== id);
    for (const w of d.workers) {
      for (const kind of EDGE_KINDS) {
        const list = targets(w, kind);
        if (!list.includes(id)) continue;
        const replaced = list.flatMap((to) => (to === id ? onward.filter((o) => o !== w.id) : [to]));
        // A CONDITIONAL's edge holds one step: the first of what followed.
        writeTargets(w, kind, kind === 'next' ? replaced : replaced.slice(0, 1));
      }
    }
  });
}

/**
 * The step `id` and the one after it trade places on the path (A → X → Y → B becomes A → Y → X → B),
 * and in the list. Possible where X has one `next`, Y one way in (from X) and a `next` of its own,
 * and neither starts nor ends the run. Null when not.
 */
export function swapWithNext(draft: WorkflowDraft, id: string): WorkflowDraft | null {
  const x = findWorker(draft, id);
  if (!x || !movable(x)) return null;
  const after = targets(x, 'next');
  if (after.length !== 1) return null;
  const y = findWorker(draft, after[0]!);
  if (!y || !movable(y) || y.id === x.id) return null;
  const into = predecessors(draft, y.id);
  if (into.length !== 1 || into[0]!.from !== x.id) return null;
  return edit(draft, (d) => {
    const [dx, dy] = [worker(d, x.id), worker(d, y.id)];
    for (const w of d.workers) {
      if (w.id === dx.id) continue;
      for (const kind of EDGE_KINDS) {
        const list = targets(w, kind);
        if (list.includes(dx.id))
          writeTargets(
            w,
            kind,
            list.map((to) => (to === dx.id ? dy.id : to)),
          );
      }
    }
    const beyond = targets(dy, 'next');
    writeTargets(dy, 'next', [dx.id]);
    writeTargets(dx, 'next', beyond);
    const [i, j] = [d.workers.indexOf(dx), d.workers.indexOf(dy)];
    d.workers[i] = dy;
    d.workers[j] = dx;
  });
}

function movable(w: DraftWorker): boolean {
  return w.type !== 'STARTER' && w.type !== 'ENDER' && w.type !== 'CONDITIONAL';
}

/** Moves a step one place later on its path, or earlier (its predecessor goes after it). */
export function moveStep(
  draft: WorkflowDraft,
  id: string,
  direction: 'earlier' | 'later',
): WorkflowDraft | null {
  if (direction === 'later') return swapWithNext(draft, id);
  const into = predecessors(draft, id);
  if (into.length !== 1 || into[0]!.kind !== 'next') return null;
  return swapWithNext(draft, into[0]!.from);
}

// ---------------------------------------------------------------------------------------------
// Where an API message belongs
// ---------------------------------------------------------------------------------------------

/** The part of a step a message is about. */
export type StepField =
  'id' | 'name' | 'type' | 'source' | 'script' | 'inputs' | `input:${string}` | EdgeKind | 'edges';

export type MessageTarget =
  | { kind: 'step'; id: string; field: StepField | null; to?: string }
  | { kind: 'field'; field: string }
  | { kind: 'steps' }
  | { kind: 'general' };

const WORKER_ID = /wrkr_[A-Za-z0-9]+/;

function stepField(rest: string): StepField | null {
  const field = /^\.([a-z_]+)/.exec(rest)?.[1];
  switch (field) {
    case 'id':
    case 'name':
    case 'type':
    case 'next':
    case 'next_true':
    case 'next_false':
      return field;
    case 'template_id':
      return 'source';
    case 'script':
      return 'script';
    case 'script_runtime':
      return 'source';
    case 'script_inputs': {
      const key = /^\.script_inputs\.([^\s.[]+)/.exec(rest)?.[1];
      return key ? `input:${key}` : 'inputs';
    }
    default:
      break;
  }
  if (/needs a template_id or a script|has both template_id and script/.test(rest)) return 'source';
  if (/only a CONDITIONAL has next_true/.test(rest)) return 'edges';
  return null;
}

/**
 * Which step, edge or field an API message concerns. The API names a step by its place
 * (`workers[2].next …`) when the body's shape is wrong, and by its id (`Worker wrkr_… points at an
 * unknown worker wrkr_…`) when the graph is; workflow fields by their names (`trigger_config.cron`).
 */
export function locateMessage(message: string, draft: WorkflowDraft): MessageTarget {
  const byIndex = /^workers\[(\d+)\]/.exec(message);
  if (byIndex) {
    const w = draft.workers[Number(byIndex[1])];
    if (w) return { kind: 'step', id: w.id, field: stepField(message.slice(byIndex[0].length)) };
    return { kind: 'steps' };
  }
  const id = WORKER_ID.exec(message)?.[0];
  const named = id ? draft.workers.filter((w) => w.id === id) : [];
  if (id && named.length > 0) {
    // A message about the step (or an edge of it): which part, from its words.
    const w = named[named.length - 1]!;
    const unknown = /points at an unknown worker (wrkr_[A-Za-z0-9]+)/.exec(message);
    if (unknown) {
      const kind = EDGE_KINDS.find((k) => targets(w, k).includes(unknown[1]!)) ?? 'next';
      return { kind: 'step', id: w.id, field: kind, to: unknown[1]! };
    }
    const input = /script input "([^"]+)"/.exec(message);
    if (input) return { kind: 'step', id: w.id, field: `input:${input[1]!}` };
    if (/unknown script input/.test(message)) return { kind: 'step', id: w.id, field: 'inputs' };
    if (/\(template wtpl_/.test(message)) return { kind: 'step', id: w.id, field: 'inputs' };
    if (/next_true|next_false/.test(message)) {
      const field: EdgeKind =
        targets(w, 'next_true').length !== 1
          ? 'next_true'
          : targets(w, 'next_false').length !== 1
            ? 'next_false'
            : 'next';
      return { kind: 'step', id: w.id, field: /not next\.$/.test(message) ? 'next' : field };
    }
    if (/next worker|cannot have next/.test(message)) return { kind: 'step', id: w.id, field: 'next' };
    if (/used twice/.test(message)) return { kind: 'step', id: w.id, field: 'id' };
    return { kind: 'step', id: w.id, field: null };
  }
  const template = /Unknown worker template (wtpl_[A-Za-z0-9]+)/.exec(message);
  if (template) {
    const w = draft.workers.find((s) => s.template_id === template[1]);
    if (w) return { kind: 'step', id: w.id, field: 'source' };
  }
  if (/^workers\b|\bSTARTER\b|\bENDER\b|at most \d+ workers/.test(message)) return { kind: 'steps' };
  const field = /^([a-z_]+(?:\.[a-z_]+)?)\b/.exec(message)?.[1];
  if (field) {
    for (const known of [
      'trigger_config.cron',
      'trigger_config.timezone',
      'trigger_config.integration_id',
      'trigger_config',
      'trigger_type',
      'trigger_enabled',
      'on_failure',
      'description',
      'name',
      'tags',
    ]) {
      if (field === known || field.startsWith(`${known}.`)) return { kind: 'field', field: known };
    }
    if (field.startsWith('trigger_config')) return { kind: 'field', field: 'trigger_config' };
  }
  if (/^on_failure|handler workflow/.test(message)) return { kind: 'field', field: 'on_failure' };
  return { kind: 'general' };
}

// ---------------------------------------------------------------------------------------------
// Undo and redo
// ---------------------------------------------------------------------------------------------

/**
 * The drafts a page went through. Typing into one field makes one step of history, not one per
 * key: a change with the same `key` as the last one, within `mergeMs`, replaces it.
 */
export class DraftHistory {
  private readonly past: WorkflowDraft[] = [];
  private readonly future: WorkflowDraft[] = [];
  private lastKey: string | null = null;
  private lastAt = 0;

  constructor(
    private present: WorkflowDraft,
    private readonly now: () => number = () => Date.now(),
    private readonly mergeMs = 1500,
  ) {}

  get current(): WorkflowDraft {
    return this.present;
  }
  get canUndo(): boolean {
    return this.past.length > 0;
  }
  get canRedo(): boolean {
    return this.future.length > 0;
  }

  /** Records a change; `key` names what was typed into, for merging. No change, no step. */
  push(next: WorkflowDraft, key: string | null = null): void {
    if (sameDraft(next, this.present)) return;
    const at = this.now();
    const merge = key !== null && key === this.lastKey && at - this.lastAt <= this.mergeMs;
    if (!merge) this.past.push(this.present);
    this.present = next;
    this.future.length = 0;
    this.lastKey = key;
    this.lastAt = at;
  }

  undo(): WorkflowDraft | null {
    const previous = this.past.pop();
    if (!previous) return null;
    this.future.push(this.present);
    this.present = previous;
    this.lastKey = null;
    return previous;
  }

  redo(): WorkflowDraft | null {
    const next = this.future.pop();
    if (!next) return null;
    this.past.push(this.present);
    this.present = next;
    this.lastKey = null;
    return next;
  }

  /** Ends a run of typing: the next change is a step of its own. */
  seal(): void {
    this.lastKey = null;
  }
}
