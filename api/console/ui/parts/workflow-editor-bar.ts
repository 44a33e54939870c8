/**
 * The workflow editor's bar: Undo, Redo, Save (Create workflow for a new one), Discard changes and
 * the status line; and the keys for undo and redo.
 */
import { h } from '../dom';

export interface EditorActions {
  undo(): void;
  redo(): void;
  save(): void;
  discard(): void;
}

export interface EditorBar {
  element: HTMLElement;
  save: HTMLButtonElement;
  status: HTMLElement;
  /** Enables what can be done now and says whether there are unsaved changes. */
  draw(state: { canUndo: boolean; canRedo: boolean; dirty: boolean }): void;
}

/** `existing`: whether the workflow is saved already (Save, not Create workflow). */
export function editorBar(actions: EditorActions, existing: boolean): EditorBar {
  const status = h('span', { class: 'note', id: 'editor-status', 'aria-live': 'polite' });
  const undoButton = h(
    'button',
    { type: 'button', id: 'undo', 'aria-keyshortcuts': 'Control+Z', on: { click: () => actions.undo() } },
    'Undo',
  );
  const redoButton = h(
    'button',
    {
      type: 'button',
      id: 'redo',
      'aria-keyshortcuts': 'Control+Shift+Z',
      on: { click: () => actions.redo() },
    },
    'Redo',
  );
  const saveButton = h(
    'button',
    { type: 'button', class: 'primary', id: 'save', on: { click: () => actions.save() } },
    existing ? 'Save' : 'Create workflow',
  );
  const discardButton = h(
    'button',
    { type: 'button', id: 'discard', on: { click: () => actions.discard() } },
    'Discard changes',
  );
  const element = h(
    'div',
    { class: 'editor-bar', role: 'toolbar', 'aria-label': 'Editor' },
    undoButton,
    redoButton,
    saveButton,
    discardButton,
    status,
  );
  const draw = ({ canUndo, canRedo, dirty }: { canUndo: boolean; canRedo: boolean; dirty: boolean }) => {
    undoButton.disabled = !canUndo;
    redoButton.disabled = !canRedo;
    discardButton.disabled = !dirty;
    status.textContent = dirty
      ? 'Unsaved changes (kept in this tab).'
      : existing
        ? 'No unsaved changes.'
        : '';
  };
  return { element, save: saveButton, status, draw };
}

/**
 * Ctrl+Z and Ctrl+Shift+Z (Ctrl+Y) outside text fields, which keep their own undo; heard until
 * `root` leaves the page.
 */
export function undoKeys(root: HTMLElement, actions: Pick<EditorActions, 'undo' | 'redo'>): void {
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
    if (key === 'y' || event.shiftKey) actions.redo();
    else actions.undo();
  };
  window.addEventListener('keydown', onKey);
}
