/** Lists as tables: the columns a page declares, a row per item. */
import { type Child, h, type Props } from '../dom';

export interface Column<T> {
  title: string;
  cell: (row: T) => Child;
}

/** A list as a table: a heading per column, a row per item. */
export function listTable<T>(
  rows: T[],
  columns: Column<T>[],
  options: { id?: string; row?: (item: T) => Props } = {},
): HTMLTableElement {
  return h(
    'table',
    { class: 'list', id: options.id },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        columns.map((c) => h('th', null, c.title)),
      ),
    ),
    h(
      'tbody',
      null,
      rows.map((item) =>
        h(
          'tr',
          options.row?.(item) ?? null,
          columns.map((c) => h('td', null, c.cell(item))),
        ),
      ),
    ),
  );
}
