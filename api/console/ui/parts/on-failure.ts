/**
 * A workflow's `on_failure`: what happens when one of its runs ends FAILED. Nothing; an alert
 * through an HTTP or SMTP integration (an SMTP one to the addresses given); or a handler workflow of
 * the same workspace, started with the failed run's details.
 */
import { call, query } from '../api';
import { type Child, h, replace } from '../dom';
import type { Integration } from './integration-settings';

export interface OnFailure {
  integration?: string;
  to?: string[];
  workflow_id?: string;
}

type Choice = 'none' | 'integration' | 'workflow';

/** The form's field: `read()` gives what goes in the body as `on_failure`. */
export function onFailureField(options: {
  current: OnFailure | null | undefined;
  /** The workflow being edited (not offered as its own handler); null for a new one. */
  workflowId: string | null;
  workspace: string;
  /** Called after each change made in the field (not when its lists arrive). */
  onChange?: () => void;
}): { element: HTMLElement; hint: HTMLElement; read(): OnFailure | null } {
  const changed = () => options.onChange?.();
  const current = options.current ?? null;
  const initial: Choice = current?.integration ? 'integration' : current?.workflow_id ? 'workflow' : 'none';
  const radios = new Map<Choice, HTMLInputElement>();
  const radio = (choice: Choice, label: string) => {
    const input = h('input', {
      type: 'radio',
      name: 'on-failure',
      id: `on-failure-choice-${choice}`,
      value: choice,
      checked: choice === initial,
    });
    radios.set(choice, input);
    input.addEventListener('change', () => {
      show();
      changed();
    });
    return h('span', { class: 'check' }, input, h('label', { for: input.id }, label));
  };
  const integration = h('select', { id: 'on-failure-integration' }, h('option', { value: '' }, 'Loading…'));
  const to = h('input', {
    id: 'on-failure-to',
    spellcheck: 'false',
    autocomplete: 'off',
    placeholder: 'desk@example.com, ops@example.com',
    value: (current?.to ?? []).join(', '),
  });
  const workflow = h('select', { id: 'on-failure-workflow' }, h('option', { value: '' }, 'Loading…'));
  const hint = h('div', { 'aria-live': 'polite', id: 'on-failure-hint' });
  const types = new Map<string, string>();
  const details = h('div', { class: 'on-failure-details' });
  const labelled = (label: string, control: HTMLElement, note?: string) =>
    h(
      'div',
      { class: 'field' },
      h('label', { for: control.id }, label),
      control,
      note ? h('p', { class: 'note hint' }, note) : null,
    );

  function chosen(): Choice {
    for (const [choice, input] of radios) if (input.checked) return choice;
    return 'none';
  }

  function show(): void {
    replace(hint);
    const choice = chosen();
    const smtp = types.get(integration.value) === 'SMTP';
    replace(
      details,
      choice === 'integration'
        ? [
            labelled(
              'Integration',
              integration,
              'The failed run’s details: an HTTP integration POSTs them to its base URL, an SMTP one e-mails them.',
            ),
            smtp ? labelled('To (e-mail addresses, separated by commas)', to) : null,
          ]
        : null,
      choice === 'workflow'
        ? labelled(
            'Handler workflow',
            workflow,
            `A workflow of workspace ${options.workspace}, started with the failed run’s details.`,
          )
        : null,
    );
  }
  integration.addEventListener('change', () => {
    show();
    changed();
  });
  // What the API said of the field no longer holds once it is changed.
  to.addEventListener('input', () => {
    replace(hint);
    changed();
  });
  workflow.addEventListener('change', () => {
    replace(hint);
    changed();
  });

  // Read here rather than through pages/integrations.ts, so the workflow pages load this file alone.
  call<{ integrations: Integration[] }>('GET', `/v2/integrations${query({ page_size: 100 })}`).then(
    ({ integrations: all }) => {
      const usable = all.filter((i) => i.type === 'HTTP' || i.type === 'SMTP');
      for (const i of usable) types.set(i.id, i.type);
      const options_: Child[] = usable.map((i: Integration) =>
        h('option', { value: i.id, selected: i.id === current?.integration }, `${i.name} (${i.type})`),
      );
      if (current?.integration && !types.has(current.integration)) {
        options_.unshift(
          h('option', { value: current.integration, selected: true }, `${current.integration} (not found)`),
        );
      }
      replace(
        integration,
        usable.length === 0 && !current?.integration
          ? h('option', { value: '' }, '(no HTTP or SMTP integration yet)')
          : options_,
      );
      show();
    },
    () => replace(integration, h('option', { value: '' }, '(integrations could not be read)')),
  );
  call<{ workflows: Array<{ id: string; name: string }> }>(
    'GET',
    `/v2/workflows${query({ workspace: options.workspace, page_size: 100 })}`,
  ).then(
    ({ workflows }) => {
      const others = workflows.filter((w) => w.id !== options.workflowId);
      const choices: Child[] = others.map((w) =>
        h('option', { value: w.id, selected: w.id === current?.workflow_id }, w.name),
      );
      if (current?.workflow_id && !others.some((w) => w.id === current.workflow_id)) {
        choices.unshift(
          h('option', { value: current.workflow_id, selected: true }, `${current.workflow_id} (not found)`),
        );
      }
      replace(
        workflow,
        choices.length === 0
          ? h('option', { value: '' }, `(no other workflow in ${options.workspace})`)
          : choices,
      );
    },
    () => replace(workflow, h('option', { value: '' }, '(workflows could not be read)')),
  );
  const element = h(
    'fieldset',
    { class: 'on-failure', id: 'on-failure' },
    h('legend', null, 'When a run fails'),
    h(
      'div',
      { class: 'check-row' },
      radio('none', 'Nothing'),
      radio('integration', 'Alert through an integration'),
      radio('workflow', 'Run a handler workflow'),
    ),
    details,
    hint,
  );
  show();
  return {
    element,
    hint,
    read(): OnFailure | null {
      const choice = chosen();
      if (choice === 'integration') {
        const addresses = to.value.split(/[\s,;]+/).filter(Boolean);
        // No addresses: `to` left out, and the API says an SMTP alert needs them.
        return types.get(integration.value) === 'SMTP' && addresses.length > 0
          ? { integration: integration.value, to: addresses }
          : { integration: integration.value };
      }
      if (choice === 'workflow') return { workflow_id: workflow.value };
      return null;
    },
  };
}

/** What the workflow page says of its `on_failure`. */
export function onFailureView(value: OnFailure | null, workspace: string): HTMLElement {
  const text = h('span', { id: 'on-failure-view' });
  if (!value || (!value.integration && !value.workflow_id)) {
    replace(text, 'Nothing: the run ends FAILED.');
    return text;
  }
  if (value.integration) {
    const id = value.integration;
    const recipients = value.to && value.to.length ? ` to ${value.to.join(', ')}` : '';
    replace(text, 'Alert through ', h('code', null, id), recipients);
    call<{ integration: Integration }>('GET', `/v2/integrations/${encodeURIComponent(id)}`).then(
      ({ integration }) =>
        replace(
          text,
          'Alert through ',
          h('a', { href: `#/integrations/${encodeURIComponent(id)}` }, integration.name),
          ` (${integration.type})`,
          recipients,
        ),
      () => undefined,
    );
    return text;
  }
  const id = value.workflow_id!;
  replace(text, 'Run ', h('code', null, id));
  call<{ workflow: { name: string } }>(
    'GET',
    `/v2/workflows/${encodeURIComponent(id)}${query({ workspace })}`,
  ).then(
    ({ workflow }) =>
      replace(text, 'Run ', h('a', { href: `#/workflows/${encodeURIComponent(id)}` }, workflow.name)),
    () => undefined,
  );
  return text;
}
