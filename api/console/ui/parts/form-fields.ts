/** Form fields: a labelled field, a JSON field that says what is wrong, and the filter forms' submit. */
import { h, replace } from '../dom';
import { go } from '../router';

export function field(label: string, input: HTMLElement, hint?: HTMLElement | null): HTMLElement {
  const id = input.id || `f-${Math.random().toString(36).slice(2)}`;
  input.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), input, hint ?? null);
}

/** A JSON textarea and a reader that says what is wrong beside it. */
export function jsonField(label: string, id: string, initial: string) {
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

/** A filter form's submit: its filled-in fields become the address's query (the page reads them there). */
export function filterTo(base: string): (event: Event) => void {
  return (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [key, value] of new FormData(event.target as HTMLFormElement))
      if (value) next.set(key, String(value));
    go(`${base}?${next.toString()}`);
  };
}

/** YYYY-MM-DD (a date input) to the API's YYYYMMDD. */
export const apiDay = (value: string) => value.replace(/-/g, '');
