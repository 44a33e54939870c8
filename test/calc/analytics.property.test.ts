/**
 * Property tests (fast-check) of the analytics of §16–§19 on random books of the synthetic FX market
 * (stocks, held projections, an FX pair, foreign cash, calls and puts, long and short, some in EUR):
 * the Euler components add up to the portfolio figure, every group is exactly the sum of its
 * members, the totals do not depend on the aggregation, and the sides add up.
 */
import fc from 'fast-check';
import type { Aggregation } from '../../calc/aggregation';
import { groupOf } from '../../calc/aggregation';
import { prepareBook, exposureOf } from '../../calc/exposure';
import { dayNumber, formatDay } from '../../calc/market-data';
import { parametricOf, prepareParametric } from '../../calc/parametric-risk';
import type { CalcSecurity } from '../../calc/calculation-request';
import { sensitivityOf, underlyingStressOf } from '../../calc/sensitivity';
import { fxMarket } from './support/fx-market';

const { source, date, row } = fxMarket();
const projection = ['IND:SPX', 'IND:F2'];
const S = source.get('AAA')!.values[row]!;
const expiry = formatDay(dayNumber(date) + 200);

const position = fc.record({
  kind: fc.constantFrom('AAA', 'BBB', 'IND:SPX', 'FX:EURUSD', 'CASH:JPY', 'CASH:EUR', 'call', 'put'),
  quantity: fc.integer({ min: -500, max: 500 }).filter((q) => q !== 0),
  strike: fc.double({ min: 0.7, max: 1.3, noNaN: true }),
  euro: fc.boolean(),
  label: fc.constantFrom('', 'core', 'hedge', 'alpha'),
});

const books = fc.array(position, { minLength: 1, maxLength: 8 }).map((list) =>
  list.map((p, i): CalcSecurity => {
    const symbol =
      p.kind === 'call' || p.kind === 'put'
        ? `AAA ${expiry} ${p.kind === 'call' ? 'C' : 'P'}${Math.round(S * p.strike)}`
        : p.kind;
    const foreign = p.euro && !p.kind.startsWith('CASH:') && p.kind !== 'FX:EURUSD';
    return {
      id: `p${i}`,
      symbol,
      quantity: p.quantity,
      label: p.label,
      ...(foreign ? { currency: 'EUR' } : {}),
    };
  }),
);

const aggregations = fc.constantFrom<Aggregation>(
  'position',
  'custom',
  'currency',
  'security_type',
  'security_type_refined',
  'exposure',
);

const NLV = 1e6;
const report = (aggregation: Aggregation) => ({ aggregation, filter: null });
const RUNS = { numRuns: 40 };

describe('analytics properties on random books', () => {
  test('parametric: over groups and projections, each measure’s components sum to the portfolio figure', () => {
    fc.assert(
      fc.property(books, aggregations, (securities, aggregation) => {
        const { normalised, prepared } = prepareParametric(
          { securities, date, projection, nlv: NLV },
          source,
        );
        const result = parametricOf(prepared, normalised.common.sampling, '95%', report(aggregation));
        for (const measure of ['volatility', 'var', 'cvar'] as const) {
          let total = 0;
          for (const r of result.results) for (const part of r[measure]) total += part.value;
          expect(Math.abs(total - result[measure])).toBeLessThanOrEqual(
            1e-12 * Math.max(1, Math.abs(result[measure])),
          );
        }
        expect(result.volatility).toBeGreaterThanOrEqual(0);
        expect(result.cvar).toBeLessThanOrEqual(result.var);
      }),
      RUNS,
    );
  });

  test('exposure, sensitivity and stress: each group is exactly the sum of its members; totals do not depend on the grouping', () => {
    fc.assert(
      fc.property(books, aggregations, (securities, aggregation) => {
        const { normalised, prepared } = prepareBook({ securities, date, projection, nlv: NLV }, source);
        const byPosition = exposureOf(normalised, prepared);
        const grouped = exposureOf(normalised, prepared, report(aggregation));
        const label = (i: number) =>
          aggregation === 'position' ? prepared.facts[i]!.id : groupOf(aggregation, prepared.facts[i]!);
        for (const group of grouped.results) {
          const members = byPosition.results.filter((_, i) => label(i) === group.id);
          expect(members.length).toBeGreaterThan(0);
          let notional = 0;
          let delta = 0;
          let exposure = 0;
          for (const m of members) {
            notional += m.notional;
            delta += m.delta_notional;
            exposure += m.exposure;
          }
          expect(group).toEqual({ id: group.id, notional, delta_notional: delta, exposure });
        }
        expect(grouped.results.length).toBe(new Set(byPosition.results.map((_, i) => label(i))).size);
        // The sides are summed position by position whatever the grouping.
        expect([grouped.long, grouped.short, grouped.gross, grouped.net]).toEqual([
          byPosition.long,
          byPosition.short,
          byPosition.gross,
          byPosition.net,
        ]);
        expect(grouped.long).toBeGreaterThanOrEqual(0);
        expect(grouped.short).toBeLessThanOrEqual(0);
        expect(grouped.net).toBe(grouped.long + grouped.short);
        expect(grouped.gross).toBe(grouped.long - grouped.short);

        for (const type of ['delta', 'gamma', 'vega', 'theta'] as const) {
          const plain = sensitivityOf(prepared, type, true);
          const groups = sensitivityOf(prepared, type, true, report(aggregation));
          expect(groups.total).toBe(plain.total);
          for (const group of groups.results) {
            let value = 0;
            plain.results.forEach((r, i) => {
              if (label(i) === group.id) value += r.value!;
            });
            expect(group.value).toBe(value);
          }
        }

        const stresses = [-0.1, 0, 0.07];
        const plain = underlyingStressOf(prepared, stresses);
        const groups = underlyingStressOf(prepared, stresses, report(aggregation));
        expect(groups.total).toEqual(plain.total);
        for (const group of groups.results) {
          group.values.forEach((v, j) => {
            let value = 0;
            plain.results.forEach((r, i) => {
              if (label(i) === group.id) value += r.values[j]!.value;
            });
            expect(v).toEqual({ stress: stresses[j], value });
          });
        }
        for (const r of plain.results) expect(r.values[1]!.value).toBe(0);
      }),
      RUNS,
    );
  });
});
