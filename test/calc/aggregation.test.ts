/**
 * The reporting step (methodology §14, §15): the group of a position under every aggregation, with
 * the buckets' edges, the order of groups, and that groups are exact sums of the reported positions.
 */
import fc from 'fast-check';
import {
  AGGREGATIONS,
  type Aggregation,
  checkAggregation,
  compareLabels,
  groupOf,
  reportResults,
  reportRiskAttribution,
  reportStressTest,
  UNCLASSIFIED,
} from '../../calc/aggregation';
import { parseFilter } from '../../calc/filter';
import { CalcInputError } from '../../calc/input-error';
import type { PositionFacts } from '../../calc/position-facts';
import { sampleFacts } from './support/position-facts';

const facts = sampleFacts;

type Grouped = Exclude<Aggregation, 'position'>;
const group = (aggregation: Grouped, overrides: Partial<PositionFacts>) =>
  groupOf(aggregation, facts(overrides));
const withAttribute = (name: string, value: string | number | null) => ({ attributes: { [name]: value } });

describe('groupOf', () => {
  test('custom: the label, an empty one Unlabeled', () => {
    expect(group('custom', { label: 'core' })).toBe('core');
    expect(group('custom', { label: '' })).toBe('Unlabeled');
  });

  test.each(['country', 'sector', 'gics_sector'] as const)(
    '%s: the master attribute, missing → Unclassified',
    (name) => {
      expect(group(name, withAttribute(name, 'Energy'))).toBe('Energy');
      expect(group(name, withAttribute(name, '  Energy '))).toBe('Energy');
      expect(group(name, withAttribute(name, ''))).toBe(UNCLASSIFIED);
      expect(group(name, withAttribute(name, null))).toBe(UNCLASSIFIED);
      expect(group(name, { attributes: {} })).toBe(UNCLASSIFIED);
    },
  );

  test('currency and security_type: the position’s own (§9)', () => {
    expect(group('currency', { currency: 'EUR' })).toBe('EUR');
    expect(group('security_type', { instrumentType: 'EQUITY_OPTION' })).toBe('EQUITY_OPTION');
  });

  test('security_type_refined: the master value, else type, right and how it is held', () => {
    expect(group('security_type_refined', withAttribute('security_type_refined', 'Corporate bond'))).toBe(
      'Corporate bond',
    );
    expect(group('security_type_refined', {})).toBe('EQUITY long');
    expect(group('security_type_refined', { quantity: -5 })).toBe('EQUITY short');
    const soldPut = { instrumentType: 'EQUITY_OPTION' as const, optionRight: 'P' as const, quantity: -2 };
    // A sold put has a positive delta; it is still held short.
    expect(group('security_type_refined', { ...soldPut, deltaExposure: 500 })).toBe('OPTION put short');
    expect(group('security_type_refined', { ...soldPut, optionRight: 'C', quantity: 2 })).toBe(
      'OPTION call long',
    );
    expect(group('security_type_refined', { instrumentType: 'FX_FORWARD' })).toBe('FX FORWARD long');
  });

  test('exposure: by the sign of the delta-adjusted exposure (a long put is short)', () => {
    expect(group('exposure', { deltaExposure: 1 })).toBe('long');
    expect(group('exposure', { quantity: 3, deltaExposure: -1 })).toBe('short');
    expect(group('exposure', { deltaExposure: 0 })).toBe(UNCLASSIFIED);
  });

  test('liquidity: the §15 bucket, no volume → Unclassified', () => {
    // 100 shares at 0.2 × ADV20: ADV 2000 → 25% (closed above: still 5-25%).
    expect(group('liquidity', { adv20: 2000 })).toBe('5-25%');
    expect(group('liquidity', { adv20: 100 })).toBe('>300%');
    expect(group('liquidity', { adv20: null })).toBe(UNCLASSIFIED);
  });

  test.each<[number | string, string]>([
    [200.5e9, 'Mega'],
    [200e9, 'Large'],
    [10e9, 'Large'],
    [9.99e9, 'Mid'],
    [2e9, 'Mid'],
    [3e8, 'Small'],
    [2.99e8, 'Micro'],
    [0, 'Micro'],
    ['2.5e11', 'Mega'],
    ['n/a', UNCLASSIFIED],
    [-1, UNCLASSIFIED],
  ])('market_capitalization %j → %s', (cap, label) => {
    expect(group('market_capitalization', withAttribute('market_cap', cap))).toBe(label);
  });

  test.each<[string | null, string]>([
    ['AAA', 'AAA'],
    ['AA+', 'AA'],
    ['AA-', 'AA'],
    ['A', 'A'],
    ['BBB-', 'BBB'],
    ['BB+', 'BB'],
    ['B', 'B'],
    ['CCC+', 'CCC and below'],
    ['D', 'CCC and below'],
    ['Aaa', 'AAA'],
    ['Aa2', 'AA'],
    ['A1', 'A'],
    ['Baa3', 'BBB'],
    ['Ba1', 'BB'],
    ['B2', 'B'],
    ['Caa1', 'CCC and below'],
    ['NR', 'Not rated'],
    [null, 'Not rated'],
  ])('implied_rating %j → %s', (rating, label) => {
    expect(group('implied_rating', withAttribute('rating', rating))).toBe(label);
  });

  test.each<[number, string]>([
    [0, '0-1'],
    [0.99, '0-1'],
    [1, '1-3'],
    [4.9, '3-5'],
    [5, '5-7'],
    [7, '7-10'],
    [10, '10+'],
    [30, '10+'],
  ])('duration %d → %s', (years, label) => {
    expect(group('duration', withAttribute('duration', years))).toBe(label);
  });

  test.each<[number, string]>([
    [0, '0'],
    [0.5, '0-1'],
    [1, '1-2'],
    [2, '2-4'],
    [4, '4+'],
    [12, '4+'],
  ])('dividend_yield %d%% → %s', (value, label) => {
    expect(group('dividend_yield', withAttribute('dividend_yield', value))).toBe(label);
  });

  test.each<[number, string]>([
    [0, '0-20'],
    [20, '20-40'],
    [79.9, '60-80'],
    [80, '80-100'],
    [100, '80-100'],
    [101, UNCLASSIFIED],
  ])('total_esg %d → %s', (score, label) => {
    expect(group('total_esg', withAttribute('esg_score', score))).toBe(label);
  });

  test('fixed_income: by instrument type', () => {
    expect(group('fixed_income', { instrumentType: 'FIXED_INCOME' })).toBe('Fixed income');
    expect(group('fixed_income', { instrumentType: 'EQUITY' })).toBe('Other');
  });

  test('every aggregation of the spec is handled, and nothing else is accepted', () => {
    for (const aggregation of AGGREGATIONS) {
      expect(checkAggregation(aggregation)).toBe(aggregation);
      if (aggregation !== 'position') expect(typeof groupOf(aggregation, facts())).toBe('string');
    }
    expect(checkAggregation(null)).toBe('position');
    expect(() => checkAggregation('planet')).toThrow(CalcInputError);
  });
});

describe('reportResults', () => {
  const positions = [
    facts({ id: 'a', label: 'x', deltaExposure: 5 }),
    facts({ id: 'b', label: '', deltaExposure: -5 }),
    facts({ id: 'c', label: 'x', deltaExposure: 5 }),
    facts({ id: 'd', label: 'Unclassified', deltaExposure: 5 }),
    facts({ id: 'e', label: 'B', deltaExposure: 5 }),
  ];
  const values = (v: number) => [
    { projection: 'IND:SPX', value: v },
    { projection: 'residual', value: v / 10 },
  ];
  const attribution = {
    unmapped_tickers: ['ZZZ'],
    results: positions.map((p, i) => ({ id: p.id, mctr: values(i + 1) })),
  };

  test('position: the reported positions in their order; a filter keeps the matching ones', () => {
    expect(reportRiskAttribution(attribution, positions, { aggregation: 'position', filter: null })).toEqual(
      attribution,
    );
    const shorts = reportRiskAttribution(attribution, positions, {
      aggregation: 'position',
      filter: parseFilter("exposure('short')"),
    });
    expect(shorts).toEqual({ unmapped_tickers: ['ZZZ'], results: [attribution.results[1]] });
  });

  test('groups sorted by label in code-unit order, Unclassified last, each the sum of its members', () => {
    const grouped = reportRiskAttribution(attribution, positions, { aggregation: 'custom', filter: null });
    expect(grouped.results).toEqual([
      { id: 'B', mctr: values(5) },
      { id: 'Unlabeled', mctr: values(2) },
      {
        id: 'x',
        mctr: [
          { projection: 'IND:SPX', value: 4 },
          { projection: 'residual', value: 0.1 + 0.3 },
        ],
      },
      // A label that happens to read "Unclassified" is still that group's label, sorted last.
      { id: 'Unclassified', mctr: values(4) },
    ]);
  });

  test('stress test: ev, cvar_neg and cvar_pos summed alike; the rest of the result untouched', () => {
    const stress = {
      magnitude: -0.1,
      extrapolated: false,
      out_of_range: false,
      implied_magnitudes: [-0.1],
      dynamic_range: [-0.2, 0.2] as [number, number],
      unmapped_tickers: [],
      implied_horizon: 5,
      results: positions.map((p, i) => ({
        id: p.id,
        ev: values(i),
        cvar_neg: values(2 * i),
        cvar_pos: values(-i),
      })),
    };
    const grouped = reportStressTest(stress, positions, { aggregation: 'exposure', filter: null });
    expect(grouped.results.map((r) => r.id)).toEqual(['long', 'short']);
    expect(grouped.results[1]).toEqual({
      id: 'short',
      ev: values(1),
      cvar_neg: values(2),
      cvar_pos: values(-1),
    });
    expect(grouped.results[0]!.ev[0]!.value).toBe(0 + 2 + 3 + 4);
    expect({ ...grouped, results: [] }).toEqual({ ...stress, results: [] });
  });

  test('property: over any grouping and filter, each reported position is summed into its own group, and the groups add up to the reported positions', () => {
    const aggregations = AGGREGATIONS.filter((a) => a !== 'position');
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            label: fc.constantFrom('', 'a', 'b'),
            delta: fc.integer({ min: -3, max: 3 }),
            value: fc.integer({ min: -1000, max: 1000 }),
            sector: fc.constantFrom(null, 'Energy', 'Tech'),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        fc.constantFrom(...aggregations),
        fc.constantFrom(null, "exposure('long')", "not(exposure('long'))"),
        (rows, aggregation, filterText) => {
          const book = rows.map((r, i) =>
            facts({ id: `p${i}`, label: r.label, deltaExposure: r.delta, attributes: { sector: r.sector } }),
          );
          const result = {
            unmapped_tickers: [],
            results: rows.map((r, i) => ({
              id: `p${i}`,
              mctr: [{ projection: 'residual', value: r.value }],
            })),
          };
          const filter = filterText === null ? null : parseFilter(filterText);
          const positionsOnly = reportResults(
            result.results,
            book,
            { aggregation: 'position', filter },
            () => {
              throw new Error('position never merges');
            },
          );
          const grouped = reportRiskAttribution(result, book, { aggregation, filter }).results;
          const total = (list: typeof grouped) => list.reduce((s, r) => s + r.mctr[0]!.value, 0);
          expect(total(grouped)).toBe(total(positionsOnly));
          // Each reported position lands in its own group, and a group holds exactly its members.
          const expected = new Map<string, number>();
          for (const position of positionsOnly) {
            const group = groupOf(
              aggregation,
              book.find((f) => f.id === position.id)!,
            );
            expected.set(group, (expected.get(group) ?? 0) + position.mctr[0]!.value);
          }
          expect(new Map(grouped.map((g) => [g.id, g.mctr[0]!.value]))).toEqual(expected);
          expect(grouped.map((g) => g.id)).toEqual([...grouped.map((g) => g.id)].sort(compareLabels));
          expect(new Set(grouped.map((g) => g.id)).size).toBe(grouped.length);
        },
      ),
    );
  });
});
