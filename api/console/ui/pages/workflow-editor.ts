/**
 * The workflow editor: a new workflow, or any workflow the API holds, edited on its graph. The
 * graph is drawn from the draft after every change (layout automatic); choosing a step opens its
 * panel (parts/step-panel.ts). The trigger, enabled and on_failure are edited beside it. Undo and
 * redo (buttons, Ctrl+Z, Ctrl+Shift+Z); unsaved changes stay in the tab (sessionStorage) and
 * leaving asks first; the API's 400 message shows on the step, edge or field it names. The draft
 * is the body POST/PUT take, kept as read (parts/workflow-draft.ts), so saving without a change
 * sends back what was read.
 */
import { ApiError, call, query } from '../api';
import { type Child, h, replace, when } from '../dom';
import { nextFirings } from '../parts/cron-preview';
import { errorBox, section } from '../parts/elements';
import { field } from '../parts/form-fields';
import { frame } from '../parts/frame';
import { workflowGraph } from '../parts/graph';
import { type OnFailure } from '../parts/on-failure';
import { starterCode, stepLabel, stepPanel, type StepPanelContext } from '../parts/step-panel';
import { scheduleFirings, webhookAddress } from '../parts/trigger-details';
import {
  addStep,
  DraftHistory,
  edgeKindsOf,
  findWorker,
  fromWorkflow,
  locateMessage,
  type MessageTarget,
  newDraft,
  newWorkerId,
  sameDraft,
  setField,
  setName,
  toWorkflowBody,
  WORKER_TYPES,
  type WorkflowDraft,
} from '../parts/workflow-draft';
import { getTemplate, getWorkflow, type Template, type Workflow } from '../resources';
import { go, setLeaveCheck } from '../router';
import { currentWorkspace, workflowDraftKey } from '../session';

const TRIGGERS = ['MANUAL', 'API', 'TIME_BASED', 'FILE_RECEIVED'];

interface Stored {
  /** The workflow as read when the draft began (JSON), to tell whether it changed elsewhere since. */
  base: string;
  draft: WorkflowDraft;
}

/** Everything but the steps, to tell whether the settings need drawing again. */
const settingsOf = (draft: WorkflowDraft) => JSON.stringify({ ...draft, workers: null });

export async function workflowEditorPage(id: string | null, params: URLSearchParams): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame('Workflows', body);
  const workspace = currentWorkspace();
  let existing: Workflow | null = null;
  let templates: Template[];
  try {
    [templates, existing] = await Promise.all([
      call<{ worker_templates: Template[] }>('GET', `/v2/worker_templates${query({ page_size: 100 })}`).then(
        (r) => r.worker_templates,
      ),
      id ? getWorkflow(id) : Promise.resolve(null),
    ]);
  } catch (error) {
    replace(body, errorBox(error));
    return;
  }
  const base = existing ? fromWorkflow(existing as unknown as Record<string, unknown>) : newDraft();
  const baseText = JSON.stringify(base);
  const storageKey = workflowDraftKey(workspace, id);
  const restoredNote = h('div', { 'aria-live': 'polite', id: 'draft-note' });
  let start = base;
  try {
    const stored = JSON.parse(sessionStorage.getItem(storageKey) ?? 'null') as Stored | null;
    if (stored && Array.isArray(stored.draft?.workers)) {
      start = stored.draft;
      replace(
        restoredNote,
        h(
          'p',
          { class: 'note restored' },
          'Your unsaved changes from earlier in this tab are back.',
          stored.base !== baseText && existing
            ? ` The workflow was saved elsewhere since (now version ${existing.version}): saving replaces that version.`
            : '',
          ' ',
          h(
            'button',
            { type: 'button', id: 'discard-draft', on: { click: () => discard() } },
            'Discard them',
          ),
        ),
      );
    }
  } catch {
    // A draft that does not read is no draft.
  }

  const history = new DraftHistory(start);
  let draft = history.current;
  let selected: string | null = params.get('step');
  if (selected && !findWorker(draft, selected)) selected = null;
  let problem: { target: MessageTarget; message: string } | null = null;
  const templateCache = new Map<string, Promise<Template>>();
  const template = (templateId: string) => {
    if (!templateCache.has(templateId)) {
      const promise = getTemplate(templateId);
      promise.catch(() => templateCache.delete(templateId));
      templateCache.set(templateId, promise);
    }
    return templateCache.get(templateId)!;
  };

  const dirty = () => !sameDraft(draft, base);
  setLeaveCheck(() =>
    dirty() && root.isConnected
      ? `${draft.name || 'This workflow'} has unsaved changes. Leave the editor? This tab keeps them as a draft until you save or discard them.`
      : null,
  );

  // --- The frame of the page -----------------------------------------------------------------
  const status = h('span', { class: 'note', id: 'editor-status', 'aria-live': 'polite' });
  const undoButton = h(
    'button',
    { type: 'button', id: 'undo', 'aria-keyshortcuts': 'Control+Z', on: { click: () => undo() } },
    'Undo',
  );
  const redoButton = h(
    'button',
    { type: 'button', id: 'redo', 'aria-keyshortcuts': 'Control+Shift+Z', on: { click: () => redo() } },
    'Redo',
  );
  const saveButton = h(
    'button',
    { type: 'button', class: 'primary', id: 'save', on: { click: () => save() } },
    existing ? 'Save' : 'Create workflow',
  );
  const discardButton = h(
    'button',
    { type: 'button', id: 'discard', on: { click: () => discard() } },
    'Discard changes',
  );
  const general = h('div', { 'aria-live': 'polite', id: 'wf-errors' });
  const graphHolder = h('div', { id: 'wf-steps' });
  const stepsProblem = h('div', { class: 'field-error', 'data-problem': 'steps', id: 'steps-problem' });
  const picker = h('select', { id: 'step-picker' });
  picker.addEventListener('change', () => select(picker.value || null, 'step-heading'));
  const addType = h(
    'select',
    { id: 'add-type' },
    WORKER_TYPES.filter((t) => t !== 'STARTER').map((t) =>
      h('option', { value: t, selected: t === 'BASIC' }, t),
    ),
  );
  const addButton = h(
    'button',
    { type: 'button', id: 'add-step', on: { click: () => addAfterSelected() } },
    'Add a step',
  );
  const panelHolder = h('div', { id: 'step-panel-holder' });
  /** The name and description above the steps; the trigger and on_failure below them. */
  const namesHolder = h('div');
  const settingsHolder = h('div');

  // --- Drawing --------------------------------------------------------------------------------
  const problems = () => {
    const steps = new Set<string>();
    const edges = new Set<string>();
    if (problem?.target.kind === 'step') {
      steps.add(problem.target.id);
      const { field: part, to } = problem.target;
      if (to && part) edges.add(`${problem.target.id}>${part}>${to}`);
    }
    return { steps, edges };
  };
  const drawGraph = () =>
    replace(
      graphHolder,
      workflowGraph(draft.workers, {
        selected,
        onSelect: (stepId) => select(stepId, 'step-heading'),
        problems: problems(),
        label: 'The workflow’s steps: choose one to edit it',
      }),
    );
  const drawPicker = () =>
    replace(
      picker,
      h('option', { value: '', selected: selected === null }, '(choose a step)'),
      draft.workers.map((w) =>
        h(
          'option',
          { value: w.id, selected: w.id === selected },
          stepLabel(w) +
            (problem?.target.kind === 'step' && problem.target.id === w.id ? ' — has a problem' : ''),
        ),
      ),
    );
  const panelContext: StepPanelContext = {
    draft: () => draft,
    commit: (next, options = {}) => commit(next, options),
    select: (stepId, focus) => select(stepId, focus ?? 'step-heading'),
    templates,
    template,
    problem: null,
    workspace: () => workspace,
  };
  const drawPanel = (focus?: string) => {
    if (selected === null || !findWorker(draft, selected)) {
      selected = null;
      replace(
        panelHolder,
        h(
          'p',
          { class: 'note', id: 'no-step' },
          'Choose a step on the graph, or in the list above, to edit it.',
        ),
      );
      return;
    }
    panelContext.problem =
      problem?.target.kind === 'step' && problem.target.id === selected
        ? { field: problem.target.field, to: problem.target.to, message: problem.message }
        : null;
    replace(panelHolder, stepPanel(selected, panelContext));
    if (focus) document.getElementById(focus)?.focus();
  };
  const drawStatus = () => {
    undoButton.disabled = !history.canUndo;
    redoButton.disabled = !history.canRedo;
    discardButton.disabled = !dirty();
    status.textContent = dirty()
      ? 'Unsaved changes (kept in this tab).'
      : existing
        ? 'No unsaved changes.'
        : '';
  };
  const drawSteps = () => {
    drawGraph();
    drawPicker();
    replace(
      stepsProblem,
      problem?.target.kind === 'steps' ? h('p', { class: 'error', role: 'alert' }, problem.message) : null,
    );
  };

  /** Keeps the draft in the tab while it differs from what was read. */
  const persist = () => {
    try {
      if (dirty())
        sessionStorage.setItem(storageKey, JSON.stringify({ base: baseText, draft } satisfies Stored));
      else sessionStorage.removeItem(storageKey);
    } catch {
      // Storage full or refused: the page still holds the draft.
    }
  };

  /** What the API said no longer holds once something changes. */
  const clearProblem = () => {
    if (!problem) return;
    problem = null;
    for (const hint of root.querySelectorAll<HTMLElement>('[data-problem]')) replace(hint);
    for (const marked of root.querySelectorAll<HTMLElement>('[aria-invalid="true"]'))
      marked.removeAttribute('aria-invalid');
    replace(general);
  };

  function commit(
    next: WorkflowDraft,
    options: { key?: string; redraw?: boolean; focus?: string; select?: string | null } = {},
  ): void {
    const settingsBefore = settingsOf(draft);
    const focused = document.activeElement?.id;
    history.push(next, options.key ?? null);
    draft = history.current;
    clearProblem();
    if (options.select !== undefined) selected = options.select;
    persist();
    drawSteps();
    drawStatus();
    if (options.redraw || options.select !== undefined) drawPanel(options.focus ?? 'step-heading');
    if (!options.key && settingsOf(draft) !== settingsBefore) {
      drawSettings();
      // The control just used was drawn again: it keeps the focus.
      if (focused && !document.activeElement?.id) document.getElementById(focused)?.focus();
    }
  }

  function select(stepId: string | null, focus?: string): void {
    selected = stepId;
    history.seal();
    drawSteps();
    drawPanel(focus);
  }

  function restore(to: WorkflowDraft | null): void {
    if (!to) return;
    const settingsBefore = settingsOf(draft);
    draft = to;
    clearProblem();
    persist();
    drawSteps();
    drawPanel();
    drawStatus();
    if (settingsOf(draft) !== settingsBefore) drawSettings();
  }
  const undo = () => restore(history.undo());
  const redo = () => restore(history.redo());

  function discard(): void {
    if (!dirty()) return;
    // Undoable, like any change.
    commit(base, { redraw: true });
    replace(restoredNote);
    status.textContent = 'Changes discarded (Undo brings them back).';
  }

  function addAfterSelected(): void {
    const after =
      (selected && findWorker(draft, selected)) || draft.workers.find((w) => w.type === 'STARTER');
    const type = addType.value;
    const made = newWorkerId();
    const step = {
      id: made,
      name: `Step ${draft.workers.length}`,
      type,
      source: ['BASIC', 'CONDITIONAL'].includes(type)
        ? ({ kind: 'script', runtime: 'javascript', script: starterCode(type, 'javascript') } as const)
        : ({ kind: 'none' } as const),
    };
    const kind = after ? edgeKindsOf(after.type)[0] : undefined;
    commit(addStep(draft, step, after && kind ? { id: after.id, kind } : undefined), {
      select: made,
      focus: 'step-name',
    });
  }

  // --- Settings: name, trigger, on failure ----------------------------------------------------
  const fieldHints = new Map<string, { hint: HTMLElement; input: HTMLElement | null }>();
  const fieldHint = (key: string, input: HTMLElement | null) => {
    const hint = h('div', {
      class: 'field-error',
      'data-problem': key,
      id: `problem-${key.replace(/\W/g, '-')}`,
    });
    fieldHints.set(key, { hint, input });
    return hint;
  };
  /** Kept per trigger type while the page is open, so trying another type and back loses nothing. */
  const configs = new Map<string, Record<string, unknown>>();

  function drawSettings(): void {
    fieldHints.clear();
    const name = h('input', { id: 'wf-name', required: true, value: draft.name ?? '', autocomplete: 'off' });
    name.addEventListener('input', () => commit(setName(draft, { name: name.value }), { key: 'wf-name' }));
    const description = h('input', {
      id: 'wf-description',
      value: draft.description ?? '',
      autocomplete: 'off',
    });
    description.addEventListener('input', () =>
      commit(setName(draft, { description: description.value === '' ? null : description.value }), {
        key: 'wf-description',
      }),
    );
    const type = draft.trigger_type ?? 'MANUAL';
    const triggerType = h(
      'select',
      { id: 'wf-trigger' },
      TRIGGERS.map((t) => h('option', { value: t, selected: type === t }, t)),
      TRIGGERS.includes(type) ? null : h('option', { value: type, selected: true }, type),
    );
    triggerType.addEventListener('change', () => {
      configs.set(type, draft.trigger_config ?? {});
      const next = triggerType.value;
      const config =
        configs.get(next) ??
        (next === 'TIME_BASED'
          ? { cron: '', timezone: 'UTC' }
          : next === 'FILE_RECEIVED'
            ? { integration_id: '' }
            : {});
      commit(setField(setField(draft, 'trigger_type', next), 'trigger_config', config));
    });
    const config = draft.trigger_config ?? {};
    const setConfig = (key: string, value: string) => {
      const next: Record<string, unknown> = { ...(draft.trigger_config ?? {}) };
      if (value === '' && key === 'timezone') delete next[key];
      else next[key] = value;
      commit(setField(draft, 'trigger_config', next), { key: `trigger:${key}` });
    };
    const details: Child[] = [];
    if (type === 'TIME_BASED') {
      const cron = h('input', {
        id: 'wf-cron',
        placeholder: '0 7 * * 1-5',
        spellcheck: 'false',
        autocomplete: 'off',
        value: typeof config.cron === 'string' ? config.cron : '',
      });
      const zones =
        (Intl as unknown as { supportedValuesOf?: (key: string) => string[] }).supportedValuesOf?.(
          'timeZone',
        ) ?? [];
      const timezone = h('input', {
        id: 'wf-timezone',
        placeholder: 'UTC',
        list: 'time-zones',
        autocomplete: 'off',
        value: typeof config.timezone === 'string' ? config.timezone : '',
      });
      const firings = h('div', { 'aria-live': 'polite' });
      const saved = existing?.trigger_type === 'TIME_BASED' ? existing.trigger_config : null;
      /** The scheduler's own list while the schedule is the saved one; a preview computed here otherwise. */
      const drawFirings = () => {
        const now = draft.trigger_config ?? {};
        const same =
          saved &&
          saved.cron === now.cron &&
          (saved.timezone ?? 'UTC') === ((now.timezone as string) || 'UTC');
        if (existing && same) {
          replace(firings, scheduleFirings(existing.id, workspace, 'Next firings, as scheduled'));
          return;
        }
        const next = nextFirings(String(now.cron ?? ''), String(now.timezone ?? 'UTC'), Date.now());
        replace(
          firings,
          h('h3', null, 'Next firings (a preview computed here; saved, the scheduler’s own list shows)'),
          typeof next === 'string'
            ? h('p', { class: 'note', id: 'firings-preview-note' }, next)
            : h(
                'ol',
                { id: 'next-firings-preview' },
                next.map((at) => h('li', null, when(new Date(at).toISOString()))),
              ),
        );
      };
      cron.addEventListener('input', () => {
        setConfig('cron', cron.value.trim());
        drawFirings();
      });
      timezone.addEventListener('input', () => {
        setConfig('timezone', timezone.value.trim());
        drawFirings();
      });
      drawFirings();
      details.push(
        field('Schedule (cron: minute hour day month weekday)', cron, fieldHint('trigger_config.cron', cron)),
        field('Time zone', timezone, fieldHint('trigger_config.timezone', timezone)),
        h(
          'datalist',
          { id: 'time-zones' },
          zones.map((zone) => h('option', { value: zone })),
        ),
        firings,
      );
    } else if (type === 'FILE_RECEIVED') {
      const current = typeof config.integration_id === 'string' ? config.integration_id : '';
      const integration = h(
        'select',
        { id: 'wf-integration' },
        h('option', { value: current }, current ? `${current} (loading…)` : 'Loading…'),
      );
      integration.addEventListener('change', () => {
        setConfig('integration_id', integration.value);
        replace(address, integration.value ? webhookAddress(integration.value) : null);
      });
      const address = h('div', null, current ? webhookAddress(current) : null);
      call<{ integrations: Array<{ id: string; name: string; type: string }> }>(
        'GET',
        `/v2/integrations${query({ page_size: 100 })}`,
      ).then(
        ({ integrations }) => {
          const hooks = integrations.filter((i) => i.type === 'WEBHOOK');
          replace(
            integration,
            current && !hooks.some((i) => i.id === current)
              ? h('option', { value: current, selected: true }, `${current} (not found)`)
              : null,
            !current
              ? h(
                  'option',
                  { value: '', selected: true },
                  hooks.length ? '(choose a webhook)' : '(no webhook integration yet)',
                )
              : null,
            hooks.map((i) => h('option', { value: i.id, selected: i.id === current }, i.name)),
          );
        },
        () =>
          replace(
            integration,
            h('option', { value: current }, current || '(integrations could not be read)'),
          ),
      );
      details.push(
        field('Webhook integration', integration, fieldHint('trigger_config.integration_id', integration)),
        h(
          'p',
          { class: 'note' },
          'A JSON object posted to the webhook starts a run; its STARTER receives it as body. ',
          h('a', { href: '#/integrations/new' }, 'New webhook integration'),
        ),
        address,
      );
    } else {
      details.push(
        h(
          'p',
          { class: 'note' },
          type === 'API'
            ? 'Runs start through the API (POST /v2/workflows/{id}/run) or a client.'
            : 'Runs start by hand: the workflow page’s Run form, or the API.',
        ),
      );
    }
    const enabled = h('input', {
      id: 'wf-enabled',
      type: 'checkbox',
      checked: draft.trigger_enabled === true,
    });
    enabled.addEventListener('change', () => commit(setField(draft, 'trigger_enabled', enabled.checked)));
    const onFailureHolder = h('div', null, h('p', { class: 'note' }, 'Loading…'));
    void import('../parts/on-failure').then(({ onFailureField }) => {
      const onFailure = onFailureField({
        current: (draft.on_failure ?? null) as OnFailure | null,
        workflowId: existing?.id ?? null,
        workspace,
        onChange: () => commit(setField(draft, 'on_failure', onFailure.read()), { key: 'on_failure' }),
      });
      fieldHints.set('on_failure', { hint: onFailure.hint, input: null });
      replace(onFailureHolder, onFailure.element);
    });
    replace(
      namesHolder,
      section(
        'Workflow',
        h(
          'div',
          { class: 'field-grid' },
          field('Name', name, fieldHint('name', name)),
          field('Description', description, fieldHint('description', description)),
        ),
      ),
    );
    replace(
      settingsHolder,
      section(
        'Trigger',
        field('Trigger type', triggerType, fieldHint('trigger_type', triggerType)),
        details,
        h('div', { class: 'field check' }, enabled, h('label', { for: 'wf-enabled' }, 'Trigger enabled')),
        fieldHint('trigger_enabled', enabled),
        fieldHint('trigger_config', null),
      ),
      section('On failure', onFailureHolder),
    );
  }

  // --- Saving and the API's messages ----------------------------------------------------------
  function showProblem(error: unknown): void {
    const message =
      error instanceof ApiError ? error.message : String(error instanceof Error ? error.message : error);
    if (!(error instanceof ApiError) || error.status !== 400) {
      replace(general, errorBox(error));
      general.querySelector<HTMLElement>('[role=alert]')?.focus();
      return;
    }
    const target = locateMessage(message, draft);
    problem = { target, message };
    const alert = () => h('p', { class: 'error', role: 'alert' }, message);
    if (target.kind === 'step') {
      selected = target.id;
      drawSteps();
      drawPanel();
      const shown =
        panelHolder.querySelector<HTMLElement>('[aria-invalid="true"]') ??
        panelHolder.querySelector<HTMLElement>('[role=alert]');
      shown?.scrollIntoView({ block: 'center' });
      (
        panelHolder.querySelector<HTMLElement>('[aria-invalid="true"]') ??
        document.getElementById('step-heading')
      )?.focus();
    } else if (target.kind === 'field') {
      const place =
        fieldHints.get(target.field) ??
        fieldHints.get(target.field.startsWith('trigger') ? 'trigger_config' : '') ??
        null;
      if (!place) {
        replace(general, alert());
        return;
      }
      replace(place.hint, alert());
      if (place.input) {
        place.input.setAttribute('aria-invalid', 'true');
        place.input.setAttribute('aria-describedby', place.hint.id);
        place.input.focus();
      } else {
        place.hint.scrollIntoView({ block: 'center' });
      }
    } else if (target.kind === 'steps') {
      drawSteps();
      stepsProblem.scrollIntoView({ block: 'center' });
    } else {
      replace(general, alert());
    }
  }

  function save(): void {
    clearProblem();
    drawSteps();
    const payload = { ...toWorkflowBody(draft), workspace };
    saveButton.disabled = true;
    const saved = existing
      ? call<{ workflow: Workflow }>('PUT', `/v2/workflows/${encodeURIComponent(existing.id)}`, payload)
      : call<{ workflow: Workflow }>('POST', '/v2/workflows', payload);
    saved
      .then(
        ({ workflow }) => {
          sessionStorage.removeItem(storageKey);
          setLeaveCheck(null);
          go(`#/workflows/${encodeURIComponent(workflow.id)}`);
        },
        (error: unknown) => showProblem(error),
      )
      .finally(() => (saveButton.disabled = false));
  }

  // --- Keys: Ctrl+Z and Ctrl+Shift+Z (Ctrl+Y) outside text fields, which keep their own undo ----
  const onKey = (event: KeyboardEvent) => {
    if (!root.isConnected) {
      window.removeEventListener('keydown', onKey);
      return;
    }
    if (!(event.ctrlKey || event.metaKey) || event.altKey) return;
    const key = event.key.toLowerCase();
    if (key !== 'z' && key !== 'y') return;
    const target = event.composedPath()[0];
    if (
      target instanceof HTMLElement &&
      target.closest('input:not([type=checkbox]):not([type=radio]), textarea, [contenteditable], .editor')
    )
      return;
    event.preventDefault();
    if (key === 'y' || event.shiftKey) redo();
    else undo();
  };
  window.addEventListener('keydown', onKey);

  const root = h(
    'div',
    { class: 'workflow-editor' },
    h('h1', null, existing ? `Edit ${existing.name}` : 'New workflow'),
    restoredNote,
    h(
      'div',
      { class: 'editor-bar', role: 'toolbar', 'aria-label': 'Editor' },
      undoButton,
      redoButton,
      saveButton,
      discardButton,
      status,
    ),
    general,
    namesHolder,
    section(
      'Steps',
      h(
        'p',
        { class: 'note' },
        'Choose a step on the graph (click, or Tab and Enter) to edit it; the layout follows the edges. ',
        h(
          'span',
          { class: 'phone-note', id: 'phone-note' },
          'On a small screen the graph scrolls sideways; “Edit step” below lists every step too.',
        ),
      ),
      graphHolder,
      stepsProblem,
      h(
        'div',
        { class: 'step-tools' },
        field('Edit step', picker),
        field('New step’s type', addType),
        addButton,
      ),
      h(
        'p',
        { class: 'note' },
        'A new step goes after the step chosen (after the start when none is), between it and what followed.',
      ),
    ),
    panelHolder,
    settingsHolder,
  );
  drawSettings();
  drawSteps();
  drawPanel();
  drawStatus();
  replace(body, root);
}
