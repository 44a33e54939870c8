/** The workflow editor's undo and redo: the drafts a page went through. */
import { sameDraft, type WorkflowDraft } from './draft-model';

/**
 * The drafts a page went through. Typing into one field makes one step of history, not one per
 * key: a change with the same `key` as the last one, within `mergeMs`, replaces it.
 */
export class DraftHistory {
  private readonly past: WorkflowDraft[] = [];
  private readonly future: WorkflowDraft[] = [];
  private lastKey: string | null = null;
  private lastAt = 0;

  constructor(
    private present: WorkflowDraft,
    private readonly now: () => number = () => Date.now(),
    private readonly mergeMs = 1500,
  ) {}

  get current(): WorkflowDraft {
    return this.present;
  }
  get canUndo(): boolean {
    return this.past.length > 0;
  }
  get canRedo(): boolean {
    return this.future.length > 0;
  }

  /** Records a change; `key` names what was typed into, for merging. No change, no step. */
  push(next: WorkflowDraft, key: string | null = null): void {
    if (sameDraft(next, this.present)) return;
    const at = this.now();
    const merge = key !== null && key === this.lastKey && at - this.lastAt <= this.mergeMs;
    if (!merge) this.past.push(this.present);
    this.present = next;
    this.future.length = 0;
    this.lastKey = key;
    this.lastAt = at;
  }

  undo(): WorkflowDraft | null {
    const previous = this.past.pop();
    if (!previous) return null;
    this.future.push(this.present);
    this.present = previous;
    this.lastKey = null;
    return previous;
  }

  redo(): WorkflowDraft | null {
    const next = this.future.pop();
    if (!next) return null;
    this.past.push(this.present);
    this.present = next;
    this.lastKey = null;
    return next;
  }

  /** Ends a run of typing: the next change is a step of its own. */
  seal(): void {
    this.lastKey = null;
  }
}
