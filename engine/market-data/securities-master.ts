import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';
import { type BadRow, splitCsvLine } from './csv-import';

/** Columns of the securities master; any other column lands in `attributes` under its header. */
export const MASTER_COLUMNS = [
  'symbol',
  'name',
  'currency',
  'instrument_type',
  'exchange',
  'country',
  'sector',
] as const;
type MasterColumn = (typeof MASTER_COLUMNS)[number];

const CHECKS: Partial<Record<MasterColumn, { pattern: RegExp; hint: string }>> = {
  symbol: { pattern: /^[A-Za-z0-9.:_^/-]{1,64}$/, hint: 'a symbol of letters, digits and . : _ ^ / -' },
  currency: { pattern: /^[A-Z]{3}$/, hint: 'a 3-letter ISO 4217 code such as USD' },
  country: { pattern: /^[A-Z]{2}$/, hint: 'a 2-letter ISO 3166 code such as US' },
};

/**
 * Attributes the aggregations of methodology §14 read, checked and typed on import (numbers are kept
 * as JSON numbers so a bucket boundary compares numbers, never strings). They live in `attributes`
 * beside any other extra column.
 */
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
type AttributeCheck = (value: string) => { value: string | number } | { problem: string };
const numberIn =
  (low: number, high: number, hint: string): AttributeCheck =>
  (value) => {
    const n = NUMBER.test(value) ? Number(value) : NaN;
    return Number.isFinite(n) && n >= low && n <= high ? { value: n } : { problem: hint };
  };
const text: AttributeCheck = (value) => ({ value });
export const TYPED_ATTRIBUTES: Readonly<Record<string, AttributeCheck>> = {
  market_cap: numberIn(0, Infinity, 'a market capitalisation in USD (≥ 0)'),
  duration: numberIn(0, Infinity, 'a duration in years (≥ 0)'),
  dividend_yield: numberIn(0, Infinity, 'a dividend yield in percent (≥ 0)'),
  esg_score: numberIn(0, 100, 'an ESG score from 0 to 100'),
  rating: (value) =>
    /^[A-Za-z]{1,4}[123]?[+-]?$/.test(value)
      ? { value }
      : { problem: 'a credit rating such as AA+, Baa2 or BBB-' },
  gics_sector: text,
  security_type_refined: text,
};

export interface SecurityMasterRow {
  symbol: string;
  fields: Partial<Record<Exclude<MasterColumn, 'symbol'>, string>>;
  attributes: Record<string, string | number>;
}

export interface ParsedSecuritiesCsv {
  rows: SecurityMasterRow[];
  badRows: BadRow[];
  /** Headers that go to `attributes`. */
  extraColumns: string[];
}

/**
 * Parses a securities master CSV: a header with `symbol` and any of name, currency,
 * instrument_type, exchange, country, sector; other columns are kept as attributes for the
 * aggregations to group by (§14: market_cap, rating, duration, dividend_yield, esg_score, gics_sector,
 * security_type_refined are checked and typed; any other, e.g. industry or isin, is kept as text). An
 * empty cell leaves what is stored; a row without a symbol, with a malformed code or attribute, or
 * repeating a symbol is reported and left out.
 */
export function parseSecuritiesCsv(text: string): ParsedSecuritiesCsv {
  const lines = text.split(/\r?\n/);
  const header = splitCsvLine(lines[0] ?? '').map((h) => h.trim().toLowerCase());
  const symbolAt = header.indexOf('symbol');
  if (symbolAt < 0) throw new InvalidInput('The securities CSV needs a header line with a symbol column.');
  const seenHeaders = new Set<string>();
  for (const h of header) {
    if (h === '') throw new InvalidInput('Every column of the securities CSV needs a header.');
    if (seenHeaders.has(h)) throw new InvalidInput(`The column "${h}" appears twice in the header.`);
    seenHeaders.add(h);
  }
  const extraColumns = header.filter((h) => !(MASTER_COLUMNS as readonly string[]).includes(h));
  const rows: SecurityMasterRow[] = [];
  const badRows: BadRow[] = [];
  const seen = new Set<string>();
  lines.slice(1).forEach((line, index) => {
    const lineNumber = index + 2;
    if (line.trim() === '') return;
    const cells = splitCsvLine(line).map((c) => c.trim());
    if (cells.length !== header.length) {
      badRows.push({
        line: lineNumber,
        message: `has ${cells.length} cells, the header has ${header.length}.`,
      });
      return;
    }
    const symbol = cells[symbolAt]!;
    if (symbol === '') {
      badRows.push({ line: lineNumber, message: 'has no symbol.' });
      return;
    }
    const row: SecurityMasterRow = { symbol, fields: {}, attributes: {} };
    for (const [i, column] of header.entries()) {
      const value = cells[i]!;
      if (value === '') continue;
      const check = CHECKS[column as MasterColumn];
      if (check && !check.pattern.test(value)) {
        badRows.push({ line: lineNumber, message: `${column} "${value}" is not ${check.hint}.` });
        return;
      }
      if (column === 'symbol') continue;
      if ((MASTER_COLUMNS as readonly string[]).includes(column)) {
        row.fields[column as Exclude<MasterColumn, 'symbol'>] = value;
        continue;
      }
      const typed = TYPED_ATTRIBUTES[column]?.(value) ?? { value };
      if ('problem' in typed) {
        badRows.push({ line: lineNumber, message: `${column} "${value}" is not ${typed.problem}.` });
        return;
      }
      row.attributes[column] = typed.value;
    }
    if (seen.has(symbol)) {
      badRows.push({ line: lineNumber, message: `repeats the symbol ${symbol}.` });
      return;
    }
    seen.add(symbol);
    rows.push(row);
  });
  return { rows, badRows, extraColumns };
}

export interface SecuritiesImportSummary {
  file: string;
  rows: number;
  created: number;
  updated: number;
  extra_columns: string[];
  bad_rows: BadRow[];
}

/**
 * Upserts the securities master from a CSV in one transaction: a new symbol is created, a known one
 * gets the non-empty cells (attributes merged key by key), so re-importing the same file changes
 * nothing and a narrower file (say, only sector) corrects one column without blanking the others.
 */
export async function importSecuritiesCsv(db: Database, file: string): Promise<SecuritiesImportSummary> {
  const parsed = parseSecuritiesCsv(await readFile(file, 'utf8'));
  let created = 0;
  let updated = 0;
  await db.transaction(async (trx) => {
    for (const row of parsed.rows) {
      const result = (await trx.raw(
        `INSERT INTO securities_master (symbol, name, currency, instrument_type, exchange, country, sector, attributes)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?::jsonb)
         ON CONFLICT (symbol) DO UPDATE SET
           name = COALESCE(EXCLUDED.name, securities_master.name),
           currency = COALESCE(EXCLUDED.currency, securities_master.currency),
           instrument_type = COALESCE(EXCLUDED.instrument_type, securities_master.instrument_type),
           exchange = COALESCE(EXCLUDED.exchange, securities_master.exchange),
           country = COALESCE(EXCLUDED.country, securities_master.country),
           sector = COALESCE(EXCLUDED.sector, securities_master.sector),
           attributes = securities_master.attributes || EXCLUDED.attributes
         RETURNING (xmax = 0) AS inserted`,
        [
          row.symbol,
          row.fields.name ?? null,
          row.fields.currency ?? null,
          row.fields.instrument_type ?? null,
          row.fields.exchange ?? null,
          row.fields.country ?? null,
          row.fields.sector ?? null,
          JSON.stringify(row.attributes),
        ],
      )) as { rows: Array<{ inserted: boolean }> };
      if (result.rows[0]!.inserted) created++;
      else updated++;
    }
  });
  return {
    file: path.basename(file),
    rows: parsed.rows.length + parsed.badRows.length,
    created,
    updated,
    extra_columns: parsed.extraColumns,
    bad_rows: parsed.badRows,
  };
}

export interface SecurityMasterEntry {
  symbol: string;
  name: string | null;
  currency: string | null;
  instrument_type: string | null;
  exchange: string | null;
  country: string | null;
  sector: string | null;
  attributes: Record<string, unknown>;
}

/** The master rows of some symbols (unknown symbols are absent). */
export async function findSecurities(db: Database, symbols: string[]): Promise<SecurityMasterEntry[]> {
  return (await db('securities_master')
    .whereIn('symbol', symbols)
    .orderBy('symbol')
    .select(...MASTER_COLUMNS, 'attributes')) as SecurityMasterEntry[];
}
