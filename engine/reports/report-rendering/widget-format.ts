import { InvalidInput } from '../../platform/errors';
import { type NumberStyle, VALUE_FORMATS, type ValueFormat } from './number-format';
import { isPlainObject } from '../../platform/plain-object';

/**
 * The widget format the report page draws. Every widget has `id` and `name`; `type` picks the
 * drawing and its fields:
 *
 * - `table`: `columns` (names, or `{name, format?, currency?, decimals?}`) and `rows` (arrays of
 *   cells; or objects, whose keys are the columns when `columns` is left out).
 * - `bar`: `labels` (one per bar, e.g. securities) with `values`, or `series: [{name, values}]` for
 *   grouped bars. Negative values are drawn below the axis.
 * - `line`: `x` (dates or numbers) with `series: [{name, values}]` (or `values` for one series);
 *   null values leave a gap.
 * - `text`: `text`; blank lines separate paragraphs.
 *
 * Optional on all: `description` (a caption), `format` (`number`, `percent` — fractions shown ×100
 * —, `currency`, `plain`), `currency` (ISO 4217, default USD) and `decimals` (0 to 8).
 * Widgets of another `type`, or none, are stored as sent and shown as a titled placeholder.
 */

export const WIDGET_TYPES = ['table', 'bar', 'line', 'text'] as const;

export type Cell = string | number | boolean | null;

export interface TableColumn extends NumberStyle {
  name: string;
}

interface WidgetCommon extends NumberStyle {
  id: string;
  name: string;
  description: string | null;
}

export interface Series {
  name: string;
  values: (number | null)[];
}

export type Widget =
  | (WidgetCommon & { type: 'table'; columns: TableColumn[]; rows: Cell[][] })
  | (WidgetCommon & { type: 'bar'; labels: string[]; series: Series[] })
  | (WidgetCommon & { type: 'line'; x: (string | number)[]; series: Series[] })
  | (WidgetCommon & { type: 'text'; text: string })
  | (WidgetCommon & { type: 'other'; declaredType: string | null });

export const MAX_SERIES = 8;
export const MAX_COLUMNS = 100;
const MAX_CAPTION = 500;
const MAX_TEXT = 20_000;

type Raw = Record<string, unknown>;

function optionalString(value: unknown, where: string, max: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length > max) {
    throw new InvalidInput(`${where} must be a string of at most ${max} characters.`);
  }
  return value;
}

function checkStyle(raw: Raw, where: string): NumberStyle {
  const style: NumberStyle = {};
  if (raw.format !== undefined && raw.format !== null) {
    if (!(VALUE_FORMATS as readonly unknown[]).includes(raw.format)) {
      throw new InvalidInput(`${where}.format must be one of ${VALUE_FORMATS.join(', ')}.`);
    }
    style.format = raw.format as ValueFormat;
  }
  if (raw.currency !== undefined && raw.currency !== null) {
    if (typeof raw.currency !== 'string' || !/^[A-Z]{3}$/.test(raw.currency)) {
      throw new InvalidInput(`${where}.currency must be a 3-letter ISO 4217 code such as USD.`);
    }
    style.currency = raw.currency;
  }
  if (raw.decimals !== undefined && raw.decimals !== null) {
    if (!Number.isInteger(raw.decimals) || (raw.decimals as number) < 0 || (raw.decimals as number) > 8) {
      throw new InvalidInput(`${where}.decimals must be a whole number from 0 to 8.`);
    }
    style.decimals = raw.decimals as number;
  }
  return style;
}

function checkArray(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw new InvalidInput(`${where} must be an array.`);
  return value;
}

function checkCell(value: unknown, where: string): Cell {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return value as Cell;
  throw new InvalidInput(`${where} must be a string, number, boolean or null.`);
}

function checkLabel(value: unknown, where: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  throw new InvalidInput(`${where} must be a string or a number.`);
}

function checkValues(value: unknown, where: string, length: number, lengthOf: string): (number | null)[] {
  const values = checkArray(value, where);
  if (values.length !== length) {
    throw new InvalidInput(`${where} has ${values.length} values but ${lengthOf} has ${length}.`);
  }
  return values.map((v, i) => {
    if (v === null || (typeof v === 'number' && Number.isFinite(v))) return v;
    throw new InvalidInput(`${where}[${i}] must be a number or null.`);
  });
}

function checkSeries(raw: Raw, where: string, length: number, lengthOf: string): Series[] {
  if (raw.series === undefined || raw.series === null) {
    if (raw.values === undefined) {
      throw new InvalidInput(`${where} needs values (one series) or series: [{name, values}].`);
    }
    return [{ name: '', values: checkValues(raw.values, `${where}.values`, length, lengthOf) }];
  }
  const series = checkArray(raw.series, `${where}.series`);
  if (series.length < 1 || series.length > MAX_SERIES) {
    throw new InvalidInput(`${where}.series must hold 1 to ${MAX_SERIES} series.`);
  }
  return series.map((item, i) => {
    const at = `${where}.series[${i}]`;
    if (!isPlainObject(item)) throw new InvalidInput(`${at} must be an object with name and values.`);
    return {
      name: optionalString(item.name, `${at}.name`, 200) ?? `Series ${i + 1}`,
      values: checkValues(item.values, `${at}.values`, length, lengthOf),
    };
  });
}

function checkTable(raw: Raw, where: string): { columns: TableColumn[]; rows: Cell[][] } {
  const rows = checkArray(raw.rows, `${where}.rows`);
  const objectRows = rows.length > 0 && rows.every(isPlainObject);
  let columns: TableColumn[];
  if (raw.columns === undefined || raw.columns === null) {
    if (rows.length > 0 && !objectRows) {
      throw new InvalidInput(`${where}.columns is required when rows are arrays.`);
    }
    // Keys in the order they first appear, so a later row's extra key still gets a column.
    const keys = new Set<string>();
    for (const row of rows as Raw[]) for (const key of Object.keys(row)) keys.add(key);
    columns = [...keys].map((name) => ({ name }));
  } else {
    columns = checkArray(raw.columns, `${where}.columns`).map((column, i) => {
      const at = `${where}.columns[${i}]`;
      if (typeof column === 'string') return { name: column };
      if (isPlainObject(column) && typeof column.name === 'string') {
        return { name: column.name, ...checkStyle(column, at) };
      }
      throw new InvalidInput(`${at} must be a column name or {name, format?, currency?, decimals?}.`);
    });
  }
  if (columns.length > MAX_COLUMNS) {
    throw new InvalidInput(`${where} has ${columns.length} columns; at most ${MAX_COLUMNS} are shown.`);
  }
  const cells = rows.map((row, r) => {
    const at = `${where}.rows[${r}]`;
    if (isPlainObject(row)) return columns.map((c) => checkCell(row[c.name] ?? null, `${at}.${c.name}`));
    if (!Array.isArray(row)) throw new InvalidInput(`${at} must be an array of cells or an object.`);
    if (row.length > columns.length) {
      throw new InvalidInput(`${at} has ${row.length} cells but there are ${columns.length} columns.`);
    }
    return columns.map((_, c) => checkCell(row[c] ?? null, `${at}[${c}]`));
  });
  return { columns, rows: cells };
}

/**
 * A stored widget as the page draws it. Throws InvalidInput naming the field (`where`) when a
 * widget of a known type is malformed: the report API refuses it on create and update, and the
 * page shows the message in place of a widget stored before these checks existed.
 */
export function readWidget(raw: Raw & { id: string; name: string }, where: string): Widget {
  if (!(WIDGET_TYPES as readonly unknown[]).includes(raw.type)) {
    // Not ours to check: kept as sent (other tools may read it), drawn as a titled placeholder.
    return {
      id: raw.id,
      name: raw.name,
      description: typeof raw.description === 'string' ? raw.description.slice(0, MAX_CAPTION) : null,
      type: 'other',
      declaredType: typeof raw.type === 'string' ? raw.type : null,
    };
  }
  const common: WidgetCommon = {
    id: raw.id,
    name: raw.name,
    description: optionalString(raw.description, `${where}.description`, MAX_CAPTION),
    ...checkStyle(raw, where),
  };
  switch (raw.type) {
    case 'table':
      return { ...common, type: 'table', ...checkTable(raw, where) };
    case 'bar': {
      const labels = checkArray(raw.labels, `${where}.labels`).map((label, i) =>
        checkLabel(label, `${where}.labels[${i}]`),
      );
      return { ...common, type: 'bar', labels, series: checkSeries(raw, where, labels.length, 'labels') };
    }
    case 'line': {
      const x = checkArray(raw.x, `${where}.x`).map((value, i) => {
        if (typeof value === 'number' && Number.isFinite(value)) return value;
        return checkLabel(value, `${where}.x[${i}]`);
      });
      return { ...common, type: 'line', x, series: checkSeries(raw, where, x.length, 'x') };
    }
    case 'text': {
      if (typeof raw.text !== 'string' || raw.text.length > MAX_TEXT) {
        throw new InvalidInput(`${where}.text must be a string of at most ${MAX_TEXT} characters.`);
      }
      return { ...common, type: 'text', text: raw.text };
    }
    default:
      throw new Error(`unreachable widget type ${String(raw.type)}`);
  }
}
