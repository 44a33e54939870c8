/**
 * What a step of the workflow editor runs: the Runs choice (an inline JavaScript or Python script, a
 * template, or nothing), the code in the code editor (a template's read-only), and the code a new
 * inline step starts with.
 */
import { h, replace } from '../dom';
import type { CodeEditor, codeEditor as makeEditor } from './editor';
import { errorBox } from './elements';
import type { StepPanelContext } from './step-context';
import {
  findWorker,
  NEEDS_SCRIPT,
  setScript,
  setSource,
  sourceOf,
  WORKER_TYPES,
  type WorkflowDraft,
} from './workflow-draft';

/** The code a new inline step starts with. */
export function starterCode(type: string, runtime: string): string {
  if (runtime === 'python3.11') {
    return type === 'CONDITIONAL'
      ? 'def main(args):\n    return bool(args["inputs"])\n'
      : 'def main(args):\n    # args["inputs"]: what the step before returned\n    return args["inputs"]\n';
  }
  return type === 'CONDITIONAL'
    ? 'function main(args) {\n  return Boolean(args.inputs);\n}\n'
    : '// args.inputs: what the step before returned; args.script_inputs: this step’s inputs.\nfunction main(args) {\n  return args.inputs;\n}\n';
}

const STARTERS = new Set(
  WORKER_TYPES.flatMap((type) => ['javascript', 'python3.11'].map((runtime) => starterCode(type, runtime))),
);

let editorModule: Promise<{ codeEditor: typeof makeEditor }> | null = null;
/** The code editor's chunk, loaded once, when a step with a script is first shown. */
const loadEditor = () => (editorModule ??= import('./editor'));

/** The step's Runs choice and its code, each change committed to the page. */
export function stepSource(
  id: string,
  ctx: StepPanelContext,
): { runs: HTMLSelectElement; code: HTMLElement } {
  const w = findWorker(ctx.draft(), id)!;
  const commit = ctx.commit;
  const current = () => findWorker(ctx.draft(), id)!;
  const source = sourceOf(w);
  const usable = ctx.templates.filter((t) => t.type === w.type || t.type === 'BASIC');
  const known = source.kind === 'template' && !usable.some((t) => t.id === source.templateId);
  const runs = h(
    'select',
    { id: 'step-source' },
    h(
      'optgroup',
      { label: 'Inline script' },
      h(
        'option',
        { value: 'script:javascript', selected: source.kind === 'script' && source.runtime !== 'python3.11' },
        'JavaScript',
      ),
      h(
        'option',
        { value: 'script:python3.11', selected: source.kind === 'script' && source.runtime === 'python3.11' },
        'Python 3.11',
      ),
    ),
    h(
      'optgroup',
      { label: 'Template' },
      known
        ? h(
            'option',
            { value: `template:${source.templateId}`, selected: true, id: 'step-source-current' },
            source.templateId,
          )
        : null,
      usable.map((t) =>
        h(
          'option',
          { value: `template:${t.id}`, selected: source.kind === 'template' && source.templateId === t.id },
          `${t.name} (${t.script_runtime})`,
        ),
      ),
    ),
    NEEDS_SCRIPT.includes(w.type) && source.kind !== 'none'
      ? null
      : h('option', { value: 'none', selected: source.kind === 'none' }, 'Nothing: hands its input on'),
  );
  if (known) {
    // A template outside the list (another page of them): named once it is read.
    ctx.template(source.templateId).then(
      (t) => (runs.querySelector('#step-source-current')!.textContent = `${t.name} (${t.script_runtime})`),
      () => (runs.querySelector('#step-source-current')!.textContent = `${source.templateId} (not found)`),
    );
  }
  runs.addEventListener('change', () => {
    const [kind, rest = ''] = runs.value.split(/:(.*)/s);
    const draft = ctx.draft();
    const now = current();
    let next: WorkflowDraft;
    if (kind === 'template') next = setSource(draft, id, { kind: 'template', templateId: rest });
    else if (kind === 'script') {
      // The code stays, unless it is still the code a new step starts with.
      const code =
        typeof now.script === 'string' && now.script && !STARTERS.has(now.script)
          ? now.script
          : starterCode(now.type, rest);
      next = setSource(draft, id, { kind: 'script', runtime: rest, script: code });
    } else next = setSource(draft, id, { kind: 'none' });
    commit(next, { redraw: true, focus: 'step-source' });
  });

  // --- The code ------------------------------------------------------------------------------
  const code = h('div', { class: 'step-code' });
  if (source.kind === 'script') {
    replace(code, h('p', { class: 'note' }, 'Loading the code editor…'));
    loadEditor().then(
      ({ codeEditor }) => {
        const editor: CodeEditor = codeEditor({
          text: w.script ?? '',
          runtime: source.runtime === 'python3.11' ? 'python3.11' : 'javascript',
          readOnly: false,
          label: `Script of ${w.name}`,
          id: 'step-code',
        });
        editor.onChange(() => commit(setScript(ctx.draft(), id, editor.text()), { key: `script:${id}` }));
        replace(code, editor.element);
      },
      (error: unknown) => replace(code, errorBox(error)),
    );
  } else if (source.kind === 'template') {
    const shown = h('div');
    const details = h(
      'details',
      { class: 'template-code' },
      h('summary', null, 'The template’s code (read-only here)'),
      shown,
    );
    details.addEventListener(
      'toggle',
      () =>
        void Promise.all([ctx.template(source.templateId), loadEditor()]).then(
          ([t, { codeEditor }]) =>
            replace(
              shown,
              codeEditor({
                text: t.script ?? '',
                runtime: t.script_runtime,
                readOnly: true,
                label: `Code of template ${t.name}`,
                id: 'step-template-code',
              }).element,
              h(
                'p',
                { class: 'note' },
                h('a', { href: `#/templates/${encodeURIComponent(t.id)}` }, `Open ${t.name}`),
                ' to publish a new version of it (every step that uses it runs the new one).',
              ),
            ),
          (error: unknown) => replace(shown, errorBox(error)),
        ),
      { once: true },
    );
    replace(code, details);
  }
  return { runs, code };
}
