/**
 * HTML built from a tagged template (`markup`) that escapes every interpolated value unless it is
 * already `SafeHtml`. The tag is not named `html` because Prettier reformats templates of that name,
 * which would put whitespace into the markup.
 * Report names, cells and labels come from API users and are shown to their clients,
 * so escaping is the default and opting out needs a deliberate `SafeHtml`.
 */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Safe in element content and in quoted attribute values (HTML and inline SVG alike). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ENTITIES[char]!);
}

/** What may be interpolated: text is escaped, SafeHtml kept, arrays joined, nothing-values dropped. */
export type HtmlValue = SafeHtml | string | number | null | undefined | false | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function markup(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new SafeHtml(out);
}

/**
 * Markup the service itself wrote (the stylesheet). Never pass text that came from a request.
 */
export function trustedHtml(text: string): SafeHtml {
  return new SafeHtml(text);
}
