import { formatNumber } from './number-format';
import { markup, type SafeHtml } from './safe-html';
import { renderTable } from './table';
import type { Cell, TableColumn } from './widget-format';
import { isPlainObject } from '../../platform/plain-object';

/** The JSON fallback is cut here: a page is no place for megabytes of raw data. */
export const MAX_JSON_CHARS = 100_000;

/** Scalars stay as they are; a nested value is shown as compact JSON in its cell. */
function toCell(value: unknown): Cell {
  if (value === undefined) return null;
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return value as Cell;
  return JSON.stringify(value);
}

export type ReportDataShape =
  | { kind: 'empty' }
  | { kind: 'table'; columns: TableColumn[]; rows: Cell[][]; header: boolean }
  | { kind: 'json' };

/**
 * How a report's `data` reads as a table: an array of objects (keys are columns, in order of first
 * appearance), or an array of arrays (the first row is the heading when every cell of it is text).
 * Anything else has no tabular reading.
 */
export function tabularShape(data: unknown[]): ReportDataShape {
  if (data.length === 0) return { kind: 'empty' };
  if (data.every(isPlainObject)) {
    const keys = new Set<string>();
    for (const row of data) for (const key of Object.keys(row)) keys.add(key);
    const columns = [...keys].map((name) => ({ name }));
    return {
      kind: 'table',
      columns,
      rows: data.map((row) => columns.map((c) => toCell(row[c.name]))),
      header: true,
    };
  }
  if (data.every(Array.isArray)) {
    const rows = data as unknown[][];
    const width = Math.max(...rows.map((row) => row.length));
    if (width === 0) return { kind: 'empty' };
    const first = rows[0]!;
    const header = rows.length > 1 && first.length > 0 && first.every((cell) => typeof cell === 'string');
    const columns = Array.from({ length: width }, (_, c) => ({
      name: header ? ((first[c] as string | undefined) ?? '') : `Column ${c + 1}`,
    }));
    const body = header ? rows.slice(1) : rows;
    return {
      kind: 'table',
      columns,
      rows: body.map((row) => columns.map((_, c) => toCell(row[c]))),
      header,
    };
  }
  return { kind: 'json' };
}

/** The report's `data` section: a table when it reads as one, else the JSON itself, escaped. */
export function renderReportData(data: unknown[]): SafeHtml | null {
  const shape = tabularShape(data);
  if (shape.kind === 'empty') return null;
  if (shape.kind === 'table') return renderTable(shape);
  const text = JSON.stringify(data, null, 2);
  const cut = text.length > MAX_JSON_CHARS;
  const note = cut
    ? markup`<p class="note">Showing the first ${formatNumber(MAX_JSON_CHARS)} of ${formatNumber(text.length)} characters.</p>`
    : '';
  return markup`<pre class="json">${cut ? text.slice(0, MAX_JSON_CHARS) : text}</pre>${note}`;
}
