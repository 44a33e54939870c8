/**
 * Changing a workflow draft: each operation returns a new draft, the one given untouched, and
 * changes only the fields it is about, so everything else a step holds goes back as it came.
 */
import {
  clone,
  type DraftWorker,
  EDGE_KINDS,
  type EdgeKind,
  findWorker,
  predecessors,
  sourceOf,
  targets,
  type WorkflowDraft,
  type WRITABLE_FIELDS,
} from './draft-model';

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
