/**
 * The web console: a small single-page app over the /v2 API (hash routes, no framework). Every
 * element comes from dom.ts's `h`, which puts text on the page as text.
 */
import './styles.css';
import { ApiError, call, query, type Session, useSession } from './api';
import { type Child, h, millis, pretty, type Props, replace, seconds, type Stamp, when } from './dom';
import { workflowGraph, type WorkflowWorker } from './graph';
import type { OnFailure } from './on-failure';
import { outboundCallsTable } from './outbound-calls';
import type { PageKit } from './page-kit';

interface Workflow {
  id: string;
  name: string;
  description: string | null;
  trigger_type: string;
  trigger_config: Record<string, unknown>;
  trigger_enabled: boolean;
  workers?: WorkflowWorker[];
  on_failure?: OnFailure | null;
  workspace: string;
  updated: string;
  version: string;
}
interface Run {
  id: string;
  run_status: string;
  workflow_id: string;
  workflow_name: string;
  trigger: string;
  created: Stamp;
  started: Stamp | null;
  duration: number | null;
  ender_worker_execution_id: string | null;
  resume?: { failure?: { worker_id: string; parallel_index: number } | null } | null;
}
interface StepSummary {
  worker_id: string;
  worker_name: string;
  is_parallel_execution: boolean;
  execution: {
    id: string;
    worker_type: string;
    status: string;
    created: Stamp;
    started: Stamp | null;
    ended: Stamp | null;
    duration: number | null;
    parallel_index: number;
  };
}
interface Step {
  id: string;
  status: string;
  worker_id: string;
  worker_name: string;
  worker_type: string;
  parallel_index: number;
  started: string | null;
  ended: string | null;
  duration: number | null;
  result?: unknown;
  input_params: Record<string, unknown> | null;
  error_message: string | null;
  logs?: Array<{ level: string; message: string; at: number }>;
  reused_from: string | null;
}
interface Template {
  id: string;
  name: string;
  description: string | null;
  category: string;
  type: string;
  script_runtime: string;
  script_entry_point: string;
  container_status: string;
  visible: boolean;
  updated: string;
  version: string;
  script?: string;
  form_inputs?: unknown[];
  requirements?: string[];
  builtin?: boolean;
  environment?: { build_log_tail?: string | null } | null;
}

const app = document.getElementById('app')!;
let session: Session | null = null;
let workspace = localStorage.getItem('pas.console.workspace') || 'main';
/** What the current view does when a run changes (live updates); replaced on every navigation. */
let onRunChange: ((executionId: string | null) => void) | null = null;
let events: EventSource | null = null;

// ---- Small parts -------------------------------------------------------------------------------

function badge(status: string): HTMLElement {
  return h('span', { class: `badge badge-${status.toLowerCase()}` }, status);
}

function errorBox(error: unknown): HTMLElement {
  const message = error instanceof ApiError ? `${error.status}: ${error.message}` : String(error);
  return h('p', { class: 'error', role: 'alert' }, message);
}

function link(href: string, ...children: Child[]): HTMLAnchorElement {
  return h('a', { href }, ...children);
}

function field(label: string, input: HTMLElement, hint?: HTMLElement | null): HTMLElement {
  const id = input.id || `f-${Math.random().toString(36).slice(2)}`;
  input.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), input, hint ?? null);
}

function section(title: string, ...children: Child[]): HTMLElement {
  return h('section', { class: 'card' }, h('h2', null, title), ...children);
}

interface Column<T> {
  title: string;
  cell: (row: T) => Child;
}

/** A list as a table: a heading per column, a row per item. */
function listTable<T>(
  rows: T[],
  columns: Column<T>[],
  options: { id?: string; row?: (item: T) => Props } = {},
): HTMLTableElement {
  return h(
    'table',
    { class: 'list', id: options.id },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        columns.map((c) => h('th', null, c.title)),
      ),
    ),
    h(
      'tbody',
      null,
      rows.map((item) =>
        h(
          'tr',
          options.row?.(item) ?? null,
          columns.map((c) => h('td', null, c.cell(item))),
        ),
      ),
    ),
  );
}

/** One workflow of the current workspace, with its workers. */
async function getWorkflow(id: string): Promise<Workflow> {
  return (
    await call<{ workflow: Workflow }>(
      'GET',
      `/v2/workflows/${encodeURIComponent(id)}${query({ workspace })}`,
    )
  ).workflow;
}

/** One worker template, with its script and form inputs. */
async function getTemplate(id: string): Promise<Template> {
  return (await call<{ worker_template: Template }>('GET', `/v2/worker_templates/${encodeURIComponent(id)}`))
    .worker_template;
}

/** A filter form's submit: its filled-in fields become the address's query (the page reads them there). */
function filterTo(base: string): (event: Event) => void {
  return (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [key, value] of new FormData(event.target as HTMLFormElement))
      if (value) next.set(key, String(value));
    go(`${base}?${next.toString()}`);
  };
}

function go(hash: string): void {
  if (location.hash === hash) void route();
  else location.hash = hash;
}

/** YYYY-MM-DD (a date input) to the API's YYYYMMDD. */
const apiDay = (value: string) => value.replace(/-/g, '');

// ---- Sign-in and the frame ----------------------------------------------------------------------

function signInPage(message?: string): void {
  const mode = { current: 'key' as 'key' | 'client' };
  const first = h('input', { name: 'first', autocomplete: 'username', required: true, spellcheck: 'false' });
  const second = h('input', {
    name: 'second',
    type: 'password',
    autocomplete: 'current-password',
    required: true,
  });
  const firstLabel = h('label', { for: 'signin-first' }, 'Account SID');
  const secondLabel = h('label', { for: 'signin-second' }, 'Auth token');
  first.id = 'signin-first';
  second.id = 'signin-second';
  const status = h('div', { 'aria-live': 'polite' }, message ? h('p', { class: 'note' }, message) : null);
  const tab = (which: 'key' | 'client', text: string) =>
    h(
      'button',
      {
        type: 'button',
        class: which === 'key' ? 'tab active' : 'tab',
        'aria-pressed': which === 'key' ? 'true' : 'false',
        on: {
          click: (event) => {
            mode.current = which;
            for (const button of form.querySelectorAll('.tab')) {
              button.classList.toggle('active', button === event.currentTarget);
              button.setAttribute('aria-pressed', button === event.currentTarget ? 'true' : 'false');
            }
            firstLabel.textContent = which === 'key' ? 'Account SID' : 'Client id';
            secondLabel.textContent = which === 'key' ? 'Auth token' : 'Client secret';
          },
        },
      },
      text,
    );
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'signin card',
      on: {
        submit: (event) => {
          event.preventDefault();
          const body =
            mode.current === 'key'
              ? { sid: first.value.trim(), token: second.value }
              : { client_id: first.value.trim(), client_secret: second.value };
          call<Session>('POST', '/console/session', body).then(
            (opened) => {
              startSession(opened);
              go('#/workflows');
            },
            (error: unknown) => replace(status, errorBox(error)),
          );
        },
      },
    },
    h('h1', null, 'Sign in'),
    h(
      'div',
      { class: 'tabs', role: 'group', 'aria-label': 'Credential' },
      tab('key', 'API key'),
      tab('client', 'OAuth client'),
    ),
    h('div', { class: 'field' }, firstLabel, first),
    h('div', { class: 'field' }, secondLabel, second),
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
    status,
  );
  replace(app, h('main', { class: 'center' }, h('p', { class: 'brand' }, 'Portfolio Analytics'), form));
  first.focus();
}

function startSession(opened: Session): void {
  session = opened;
  useSession(opened, () => {
    session = null;
    events?.close();
    events = null;
    signInPage('Your session has ended. Sign in again.');
  });
  events?.close();
  events = new EventSource('/console/events');
  events.addEventListener('run', (event) => {
    const data = JSON.parse((event as MessageEvent<string>).data) as { id: string };
    onRunChange?.(data.id);
  });
  events.addEventListener('resync', () => onRunChange?.(null));
}

async function signOut(): Promise<void> {
  try {
    await call('DELETE', '/console/session');
  } finally {
    session = null;
    events?.close();
    events = null;
    useSession(null);
    history.replaceState(null, '', '/console');
    signInPage('Signed out.');
  }
}

async function frame(active: string, content: HTMLElement): Promise<void> {
  const switcher = h('select', {
    id: 'workspace',
    on: {
      change: (event) => {
        workspace = (event.target as HTMLSelectElement).value;
        localStorage.setItem('pas.console.workspace', workspace);
        go('#/workflows');
      },
    },
  });
  const nav = (hash: string, text: string) =>
    h(
      'a',
      { href: hash, class: active === text ? 'active' : '', 'aria-current': active === text ? 'page' : null },
      text,
    );
  replace(
    app,
    h(
      'header',
      { class: 'top' },
      h('span', { class: 'brand' }, 'Portfolio Analytics'),
      h(
        'nav',
        { 'aria-label': 'Sections' },
        nav('#/workflows', 'Workflows'),
        nav('#/runs', 'Runs'),
        nav('#/templates', 'Templates'),
        nav('#/integrations', 'Integrations'),
        nav('#/secrets', 'Secrets'),
        nav('#/data', 'Data'),
      ),
      h('div', { class: 'who' }, h('label', { for: 'workspace' }, 'Workspace'), switcher),
      h('span', { class: 'user' }, session?.user.email ?? ''),
      h('button', { type: 'button', id: 'sign-out', on: { click: () => void signOut() } }, 'Sign out'),
    ),
    h('main', { class: 'page' }, content),
  );
  try {
    const { workspaces } = await call<{ workspaces: Array<{ name: string }> }>(
      'GET',
      `/v2/workspaces${query({ page_size: 100 })}`,
    );
    const names = workspaces.map((w) => w.name);
    if (!names.includes(workspace)) names.unshift(workspace);
    replace(
      switcher,
      ...names.map((name) => h('option', { value: name, selected: name === workspace }, name)),
    );
  } catch {
    replace(switcher, h('option', { value: workspace }, workspace));
  }
}

// ---- Workflows --------------------------------------------------------------------------------

async function workflowsPage(): Promise<void> {
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
      `/v2/workflows${query({ workspace, page_size: 100 })}`,
    );
    if (workflows.length === 0) {
      replace(body, h('p', { class: 'note' }, `No workflows in workspace ${workspace} yet.`));
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
  const later = h('div', { 'aria-live': 'polite' });
  if (workflow.trigger_type === 'TIME_BASED') {
    rows.push(
      h('dt', null, 'Schedule'),
      h('dd', null, h('code', null, String(config.cron ?? '')), ' · ', String(config.timezone ?? 'UTC')),
    );
    // The next firings as the scheduler computes them (time zone and pause included).
    call<{ schedule: { paused: boolean; next_firings: string[] } }>(
      'GET',
      `/v2/workflows/${encodeURIComponent(workflow.id)}/schedule${query({ workspace })}`,
    ).then(
      ({ schedule }) =>
        replace(
          later,
          h(
            'h3',
            null,
            schedule.paused ? 'Next firings (paused: none will start until enabled)' : 'Next firings',
          ),
          h(
            'ol',
            { id: 'next-firings' },
            schedule.next_firings.map((at) => h('li', null, when(at))),
          ),
        ),
      (error: unknown) => replace(later, errorBox(error)),
    );
  } else if (workflow.trigger_type === 'FILE_RECEIVED' && typeof config.integration_id === 'string') {
    const integrationId = config.integration_id;
    rows.push(h('dt', null, 'Integration'), h('dd', null, h('code', null, integrationId)));
    call<{ integration: { name: string; webhook_path: string | null } }>(
      'GET',
      `/v2/integrations/${encodeURIComponent(integrationId)}`,
    ).then(
      ({ integration }) => {
        if (!integration.webhook_path) return;
        const url = `${location.origin}${integration.webhook_path}`;
        const copied = h('span', { 'aria-live': 'polite', class: 'note' });
        replace(
          later,
          h('h3', null, `Webhook (${integration.name})`),
          h(
            'p',
            null,
            // The key is an auth token: never shown, only its place.
            h('code', { id: 'webhook-url' }, `${url}?key=••••••••`),
            ' ',
            h(
              'button',
              {
                type: 'button',
                id: 'copy-webhook',
                on: {
                  click: () =>
                    navigator.clipboard.writeText(`${url}?key=YOUR_AUTH_TOKEN`).then(
                      () =>
                        (copied.textContent =
                          'Copied, with YOUR_AUTH_TOKEN where an API key’s auth token goes.'),
                      () => (copied.textContent = 'The browser refused to copy.'),
                    ),
                },
              },
              'Copy URL',
            ),
            ' ',
            copied,
          ),
          h(
            'p',
            { class: 'note' },
            'Senders that can set headers send Authorization: Bearer SID:TOKEN instead of key.',
          ),
        );
      },
      (error: unknown) => replace(later, errorBox(error)),
    );
  } else if (Object.keys(config).length > 0) {
    rows.push(h('dt', null, 'Configuration'), h('dd', null, h('pre', null, pretty(config))));
  }
  rows.push(h('dt', null, 'Enabled'), h('dd', null, workflow.trigger_enabled ? 'yes' : 'no'));
  return h('div', null, h('dl', { class: 'facts' }, rows), later);
}

async function workflowPage(id: string): Promise<void> {
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
            workspace,
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
            workspace,
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
      ? (await import('./on-failure')).onFailureView(workflow.on_failure ?? null, workspace)
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
    section('Steps', workflowGraph(workflow.workers ?? [])),
    section('Trigger', triggerView(workflow), h('p', null, toggle, toggleStatus)),
    onFailure ? section('On failure', onFailure) : null,
    section('Run it', runForm),
  );
}

// ---- Workflow form -----------------------------------------------------------------------------

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

async function workflowFormPage(id: string | null): Promise<void> {
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

  const { onFailureField } = await import('./on-failure');
  const onFailure = onFailureField({
    current: existing?.on_failure,
    workflowId: existing?.id ?? null,
    workspace,
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
            workspace,
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

// ---- Runs --------------------------------------------------------------------------------------

async function runsPage(params: URLSearchParams): Promise<void> {
  const filters = {
    workflow_id: params.get('workflow_id') ?? '',
    run_status: params.get('run_status') ?? '',
    trigger: params.get('trigger') ?? '',
    start: params.get('start') ?? '',
    end: params.get('end') ?? '',
  };
  const tokens = (params.get('pages') ?? '').split(',').filter(Boolean);
  const table = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  const select = (name: keyof typeof filters, label: string, options: string[]) =>
    field(
      label,
      h(
        'select',
        { name },
        h('option', { value: '' }, 'any'),
        options.map((o) => h('option', { value: o, selected: filters[name] === o }, o)),
      ),
    );
  const workflowSelect = h('select', { name: 'workflow_id' }, h('option', { value: '' }, 'any'));
  const form = h(
    'form',
    {
      class: 'filters',
      on: { submit: filterTo('#/runs') },
    },
    field('Workflow', workflowSelect),
    select('run_status', 'Status', ['RUNNING', 'SUCCEEDED', 'FAILED']),
    select('trigger', 'Trigger', ['MANUAL', 'API', 'TIME_BASED', 'FILE_RECEIVED']),
    field('From', h('input', { type: 'date', name: 'start', value: filters.start })),
    field('To', h('input', { type: 'date', name: 'end', value: filters.end })),
    h('button', { type: 'submit' }, 'Filter'),
  );
  // Bulk retry: every FAILED run of one workflow in the period shown, each from its failed step.
  const bulkStatus = h('span', { 'aria-live': 'polite', id: 'bulk-status' });
  const bulk =
    filters.workflow_id && filters.run_status === 'FAILED'
      ? h(
          'p',
          null,
          h(
            'button',
            {
              type: 'button',
              id: 'retry-failed',
              on: {
                click: () =>
                  call<{ started: number; skipped: unknown[]; has_more: boolean }>(
                    'POST',
                    `/v2/workflows/${encodeURIComponent(filters.workflow_id)}/retry_failed`,
                    {
                      start: filters.start ? apiDay(filters.start) : '20000101',
                      ...(filters.end ? { end: apiDay(filters.end) } : {}),
                      workspace,
                    },
                  ).then(
                    (outcome) =>
                      replace(
                        bulkStatus,
                        h(
                          'span',
                          { class: 'note' },
                          `Retried ${outcome.started}; skipped ${outcome.skipped.length}${outcome.has_more ? '; more remain: retry again' : ''}.`,
                        ),
                      ),
                    (error: unknown) => replace(bulkStatus, errorBox(error)),
                  ),
              },
            },
            'Retry every failed run shown, from its failed step',
          ),
          ' ',
          bulkStatus,
        )
      : null;
  await frame(
    'Runs',
    h(
      'div',
      null,
      h('h1', null, 'Runs'),
      form,
      bulk,
      table,
      h('p', { class: 'note' }, 'Updates live (server-sent events).'),
    ),
  );
  call<{ workflows: Workflow[] }>('GET', `/v2/workflows${query({ workspace, page_size: 100 })}`).then(
    ({ workflows }) =>
      workflowSelect.append(
        ...workflows.map((w) => h('option', { value: w.id, selected: w.id === filters.workflow_id }, w.name)),
      ),
    () => undefined,
  );
  const load = async () => {
    try {
      const page = await call<{ workflow_executions: Run[]; next_page_token: string | null }>(
        'GET',
        `/v2/workflow_executions${query({
          workspace,
          workflow_id: filters.workflow_id,
          run_status: filters.run_status,
          trigger: filters.trigger,
          start: filters.start && apiDay(filters.start),
          end: filters.end && apiDay(filters.end),
          page_size: 20,
          page_token: tokens[tokens.length - 1],
        })}`,
      );
      const pageLink = (pages: string[]) => {
        const next = new URLSearchParams(params);
        if (pages.length) next.set('pages', pages.join(','));
        else next.delete('pages');
        return `#/runs?${next.toString()}`;
      };
      replace(
        table,
        page.workflow_executions.length === 0
          ? h('p', { class: 'note' }, 'No runs match.')
          : listTable(
              page.workflow_executions,
              [
                { title: 'Status', cell: (run) => badge(run.run_status) },
                {
                  title: 'Workflow',
                  cell: (run) =>
                    link(
                      `#/runs/${encodeURIComponent(run.workflow_id)}/${encodeURIComponent(run.id)}`,
                      run.workflow_name,
                    ),
                },
                { title: 'Trigger', cell: (run) => run.trigger },
                { title: 'Started', cell: (run) => when(run.started ?? run.created) },
                { title: 'Duration', cell: (run) => seconds(run.duration) },
              ],
              { id: 'runs', row: (run) => ({ 'data-run': run.id }) },
            ),
        h(
          'div',
          { class: 'pager' },
          tokens.length > 0 ? link(pageLink(tokens.slice(0, -1)), '← Newer') : null,
          page.next_page_token ? link(pageLink([...tokens, page.next_page_token]), 'Older →') : null,
        ),
      );
    } catch (error) {
      replace(table, errorBox(error));
    }
  };
  let pending = false;
  onRunChange = () => {
    // Many steps change at once: one reload per burst.
    if (pending) return;
    pending = true;
    setTimeout(() => {
      pending = false;
      void load();
    }, 300);
  };
  await load();
}

function temporalLink(run: Run): HTMLElement | null {
  const base = session?.temporal_ui_url;
  if (!base) return null;
  const url = `${base.replace(/\/$/, '')}/namespaces/default/workflows/${encodeURIComponent(run.id)}`;
  return h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, 'Open in the Temporal UI');
}

async function runPage(workflowId: string, executionId: string): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame('Runs', body);
  const base = `/v2/workflows/${encodeURIComponent(workflowId)}`;
  const detail = h('div', { class: 'step-detail', id: 'step-detail', 'aria-live': 'polite' });
  let selected: string | null = null;
  const showStep = async (stepId: string) => {
    selected = stepId;
    try {
      const { worker_execution: step } = await call<{ worker_execution: Step }>(
        'GET',
        `${base}/worker_executions${query({ worker_execution_id: stepId, with_result: true, workspace })}`,
      );
      const outboundCalls = outboundCallsTable(step.logs);
      replace(
        detail,
        h('h3', null, step.worker_name, ' ', badge(step.status)),
        step.reused_from
          ? h('p', { class: 'note' }, `Reused from ${step.reused_from} (not run again in this retry).`)
          : null,
        step.error_message
          ? h(
              'div',
              null,
              h('h4', null, 'Error'),
              h('pre', { class: 'error-text', id: 'step-error' }, step.error_message),
            )
          : null,
        h('h4', null, 'Log'),
        step.logs && step.logs.length
          ? h(
              'ol',
              { class: 'log', id: 'step-log', tabindex: 0 },
              step.logs.map((line) =>
                h(
                  'li',
                  { class: `log-${line.level}` },
                  h('span', { class: 'level' }, line.level),
                  ' ',
                  line.message,
                ),
              ),
            )
          : h('p', { class: 'note' }, 'No log lines.'),
        outboundCalls ? [h('h4', null, 'Outbound calls'), outboundCalls] : null,
        h('h4', null, 'Result'),
        h(
          'pre',
          { id: 'step-result' },
          step.result === undefined || step.result === null ? 'null' : pretty(step.result),
        ),
        h('h4', null, 'Inputs'),
        h('pre', null, pretty(step.input_params ?? {})),
      );
    } catch (error) {
      replace(detail, errorBox(error));
    }
  };
  const load = async () => {
    let run: Run;
    let steps: StepSummary[];
    try {
      run = (
        await call<{ workflow_execution: Run }>(
          'GET',
          `${base}/workflow_executions${query({ workflow_execution_id: executionId, with_resume: true, workspace })}`,
        )
      ).workflow_execution;
      steps = (
        await call<{ worker_executions: StepSummary[] }>(
          'GET',
          `${base}/worker_executions${query({ workflow_execution_id: executionId, workspace })}`,
        )
      ).worker_executions;
    } catch (error) {
      replace(body, errorBox(error));
      return;
    }
    const failed = steps.find((s) => s.execution.status === 'ERROR');
    const actions = h('span', { 'aria-live': 'polite' });
    const retry =
      run.run_status === 'FAILED'
        ? h(
            'button',
            {
              type: 'button',
              class: 'primary',
              id: 'retry',
              on: {
                click: () =>
                  call<{ workflow_execution: Run }>(
                    'POST',
                    `${base}/workflow_executions/${encodeURIComponent(executionId)}/retry`,
                    { workspace },
                  ).then(
                    ({ workflow_execution: again }) =>
                      go(`#/runs/${encodeURIComponent(workflowId)}/${encodeURIComponent(again.id)}`),
                    (error: unknown) => replace(actions, errorBox(error)),
                  ),
              },
            },
            failed ? `Retry from “${failed.worker_name}”` : 'Retry',
          )
        : null;
    // Where each step sits on the run's time line. Stamps have whole seconds, so steps in one
    // second follow each other by their durations (a branch of a fan-out starts with its siblings).
    const now = Date.now();
    const runStart = millis(run.started ?? run.created);
    let cursor = 0;
    const place = new Map<string, { start: number; length: number }>();
    for (const s of steps) {
      const stamped = millis(s.execution.started ?? s.execution.created) - runStart;
      const length =
        s.execution.duration !== null
          ? s.execution.duration * 1000
          : Math.max(0, now - millis(s.execution.started ?? s.execution.created));
      const start = s.execution.parallel_index > 0 ? Math.max(0, stamped) : Math.max(stamped, cursor);
      place.set(s.execution.id, { start, length });
      cursor = Math.max(cursor, start + length);
    }
    const span = Math.max(1, cursor, (run.duration ?? 0) * 1000);
    replace(
      body,
      h('h1', null, run.workflow_name, ' ', badge(run.run_status)),
      h(
        'p',
        { class: 'ids' },
        h('code', null, run.id),
        ` · ${run.trigger} · started ${when(run.started ?? run.created)} · ${seconds(run.duration)} · `,
        link(`#/workflows/${encodeURIComponent(workflowId)}`, 'Workflow'),
        ' · ',
        temporalLink(run),
      ),
      h('p', null, retry, actions),
      section(
        'Steps',
        h(
          'ol',
          { class: 'timeline', id: 'timeline' },
          steps.map((s) => {
            const { start, length } = place.get(s.execution.id)!;
            const bar = h('span', { class: `bar bar-${s.execution.status.toLowerCase()}` });
            // Geometry through the CSSOM (a style attribute would need 'unsafe-inline').
            bar.style.marginLeft = `${Math.min(99, (100 * start) / span)}%`;
            bar.style.width = `${Math.max(1, (100 * length) / span)}%`;
            return h(
              'li',
              { class: s.execution.id === selected ? 'selected' : '' },
              h(
                'button',
                {
                  type: 'button',
                  class: 'step',
                  'data-step': s.execution.id,
                  'aria-pressed': s.execution.id === selected ? 'true' : 'false',
                  on: {
                    click: () => {
                      selected = s.execution.id;
                      void load();
                    },
                  },
                },
                h(
                  'span',
                  { class: 'name' },
                  s.worker_name,
                  s.is_parallel_execution ? ` [${s.execution.parallel_index}]` : '',
                ),
                badge(s.execution.status),
                h('span', { class: 'time' }, seconds(s.execution.duration)),
              ),
              h('span', { class: 'track' }, bar),
            );
          }),
        ),
        detail,
      ),
    );
    if (selected === null && failed) void showStep(failed.execution.id);
    else if (selected !== null) void showStep(selected);
  };
  onRunChange = (changed) => {
    if (changed === null || changed === executionId) void load();
  };
  await load();
}

// ---- Templates ---------------------------------------------------------------------------------

async function templatesPage(): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame(
    'Templates',
    h(
      'div',
      null,
      h(
        'div',
        { class: 'heading' },
        h('h1', null, 'Worker templates'),
        link('#/templates/new', 'New template'),
      ),
      body,
    ),
  );
  try {
    const { worker_templates: templates } = await call<{ worker_templates: Template[] }>(
      'GET',
      `/v2/worker_templates${query({ page_size: 100 })}`,
    );
    replace(
      body,
      listTable(templates, [
        { title: 'Name', cell: (t) => link(`#/templates/${encodeURIComponent(t.id)}`, t.name) },
        { title: 'Type', cell: (t) => t.type },
        { title: 'Runtime', cell: (t) => t.script_runtime },
        { title: 'Category', cell: (t) => t.category },
        { title: 'Environment', cell: (t) => badge(t.container_status) },
        { title: 'Updated', cell: (t) => when(t.updated) },
      ]),
    );
  } catch (error) {
    replace(body, errorBox(error));
  }
}

/** A JSON textarea and a reader that says what is wrong beside it. */
function jsonField(label: string, id: string, initial: string) {
  const input = h('textarea', { id, rows: 4, spellcheck: 'false', class: 'code' }, initial);
  const hint = h('div', { 'aria-live': 'polite' });
  return {
    element: field(label, input, hint),
    read(): { ok: true; value: unknown } | { ok: false } {
      try {
        const value: unknown = JSON.parse(input.value || 'null');
        input.removeAttribute('aria-invalid');
        replace(hint);
        return { ok: true, value };
      } catch (error) {
        input.setAttribute('aria-invalid', 'true');
        replace(hint, h('p', { class: 'error' }, `Not JSON: ${(error as Error).message}`));
        return { ok: false };
      }
    },
  };
}

interface Trial {
  status: string;
  result: unknown;
  error_message: string | null;
  logs: Array<{ level?: string; message?: string } | string>;
  duration: number;
  cpu_time: number;
}

/** "Try it": the script once in the sandbox on inputs typed here; the template's, or the editor's draft. */
function tryPanel(source: () => { path: string; body: Record<string, unknown> } | string): HTMLElement {
  const scriptInputs = jsonField('Script inputs (the form values, a JSON object)', 'try-script-inputs', '{}');
  const inputs = jsonField('Input (what the previous step returned, JSON)', 'try-inputs', 'null');
  const out = h('div', { id: 'try-output', 'aria-live': 'polite' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Try it');
  const form = h(
    'form',
    {
      id: 'try-form',
      on: {
        submit: (event) => {
          event.preventDefault();
          const a = scriptInputs.read();
          const b = inputs.read();
          if (!a.ok || !b.ok) return;
          if (a.value === null || typeof a.value !== 'object' || Array.isArray(a.value)) {
            replace(out, h('p', { class: 'error' }, 'Script inputs must be a JSON object.'));
            return;
          }
          const target = source();
          if (typeof target === 'string') {
            replace(out, h('p', { class: 'error' }, target));
            return;
          }
          button.disabled = true;
          replace(out, h('p', { class: 'note' }, 'Running in the sandbox…'));
          call<{ trial: Trial }>('POST', target.path, {
            ...target.body,
            script_inputs: a.value,
            inputs: b.value,
            workspace,
          })
            .then(
              ({ trial }) =>
                replace(
                  out,
                  h(
                    'h3',
                    null,
                    'Outcome ',
                    badge(trial.status),
                    ' ',
                    h('span', { class: 'note' }, seconds(trial.duration)),
                  ),
                  trial.error_message
                    ? h('pre', { class: 'error-text', id: 'try-error' }, trial.error_message)
                    : null,
                  h('h4', null, 'Log'),
                  trial.logs.length
                    ? h(
                        'ol',
                        { class: 'log', id: 'try-log', tabindex: 0 },
                        trial.logs.map((line) =>
                          typeof line === 'string'
                            ? h('li', null, line)
                            : h(
                                'li',
                                { class: `log-${line.level ?? 'info'}` },
                                h('span', { class: 'level' }, line.level ?? ''),
                                ' ',
                                line.message ?? '',
                              ),
                        ),
                      )
                    : h('p', { class: 'note' }, 'No log lines.'),
                  h('h4', null, 'Result'),
                  h('pre', { id: 'try-result' }, pretty(trial.result ?? null)),
                ),
              (error: unknown) => replace(out, errorBox(error)),
            )
            .finally(() => (button.disabled = false));
        },
      },
    },
    scriptInputs.element,
    inputs.element,
    h(
      'p',
      { class: 'note' },
      'Runs once in a worker’s sandbox with a step’s limits. No run is recorded; SDK calls take effect.',
    ),
    button,
  );
  return section('Try it', form, out);
}

async function templatePage(id: string): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame('Templates', body);
  let t: Template;
  try {
    t = await getTemplate(id);
  } catch (error) {
    replace(body, errorBox(error));
    return;
  }
  const builtin = t.builtin === true;
  const { codeEditor } = await import('./editor');
  const editor = codeEditor({
    text: t.script ?? '',
    runtime: t.script_runtime,
    readOnly: builtin,
    label: `Code of ${t.name}`,
    id: 'template-code',
  });
  const status = h('span', { 'aria-live': 'polite', id: 'publish-status' });
  const publish = builtin
    ? h(
        'p',
        { class: 'note' },
        'Built in: read-only. ',
        link(`#/templates/new?from=${encodeURIComponent(t.id)}`, 'Start a template of your own from it'),
      )
    : h(
        'p',
        null,
        h(
          'button',
          {
            type: 'button',
            class: 'primary',
            id: 'publish',
            on: {
              click: () => {
                call<{ worker_template: Template }>('PUT', `/v2/worker_templates/${encodeURIComponent(id)}`, {
                  script: editor.text(),
                }).then(
                  ({ worker_template: saved }) => {
                    t = { ...t, ...saved, script: editor.text() };
                    replace(status, h('span', { class: 'note' }, `Published version ${saved.version}.`));
                    replace(versionText, String(saved.version));
                    document
                      .getElementById('versions')
                      ?.closest('section')
                      ?.dispatchEvent(new Event('pas:published'));
                  },
                  (error: unknown) => replace(status, errorBox(error)),
                );
              },
            },
          },
          'Publish a new version',
        ),
        ' ',
        status,
      );
  const versionText = h('span', null, t.version);
  replace(
    body,
    h('h1', null, t.name),
    t.description ? h('p', { class: 'note' }, t.description) : null,
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'Id'),
      h('dd', null, h('code', null, t.id)),
      h('dt', null, 'Type'),
      h('dd', null, t.type),
      h('dt', null, 'Runtime'),
      h('dd', null, t.script_runtime, ' · entry point ', h('code', null, t.script_entry_point)),
      h('dt', null, 'Version'),
      h('dd', null, versionText, ' · updated ', when(t.updated), builtin ? ' · built in' : ''),
      h('dt', null, 'Environment'),
      h('dd', null, badge(t.container_status)),
      t.requirements && t.requirements.length
        ? [h('dt', null, 'Requirements'), h('dd', null, t.requirements.join(', '))]
        : null,
    ),
    t.environment?.build_log_tail
      ? section('Environment build log', h('pre', { id: 'build-log' }, t.environment.build_log_tail))
      : null,
    section('Code', editor.element, publish),
    versionsSection(t.id),
    t.form_inputs && t.form_inputs.length
      ? section('Form inputs', h('pre', null, pretty(t.form_inputs)))
      : null,
    tryPanel(() => {
      if (t.script_runtime === 'python3.11')
        return 'Try it runs JavaScript and TypeScript; run a Python template in a workflow step.';
      // The editor's text when it differs from the published one: the draft is what is tried.
      return editor.text() === (t.script ?? '')
        ? { path: `/v2/worker_templates/${encodeURIComponent(id)}/try`, body: {} }
        : {
            path: '/v2/worker_templates/try',
            body: { script: editor.text(), script_runtime: t.script_runtime },
          };
    }),
  );
}

/** The template's published versions, newest first; one opens read-only beside the list. */
function versionsSection(id: string): HTMLElement {
  const list = h('ol', { class: 'versions', id: 'versions' });
  const shown = h('div', { 'aria-live': 'polite', id: 'version-code' });
  const load = () =>
    call<{ versions: Array<{ version: number; script_runtime: string | null; published: string }> }>(
      'GET',
      `/v2/worker_templates/${encodeURIComponent(id)}/versions`,
    ).then(
      ({ versions }) =>
        replace(
          list,
          versions.map((v) =>
            h(
              'li',
              null,
              h(
                'button',
                {
                  type: 'button',
                  'data-version': String(v.version),
                  on: {
                    click: () =>
                      call<{ versions: Array<{ version: number; script?: string }> }>(
                        'GET',
                        `/v2/worker_templates/${encodeURIComponent(id)}/versions${query({ version: v.version })}`,
                      ).then(
                        ({ versions: [one] }) =>
                          replace(
                            shown,
                            h('h3', null, `Version ${v.version}`),
                            h('pre', { class: 'code' }, one?.script ?? ''),
                          ),
                        (error: unknown) => replace(shown, errorBox(error)),
                      ),
                  },
                },
                `Version ${v.version}`,
              ),
              ` · ${v.script_runtime ?? ''} · published ${when(v.published)}`,
            ),
          ),
        ),
      (error: unknown) => replace(list, errorBox(error)),
    );
  void load();
  const section_ = section('Versions', list, shown);
  section_.addEventListener('pas:published', () => void load());
  return section_;
}

const STARTER_CODE: Record<string, string> = {
  javascript: `// args.script_inputs: the form's values; args.inputs: the previous step's result.
async function main(args) {
  console.log('inputs', JSON.stringify(args.inputs));
  return { ok: true, inputs: args.inputs };
}
`,
  typescript: `// args.script_inputs: the form's values; args.inputs: the previous step's result.
async function main(args: { script_inputs: Record<string, unknown>; inputs: unknown }) {
  console.log('inputs', JSON.stringify(args.inputs));
  return { ok: true, inputs: args.inputs };
}
`,
  'python3.11': `def main(args):
    print("inputs", args["inputs"])
    return {"ok": True, "inputs": args["inputs"]}
`,
};

async function newTemplatePage(params: URLSearchParams): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame('Templates', body);
  let from: Template | null = null;
  const fromId = params.get('from');
  if (fromId) {
    try {
      from = await getTemplate(fromId);
    } catch (error) {
      replace(body, errorBox(error));
      return;
    }
  }
  const name = h('input', { id: 'template-name', required: true, value: from ? `${from.name} (mine)` : '' });
  const runtime = h(
    'select',
    { id: 'template-runtime' },
    ['javascript', 'typescript', 'python3.11'].map((r) =>
      h('option', { value: r, selected: (from?.script_runtime ?? 'javascript') === r }, r),
    ),
  );
  const holder = h('div');
  const { codeEditor } = await import('./editor');
  let editor = codeEditor({
    text: from?.script ?? STARTER_CODE.javascript!,
    runtime: runtime.value,
    readOnly: false,
    label: 'Code',
    id: 'template-code',
  });
  let edited = false;
  editor.onChange(() => (edited = true));
  replace(holder, editor.element);
  runtime.addEventListener('change', () => {
    // A new runtime brings its starter code, unless the code was written here.
    const text = edited ? editor.text() : (STARTER_CODE[runtime.value] ?? '');
    editor = codeEditor({
      text,
      runtime: runtime.value,
      readOnly: false,
      label: 'Code',
      id: 'template-code',
    });
    editor.onChange(() => (edited = true));
    replace(holder, editor.element);
  });
  const errors = h('div', { 'aria-live': 'polite', id: 'template-errors' });
  const form = h(
    'form',
    {
      on: {
        submit: (event) => {
          event.preventDefault();
          call<{ worker_template: Template }>('POST', '/v2/worker_templates', {
            name: name.value,
            type: from?.type ?? 'BASIC',
            script_runtime: runtime.value,
            script: editor.text(),
            ...(from?.form_inputs ? { form_inputs: from.form_inputs } : {}),
          }).then(
            ({ worker_template: made }) => go(`#/templates/${encodeURIComponent(made.id)}`),
            (error: unknown) => replace(errors, errorBox(error)),
          );
        },
      },
    },
    field('Name', name),
    field('Runtime', runtime),
    h('div', { class: 'field' }, h('span', { class: 'label' }, 'Code'), holder),
    errors,
    h('button', { type: 'submit', class: 'primary' }, 'Publish'),
  );
  replace(body, h('h1', null, 'New worker template'), section('Template', form));
  name.focus();
}

// ---- Data (read-only) ---------------------------------------------------------------------------

/**
 * A paged list of one resource, newest first, with the API's page tokens kept in the address
 * (`pages`: the tokens of the pages before this one), so Back and a reload keep the page.
 */
async function pagedList<T>(options: {
  active: string;
  title: string;
  path: string;
  key: string;
  params: URLSearchParams;
  base: string;
  columns: Column<T>[];
  extra?: Record<string, string>;
  filters?: HTMLElement;
  id: string;
}): Promise<void> {
  const tokens = (options.params.get('pages') ?? '').split(',').filter(Boolean);
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame(options.active, h('div', null, h('h1', null, options.title), options.filters ?? null, body));
  try {
    const page = await call<Record<string, unknown> & { next_page_token: string | null }>(
      'GET',
      `${options.path}${query({ ...options.extra, page_size: 20, page_token: tokens[tokens.length - 1] })}`,
    );
    const rows = (page[options.key] ?? []) as T[];
    const pageLink = (pages: string[]) => {
      const next = new URLSearchParams(options.params);
      if (pages.length) next.set('pages', pages.join(','));
      else next.delete('pages');
      const text = next.toString();
      return `${options.base}${text ? `?${text}` : ''}`;
    };
    replace(
      body,
      rows.length === 0
        ? h('p', { class: 'note' }, 'Nothing here.')
        : listTable(rows, options.columns, { id: options.id }),
      h(
        'div',
        { class: 'pager' },
        tokens.length > 0 ? link(pageLink(tokens.slice(0, -1)), '← Newer') : null,
        page.next_page_token ? link(pageLink([...tokens, page.next_page_token]), 'Older →') : null,
      ),
    );
  } catch (error) {
    replace(body, errorBox(error));
  }
}

interface Stored {
  id: string;
  name: string;
  description?: string | null;
  updated: Stamp;
  tags?: string[];
}

function dataNav(active: string): HTMLElement {
  const item = (hash: string, text: string) =>
    h(
      'a',
      { href: hash, class: active === text ? 'active' : '', 'aria-current': active === text ? 'page' : null },
      text,
    );
  return h(
    'nav',
    { class: 'subnav', 'aria-label': 'Data' },
    item('#/data/datastores', 'Datastores'),
    item('#/data/files', 'Files'),
    item('#/data/reports', 'Reports'),
    item('#/data/audit', 'Audit log'),
  );
}

function datastoresPage(params: URLSearchParams): Promise<void> {
  return pagedList<Stored>({
    active: 'Data',
    title: 'Datastores',
    path: '/v2/datastores',
    key: 'datastores',
    params,
    base: '#/data/datastores',
    extra: { workspace },
    filters: dataNav('Datastores'),
    id: 'datastores',
    columns: [
      { title: 'Name', cell: (d) => link(`#/data/datastores/${encodeURIComponent(d.id)}`, d.name) },
      { title: 'Tags', cell: (d) => (d.tags ?? []).join(' ') },
      { title: 'Updated', cell: (d) => when(d.updated) },
    ],
  });
}

const PREVIEW_ROWS = 50;

async function datastorePage(id: string, params: URLSearchParams): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame('Data', h('div', null, dataNav('Datastores'), body));
  try {
    const { datastore } = await call<{ datastore: Stored & { data: unknown } }>(
      'GET',
      `/v2/datastores/${encodeURIComponent(id)}${query({ workspace })}`,
    );
    const data = datastore.data;
    let preview: Child;
    if (Array.isArray(data) && data.length > 0 && data.every(Array.isArray)) {
      // Rows of cells, the first the headings: shown PREVIEW_ROWS at a time.
      const [heading, ...rest] = data as unknown[][];
      const from = Math.max(0, Number(params.get('from') ?? 0) || 0);
      const slice = rest.slice(from, from + PREVIEW_ROWS);
      const at = (n: number) => `#/data/datastores/${encodeURIComponent(id)}?from=${n}`;
      const cell = (value: unknown) =>
        typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value ?? '');
      preview = [
        h(
          'table',
          { class: 'list', id: 'datastore-table' },
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              heading!.map((v) => h('th', null, cell(v))),
            ),
          ),
          h(
            'tbody',
            null,
            slice.map((row) =>
              h(
                'tr',
                null,
                row.map((v) => h('td', null, cell(v))),
              ),
            ),
          ),
        ),
        h(
          'div',
          { class: 'pager' },
          h(
            'span',
            { class: 'note' },
            `Rows ${rest.length ? from + 1 : 0}–${from + slice.length} of ${rest.length}`,
          ),
          from > 0 ? link(at(Math.max(0, from - PREVIEW_ROWS)), '← Previous') : null,
          from + PREVIEW_ROWS < rest.length ? link(at(from + PREVIEW_ROWS), 'Next →') : null,
        ),
      ];
    } else {
      preview = h('pre', { id: 'datastore-json' }, pretty(data));
    }
    replace(
      body,
      h('h1', null, datastore.name),
      datastore.description ? h('p', { class: 'note' }, datastore.description) : null,
      h('p', { class: 'ids' }, h('code', null, datastore.id), ' · updated ', when(datastore.updated)),
      section('Data', preview),
    );
  } catch (error) {
    replace(body, errorBox(error));
  }
}

/** An address the API handed out (absolute, with the service's public URL) as a path on this origin. */
const onThisOrigin = (url: string) => {
  const parsed = new URL(url, location.origin);
  return parsed.pathname + parsed.search;
};

function filesPage(params: URLSearchParams): Promise<void> {
  return pagedList<Stored & { content_type: string; size: number; url: string }>({
    active: 'Data',
    title: 'Files',
    path: '/v2/files',
    key: 'files',
    params,
    base: '#/data/files',
    extra: { workspace },
    filters: dataNav('Files'),
    id: 'files',
    columns: [
      { title: 'Name', cell: (f) => f.name },
      { title: 'Type', cell: (f) => f.content_type },
      { title: 'Size', cell: (f) => `${f.size.toLocaleString('en-US')} bytes` },
      { title: 'Updated', cell: (f) => when(f.updated) },
      { title: '', cell: (f) => h('a', { href: onThisOrigin(f.url), download: f.name }, 'Download') },
    ],
  });
}

function reportsPage(params: URLSearchParams): Promise<void> {
  return pagedList<Stored & { relative_url: string }>({
    active: 'Data',
    title: 'Reports',
    path: '/v2/reports',
    key: 'reports',
    params,
    base: '#/data/reports',
    extra: { workspace },
    filters: dataNav('Reports'),
    id: 'reports',
    columns: [
      {
        title: 'Name',
        cell: (r) =>
          h('a', { href: onThisOrigin(r.relative_url), target: '_blank', rel: 'noopener' }, r.name),
      },
      { title: 'Tags', cell: (r) => (r.tags ?? []).join(' ') },
      { title: 'Updated', cell: (r) => when(r.updated) },
    ],
  });
}

interface AuditEntry {
  id: string;
  created: Stamp;
  activity: string;
  operation: string;
  source: string;
  status: string;
  entity_type: string;
  entity_name: string | null;
  user_email: string;
}

function auditPage(params: URLSearchParams): Promise<void> {
  const start = params.get('start') ?? '';
  const end = params.get('end') ?? '';
  const filters = h(
    'div',
    null,
    dataNav('Audit log'),
    h(
      'form',
      {
        class: 'filters',
        on: { submit: filterTo('#/data/audit') },
      },
      field('From', h('input', { type: 'date', name: 'start', value: start })),
      field('To', h('input', { type: 'date', name: 'end', value: end })),
      h('button', { type: 'submit' }, 'Filter'),
    ),
  );
  return pagedList<AuditEntry>({
    active: 'Data',
    title: 'Audit log',
    path: '/v2/audit_logs',
    key: 'audit_logs',
    params,
    base: '#/data/audit',
    extra: { start: start && apiDay(start), end: end && apiDay(end) },
    filters,
    id: 'audit',
    columns: [
      { title: 'When', cell: (a) => when(a.created) },
      { title: 'Who', cell: (a) => a.user_email },
      { title: 'What', cell: (a) => a.activity },
      { title: 'Operation', cell: (a) => a.operation },
      { title: 'Source', cell: (a) => a.source },
      { title: 'Status', cell: (a) => badge(a.status) },
    ],
  });
}

// ---- Routing -----------------------------------------------------------------------------------

/** What the pages kept in their own files use of this one. */
const kit: PageKit = { frame, workspace: () => workspace, go, field, section, listTable, errorBox };

async function route(): Promise<void> {
  onRunChange = null;
  if (!session) {
    let current: (Session & { signed_in: true }) | { signed_in: false } = { signed_in: false };
    try {
      current = await call('GET', '/console/session');
    } catch {
      // Shown as the sign-in page.
    }
    if (!current.signed_in) {
      signInPage();
      return;
    }
    startSession(current);
  }
  const [path = '', search = ''] = location.hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(search);
  if (parts[0] === 'workflows' && parts[1] === 'new') return workflowFormPage(null);
  if (parts[0] === 'workflows' && parts[1] && parts[2] === 'edit') return workflowFormPage(parts[1]);
  if (parts[0] === 'workflows' && parts[1]) return workflowPage(parts[1]);
  if (parts[0] === 'runs' && parts[1] && parts[2]) return runPage(parts[1], parts[2]);
  if (parts[0] === 'runs') return runsPage(params);
  if (parts[0] === 'data' && parts[1] === 'datastores' && parts[2]) return datastorePage(parts[2], params);
  if (parts[0] === 'data' && parts[1] === 'files') return filesPage(params);
  if (parts[0] === 'data' && parts[1] === 'reports') return reportsPage(params);
  if (parts[0] === 'data' && parts[1] === 'audit') return auditPage(params);
  if (parts[0] === 'data') return datastoresPage(params);
  if (parts[0] === 'templates' && parts[1] === 'new') return newTemplatePage(params);
  if (parts[0] === 'templates' && parts[1]) return templatePage(parts[1]);
  if (parts[0] === 'templates') return templatesPage();
  // Loaded when first opened, as the code editor is: the first load stays small.
  if (parts[0] === 'integrations') {
    const pages = await import('./integrations-page');
    if (parts[1] === 'new') return pages.integrationFormPage(kit, null);
    return parts[1] ? pages.integrationFormPage(kit, parts[1]) : pages.integrationsPage(kit);
  }
  if (parts[0] === 'secrets') return (await import('./secrets-page')).secretsPage(kit);
  return workflowsPage();
}

window.addEventListener('hashchange', () => void route());
void route();
