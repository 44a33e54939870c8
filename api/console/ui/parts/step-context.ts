/**
 * What each section of the workflow editor's step panel is given: the page's context (the draft,
 * `commit` for a change, the templates, the API's message about the step), and the hints where that
 * message shows: beside the field it names or, failing that, under the inputs or at the top.
 */
import { h, replace } from '../dom';
import type { Template } from '../resources';
import type { StepField, WorkflowDraft } from './workflow-draft';

export interface StepPanelContext {
  draft(): WorkflowDraft;
  /**
   * A new draft. `key` merges typing into one undo step; `redraw` draws this panel again (and
   * focuses the element with id `focus`); `select` chooses another step first.
   */
  commit(
    next: WorkflowDraft,
    options?: { key?: string; redraw?: boolean; focus?: string; select?: string | null },
  ): void;
  select(id: string | null, focus?: string): void;
  templates: Template[];
  /** One template with its script and form inputs (cached by the page). */
  template(id: string): Promise<Template>;
  /** What the API said of this step, and where. */
  problem: { field: StepField | null; to?: string; message: string } | null;
  workspace(): string;
}

/** Where the API's message about the step shows. */
export class StepHints {
  /** Whether the message found its field; if not, it shows at the top of the panel. */
  private placed = false;

  constructor(private readonly problem: StepPanelContext['problem']) {}

  /** Where the API's message about `key` goes; filled now when it is about `key`. */
  hint(key: string, control?: HTMLElement | null): HTMLElement {
    const problem = this.problem;
    const element = h('div', {
      class: 'field-error',
      'data-problem': key,
      id: `step-problem-${key.replace(/[^a-z0-9_-]/gi, '_')}`,
    });
    if (problem && (problem.field ?? 'step') === key) {
      this.placed = true;
      replace(element, h('p', { class: 'error', role: 'alert' }, problem.message));
      if (control) {
        control.setAttribute('aria-invalid', 'true');
        control.setAttribute('aria-describedby', element.id);
      }
    }
    return element;
  }

  /** The message in `element`, when no field has shown it and `about` holds of its field (as text). */
  fallback(element: HTMLElement, about: (field: string) => boolean): void {
    const problem = this.problem;
    if (problem && !this.placed && about(String(problem.field))) {
      this.placed = true;
      replace(element, h('p', { class: 'error', role: 'alert' }, problem.message));
    }
  }
}
