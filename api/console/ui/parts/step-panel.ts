/**
 * The workflow editor's panel for the step chosen on the graph: its name, type and what it runs (a
 * template, an inline JavaScript or Python script in the code editor, or nothing), its script
 * inputs, where the run goes after it (edges, a step added on an edge), moving and removing it, and
 * Try it. Every change goes to the page as a new draft (`commit`); the API's message about this
 * step shows beside the field it names. This file holds the heading, name and type, Try it and the
 * order of the parts; what it runs is step-source.ts, its inputs step-inputs.ts, where the run goes
 * step-edges.ts, and what they share step-context.ts.
 */
import { h } from '../dom';
import { field } from './form-fields';
import { StepHints, type StepPanelContext } from './step-context';
import { stepEdges } from './step-edges';
import { stepInputs } from './step-inputs';
import { starterCode, stepSource } from './step-source';
import { tryPanel } from './try-panel';
import {
  type DraftWorker,
  findWorker,
  NEEDS_SCRIPT,
  renameStep,
  setSource,
  setStepType,
  sourceOf,
  WORKER_TYPES,
} from './workflow-draft';

const TYPE_NOTES: Record<string, string> = {
  STARTER: 'Starts the run: its script inputs are overlaid with the run’s parameters. One per workflow.',
  BASIC: 'Runs its script on what the step before it returned.',
  CONDITIONAL: 'Its script returns true or false: the run goes on along the true or the false edge.',
  FORKER: 'Its result, a list, fans out: the steps up to the BARRIER run once per item, in parallel.',
  BARRIER: 'Joins the FORKER’s branches: its input is the list of their results, in order.',
  ENDER: 'Ends the run: its result is the run’s.',
};

export function stepPanel(id: string, ctx: StepPanelContext): HTMLElement {
  const w = findWorker(ctx.draft(), id)!;
  const hints = new StepHints(ctx.problem);
  const hint = (key: string, control?: HTMLElement | null) => hints.hint(key, control);
  const commit = ctx.commit;
  const current = () => findWorker(ctx.draft(), id)!;

  // --- Name and type -------------------------------------------------------------------------
  const name = h('input', { id: 'step-name', value: w.name, required: true, autocomplete: 'off' });
  name.addEventListener('input', () =>
    commit(renameStep(ctx.draft(), id, name.value), { key: `name:${id}` }),
  );
  const type = h(
    'select',
    { id: 'step-type' },
    WORKER_TYPES.map((t) => h('option', { value: t, selected: t === w.type }, t)),
    (WORKER_TYPES as readonly string[]).includes(w.type)
      ? null
      : h('option', { value: w.type, selected: true }, w.type),
  );
  type.addEventListener('change', () => {
    let next = setStepType(ctx.draft(), id, type.value);
    // A step that needs a script and has none gets one to start from.
    if (NEEDS_SCRIPT.includes(type.value) && sourceOf(findWorker(next, id)!).kind === 'none') {
      next = setSource(next, id, {
        kind: 'script',
        runtime: 'javascript',
        script: starterCode(type.value, 'javascript'),
      });
    }
    commit(next, { redraw: true, focus: 'step-type' });
  });

  const source = sourceOf(w);
  const { runs, code } = stepSource(id, ctx);
  const inputs = stepInputs(id, ctx, hints);
  const { edges, actions } = stepEdges(id, ctx, hints);

  // --- Try it ---------------------------------------------------------------------------------
  const trial = tryPanel(
    () => {
      const now = current();
      const what = sourceOf(now);
      if (what.kind === 'none') return 'Nothing to try: this step runs no script, it hands its input on.';
      if (what.kind === 'script') {
        if (what.runtime === 'python3.11') {
          return 'A Python step is tried by a run: Try it runs JavaScript and TypeScript only. Save the workflow and run it from its page; the run’s time line shows this step’s log and result.';
        }
        return {
          path: '/v2/worker_templates/try',
          body: { script: now.script ?? '', script_runtime: 'javascript' },
        };
      }
      const t = ctx.templates.find((x) => x.id === what.templateId);
      if (t?.script_runtime === 'python3.11')
        return 'A Python template is tried by a run: save the workflow and run it from its page.';
      return { path: `/v2/worker_templates/${encodeURIComponent(what.templateId)}/try`, body: {} };
    },
    {
      id: 'step-try',
      readScriptInputs: () => current().script_inputs ?? {},
      workspace: () => ctx.workspace(),
    },
  );
  const pythonNote =
    source.kind === 'script' && source.runtime === 'python3.11'
      ? h(
          'p',
          { class: 'note', id: 'python-note' },
          'A Python step is tried by a run, not here: save the workflow and run it.',
        )
      : null;

  const top = hint('step');
  const panel = h(
    'section',
    { class: 'card step-panel', id: 'step-panel', 'data-step-id': id, 'aria-labelledby': 'step-heading' },
    h('h2', { id: 'step-heading', tabindex: -1 }, `Step: ${w.name || '(no name)'}`),
    h('p', { class: 'ids' }, h('code', null, id), ` · ${TYPE_NOTES[w.type] ?? ''}`),
    top,
    hint('id'),
    h(
      'div',
      { class: 'field-grid' },
      field('Step name', name, hint('name', name)),
      field('Step type', type, hint('type', type)),
      field('Runs', runs, hint('source', runs)),
    ),
    code,
    hint('script'),
    pythonNote,
    inputs,
    edges,
    actions,
    source.kind === 'none' ? null : trial,
  );
  // A message about a part not shown (an ENDER's next, say) shows at the top; inputs may still load.
  hints.fallback(top, (part) => !part.startsWith('input'));
  return panel;
}

/** A step's label in lists: its name and type. */
export function stepLabel(w: DraftWorker): string {
  return `${w.name || '(no name)'} (${w.type})`;
}
