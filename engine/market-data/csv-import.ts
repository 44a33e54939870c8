import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';
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

/**
 * What a series holds, by its symbol's form (methodology §9): prices (equities, ETFs, `IND:*`), FX
 * rates (`FX:EURUSD` = USD per EUR), rate and spread levels in percent (`RATE:*`, `SPREAD:*`), and
 * daily traded volumes (`VOL:<symbol>`, for the liquidity of §15).
 */
export type SeriesKind = 'price' | 'fx' | 'rate' | 'spread' | 'volume';

export function seriesKind(symbol: string): SeriesKind {
  if (symbol.startsWith('VOL:')) return 'volume';
  if (symbol.startsWith('FX:')) return 'fx';
  if (symbol.startsWith('RATE:')) return 'rate';
  if (symbol.startsWith('SPREAD:')) return 'spread';
  return 'price';
}

/** Why a symbol cannot name a series of its kind, or null when it can. */
function symbolProblem(symbol: string): string | null {
  const kind = seriesKind(symbol);
  if (kind === 'fx' && !/^FX:[A-Z]{6}$/.test(symbol)) {
    return `${symbol} is not an FX pair: write FX:EURUSD (units of USD for 1 EUR).`;
  }
  if (kind !== 'price' && symbol.slice(symbol.indexOf(':') + 1).trim() === '') {
    return `${symbol} names no ${kind === 'volume' ? 'security' : kind}.`;
  }
  return null;
}

/**
 * Why a cell cannot be a value of its kind, or null. A log-return needs a positive price or rate; a
 * rate or spread level (percent) may be zero or negative; a volume may be zero (a holiday, a halt).
 */
function valueProblem(kind: SeriesKind, value: number): string | null {
  if ((kind === 'price' || kind === 'fx') && !(value > 0)) {
    return kind === 'fx' ? 'is not a positive FX rate' : 'is not a positive price';
  }
  if (kind === 'volume' && !(value >= 0)) return 'is not a volume (≥ 0)';
  return null;
}

/** The header of a price file's volume column (any case): its volumes are `VOL:<price symbol>`. */
const VOLUME_COLUMN = 'volume';

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
 * Parses a wide market CSV: one date column and one column per symbol (prices, FX rates, rate or
 * spread levels, volumes: see `seriesKind`). An empty cell is a
 * missing price (a stock not listed yet), not an error; a row whose date cannot be read, a date seen
 * before, or a cell that is not a number (or not one its kind allows, such as a price ≤ 0) is reported
 * with its line number and left out; the row's other cells still load.
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
  // A `Volume` column not mapped by hand holds the volumes of the file's one price column, and comes
  // along when --column picks that price column (an OHLCV export: `--column "Adj Close"`).
  const volumeIndex = header.findIndex(
    (h, i) => i !== dateIndex && h.toLowerCase() === VOLUME_COLUMN && options.map?.[h] === undefined,
  );
  const volumeHeader = volumeIndex < 0 ? null : header[volumeIndex]!;
  const wanted = (options.columns ?? header.filter((_, i) => i !== dateIndex)).filter(
    (column) => column !== volumeHeader,
  );
  const columns = wanted.map((column) => {
    const index = header.indexOf(column);
    if (index < 0 || index === dateIndex) {
      throw new InvalidInput(`No price column named "${column}" (columns: ${header.join(', ')}).`);
    }
    return { column, index, symbol: map[column] ?? column };
  });
  if (volumeHeader !== null) {
    const priced = columns.filter(({ symbol }) => seriesKind(symbol) !== 'volume');
    if (priced.length !== 1) {
      throw new InvalidInput(
        `The ${volumeHeader} column holds the volumes of one price column, and the file has ${priced.length}: ` +
          `name its symbol with --map ${volumeHeader}=VOL:<symbol>.`,
      );
    }
    columns.push({ column: volumeHeader, index: volumeIndex, symbol: `VOL:${priced[0]!.symbol}` });
  }
  const symbols = new Set<string>();
  for (const { column, symbol } of columns) {
    if (symbol === '') throw new InvalidInput(`Column "${column}" maps to an empty symbol.`);
    if (symbols.has(symbol)) throw new InvalidInput(`Two columns map to the symbol ${symbol}.`);
    const problem = symbolProblem(symbol);
    if (problem !== null) throw new InvalidInput(`Column "${column}": ${problem}`);
    symbols.add(symbol);
  }
  const kinds = columns.map(({ symbol }) => seriesKind(symbol));

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
      if (!Number.isFinite(value)) {
        problems.push(`${column} is not a number: ${JSON.stringify(cell)}`);
        return;
      }
      const problem = valueProblem(kinds[c]!, value);
      if (problem === null) points[c]!.set(day, value);
      else problems.push(`${column} ${problem}: ${JSON.stringify(cell)}`);
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
  symbols: Array<{
    symbol: string;
    column: string;
    kind: SeriesKind;
    points: number;
    added: number;
    total: number;
  }>;
  rows: number;
  /** Values read from the file (empty cells excluded): prices, rates, levels and volumes. */
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
      symbols.push({
        symbol,
        column,
        kind: seriesKind(symbol),
        points: series.dates.length,
        added: merged.added,
        total: merged.total,
      });
    } else {
      symbols.push({ symbol, column, kind: seriesKind(symbol), points: 0, added: 0, total: 0 });
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
