/**
 * The workflow editor's unsaved changes, kept in the tab (sessionStorage) until saved or discarded,
 * with the workflow as read when they began, to tell whether it was saved elsewhere since.
 */
import type { WorkflowDraft } from './workflow-draft';

export interface StoredDraft {
  /** The workflow as read when the draft began (JSON), to tell whether it changed elsewhere since. */
  base: string;
  draft: WorkflowDraft;
}

/** The draft this tab keeps under `key`; null when there is none, or one that does not read. */
export function readStoredDraft(key: string): StoredDraft | null {
  try {
    const stored = JSON.parse(sessionStorage.getItem(key) ?? 'null') as StoredDraft | null;
    if (stored && Array.isArray(stored.draft?.workers)) return stored;
  } catch {
    // A draft that does not read is no draft.
  }
  return null;
}

/** Keeps the draft in the tab while it differs from what was read (`dirty`); drops it once it does not. */
export function keepDraft(key: string, stored: StoredDraft, dirty: boolean): void {
  try {
    if (dirty) sessionStorage.setItem(key, JSON.stringify(stored));
    else sessionStorage.removeItem(key);
  } catch {
    // Storage full or refused: the page still holds the draft.
  }
}
