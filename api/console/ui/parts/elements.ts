/** The small elements every page is built from: a status badge, an error box, a link, a card. */
import { ApiError } from '../api';
import { type Child, h } from '../dom';

export function badge(status: string): HTMLElement {
  return h('span', { class: `badge badge-${status.toLowerCase()}` }, status);
}

export function errorBox(error: unknown): HTMLElement {
  const message = error instanceof ApiError ? `${error.status}: ${error.message}` : String(error);
  return h('p', { class: 'error', role: 'alert' }, message);
}

export function link(href: string, ...children: Child[]): HTMLAnchorElement {
  return h('a', { href }, ...children);
}

export function section(title: string, ...children: Child[]): HTMLElement {
  return h('section', { class: 'card' }, h('h2', null, title), ...children);
}
