/**
 * The workflow form, to create a workflow or change one: name, trigger, a chain of template steps
 * (each with its template's form inputs) and what happens on failure.
 */
import { ApiError, call, query } from '../api';
import { h, replace } from '../dom';
import { errorBox, section } from '../parts/elements';
import { field } from '../parts/form-fields';
import { frame } from '../parts/frame';
import type { WorkflowWorker } from '../parts/graph';
import { getTemplate, getWorkflow, type Template, type Workflow } from '../resources';
import { go } from '../router';
import { currentWorkspace } from '../session';

interface FormInput {
  id?: string;
  name?: string;
  label?: string;
  type?: string;
  default?: unknown;
  required?: boolean;
  description?: string;
}

interface StepDraft {
  id: string;
  name: string;
  templateId: string;
  values: Record<string, unknown>;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
function newWorkerId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(25));
  return 'wrkr_' + Array.from(bytes, (b) => ALNUM[b % ALNUM.length]).join('');
}

/** A linear workflow's steps in order (STARTER → … → ENDER), or null when it branches. */
function linearSteps(workers: WorkflowWorker[]): StepDraft[] | null {
  const byId = new Map(workers.map((w) => [w.id, w]));
  const ordered: WorkflowWorker[] = [];
  let current = workers.find((w) => w.type === 'STARTER');
  while (current) {
    if (!['STARTER', 'BASIC', 'ENDER'].includes(current.type) || current.next_true || current.next_false)
      return null;
    if (current.script) return null;
    ordered.push(current);
    const next =
      current.next === undefined ? [] : Array.isArray(current.next) ? current.next : [current.next];
    if (next.length > 1) return null;
    current = next.length === 1 ? byId.get(next[0]!) : undefined;
  }
  if (ordered.length !== workers.length) return null;
  return ordered.map((w) => ({
    id: w.id,
    name: w.name,
    templateId: w.template_id ?? '',
    values: { ...((w as { script_inputs?: Record<string, unknown> }).script_inputs ?? {}) },
  }));
}

export async function workflowFormPage(id: string | null): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame('Workflows', body);
  let existing: Workflow | null = null;
  let templates: Template[];
  try {
    templates = (
      await call<{ worker_templates: Template[] }>('GET', `/v2/worker_templates${query({ page_size: 100 })}`)
    ).worker_templates;
    if (id) {
      existing = await getWorkflow(id);
    }
  } catch (error) {
    replace(body, errorBox(error));
    return;
  }
  const steps: StepDraft[] = existing
    ? (linearSteps(existing.workers ?? []) ?? [])
    : [
        { id: newWorkerId(), name: 'Start', templateId: '', values: {} },
        { id: newWorkerId(), name: 'End', templateId: '', values: {} },
      ];
  if (existing && steps.length === 0) {
    replace(
      body,
      h('h1', null, `Edit ${existing.name}`),
      h(
        'p',
        { class: 'note' },
        'This workflow branches (conditions, fan-out) or has inline scripts: the form edits straight chains of template steps. Change it through the API.',
      ),
    );
    return;
  }
  const formInputsOf = new Map<string, FormInput[]>();
  const loadInputs = async (templateId: string): Promise<FormInput[]> => {
    if (!templateId) return [];
    if (!formInputsOf.has(templateId)) {
      const t = await getTemplate(templateId);
      formInputsOf.set(templateId, (t.form_inputs ?? []) as FormInput[]);
    }
    return formInputsOf.get(templateId)!;
  };
  await Promise.all(steps.map((step) => loadInputs(step.templateId).catch(() => [])));

  const name = h('input', { id: 'wf-name', required: true, value: existing?.name ?? '' });
  const nameHint = h('div', { 'aria-live': 'polite' });
  const description = h('input', { id: 'wf-description', value: existing?.description ?? '' });
  const triggerType = h(
    'select',
    { id: 'wf-trigger' },
    ['MANUAL', 'API', 'TIME_BASED', 'FILE_RECEIVED'].map((t) =>
      h('option', { value: t, selected: (existing?.trigger_type ?? 'MANUAL') === t }, t),
    ),
  );
  const config = existing?.trigger_config ?? {};
  const cron = h('input', {
    id: 'wf-cron',
    placeholder: '0 7 * * 1-5',
    value: typeof config.cron === 'string' ? config.cron : '',
  });
  const timezone = h('input', {
    id: 'wf-timezone',
    placeholder: 'UTC',
    value: typeof config.timezone === 'string' ? config.timezone : '',
  });
  const integration = h('input', {
    id: 'wf-integration',
    placeholder: 'intg_…',
    value: typeof config.integration_id === 'string' ? config.integration_id : '',
  });
  const enabled = h('input', {
    id: 'wf-enabled',
    type: 'checkbox',
    checked: existing?.trigger_enabled ?? false,
  });
  const triggerHint = h('div', { 'aria-live': 'polite' });
  const triggerFields = h('div');
  const showTrigger = () =>
    replace(
      triggerFields,
      triggerType.value === 'TIME_BASED'
        ? [field('Schedule (cron: minute hour day month weekday)', cron), field('Time zone', timezone)]
        : null,
      triggerType.value === 'FILE_RECEIVED' ? field('Integration', integration) : null,
    );
  triggerType.addEventListener('change', () => {
    // What was said of the old trigger no longer applies.
    replace(triggerHint);
    showTrigger();
  });
  showTrigger();

  const { onFailureField } = await import('../parts/on-failure');
  const onFailure = onFailureField({
    current: existing?.on_failure,
    workflowId: existing?.id ?? null,
    workspace: currentWorkspace(),
  });
  const stepList = h('ol', { class: 'steps-form', id: 'wf-steps' });
  const stepHints = new Map<number, HTMLElement>();
  const general = h('div', { 'aria-live': 'polite', id: 'wf-errors' });

  const inputControl = (step: StepDraft, input: FormInput, index: number): HTMLElement => {
    const key = input.id ?? input.name ?? '';
    const label = `${input.name ?? input.label ?? key}${input.required ? ' (required)' : ''}`;
    const current = step.values[key] ?? input.default;
    const domId = `step-${index}-${key}`;
    let control: HTMLInputElement | HTMLTextAreaElement;
    if (input.type === 'boolean') {
      control = h('input', { id: domId, type: 'checkbox', checked: current === true });
      control.addEventListener('change', () => (step.values[key] = (control as HTMLInputElement).checked));
    } else if (input.type === 'number' || input.type === 'integer') {
      control = h('input', {
        id: domId,
        type: 'number',
        step: 'any',
        value: current === undefined || current === null ? '' : String(current),
      });
      control.addEventListener('input', () => {
        const text = control.value.trim();
        if (text === '') delete step.values[key];
        else step.values[key] = Number(text);
      });
    } else if (input.type === 'string' || input.type === 'text' || input.type === undefined) {
      control = h('input', {
        id: domId,
        value: current === undefined || current === null ? '' : String(current),
      });
      control.addEventListener('input', () => {
        if (control.value === '') delete step.values[key];
        else step.values[key] = control.value;
      });
    } else {
      // Lists, objects and anything else: JSON.
      control = h(
        'textarea',
        { id: domId, rows: 2, class: 'code', spellcheck: 'false' },
        current === undefined ? '' : JSON.stringify(current),
      );
      control.addEventListener('input', () => {
        const text = control.value.trim();
        try {
          if (text === '') delete step.values[key];
          else step.values[key] = JSON.parse(text);
          control.removeAttribute('aria-invalid');
        } catch {
          control.setAttribute('aria-invalid', 'true');
        }
      });
    }
    return field(label, control, input.description ? h('p', { class: 'note' }, input.description) : null);
  };

  const renderSteps = () => {
    stepHints.clear();
    replace(
      stepList,
      steps.map((step, index) => {
        const kind = index === 0 ? 'STARTER' : index === steps.length - 1 ? 'ENDER' : 'BASIC';
        const stepName = h('input', { id: `step-${index}-name`, value: step.name, required: true });
        stepName.addEventListener('input', () => (step.name = stepName.value));
        const choices = templates.filter((t) =>
          kind === 'BASIC' ? t.type === 'BASIC' : t.type === 'BASIC' || t.type === kind,
        );
        const template = h(
          'select',
          { id: `step-${index}-template` },
          h('option', { value: '' }, kind === 'BASIC' ? '(choose a template)' : '(none: hand on the input)'),
          choices.map((t) =>
            h(
              'option',
              { value: t.id, selected: t.id === step.templateId },
              `${t.name} (${t.script_runtime})`,
            ),
          ),
        );
        const inputs = h('div', { class: 'step-inputs' });
        const showInputs = () =>
          replace(
            inputs,
            (formInputsOf.get(step.templateId) ?? []).map((input) => inputControl(step, input, index)),
          );
        template.addEventListener('change', () => {
          step.templateId = template.value;
          step.values = {};
          loadInputs(step.templateId).then(showInputs, (error: unknown) => replace(inputs, errorBox(error)));
        });
        showInputs();
        const hint = h('div', { 'aria-live': 'polite', class: 'step-hint' });
        stepHints.set(index, hint);
        const move = (delta: number) => () => {
          const [moved] = steps.splice(index, 1);
          steps.splice(index + delta, 0, moved!);
          renderSteps();
        };
        return h(
          'li',
          { class: 'card step-form', 'data-step': String(index) },
          h('h3', null, `${index + 1}. ${kind}`),
          field('Step name', stepName),
          field('Template', template),
          inputs,
          hint,
          h(
            'p',
            { class: 'step-actions' },
            index > 1 && index < steps.length - 1
              ? h('button', { type: 'button', on: { click: move(-1) } }, 'Move up')
              : null,
            index > 0 && index < steps.length - 2
              ? h('button', { type: 'button', on: { click: move(1) } }, 'Move down')
              : null,
            kind === 'BASIC'
              ? h(
                  'button',
                  { type: 'button', on: { click: () => (steps.splice(index, 1), renderSteps()) } },
                  'Remove',
                )
              : null,
          ),
        );
      }),
    );
  };
  renderSteps();
  const addStep = h(
    'button',
    {
      type: 'button',
      id: 'add-step',
      on: {
        click: () => {
          steps.splice(steps.length - 1, 0, {
            id: newWorkerId(),
            name: `Step ${steps.length}`,
            templateId: '',
            values: {},
          });
          renderSteps();
        },
      },
    },
    'Add a step',
  );

  /** The API's message, beside the field it names (workers[i]… beside that step). */
  const showError = (error: unknown) => {
    for (const hint of [nameHint, triggerHint, onFailure.hint, general, ...stepHints.values()]) replace(hint);
    const message = error instanceof ApiError ? error.message : String(error);
    const step = /workers\[(\d+)\]/.exec(message);
    if (step && stepHints.has(Number(step[1]))) {
      replace(stepHints.get(Number(step[1]))!, h('p', { class: 'error', role: 'alert' }, message));
    } else if (/^name\b|\bname\b.*(empty|characters)/.test(message)) {
      replace(nameHint, h('p', { class: 'error', role: 'alert' }, message));
    } else if (/^on_failure\b/.test(message)) {
      replace(onFailure.hint, h('p', { class: 'error', role: 'alert' }, message));
    } else if (/trigger/.test(message)) {
      replace(triggerHint, h('p', { class: 'error', role: 'alert' }, message));
    } else {
      replace(general, errorBox(error));
    }
  };

  const form = h(
    'form',
    {
      id: 'workflow-form',
      on: {
        submit: (event) => {
          event.preventDefault();
          const workers = steps.map((step, index) => ({
            id: step.id,
            name: step.name,
            type: index === 0 ? 'STARTER' : index === steps.length - 1 ? 'ENDER' : 'BASIC',
            ...(step.templateId ? { template_id: step.templateId, script_inputs: step.values } : {}),
            ...(index < steps.length - 1 ? { next: [steps[index + 1]!.id] } : {}),
          }));
          const triggerConfig =
            triggerType.value === 'TIME_BASED'
              ? {
                  cron: cron.value.trim(),
                  ...(timezone.value.trim() ? { timezone: timezone.value.trim() } : {}),
                }
              : triggerType.value === 'FILE_RECEIVED'
                ? { integration_id: integration.value.trim() }
                : {};
          const payload = {
            name: name.value,
            description: description.value || null,
            trigger_type: triggerType.value,
            trigger_config: triggerConfig,
            trigger_enabled: enabled.checked,
            workers,
            on_failure: onFailure.read(),
            workspace: currentWorkspace(),
          };
          const saved = existing
            ? call<{ workflow: Workflow }>('PUT', `/v2/workflows/${encodeURIComponent(existing.id)}`, payload)
            : call<{ workflow: Workflow }>('POST', '/v2/workflows', payload);
          saved.then(({ workflow }) => go(`#/workflows/${encodeURIComponent(workflow.id)}`), showError);
        },
      },
    },
    section('Workflow', field('Name', name, nameHint), field('Description', description)),
    section(
      'Trigger',
      field('Type', triggerType),
      triggerFields,
      h('div', { class: 'field check' }, enabled, h('label', { for: 'wf-enabled' }, 'Trigger enabled')),
      triggerHint,
    ),
    section(
      'Steps',
      h(
        'p',
        { class: 'note' },
        'A chain: the first step starts, the last one ends the run (its result is the run’s).',
      ),
      stepList,
      addStep,
    ),
    section('On failure', onFailure.element),
    general,
    h('button', { type: 'submit', class: 'primary' }, existing ? 'Save' : 'Create workflow'),
  );
  replace(body, h('h1', null, existing ? `Edit ${existing.name}` : 'New workflow'), form);
}
