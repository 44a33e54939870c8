/**
 * The workflow editor's panel for the step chosen on the graph: its name, type and what it runs (a
 * template, an inline JavaScript or Python script in the code editor, or nothing), its script
 * inputs, where the run goes after it (edges, a step added on an edge), moving and removing it, and
 * Try it. Every change goes to the page as a new draft (`commit`); the API's message about this
 * step shows beside the field it names.
 */
import { type Child, h, replace } from '../dom';
import type { Template } from '../resources';
import type { CodeEditor, codeEditor as makeEditor } from './editor';
import { errorBox } from './elements';
import { field } from './form-fields';
import { tryPanel } from './try-panel';
import {
  addStep,
  connect,
  disconnect,
  type DraftWorker,
  type EdgeKind,
  edgeKindsOf,
  findWorker,
  moveStep,
  NEEDS_SCRIPT,
  newWorkerId,
  predecessors,
  removeStep,
  renameScriptInput,
  renameStep,
  setScript,
  setScriptInput,
  setSource,
  setStepType,
  sourceOf,
  type StepField,
  targets,
  WORKER_TYPES,
  type WorkflowDraft,
} from './workflow-draft';

export interface StepPanelContext {
  draft(): WorkflowDraft;
  /**
   * A new draft. `key` merges typing into one undo step; `redraw` draws this panel again (and
   * focuses the element with id `focus`); `select` chooses another step first.
   */
  commit(
    next: WorkflowDraft,
    options?: { key?: string; redraw?: boolean; focus?: string; select?: string | null },
  ): void;
  select(id: string | null, focus?: string): void;
  templates: Template[];
  /** One template with its script and form inputs (cached by the page). */
  template(id: string): Promise<Template>;
  /** What the API said of this step, and where. */
  problem: { field: StepField | null; to?: string; message: string } | null;
  workspace(): string;
}

interface FormInput {
  id?: string;
  name?: string;
  label?: string;
  type?: string;
  default?: unknown;
  required?: boolean;
  mandatory?: boolean;
  description?: string;
}

const TYPE_NOTES: Record<string, string> = {
  STARTER: 'Starts the run: its script inputs are overlaid with the run’s parameters. One per workflow.',
  BASIC: 'Runs its script on what the step before it returned.',
  CONDITIONAL: 'Its script returns true or false: the run goes on along the true or the false edge.',
  FORKER: 'Its result, a list, fans out: the steps up to the BARRIER run once per item, in parallel.',
  BARRIER: 'Joins the FORKER’s branches: its input is the list of their results, in order.',
  ENDER: 'Ends the run: its result is the run’s.',
};

const EDGE_LABELS: Record<EdgeKind, string> = {
  next: 'Next',
  next_true: 'When true',
  next_false: 'When false',
};

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

/** A value typed as text: JSON when it reads as JSON, else the text itself. */
function typedValue(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** How a value is shown in a text field: a string as itself unless it would read back as something else. */
function valueText(value: unknown): string {
  if (typeof value === 'string') return typedValue(value) === value ? value : JSON.stringify(value);
  return value === undefined ? '' : JSON.stringify(value);
}

export function stepPanel(id: string, ctx: StepPanelContext): HTMLElement {
  const w = findWorker(ctx.draft(), id)!;
  const problem = ctx.problem;
  const hints = new Map<string, HTMLElement>();
  /** Whether the message found its field; if not, it shows at the top of the panel. */
  let placed = false;
  /** Where the API's message about `key` goes; filled now when it is about `key`. */
  const hint = (key: string, control?: HTMLElement | null): HTMLElement => {
    const element = h('div', {
      class: 'field-error',
      'data-problem': key,
      id: `step-problem-${key.replace(/[^a-z0-9_-]/gi, '_')}`,
    });
    hints.set(key, element);
    if (problem && (problem.field ?? 'step') === key) {
      placed = true;
      replace(element, h('p', { class: 'error', role: 'alert' }, problem.message));
      if (control) {
        control.setAttribute('aria-invalid', 'true');
        control.setAttribute('aria-describedby', element.id);
      }
    }
    return element;
  };
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

  // --- What it runs ---------------------------------------------------------------------------
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

  // --- Script inputs --------------------------------------------------------------------------
  const inputs = h('div', { class: 'step-inputs' });
  const inputsHint = hint('inputs');
  const showInputs = (form: FormInput[] | null) => {
    const values = current().script_inputs ?? {};
    const rows: Child[] = [];
    const declared = new Set<string>();
    for (const input of form ?? []) {
      const key = input.id ?? input.name ?? '';
      declared.add(key);
      rows.push(formInputControl(key, input, values[key]));
    }
    const free = Object.keys(values).filter((key) => !declared.has(key));
    free.forEach((key, index) => rows.push(freeInputRow(key, values[key], index)));
    if (problem && !placed && String(problem.field).startsWith('input')) {
      placed = true;
      replace(inputsHint, h('p', { class: 'error', role: 'alert' }, problem.message));
    }
    replace(
      inputs,
      rows.length
        ? rows
        : h('p', { class: 'note' }, form ? 'The template has no inputs.' : 'No script inputs.'),
      form === null || free.length > 0
        ? h(
            'button',
            {
              type: 'button',
              id: 'add-input',
              on: {
                click: () => {
                  const taken = new Set(Object.keys(current().script_inputs ?? {}));
                  let n = taken.size + 1;
                  while (taken.has(`input_${n}`)) n++;
                  commit(setScriptInput(ctx.draft(), id, `input_${n}`, ''), {
                    redraw: true,
                    focus: `step-input-${free.length}-name`,
                  });
                },
              },
            },
            'Add an input',
          )
        : null,
    );
  };
  const formInputControl = (key: string, input: FormInput, value: unknown): HTMLElement => {
    const required = input.required === true || input.mandatory === true;
    const label = `${input.name ?? input.label ?? key}${required ? ' (required)' : ''}`;
    const domId = `step-input-${key}`;
    const set = (v: unknown) =>
      commit(setScriptInput(ctx.draft(), id, key, v), { key: `input:${id}:${key}` });
    const shown = value ?? input.default;
    let control: HTMLInputElement | HTMLTextAreaElement;
    if (input.type === 'boolean' || input.type === 'bool' || input.type === 'checkbox') {
      control = h('input', { id: domId, type: 'checkbox', checked: shown === true });
      control.addEventListener('change', () => set((control as HTMLInputElement).checked));
    } else if (['number', 'integer', 'float', 'int'].includes(input.type ?? '')) {
      control = h('input', {
        id: domId,
        type: 'number',
        step: 'any',
        value: shown === undefined || shown === null ? '' : String(shown),
      });
      control.addEventListener('input', () =>
        set(control.value.trim() === '' ? undefined : Number(control.value)),
      );
    } else if (['string', 'text', 'str', 'textarea', undefined].includes(input.type)) {
      control =
        input.type === 'textarea'
          ? h('textarea', { id: domId, rows: 3 }, typeof shown === 'string' ? shown : '')
          : h('input', { id: domId, value: shown === undefined || shown === null ? '' : String(shown) });
      control.addEventListener('input', () => set(control.value === '' ? undefined : control.value));
    } else {
      // Lists, objects and the rest: JSON, refused beside the field until it reads.
      control = h(
        'textarea',
        { id: domId, rows: 2, class: 'code', spellcheck: 'false' },
        shown === undefined ? '' : JSON.stringify(shown),
      );
      control.addEventListener('input', () => {
        const text = control.value.trim();
        try {
          set(text === '' ? undefined : (JSON.parse(text) as unknown));
          control.removeAttribute('aria-invalid');
        } catch {
          control.setAttribute('aria-invalid', 'true');
        }
      });
    }
    return field(
      label,
      control,
      h(
        'div',
        null,
        input.description ? h('p', { class: 'note hint' }, input.description) : null,
        hint(`input:${key}`, control),
      ),
    );
  };
  const freeInputRow = (key: string, value: unknown, index: number): HTMLElement => {
    let name_ = key;
    const keyInput = h('input', {
      id: `step-input-${index}-name`,
      value: key,
      autocomplete: 'off',
      spellcheck: 'false',
    });
    const valueInput = h('input', {
      id: `step-input-${index}-value`,
      value: valueText(value),
      autocomplete: 'off',
      spellcheck: 'false',
    });
    keyInput.addEventListener('change', () => {
      const wanted = keyInput.value.trim();
      if (!wanted || wanted === name_ || wanted in (current().script_inputs ?? {})) {
        keyInput.value = name_;
        return;
      }
      commit(renameScriptInput(ctx.draft(), id, name_, wanted));
      name_ = wanted;
    });
    valueInput.addEventListener('input', () =>
      commit(setScriptInput(ctx.draft(), id, name_, typedValue(valueInput.value)), {
        key: `input:${id}:${index}`,
      }),
    );
    return h(
      'div',
      { class: 'input-row' },
      field('Input name', keyInput),
      field('Value (text, or JSON)', valueInput, hint(`input:${key}`, valueInput)),
      h(
        'button',
        {
          type: 'button',
          'aria-label': `Remove the input ${key}`,
          on: {
            click: () =>
              commit(setScriptInput(ctx.draft(), id, name_, undefined), { redraw: true, focus: 'add-input' }),
          },
        },
        'Remove',
      ),
    );
  };
  if (source.kind === 'template') {
    replace(inputs, h('p', { class: 'note' }, 'Loading the template’s inputs…'));
    ctx.template(source.templateId).then(
      (t) => showInputs((t.form_inputs ?? []) as FormInput[]),
      // Unknown template: the values as they are, to read and change.
      () => showInputs(null),
    );
  } else {
    showInputs(null);
  }

  // --- Edges ----------------------------------------------------------------------------------
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
      hint(kind, target),
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
    h('fieldset', { class: 'step-inputs-set' }, h('legend', null, 'Script inputs'), inputs, inputsHint),
    h(
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
      hint('edges'),
    ),
    actions,
    source.kind === 'none' ? null : trial,
  );
  // A message about a part not shown (an ENDER's next, say) shows at the top; inputs may still load.
  if (problem && !placed && !String(problem.field).startsWith('input')) {
    replace(top, h('p', { class: 'error', role: 'alert' }, problem.message));
  }
  return panel;
}

/** A step's label in lists: its name and type. */
export function stepLabel(w: DraftWorker): string {
  return `${w.name || '(no name)'} (${w.type})`;
}
