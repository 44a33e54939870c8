/**
 * Where the run goes after a step, in the workflow editor's step panel: the steps it comes from, its
 * edges (connect, replace, remove, a new step added on one), and moving or removing the step.
 */
import { h } from '../dom';
import { field } from './form-fields';
import type { StepHints, StepPanelContext } from './step-context';
import { starterCode } from './step-source';
import {
  addStep,
  connect,
  disconnect,
  type EdgeKind,
  edgeKindsOf,
  findWorker,
  moveStep,
  NEEDS_SCRIPT,
  newWorkerId,
  predecessors,
  removeStep,
  targets,
  WORKER_TYPES,
} from './workflow-draft';

const EDGE_LABELS: Record<EdgeKind, string> = {
  next: 'Next',
  next_true: 'When true',
  next_false: 'When false',
};

/** The step's "Where the run goes" part, and its Move and Remove buttons. */
export function stepEdges(
  id: string,
  ctx: StepPanelContext,
  hints: StepHints,
): { edges: HTMLElement; actions: HTMLElement } {
  const w = findWorker(ctx.draft(), id)!;
  const problem = ctx.problem;
  const commit = ctx.commit;
  const draft = ctx.draft();
  /** The steps from which this one can be reached. */
  const before = new Set<string>();
  for (const queue = [id]; queue.length;) {
    for (const edge of predecessors(draft, queue.pop()!)) {
      if (!before.has(edge.from)) queue.push(edge.from);
      before.add(edge.from);
    }
  }
  const nameOf = (stepId: string) => findWorker(draft, stepId)?.name ?? `${stepId} (not in this workflow)`;
  const edgeSets = edgeKindsOf(w.type).map((kind) => {
    const list = targets(w, kind);
    // Not offered: the STARTER (it begins the run) and the steps before this one (a cycle).
    const others = draft.workers.filter(
      (o) => o.id !== id && !list.includes(o.id) && o.type !== 'STARTER' && !before.has(o.id),
    );
    const target = h(
      'select',
      { id: `connect-${kind}` },
      others.length
        ? others.map((o) => h('option', { value: o.id }, `${o.name} (${o.type})`))
        : h('option', { value: '' }, '(no other step)'),
    );
    const addType = h(
      'select',
      { id: `add-${kind}-type` },
      WORKER_TYPES.filter((t) => t !== 'STARTER').map((t) =>
        h('option', { value: t, selected: t === 'BASIC' }, t),
      ),
    );
    const label = EDGE_LABELS[kind];
    return h(
      'fieldset',
      { class: 'edges', 'data-edge': kind },
      h('legend', null, label),
      list.length
        ? h(
            'ul',
            { class: 'edge-list' },
            list.map((to) =>
              h(
                'li',
                { class: problem?.to === to ? 'edge-problem' : '' },
                h(
                  'button',
                  { type: 'button', class: 'link', on: { click: () => ctx.select(to) } },
                  nameOf(to),
                ),
                ' ',
                h(
                  'button',
                  {
                    type: 'button',
                    'aria-label': `Remove edge (${label.toLowerCase()}) to ${nameOf(to)}`,
                    on: {
                      click: () =>
                        commit(disconnect(ctx.draft(), id, kind, to), {
                          redraw: true,
                          focus: `connect-${kind}`,
                        }),
                    },
                  },
                  'Remove edge',
                ),
              ),
            ),
          )
        : h('p', { class: 'note' }, kind === 'next' ? 'No next step yet.' : 'No step yet.'),
      hints.hint(kind, target),
      h(
        'div',
        { class: 'inline-form' },
        field(kind === 'next' && list.length ? 'Also go to' : 'Go to', target),
        h(
          'button',
          {
            type: 'button',
            disabled: others.length === 0,
            'aria-label':
              kind === 'next' || list.length === 0
                ? `Connect ${label.toLowerCase()} to the step chosen`
                : `Replace ${label.toLowerCase()} with the step chosen`,
            on: {
              click: () =>
                target.value &&
                commit(connect(ctx.draft(), id, kind, target.value), {
                  redraw: true,
                  focus: `connect-${kind}`,
                }),
            },
          },
          kind === 'next' || list.length === 0 ? 'Connect' : 'Replace',
        ),
      ),
      h(
        'div',
        { class: 'inline-form' },
        field('New step’s type', addType),
        h(
          'button',
          {
            type: 'button',
            id: `add-on-${kind}`,
            on: {
              click: () => {
                const made = newWorkerId();
                const stepType = addType.value;
                const step = {
                  id: made,
                  name: `${stepType === 'BASIC' ? 'Step' : stepType.charAt(0) + stepType.slice(1).toLowerCase()} ${ctx.draft().workers.length}`,
                  type: stepType,
                  source: NEEDS_SCRIPT.includes(stepType)
                    ? ({
                        kind: 'script',
                        runtime: 'javascript',
                        script: starterCode(stepType, 'javascript'),
                      } as const)
                    : ({ kind: 'none' } as const),
                };
                commit(addStep(ctx.draft(), step, { id, kind }), { select: made, focus: 'step-name' });
              },
            },
          },
          `Add a step ${kind === 'next' ? 'after this one' : `on the ${label.toLowerCase().replace('when ', '')} edge`}`,
        ),
      ),
    );
  });
  const from = predecessors(draft, id);

  // --- Moving, removing -----------------------------------------------------------------------
  const earlier = moveStep(draft, id, 'earlier');
  const later = moveStep(draft, id, 'later');
  const actions = h(
    'p',
    { class: 'step-actions' },
    h(
      'button',
      {
        type: 'button',
        id: 'move-earlier',
        disabled: !earlier,
        on: { click: () => earlier && commit(earlier, { redraw: true, focus: 'move-earlier' }) },
      },
      'Move earlier',
    ),
    h(
      'button',
      {
        type: 'button',
        id: 'move-later',
        disabled: !later,
        on: { click: () => later && commit(later, { redraw: true, focus: 'move-later' }) },
      },
      'Move later',
    ),
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        id: 'remove-step',
        on: { click: () => commit(removeStep(ctx.draft(), id), { select: from[0]?.from ?? null }) },
      },
      'Remove this step',
    ),
  );
  const edges = h(
    'div',
    { class: 'step-edges' },
    h('h3', null, 'Where the run goes'),
    from.length
      ? h(
          'p',
          { class: 'note' },
          'Comes from ',
          from.map((edge, i) => [
            i ? ', ' : '',
            h(
              'button',
              { type: 'button', class: 'link', on: { click: () => ctx.select(edge.from) } },
              nameOf(edge.from),
            ),
            edge.kind === 'next' ? '' : ` (${EDGE_LABELS[edge.kind].toLowerCase()})`,
          ]),
          from.length > 1 ? ': the branches join here.' : '.',
        )
      : w.type === 'STARTER'
        ? null
        : h('p', { class: 'note' }, 'Nothing leads here yet.'),
    w.type === 'ENDER'
      ? h('p', { class: 'note' }, 'An ENDER ends the run: nothing comes after it.')
      : edgeSets,
    hints.hint('edges'),
  );
  return { edges, actions };
}
