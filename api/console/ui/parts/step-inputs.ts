/**
 * A step's script inputs in the workflow editor: a template's declared inputs, each with a control
 * for its type, and free name and value rows for an inline script's (or for values a template does
 * not declare).
 */
import { type Child, h, replace } from '../dom';
import { field } from './form-fields';
import type { StepHints, StepPanelContext } from './step-context';
import { findWorker, renameScriptInput, setScriptInput, sourceOf } from './workflow-draft';

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

/** The Script inputs fieldset; a template's inputs show once the template is read. */
export function stepInputs(id: string, ctx: StepPanelContext, hints: StepHints): HTMLElement {
  const commit = ctx.commit;
  const current = () => findWorker(ctx.draft(), id)!;
  const source = sourceOf(current());
  const inputs = h('div', { class: 'step-inputs' });
  const inputsHint = hints.hint('inputs');
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
    // A message about an input that has no row here shows under them all.
    hints.fallback(inputsHint, (part) => part.startsWith('input'));
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
        hints.hint(`input:${key}`, control),
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
      field('Value (text, or JSON)', valueInput, hints.hint(`input:${key}`, valueInput)),
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
  return h('fieldset', { class: 'step-inputs-set' }, h('legend', null, 'Script inputs'), inputs, inputsHint);
}
