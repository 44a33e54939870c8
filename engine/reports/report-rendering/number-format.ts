/**
 * Number and date formats for report pages. Always `en-US` (the page must read the same to every
 * client, whatever the server's locale) and never timezone-dependent.
 */

export const VALUE_FORMATS = ['number', 'percent', 'currency', 'plain'] as const;
export type ValueFormat = (typeof VALUE_FORMATS)[number];

export interface NumberStyle {
  /** `number` (default): grouped thousands; `percent`: a fraction shown ×100 with `%`; `plain`: as written. */
  format?: ValueFormat;
  /** ISO 4217 code for `currency`; default USD. */
  currency?: string;
  /** Fixed decimals (0 to 8); without it each format picks a sensible number. */
  decimals?: number;
}

/** Shown for null, missing and non-finite values: an empty cell reads as "forgot", a dash as "none". */
export const MISSING = '—';

const cache = new Map<string, Intl.NumberFormat>();

function formatter(options: Intl.NumberFormatOptions): Intl.NumberFormat {
  const key = JSON.stringify(options);
  let found = cache.get(key);
  if (!found) {
    found = new Intl.NumberFormat('en-US', options);
    cache.set(key, found);
  }
  return found;
}

function fixed(decimals: number): Intl.NumberFormatOptions {
  return { minimumFractionDigits: decimals, maximumFractionDigits: decimals };
}

/**
 * A value as a table cell or a chart label shows it. Without fixed decimals: two for values of 1
 * and more, three significant digits below 1 (a weight of 0.000123 must not print as 0).
 */
export function formatNumber(value: number | null | undefined, style: NumberStyle = {}): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return MISSING;
  const { format = 'number', decimals } = style;
  // Formats never print "-0": a value that rounds to zero is zero.
  const clean = (text: string) => (/^-[^1-9]*$/.test(text) ? text.slice(1) : text);
  switch (format) {
    case 'plain':
      return String(value);
    case 'percent':
      return clean(formatter({ style: 'percent', ...fixed(decimals ?? 2) }).format(value));
    case 'currency':
      return clean(
        formatter({ style: 'currency', currency: style.currency ?? 'USD', ...fixed(decimals ?? 2) }).format(
          value,
        ),
      );
    case 'number': {
      if (decimals !== undefined) return clean(formatter(fixed(decimals)).format(value));
      const small = value !== 0 && Math.abs(value) < 1;
      return clean(
        formatter(small ? { maximumSignificantDigits: 3 } : { maximumFractionDigits: 2 }).format(value),
      );
    }
  }
}

/** Decimals that write every multiple of `step` exactly (0.25 apart needs 2, 5 apart needs 0). */
function decimalsForStep(step: number): number {
  if (!(step > 0) || !Number.isFinite(step)) return 0;
  for (let decimals = 0; decimals < 8; decimals++) {
    const scaled = step * Math.pow(10, decimals);
    if (Math.abs(scaled - Math.round(scaled)) < 1e-6 * Math.max(1, scaled)) return decimals;
  }
  return 8;
}

/**
 * An axis's tick labels: short (compact `K`/`M`/`B` for the whole axis once it reaches 10,000, so
 * `$5,000` never sits beside `$10K`) with just enough decimals to tell neighbouring ticks apart.
 */
export function formatTicks(values: number[], step: number, style: NumberStyle = {}): string[] {
  const format = style.format ?? 'number';
  if (format === 'percent') {
    const decimals = decimalsForStep(step * 100);
    return values.map((value) => formatNumber(value, { format: 'percent', decimals }));
  }
  const compact = values.some((value) => Math.abs(value) >= 10_000);
  if (!compact) {
    const decimals = decimalsForStep(step);
    return values.map((value) =>
      format === 'currency'
        ? formatNumber(value, { format, currency: style.currency, decimals })
        : formatNumber(value, { decimals }),
    );
  }
  const compactFormat = formatter({
    notation: 'compact',
    compactDisplay: 'short',
    minimumFractionDigits: 0,
    maximumFractionDigits: 2,
    ...(format === 'currency' ? { style: 'currency', currency: style.currency ?? 'USD' } : {}),
  });
  return values.map((value) => {
    const text = compactFormat.format(value);
    return /^-[^1-9]*$/.test(text) ? text.slice(1) : text;
  });
}

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** `20240301` → `1 March 2024`; anything else is returned as given. */
export function formatReportDate(yyyymmdd: string | null | undefined): string {
  if (!yyyymmdd) return '';
  const match = /^(\d{4})(\d{2})(\d{2})$/.exec(yyyymmdd);
  if (!match) return yyyymmdd;
  const month = MONTHS[Number(match[2]) - 1];
  return month ? `${Number(match[3])} ${month} ${match[1]}` : yyyymmdd;
}

/** A short axis label for a date-like category (`20240301`, `2024-03-01…`) → `1 Mar 2024`; else null. */
export function formatShortDate(value: string): string | null {
  const match = /^(\d{4})-?(\d{2})-?(\d{2})(?:$|[T ])/.exec(value);
  if (!match) return null;
  const month = MONTHS[Number(match[2]) - 1];
  const day = Number(match[3]);
  if (!month || day < 1 || day > 31) return null;
  return `${day} ${month.slice(0, 3)} ${match[1]}`;
}

/** An instant for a page footer, in UTC so every reader sees the same words: `1 March 2024, 14:05 UTC`. */
export function formatInstantUtc(instant: Date): string {
  const iso = instant.toISOString();
  return `${formatReportDate(iso.slice(0, 10).replace(/-/g, ''))}, ${iso.slice(11, 16)} UTC`;
}
