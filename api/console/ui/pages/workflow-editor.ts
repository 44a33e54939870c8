/**
 * The workflow editor: a new workflow, or any workflow the API holds, edited on its graph. The
 * graph is drawn from the draft after every change (layout automatic); choosing a step opens its
 * panel (parts/step-panel.ts). The trigger, enabled and on_failure are edited beside it. Undo and
 * redo (buttons, Ctrl+Z, Ctrl+Shift+Z); unsaved changes stay in the tab (sessionStorage) and
 * leaving asks first; the API's 400 message shows on the step, edge or field it names. The draft
 * is the body POST/PUT take, kept as read (parts/workflow-draft.ts), so saving without a change
 * sends back what was read. This file holds the page's state, the graph, saving and where the API's
 * message goes; the settings are parts/workflow-settings.ts, the bar and its keys
 * parts/workflow-editor-bar.ts, the copy kept in the tab parts/workflow-draft-storage.ts.
 */
import { ApiError, call, query } from '../api';
import { h, replace } from '../dom';
import { errorBox, section } from '../parts/elements';
import { field } from '../parts/form-fields';
import { frame } from '../parts/frame';
import { workflowGraph } from '../parts/graph';
import type { StepPanelContext } from '../parts/step-context';
import { stepLabel, stepPanel } from '../parts/step-panel';
import { starterCode } from '../parts/step-source';
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
  toWorkflowBody,
  WORKER_TYPES,
  type WorkflowDraft,
} from '../parts/workflow-draft';
import { keepDraft, readStoredDraft } from '../parts/workflow-draft-storage';
import { editorBar, undoKeys } from '../parts/workflow-editor-bar';
import { workflowSettings } from '../parts/workflow-settings';
import { getTemplate, getWorkflow, type Template, type Workflow } from '../resources';
import { go, setLeaveCheck } from '../router';
import { currentWorkspace, workflowDraftKey } from '../session';

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
  const stored = readStoredDraft(storageKey);
  if (stored) {
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
        h('button', { type: 'button', id: 'discard-draft', on: { click: () => discard() } }, 'Discard them'),
      ),
    );
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
  const bar = editorBar(
    { undo: () => undo(), redo: () => redo(), save: () => save(), discard: () => discard() },
    existing !== null,
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
  const settings = workflowSettings({
    draft: () => draft,
    commit: (next, options) => commit(next, options),
    existing,
    workspace,
  });

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
  const drawStatus = () => bar.draw({ canUndo: history.canUndo, canRedo: history.canRedo, dirty: dirty() });
  const drawSteps = () => {
    drawGraph();
    drawPicker();
    replace(
      stepsProblem,
      problem?.target.kind === 'steps' ? h('p', { class: 'error', role: 'alert' }, problem.message) : null,
    );
  };

  /** Keeps the draft in the tab while it differs from what was read. */
  const persist = () => keepDraft(storageKey, { base: baseText, draft }, dirty());

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
      settings.draw();
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
    if (settingsOf(draft) !== settingsBefore) settings.draw();
  }
  const undo = () => restore(history.undo());
  const redo = () => restore(history.redo());

  function discard(): void {
    if (!dirty()) return;
    // Undoable, like any change.
    commit(base, { redraw: true });
    replace(restoredNote);
    bar.status.textContent = 'Changes discarded (Undo brings them back).';
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
        settings.hints.get(target.field) ??
        settings.hints.get(target.field.startsWith('trigger') ? 'trigger_config' : '') ??
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
    bar.save.disabled = true;
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
      .finally(() => (bar.save.disabled = false));
  }

  const root = h(
    'div',
    { class: 'workflow-editor' },
    h('h1', null, existing ? `Edit ${existing.name}` : 'New workflow'),
    restoredNote,
    bar.element,
    general,
    settings.names,
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
    settings.settings,
  );
  undoKeys(root, { undo: () => undo(), redo: () => redo() });
  settings.draw();
  drawSteps();
  drawPanel();
  drawStatus();
  replace(body, root);
}
