import { readFileSync } from 'node:fs';
import path from 'node:path';
import { daysFromCivil, type PriceSeries } from '../../../calc/market-data';

/** The shared real market data (read in place, never copied into the repository). */
export const MARKET_DIR = path.resolve(__dirname, '../../../../shared/data/market');

/** `YYYY-MM-DD` or `M/D/YYYY` → day number. */
export function parseCsvDate(text: string): number {
  let match = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(text);
  if (match) return daysFromCivil(Number(match[1]), Number(match[2]), Number(match[3]));
  match = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(text);
  if (match) return daysFromCivil(Number(match[3]), Number(match[1]), Number(match[2]));
  throw new Error(`unparseable date ${JSON.stringify(text)}`);
}

/**
 * A wide CSV (a date column, then one column per symbol) as one series per column. Empty cells are
 * left out of that column's series. `rename` maps a column to a symbol (SP500 → IND:SPX); `only`
 * keeps the named columns.
 */
export function readWideCsv(
  file: string,
  options: { rename?: Record<string, string>; only?: readonly string[] } = {},
): Map<string, PriceSeries> {
  const lines = readFileSync(path.join(MARKET_DIR, file), 'utf8').split(/\r?\n/).filter(Boolean);
  const header = lines[0]!.split(',');
  const columns = header
    .map((name, index) => ({ name, index }))
    .slice(1)
    .filter(({ name }) => !options.only || options.only.includes(name));
  const collected = columns.map(() => ({ days: [] as number[], values: [] as number[] }));
  for (const line of lines.slice(1)) {
    const cells = line.split(',');
    const day = parseCsvDate(cells[0]!);
    columns.forEach(({ index }, c) => {
      const cell = cells[index]?.trim() ?? '';
      if (cell === '') return;
      const value = Number(cell);
      if (!Number.isFinite(value)) throw new Error(`${file}: bad value ${cell}`);
      collected[c]!.days.push(day);
      collected[c]!.values.push(value);
    });
  }
  const out = new Map<string, PriceSeries>();
  columns.forEach(({ name }, c) => {
    out.set(options.rename?.[name] ?? name, {
      dates: Int32Array.from(collected[c]!.days),
      values: Float64Array.from(collected[c]!.values),
    });
  });
  return out;
}

/** IND:SPX (the SP500 column), SPY, the 19 stocks and the factor ETFs in one source. */
export function realMarket(): Map<string, PriceSeries> {
  return new Map([
    ...readWideCsv('sp500_index_1990_2022.csv', { rename: { SP500: 'IND:SPX' } }),
    ...readWideCsv('spy_daily.csv'),
    ...readWideCsv('us_stocks_daily.csv'),
    ...readWideCsv('factor_etfs_2014_2022.csv'),
  ]);
}
