/** Workflows: the list of the workspace's workflows, and one workflow (its steps, trigger, run form). */
import { call, query } from '../api';
import { type Child, h, pretty, replace, when } from '../dom';
import { errorBox, link, section } from '../parts/elements';
import { field } from '../parts/form-fields';
import { frame } from '../parts/frame';
import { workflowGraph } from '../parts/graph';
import { scheduleFirings, webhookAddress } from '../parts/trigger-details';
import { listTable } from '../parts/table';
import { getWorkflow, type Run, type Workflow } from '../resources';
import { go } from '../router';
import { currentWorkspace, workflowDraftKey } from '../session';

export async function workflowsPage(): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame(
    'Workflows',
    h(
      'div',
      null,
      h('div', { class: 'heading' }, h('h1', null, 'Workflows'), link('#/workflows/new', 'New workflow')),
      body,
    ),
  );
  try {
    const { workflows } = await call<{ workflows: Workflow[] }>(
      'GET',
      `/v2/workflows${query({ workspace: currentWorkspace(), page_size: 100 })}`,
    );
    if (workflows.length === 0) {
      replace(body, h('p', { class: 'note' }, `No workflows in workspace ${currentWorkspace()} yet.`));
      return;
    }
    replace(
      body,
      listTable(workflows, [
        { title: 'Name', cell: (w) => link(`#/workflows/${encodeURIComponent(w.id)}`, w.name) },
        { title: 'Trigger', cell: (w) => w.trigger_type },
        { title: 'Enabled', cell: (w) => (w.trigger_enabled ? 'yes' : 'no') },
        { title: 'Updated', cell: (w) => when(w.updated) },
      ]),
    );
  } catch (error) {
    replace(body, errorBox(error));
  }
}

function triggerView(workflow: Workflow): HTMLElement {
  const config = workflow.trigger_config ?? {};
  const rows: Child[] = [h('dt', null, 'Type'), h('dd', null, workflow.trigger_type)];
  let later: HTMLElement | null = null;
  if (workflow.trigger_type === 'TIME_BASED') {
    rows.push(
      h('dt', null, 'Schedule'),
      h('dd', null, h('code', null, String(config.cron ?? '')), ' · ', String(config.timezone ?? 'UTC')),
    );
    // The next firings as the scheduler computes them (time zone and pause included).
    later = scheduleFirings(workflow.id, currentWorkspace());
  } else if (workflow.trigger_type === 'FILE_RECEIVED' && typeof config.integration_id === 'string') {
    rows.push(h('dt', null, 'Integration'), h('dd', null, h('code', null, config.integration_id)));
    later = webhookAddress(config.integration_id);
  } else if (Object.keys(config).length > 0) {
    rows.push(h('dt', null, 'Configuration'), h('dd', null, h('pre', null, pretty(config))));
  }
  rows.push(h('dt', null, 'Enabled'), h('dd', null, workflow.trigger_enabled ? 'yes' : 'no'));
  return h('div', null, h('dl', { class: 'facts' }, rows), later);
}

export async function workflowPage(id: string): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame('Workflows', body);
  let workflow: Workflow;
  try {
    workflow = await getWorkflow(id);
  } catch (error) {
    replace(body, errorBox(error));
    return;
  }
  const toggleStatus = h('span', { 'aria-live': 'polite' });
  const toggle = h(
    'button',
    {
      type: 'button',
      id: 'toggle-trigger',
      on: {
        click: () => {
          call('PUT', `/v2/workflows/${encodeURIComponent(id)}`, {
            trigger_enabled: !workflow.trigger_enabled,
            workspace: currentWorkspace(),
          }).then(
            () => void workflowPage(id),
            (error: unknown) => replace(toggleStatus, errorBox(error)),
          );
        },
      },
    },
    workflow.trigger_enabled ? 'Disable trigger' : 'Enable trigger',
  );
  const input = h('textarea', { id: 'run-input', rows: 6, spellcheck: 'false', class: 'code' }, '{}');
  const inputHint = h('div', { 'aria-live': 'polite' });
  const runForm = h(
    'form',
    {
      id: 'run-form',
      on: {
        submit: (event) => {
          event.preventDefault();
          let parameters: unknown;
          try {
            parameters = JSON.parse(input.value);
          } catch (error) {
            replace(inputHint, h('p', { class: 'error' }, `Not JSON: ${(error as Error).message}`));
            input.setAttribute('aria-invalid', 'true');
            return;
          }
          if (parameters === null || typeof parameters !== 'object' || Array.isArray(parameters)) {
            replace(
              inputHint,
              h(
                'p',
                { class: 'error' },
                'The input must be a JSON object, such as {} or {"date": "20240102"}.',
              ),
            );
            input.setAttribute('aria-invalid', 'true');
            return;
          }
          input.removeAttribute('aria-invalid');
          replace(inputHint);
          call<{ workflow_execution: Run }>('POST', `/v2/workflows/${encodeURIComponent(id)}/run`, {
            parameters,
            workspace: currentWorkspace(),
          }).then(
            ({ workflow_execution: run }) =>
              go(`#/runs/${encodeURIComponent(id)}/${encodeURIComponent(run.id)}`),
            (error: unknown) => replace(inputHint, errorBox(error)),
          );
        },
      },
    },
    field('Input (a JSON object: the run parameters)', input, inputHint),
    h('button', { type: 'submit', class: 'primary' }, 'Run'),
  );
  const onFailure =
    'on_failure' in workflow
      ? (await import('../parts/on-failure')).onFailureView(workflow.on_failure ?? null, currentWorkspace())
      : null;
  replace(
    body,
    h('h1', null, workflow.name),
    workflow.description ? h('p', { class: 'note' }, workflow.description) : null,
    h(
      'p',
      { class: 'ids' },
      h('code', null, workflow.id),
      ' · version ',
      workflow.version,
      ' · ',
      link(`#/runs?workflow_id=${encodeURIComponent(id)}`, 'Runs of this workflow'),
      ' · ',
      link(`#/workflows/${encodeURIComponent(id)}/edit`, 'Edit'),
    ),
    sessionStorage.getItem(workflowDraftKey(currentWorkspace(), id))
      ? h(
          'p',
          { class: 'note restored', id: 'draft-waiting' },
          'This tab holds unsaved changes to this workflow: ',
          link(`#/workflows/${encodeURIComponent(id)}/edit`, 'go on with them'),
          ' (this page shows the saved workflow).',
        )
      : null,
    section(
      'Steps',
      // A step opens in the editor, on that step.
      workflowGraph(workflow.workers ?? [], {
        label: 'Steps of the workflow: choose one to edit it',
        onSelect: (worker) =>
          go(`#/workflows/${encodeURIComponent(id)}/edit?step=${encodeURIComponent(worker)}`),
      }),
    ),
    section('Trigger', triggerView(workflow), h('p', null, toggle, toggleStatus)),
    onFailure ? section('On failure', onFailure) : null,
    section('Run it', runForm),
  );
}
