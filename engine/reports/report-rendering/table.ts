import { formatNumber, MISSING, type NumberStyle } from './number-format';
import { markup, type SafeHtml } from './safe-html';
import type { Cell, TableColumn } from './widget-format';

/**
 * Rows drawn at most: a report may carry 100,000 rows, and a page that size helps no reader (the
 * API still returns them all). The page says how many were left out.
 */
export const MAX_TABLE_ROWS = 1000;

export interface TableInput {
  columns: TableColumn[];
  rows: Cell[][];
  /** The widget's style, for columns that have none of their own. */
  style?: NumberStyle;
  /** False for a table without a heading row (headless data). */
  header?: boolean;
}

function cellHtml(value: Cell, style: NumberStyle): SafeHtml {
  if (value === null) return markup`<td class="missing">${MISSING}</td>`;
  if (typeof value === 'number') {
    const sign = value < 0 ? ' neg' : '';
    return markup`<td class="num${sign}">${formatNumber(value, style)}</td>`;
  }
  if (typeof value === 'boolean') return markup`<td>${value ? 'Yes' : 'No'}</td>`;
  return markup`<td>${value}</td>`;
}

/**
 * A column is numeric (right-aligned, heading too) when every non-empty cell is a number, so the
 * decimal points line up.
 */
function numericColumns(columns: TableColumn[], rows: Cell[][]): boolean[] {
  return columns.map((_, c) => {
    let seen = false;
    for (const row of rows) {
      const value = row[c];
      if (value === null || value === undefined) continue;
      if (typeof value !== 'number') return false;
      seen = true;
    }
    return seen;
  });
}

export function renderTable(input: TableInput): SafeHtml {
  const { columns, rows } = input;
  if (rows.length === 0) return markup`<p class="empty">No rows to show.</p>`;
  const shown = rows.slice(0, MAX_TABLE_ROWS);
  const numeric = numericColumns(columns, shown);
  const styles = columns.map((column) => ({
    format: column.format ?? input.style?.format,
    currency: column.currency ?? input.style?.currency,
    decimals: column.decimals ?? input.style?.decimals,
  }));
  const headings = columns.map(
    (column, c) => markup`<th scope="col"${numeric[c] ? markup` class="num"` : ''}>${column.name}</th>`,
  );
  const head = input.header === false ? '' : markup`<thead><tr>${headings}</tr></thead>`;
  const body = shown.map(
    (row) => markup`<tr>${columns.map((_, c) => cellHtml(row[c] ?? null, styles[c]!))}</tr>`,
  );
  const more =
    rows.length > shown.length
      ? markup`<p class="note">Showing the first ${formatNumber(shown.length)} of ${formatNumber(rows.length)} rows.</p>`
      : '';
  return markup`<div class="table-scroll"><table>${head}<tbody>${body}</tbody></table></div>${more}`;
}
