import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Database } from '../db/database';
import { InvalidInput } from '../errors';
import { mergeSeries, parseDay, type StoredSeries, yyyymmdd } from './price-store';

/** Columns that name an index rather than a tradable symbol: the S&P 500 level is the `IND:SPX` series. */
export const DEFAULT_SYMBOL_MAP: Readonly<Record<string, string>> = { SP500: 'IND:SPX' };

export interface CsvImportOptions {
  /** Column → symbol; columns not named keep their header as the symbol (after DEFAULT_SYMBOL_MAP). */
  map?: Record<string, string>;
  /** Default: the first column named `date` (any case), else the first column. */
  dateColumn?: string;
  /** Only these columns (e.g. `Adj Close` of an OHLCV file); default every column but the date. */
  columns?: string[];
}

export interface BadRow {
  /** 1-based line number in the file (the header is line 1). */
  line: number;
  message: string;
}

export interface ParsedMarketCsv {
  /** Symbol → its points in the file, ascending. */
  series: Map<string, StoredSeries>;
  /** Data lines read (the header and blank lines excluded). */
  rows: number;
  badRows: BadRow[];
  /** Column → symbol actually used. */
  mapping: Record<string, string>;
}

/** Split on commas, honouring double-quoted fields ("a,b" and "" escapes) as spreadsheet exports write them. */
export function splitCsvLine(line: string): string[] {
  if (!line.includes('"')) return line.split(',');
  const cells: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      cells.push(cell);
      cell = '';
    } else cell += c;
  }
  cells.push(cell);
  return cells;
}

/** `YYYY-MM-DD` or `M/D/YYYY` (both layouts of the shared data) → day number, or null. */
export function parseCsvDate(text: string): number | null {
  const iso = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (iso) return parseDay(`${iso[1]}${iso[2]}${iso[3]}`);
  const us = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(text);
  if (us) return parseDay(`${us[3]}${us[1]!.padStart(2, '0')}${us[2]!.padStart(2, '0')}`);
  return null;
}

/** A decimal number as CSV exports write it; `Number('')`, `Number('0x1')` and friends are refused. */
const NUMERIC = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * Parses a wide market CSV: one date column and one price column per symbol. An empty cell is a
 * missing price (a stock not listed yet), not an error; a row whose date cannot be read, a date seen
 * before, or a cell that is not a number is reported with its line number and left out.
 */
export function parseMarketCsv(text: string, options: CsvImportOptions = {}): ParsedMarketCsv {
  const lines = text.split(/\r?\n/);
  const header = splitCsvLine(lines[0] ?? '').map((h) => h.trim());
  if (header.length < 2 || header.every((h) => h === '')) {
    throw new InvalidInput('The CSV needs a header line with a date column and at least one price column.');
  }
  const dateIndex =
    options.dateColumn !== undefined
      ? header.indexOf(options.dateColumn)
      : Math.max(
          0,
          header.findIndex((h) => h.toLowerCase() === 'date'),
        );
  if (dateIndex < 0) {
    throw new InvalidInput(`No column named "${options.dateColumn}" (columns: ${header.join(', ')}).`);
  }
  const map = { ...DEFAULT_SYMBOL_MAP, ...options.map };
  for (const column of Object.keys(options.map ?? {})) {
    if (!header.includes(column)) throw new InvalidInput(`--map names no column "${column}".`);
  }
  const wanted = options.columns ?? header.filter((_, i) => i !== dateIndex);
  const columns = wanted.map((column) => {
    const index = header.indexOf(column);
    if (index < 0 || index === dateIndex) {
      throw new InvalidInput(`No price column named "${column}" (columns: ${header.join(', ')}).`);
    }
    return { column, index, symbol: map[column] ?? column };
  });
  const symbols = new Set<string>();
  for (const { column, symbol } of columns) {
    if (symbol === '') throw new InvalidInput(`Column "${column}" maps to an empty symbol.`);
    if (symbols.has(symbol)) throw new InvalidInput(`Two columns map to the symbol ${symbol}.`);
    symbols.add(symbol);
  }

  const points = columns.map(() => new Map<number, number>());
  const seenDates = new Map<number, number>();
  const badRows: BadRow[] = [];
  let rows = 0;
  for (let l = 1; l < lines.length; l++) {
    const line = lines[l]!;
    if (line.trim() === '') continue;
    rows++;
    const lineNumber = l + 1;
    const cells = splitCsvLine(line);
    const dateText = (cells[dateIndex] ?? '').trim();
    const day = parseCsvDate(dateText);
    if (day === null) {
      badRows.push({ line: lineNumber, message: `unreadable date ${JSON.stringify(dateText)}` });
      continue;
    }
    const earlier = seenDates.get(day);
    if (earlier !== undefined) {
      badRows.push({ line: lineNumber, message: `date ${dateText} already on line ${earlier}` });
      continue;
    }
    seenDates.set(day, lineNumber);
    const problems: string[] = [];
    columns.forEach(({ column, index }, c) => {
      const cell = (cells[index] ?? '').trim();
      if (cell === '') return;
      const value = NUMERIC.test(cell) ? Number(cell) : NaN;
      if (Number.isFinite(value)) points[c]!.set(day, value);
      else problems.push(`${column} is not a number: ${JSON.stringify(cell)}`);
    });
    if (problems.length > 0) badRows.push({ line: lineNumber, message: problems.join('; ') });
  }

  const series = new Map<string, StoredSeries>();
  columns.forEach(({ symbol }, c) => {
    const byDay = points[c]!;
    const dates = [...byDay.keys()].sort((a, b) => a - b);
    series.set(symbol, { dates, values: dates.map((d) => byDay.get(d)!) });
  });
  return {
    series,
    rows,
    badRows,
    mapping: Object.fromEntries(columns.map(({ column, symbol }) => [column, symbol])),
  };
}

export interface ImportSummary {
  file: string;
  symbols: Array<{ symbol: string; column: string; points: number; added: number; total: number }>;
  rows: number;
  /** Prices read from the file (empty cells excluded). */
  points: number;
  first_date: string | null;
  last_date: string | null;
  bad_rows: BadRow[];
}

/**
 * Reads a CSV file and merges every column's series into the store (see `mergeSeries`: idempotent).
 * `onProgress(done, total)` is called after each symbol is written.
 */
export async function importMarketCsv(
  db: Database,
  file: string,
  options: CsvImportOptions = {},
  onProgress?: (done: number, total: number, symbol: string) => void,
): Promise<ImportSummary> {
  const text = await readFile(file, 'utf8');
  const parsed = parseMarketCsv(text, options);
  const source = path.basename(file);
  const byColumn = Object.entries(parsed.mapping);
  const symbols: ImportSummary['symbols'] = [];
  let first: number | null = null;
  let last: number | null = null;
  let points = 0;
  for (const [column, symbol] of byColumn) {
    const series = parsed.series.get(symbol)!;
    points += series.dates.length;
    if (series.dates.length > 0) {
      first = Math.min(first ?? Infinity, series.dates[0]!);
      last = Math.max(last ?? -Infinity, series.dates.at(-1)!);
      const merged = await mergeSeries(db, symbol, series, `${source}:${column}`);
      symbols.push({ symbol, column, points: series.dates.length, added: merged.added, total: merged.total });
    } else {
      symbols.push({ symbol, column, points: 0, added: 0, total: 0 });
    }
    onProgress?.(symbols.length, byColumn.length, symbol);
  }
  return {
    file,
    symbols,
    rows: parsed.rows,
    points,
    first_date: first === null ? null : yyyymmdd(first),
    last_date: last === null ? null : yyyymmdd(last),
    bad_rows: parsed.badRows,
  };
}
