/**
 * The console's only way to build the page: elements from tags, attributes and children, where
 * every string child becomes a text node. Nothing in the console parses HTML (a test checks its
 * code for every DOM call that would), so a script's log line `<img src=x onerror=…>` is shown,
 * never run.
 * Attributes named on… are refused; an href or src must be a relative path, a fragment or http(s).
 */
export type Child = Node | string | number | boolean | null | undefined | Child[];

export interface Props {
  [attribute: string]: string | number | boolean | null | undefined | EventHandlers;
  on?: EventHandlers;
}
type EventHandlers = { [event: string]: (event: Event) => void };

const SAFE_URL = /^(?:#|\/(?!\/)|https?:\/\/|\?)/i;

function setAttribute(element: Element, name: string, value: string | number | boolean): void {
  if (/^on/i.test(name)) throw new Error(`event attributes are not set as text: ${name}`);
  if ((name === 'href' || name === 'src' || name === 'action') && !SAFE_URL.test(String(value))) {
    throw new Error(`unsafe ${name}: ${String(value)}`);
  }
  if (value === true) element.setAttribute(name, '');
  else if (value !== false) element.setAttribute(name, String(value));
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false || child === true) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

function build<E extends Element>(element: E, props: Props | null, children: Child[]): E {
  for (const [name, value] of Object.entries(props ?? {})) {
    if (name === 'on') {
      for (const [event, handler] of Object.entries(value as EventHandlers))
        element.addEventListener(event, handler);
    } else if (value !== null && value !== undefined && typeof value !== 'object') {
      setAttribute(element, name, value);
    }
  }
  append(element, children);
  return element;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = build(document.createElement(tag), props, children);
  // A block of code or JSON may scroll: it must be reachable with the keyboard.
  if (tag === 'pre' && !element.hasAttribute('tabindex')) element.setAttribute('tabindex', '0');
  return element;
}

const SVG = 'http://www.w3.org/2000/svg';
export function svg(tag: string, props: Props | null = null, ...children: Child[]): SVGElement {
  return build(document.createElementNS(SVG, tag) as SVGElement, props, children);
}

/** Replaces a node's children. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, children);
}

/** JSON for reading: indented, as text. */
export function pretty(value: unknown): string {
  if (value === undefined) return '';
  return JSON.stringify(value, null, 2);
}

/** A timestamp as the API gives it: epoch seconds (numbers) or an ISO string. */
export type Stamp = number | string;

export function millis(stamp: Stamp): number {
  return typeof stamp === 'number' ? stamp * 1000 : Date.parse(stamp);
}

export function when(stamp: Stamp | null | undefined): string {
  if (stamp === null || stamp === undefined || stamp === '') return '—';
  const date = new Date(millis(stamp));
  return Number.isNaN(date.getTime())
    ? String(stamp)
    : date.toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
}

export function seconds(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return value < 1 ? `${Math.round(value * 1000)} ms` : `${value.toFixed(value < 10 ? 2 : 1)} s`;
}
