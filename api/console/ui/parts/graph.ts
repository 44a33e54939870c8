/**
 * A workflow's steps drawn as a graph (SVG, built with dom.ts), laid out automatically: columns by
 * depth from the STARTER, each column ordered after the steps that lead into it, an arrow per
 * edge, "true" and "false" on a CONDITIONAL's edges. Fan-out (FORKER) and join (BARRIER) read from
 * the shape; each box names the step, its type and what it runs. Given `onSelect`, each box is a
 * button (click, Enter or Space): the workflow page opens the editor on it, the editor selects it.
 */
import { h, svg } from '../dom';

export interface WorkflowWorker {
  id: string;
  name: string;
  type: string;
  template_id?: string | null;
  script_runtime?: string | null;
  script?: string | null;
  script_inputs?: Record<string, unknown>;
  next?: string | string[];
  next_true?: string | string[];
  next_false?: string | string[];
  [field: string]: unknown;
}

export interface GraphOptions {
  /** The step shown as chosen. */
  selected?: string | null;
  /** Makes each box a button that calls this with the step's id. */
  onSelect?: (id: string) => void;
  /** Steps and edges (`from>kind>to`) the API found fault with: drawn in red. */
  problems?: { steps: ReadonlySet<string>; edges: ReadonlySet<string> };
  /** What a screen reader calls the graph. */
  label?: string;
}

const BOX_W = 176;
const BOX_H = 50;
const GAP_X = 56;
const GAP_Y = 20;
/** Room under the boxes for edges that skip a column. */
const ROOM_BELOW = 44;

const list = (edge: string | string[] | null | undefined): string[] =>
  edge === undefined || edge === null ? [] : Array.isArray(edge) ? edge : [edge];

export function edgesOf(worker: WorkflowWorker): Array<{ to: string; kind: string; label: string | null }> {
  return [
    ...list(worker.next).map((to) => ({ to, kind: 'next', label: null })),
    ...list(worker.next_true).map((to) => ({ to, kind: 'next_true', label: 'true' })),
    ...list(worker.next_false).map((to) => ({ to, kind: 'next_false', label: 'false' })),
  ];
}

/** Depth of each step: the longest path to it from the STARTER (steps it cannot reach go last). */
function depths(workers: WorkflowWorker[]): Map<string, number> {
  const byId = new Map(workers.map((w) => [w.id, w]));
  const depth = new Map<string, number>();
  const starter = workers.find((w) => w.type === 'STARTER') ?? workers[0];
  if (!starter) return depth;
  depth.set(starter.id, 0);
  // Relax edges |workers| times (the graph is a DAG; a cycle stops growing there).
  for (let round = 0; round < workers.length; round++) {
    let moved = false;
    for (const [id, d] of [...depth]) {
      for (const { to } of edgesOf(byId.get(id)!)) {
        if (byId.has(to) && (depth.get(to) ?? -1) < d + 1 && d + 1 < workers.length) {
          depth.set(to, d + 1);
          moved = true;
        }
      }
    }
    if (!moved) break;
  }
  const last = Math.max(0, ...depth.values()) + 1;
  for (const w of workers) if (!depth.has(w.id)) depth.set(w.id, last);
  return depth;
}

/** What a box says under the name: the type, and what the step runs. */
function runs(w: WorkflowWorker): string {
  if (w.template_id) return `${w.type} · template`;
  if (w.script) return `${w.type} · ${w.script_runtime === 'python3.11' ? 'Python' : 'JavaScript'}`;
  return w.type;
}

/**
 * Columns, each ordered by where its steps' predecessors sit (so a CONDITIONAL's true branch stays
 * above its false one and edges cross less), the list's order breaking ties.
 */
function columnsOf(workers: WorkflowWorker[], depth: Map<string, number>): WorkflowWorker[][] {
  const columns: WorkflowWorker[][] = [];
  for (const w of workers) (columns[depth.get(w.id)!] ??= []).push(w);
  const row = new Map<string, number>();
  const into = new Map<string, number[]>();
  columns.forEach((column = [], c) => {
    if (c > 0) {
      const order = new Map(column.map((w, i) => [w.id, i]));
      const weight = (w: WorkflowWorker) => {
        const rows = into.get(w.id);
        return rows && rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : Infinity;
      };
      column.sort((a, b) => weight(a) - weight(b) || order.get(a.id)! - order.get(b.id)!);
    }
    column.forEach((w, r) => {
      row.set(w.id, r);
      edgesOf(w).forEach(({ to }, k) => {
        // A true edge weighs a little above a false one leaving the same box.
        (into.get(to) ?? into.set(to, []).get(to)!).push(r + k * 0.01);
      });
    });
  });
  return columns;
}

export function workflowGraph(workers: WorkflowWorker[], options: GraphOptions = {}): Element {
  if (workers.length === 0) return h('p', { class: 'note' }, 'No steps.');
  const depth = depths(workers);
  const columns = columnsOf(workers, depth);
  const position = new Map<string, { x: number; y: number }>();
  const tallest = Math.max(...columns.map((c) => c?.length ?? 0));
  const height = tallest * (BOX_H + GAP_Y) + GAP_Y;
  columns.forEach((column, c) => {
    const top = (height - column.length * (BOX_H + GAP_Y) + GAP_Y) / 2;
    column.forEach((w, r) =>
      position.set(w.id, { x: GAP_Y + c * (BOX_W + GAP_X), y: top + r * (BOX_H + GAP_Y) }),
    );
  });
  const width = columns.length * (BOX_W + GAP_X) - GAP_X + 2 * GAP_Y;
  const edges: Element[] = [];
  // Edges between the same two steps (a CONDITIONAL sending both ways to one step) bend apart.
  const seen = new Map<string, number>();
  let skipped = false;
  for (const w of workers) {
    const from = position.get(w.id)!;
    for (const { to, kind, label } of edgesOf(w)) {
      const target = position.get(to);
      if (!target) continue;
      const pair = `${w.id}>${to}`;
      const nth = seen.get(pair) ?? 0;
      seen.set(pair, nth + 1);
      const bend = nth === 0 ? 0 : (nth % 2 === 1 ? -1 : 1) * 14 * Math.ceil(nth / 2);
      const [x1, y1] = [from.x + BOX_W, from.y + BOX_H / 2];
      const [x2, y2] = [target.x, target.y + BOX_H / 2];
      const mid = (x1 + x2) / 2;
      // An edge that skips columns goes round below the boxes between, not through them.
      const skips = depth.get(to)! - depth.get(w.id)! > 1 || x2 < x1;
      const below = height + 8 + 14 * nth;
      if (skips) skipped = true;
      const d = skips
        ? `M${x1},${y1} C${x1 + 60},${below} ${x2 - 60},${below} ${x2 - 6},${y2}`
        : `M${x1},${y1} C${mid},${y1 + bend * 2} ${mid},${y2 + bend * 2} ${x2 - 6},${y2}`;
      const faulty = options.problems?.edges.has(`${w.id}>${kind}>${to}`) ?? false;
      edges.push(
        svg('path', {
          class: `edge${label ? ` edge-${label}` : ''}${faulty ? ' edge-error' : ''}`,
          d,
          'marker-end': 'url(#arrow)',
          'data-from': w.id,
          'data-to': to,
          'data-kind': kind,
        }),
      );
      if (label) {
        const y = skips ? 0.125 * (y1 + y2) + 0.75 * below - 4 : (y1 + y2) / 2 + bend * 1.5 - 4;
        edges.push(svg('text', { class: 'edge-label', x: mid, y, 'text-anchor': 'middle' }, label));
      }
    }
  }
  const select = options.onSelect;
  const boxes = workers.map((w) => {
    const { x, y } = position.get(w.id)!;
    const name = w.name.length > 22 ? `${w.name.slice(0, 21)}…` : w.name || '(no name)';
    const chosen = options.selected === w.id;
    const faulty = options.problems?.steps.has(w.id) ?? false;
    const classes = [
      'node',
      `node-${w.type.toLowerCase()}`,
      chosen ? 'node-selected' : '',
      faulty ? 'node-error' : '',
    ];
    const description = `${w.name || '(no name)'} (${runs(w)})${faulty ? ', has a problem' : ''}`;
    return svg(
      'g',
      {
        class: classes.filter(Boolean).join(' '),
        'data-worker': w.id,
        ...(select
          ? {
              tabindex: 0,
              role: 'button',
              'aria-label': description,
              'aria-pressed': chosen ? 'true' : 'false',
            }
          : {}),
        on: select
          ? {
              click: () => select(w.id),
              keydown: (event) => {
                const key = (event as KeyboardEvent).key;
                if (key !== 'Enter' && key !== ' ') return;
                event.preventDefault();
                select(w.id);
              },
            }
          : {},
      },
      svg('title', null, description),
      svg('rect', { x, y, width: BOX_W, height: BOX_H, rx: 8 }),
      svg('text', { class: 'node-name', x: x + 10, y: y + 21 }, name),
      svg('text', { class: 'node-type', x: x + 10, y: y + 39 }, runs(w)),
    );
  });
  const label = options.label ?? 'Steps of the workflow';
  return h(
    'div',
    // Wide graphs scroll sideways: the region is reachable with the keyboard.
    { class: `graph${select ? ' graph-interactive' : ''}`, tabindex: 0, role: 'region', 'aria-label': label },
    svg(
      'svg',
      {
        viewBox: `0 0 ${width} ${height + (skipped ? ROOM_BELOW : 0)}`,
        width,
        height: height + (skipped ? ROOM_BELOW : 0),
        // A picture, or a group of buttons when its boxes can be chosen.
        role: select ? 'group' : 'img',
        'aria-label': `Workflow graph of ${workers.length} steps`,
      },
      svg(
        'defs',
        null,
        svg(
          'marker',
          {
            id: 'arrow',
            viewBox: '0 0 10 10',
            refX: 5,
            refY: 5,
            markerWidth: 7,
            markerHeight: 7,
            orient: 'auto-start-reverse',
          },
          svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrow' }),
        ),
      ),
      edges,
      boxes,
    ),
  );
}
