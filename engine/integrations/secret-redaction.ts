/**
 * What a step has had in its hands of secrets, and their removal from everything the step leaves
 * behind. Every value the step used (read by `sdk.secret`, or put into a request's headers or URL)
 * is replaced by `[secret:NAME]` in its log lines, result, error text and anything else stored or
 * exported for it. The value is matched as given and in the forms it most often travels in: Base64
 * (standard and URL-safe, with or without padding), URL-encoded (`%20` and `+` for spaces), and
 * JSON-escaped (a value with a quote or backslash inside a JSON text).
 *
 * A value shorter than MIN_REDACTED_LENGTH is not searched for: replacing every `a` in a result
 * would destroy it and protect nothing (docs/integrations.md says so).
 */
export const MIN_REDACTED_LENGTH = 4;

interface Known {
  name: string;
  forms: string[];
}

function formsOf(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const base64 = bytes.toString('base64');
  const forms = new Set<string>([
    value,
    base64,
    base64.replace(/=+$/, ''),
    bytes.toString('base64url'),
    encodeURIComponent(value),
    encodeURIComponent(value).replace(/%20/g, '+'),
    JSON.stringify(value).slice(1, -1),
  ]);
  // Longest first, so a form that contains another is replaced whole.
  return [...forms].filter((form) => form.length >= MIN_REDACTED_LENGTH).sort((a, b) => b.length - a.length);
}

export class SecretRedactor {
  private readonly known = new Map<string, Known>();

  /** Remembers a value the step used. */
  add(name: string, value: string): void {
    if (value.length < MIN_REDACTED_LENGTH) return;
    if (!this.known.has(value)) this.known.set(value, { name, forms: formsOf(value) });
  }

  get size(): number {
    return this.known.size;
  }

  /** The text with every known value, in each of its forms, replaced by `[secret:NAME]`. */
  text(input: string): string {
    if (this.known.size === 0) return input;
    let out = input;
    // The longest values first: a secret that contains another secret is replaced as itself.
    const entries = [...this.known.values()].sort((a, b) => b.forms[0]!.length - a.forms[0]!.length);
    for (const { name, forms } of entries) {
      for (const form of forms) if (out.includes(form)) out = out.split(form).join(`[secret:${name}]`);
    }
    return out;
  }

  /** A JSON value with the known values replaced in every string and every key, at any depth. */
  value<T>(input: T): T {
    if (this.known.size === 0) return input;
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') return this.text(v);
      if (Array.isArray(v)) return v.map(walk);
      if (v !== null && typeof v === 'object') {
        return Object.fromEntries(Object.entries(v).map(([key, inner]) => [this.text(key), walk(inner)]));
      }
      return v;
    };
    return walk(input) as T;
  }
}
