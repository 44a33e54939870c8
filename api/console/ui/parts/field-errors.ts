/**
 * The API's `{code, message}` beside the field it concerns. Its messages name the field first
 * (`base_url uses http: …`, `headers.Authorization holds a credential: …`, `name is required.`), so
 * the first word picks the field; a message that names none shows under the form.
 */
import { ApiError } from '../api';
import { h, replace } from '../dom';

/** The field a message names: `headers.<Name>` as `header:<name>`, else a known key it starts with. */
export function fieldOfMessage(message: string, keys: readonly string[]): string | null {
  const header = /^headers\.([^\s:]+?)(?=:|\s)/.exec(message);
  if (header) {
    const key = `header:${header[1]!.toLowerCase()}`;
    return keys.includes(key) ? key : keys.includes('headers') ? 'headers' : null;
  }
  const first = /^([a-z_]+)\b/.exec(message);
  if (first && keys.includes(first[1]!)) return first[1]!;
  return null;
}

let nextId = 0;

export class FieldErrors {
  private readonly fields = new Map<string, { hint: HTMLElement; input: HTMLElement | null }>();
  /** The controls marked invalid, with what described them before. */
  private readonly marked = new Map<HTMLElement, string | null>();

  /** `general`: where a message that names no field goes (under the form). */
  constructor(private readonly general: HTMLElement) {}

  /** A field's hint (shown below it) and the control marked invalid when the API names it. */
  hint(key: string, input: HTMLElement | null = null): HTMLElement {
    const hint = h('div', { class: 'field-error', id: `err-${++nextId}`, 'aria-live': 'polite' });
    this.fields.set(key, { hint, input });
    return hint;
  }

  /** Registers a hint already on the page (a header row's, whose key is its name at the time). */
  attach(key: string, hint: HTMLElement, input: HTMLElement | null = null): void {
    if (!hint.id) hint.id = `err-${++nextId}`;
    this.fields.set(key, { hint, input });
  }

  forget(key: string): void {
    this.fields.delete(key);
  }

  clear(): void {
    replace(this.general);
    for (const { hint } of this.fields.values()) replace(hint);
    for (const input of [...this.marked.keys()]) this.unmark(input);
  }

  private unmark(input: HTMLElement): void {
    if (!this.marked.has(input)) return;
    const describedBy = this.marked.get(input)!;
    this.marked.delete(input);
    input.removeAttribute('aria-invalid');
    if (describedBy === null) input.removeAttribute('aria-describedby');
    else input.setAttribute('aria-describedby', describedBy);
  }

  /**
   * Shows an error beside its field. `route` may name the field first, for a case the message does
   * not name (a 409 on a unique name; a check made here before sending).
   */
  show(error: unknown, route?: (message: string, status: number | null) => string | null): void {
    this.clear();
    const message =
      error instanceof ApiError ? error.message : String(error instanceof Error ? error.message : error);
    const status = error instanceof ApiError ? error.status : null;
    const key = route?.(message, status) ?? fieldOfMessage(message, [...this.fields.keys()]);
    const target = key === null ? undefined : this.fields.get(key);
    if (!target) {
      replace(
        this.general,
        h('p', { class: 'error', role: 'alert' }, status === null ? message : `${status}: ${message}`),
      );
      return;
    }
    replace(target.hint, h('p', { class: 'error', role: 'alert' }, message));
    const { input, hint } = target;
    if (input) {
      const describedBy = input.getAttribute('aria-describedby');
      this.marked.set(input, describedBy);
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-describedby', `${describedBy ?? ''} ${hint.id}`.trim());
      // Once the field is changed, what was said of it no longer holds.
      input.addEventListener(
        'input',
        () => {
          if (!this.marked.has(input)) return;
          replace(hint);
          this.unmark(input);
        },
        { once: true },
      );
    }
  }
}
