/**
 * Filter expressions (methodology §15): the parser (grammar, positions in its errors), the printer
 * (a round trip), and what each function means for a position's facts.
 */
import fc from 'fast-check';
import {
  FILTER_FUNCTIONS,
  type FilterExpression,
  type FilterFunction,
  liquidityBucket,
  liquidityPercent,
  matchesFilter,
  parseFilter,
  printFilter,
  reportedIds,
} from '../../calc/filter';
import { CalcInputError } from '../../calc/input-error';
import type { PositionFacts } from '../../calc/position-facts';
import { sampleFacts } from './support/position-facts';

const facts = sampleFacts;

/** The message of the CalcInputError `run` throws (fails the test if it throws nothing or else). */
function errorOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(CalcInputError);
    expect((error as CalcInputError).parameter).toBe('filter');
    return (error as Error).message;
  }
  throw new Error('expected a CalcInputError');
}

const calls: Array<[FilterFunction, string]> = Object.entries(FILTER_FUNCTIONS).flatMap(([name, args]) =>
  Object.keys(args).map((argument): [FilterFunction, string] => [name as FilterFunction, argument]),
);

/** Trees as the parser builds them: and/or with at least two operands. */
const expressions: fc.Arbitrary<FilterExpression> = fc.letrec<{ expression: FilterExpression }>((tie) => ({
  expression: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(...calls).map(([name, argument]): FilterExpression => ({ kind: 'call', name, argument })),
    tie('expression').map((operand): FilterExpression => ({ kind: 'not', operand })),
    fc
      .array(tie('expression'), { minLength: 2, maxLength: 3 })
      .map((operands): FilterExpression => ({ kind: 'and', operands })),
    fc
      .array(tie('expression'), { minLength: 2, maxLength: 3 })
      .map((operands): FilterExpression => ({ kind: 'or', operands })),
  ),
})).expression;

/** Arbitrary facts covering every type, side, currency, country and liquidity case. */
const anyFacts: fc.Arbitrary<PositionFacts> = fc
  .record({
    instrumentType: fc.constantFrom(
      'EQUITY',
      'ETF',
      'EQUITY_OPTION',
      'FUTURE_OPTION',
      'FX_FORWARD',
      'FX_OPTION',
      'CASH',
    ) as fc.Arbitrary<PositionFacts['instrumentType']>,
    currency: fc.constantFrom('USD', 'EUR', 'JPY'),
    deltaExposure: fc.constantFrom(-5, 0, 5),
    quantity: fc.integer({ min: -2000, max: 2000 }),
    country: fc.constantFrom('US', 'DE', null),
    adv20: fc.constantFrom(null, 0, 500, 10_000),
  })
  .map(({ country, ...rest }) => facts({ ...rest, attributes: country === null ? {} : { country } }));

describe('parseFilter: the grammar of §15', () => {
  test('precedence: and binds tighter than or; parentheses and not(…) group', () => {
    const a = "currency('foreign securities')";
    const b = "exposure('long')";
    const c = "liquidity('0-5%')";
    const call = (name: FilterFunction, argument: string): FilterExpression => ({
      kind: 'call',
      name,
      argument,
    });
    const [A, B, C] = [
      call('currency', 'foreign securities'),
      call('exposure', 'long'),
      call('liquidity', '0-5%'),
    ];
    expect(parseFilter(`${a} or ${b} and ${c}`)).toEqual({
      kind: 'or',
      operands: [A, { kind: 'and', operands: [B, C] }],
    });
    expect(parseFilter(`(${a} or ${b}) and ${c}`)).toEqual({
      kind: 'and',
      operands: [{ kind: 'or', operands: [A, B] }, C],
    });
    expect(parseFilter(`not(${a}) and not (${b} or ${c})`)).toEqual({
      kind: 'and',
      operands: [
        { kind: 'not', operand: A },
        { kind: 'not', operand: { kind: 'or', operands: [B, C] } },
      ],
    });
    expect(parseFilter(`((${a}))`)).toEqual(A);
  });

  test('keywords, names and arguments in any case; whitespace anywhere between tokens', () => {
    expect(parseFilter("  NOT( Exposure ( 'LONG' ) )AND\tTYPE('US Equity Long')\n")).toEqual({
      kind: 'and',
      operands: [
        { kind: 'not', operand: { kind: 'call', name: 'exposure', argument: 'long' } },
        { kind: 'call', name: 'type', argument: 'us equity long' },
      ],
    });
  });

  test.each<[string, string]>([
    [
      '',
      'filter: expected a condition (currency(…), exposure(…), type(…), liquidity(…), not(…) or "("), found the end of the expression at position 1.',
    ],
    [
      "exposure('long') and",
      'filter: expected a condition (currency(…), exposure(…), type(…), liquidity(…), not(…) or "("), found the end of the expression at position 21.',
    ],
    [
      "exposure('long'",
      'filter: expected ")" to close exposure(, found the end of the expression at position 16.',
    ],
    [
      "exposure('longish')",
      "filter: exposure does not take 'longish' (one of 'long', 'short') at position 10.",
    ],
    [
      "sector('Energy')",
      'filter: unknown function "sector" (one of currency, exposure, type, liquidity) at position 1.',
    ],
    ['exposure("long")', 'filter: unexpected character " (arguments are single-quoted) at position 10.'],
    ["exposure('long", 'filter: unterminated string (no closing quote) at position 10.'],
    ['exposure(long)', 'filter: expected a single-quoted argument of exposure, found "long" at position 10.'],
    [
      "exposure('long') exposure('short')",
      'filter: expected "and", "or" or the end, found "exposure" at position 18.',
    ],
    ["exposure('long'))", 'filter: unexpected ")" with no "(" to close at position 17.'],
    [
      "(exposure('long')",
      'filter: expected ")" to close the "(" at position 1, found the end of the expression at position 18.',
    ],
    ["not exposure('long')", 'filter: expected "(" after not, found "exposure" at position 5.'],
    ["exposure('long') & exposure('short')", 'filter: unexpected character "&" at position 18.'],
    [
      "or exposure('long')",
      'filter: expected a condition (currency(…), exposure(…), type(…), liquidity(…), not(…) or "("), found "or" at position 1.',
    ],
    [
      "liquidity('0-5 %')",
      "filter: liquidity does not take '0-5 %' (one of '0-5%', '5-25%', '25-50%', '50-100%', '100-300%', '>300%') at position 11.",
    ],
  ])('%j → %s', (text, message) => {
    expect(errorOf(() => parseFilter(text))).toBe(message);
  });

  test('property: the printer and the parser round-trip every tree', () => {
    fc.assert(
      fc.property(expressions, (expression) => {
        expect(parseFilter(printFilter(expression))).toEqual(expression);
      }),
      { numRuns: 500 },
    );
  });

  test('property: case, spacing and redundant parentheses do not change the tree', () => {
    /** Prints like printFilter, with random case, blanks and extra parentheses around factors. */
    const noisy = (expression: FilterExpression, coin: () => boolean, blank: () => string): string => {
      const mixed = (word: string) => [...word].map((c) => (coin() ? c.toUpperCase() : c)).join('');
      const wrap = (text: string) => (coin() && coin() ? `(${blank()}${text}${blank()})` : text);
      switch (expression.kind) {
        case 'call':
          return wrap(
            `${mixed(expression.name)}${blank()}(${blank()}'${mixed(expression.argument)}'${blank()})`,
          );
        case 'not':
          return wrap(
            `${mixed('not')}${blank()}(${blank()}${noisy(expression.operand, coin, blank)}${blank()})`,
          );
        case 'and':
        case 'or': {
          const parent = expression.kind;
          return expression.operands
            .map((operand) => {
              const text = noisy(operand, coin, blank);
              const must = operand.kind === parent || (parent === 'and' && operand.kind === 'or');
              return must ? `(${blank()}${text}${blank()})` : text;
            })
            .join(`${blank() || ' '}${mixed(parent)}${blank() || ' '}`);
        }
      }
    };
    fc.assert(
      fc.property(
        expressions,
        fc.infiniteStream(fc.boolean()),
        fc.infiniteStream(fc.constantFrom('', ' ', '\t', '\n  ')),
        (expression, coins, blanks) => {
          const c = coins[Symbol.iterator]();
          const b = blanks[Symbol.iterator]();
          const text = noisy(
            expression,
            () => c.next().value as boolean,
            () => b.next().value as string,
          );
          expect(parseFilter(text)).toEqual(expression);
        },
      ),
      { numRuns: 300 },
    );
  });

  /** Anything the parser refuses is a CalcInputError naming a position inside (or just past) the text. */
  const refusedWithPosition = (text: string): void => {
    let tree: FilterExpression;
    try {
      tree = parseFilter(text);
    } catch (error) {
      if (!(error instanceof CalcInputError)) throw error;
      const match = /^filter: .+ at position (\d+)\.$/s.exec(error.message);
      expect(match).not.toBeNull();
      const position = Number(match![1]);
      expect(position).toBeGreaterThanOrEqual(1);
      expect(position).toBeLessThanOrEqual(text.length + 1);
      return;
    }
    // Accepted: then it is a fixpoint of the printer.
    expect(parseFilter(printFilter(tree))).toEqual(tree);
  };

  test('property: random strings are parsed or refused with a position, never anything else', () => {
    fc.assert(fc.property(fc.string({ maxLength: 60 }), refusedWithPosition), { numRuns: 1000 });
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 30 }), refusedWithPosition), {
      numRuns: 500,
    });
  });

  test('property: token soups (near misses of the grammar) are parsed or refused with a position', () => {
    const pieces = fc.constantFrom(
      'currency',
      'exposure',
      'type',
      'liquidity',
      'not',
      'and',
      'or',
      '(',
      ')',
      "'long'",
      "'short'",
      "'0-5%'",
      "'",
      ' ',
      'x',
      '"',
    );
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 14 }), (parts) => refusedWithPosition(parts.join(''))),
      { numRuns: 2000 },
    );
  });

  test('property: a valid expression with one character deleted or inserted is never a crash', () => {
    fc.assert(
      fc.property(
        expressions,
        fc.nat(),
        fc.constantFrom('(', ')', "'", ' ', 'a', '%', ''),
        (expression, where, inserted) => {
          const text = printFilter(expression);
          const at = where % (text.length + 1);
          refusedWithPosition(text.slice(0, at) + text.slice(at + 1));
          refusedWithPosition(text.slice(0, at) + inserted + text.slice(at));
        },
      ),
      { numRuns: 500 },
    );
  });

  test('a non-string is refused', () => {
    expect(errorOf(() => parseFilter(7 as unknown as string))).toBe(
      'filter: must be a filter expression (a string).',
    );
  });
});

describe('matchesFilter: what each function means (§15)', () => {
  const matches = (text: string, f: PositionFacts) => matchesFilter(parseFilter(text), f);

  test('currency: foreign or domestic against the base currency', () => {
    expect(matches("currency('foreign securities')", facts({ currency: 'EUR' }))).toBe(true);
    expect(matches("currency('domestic securities')", facts({ currency: 'EUR' }))).toBe(false);
    expect(matches("currency('domestic securities')", facts())).toBe(true);
    expect(matches("currency('domestic securities')", facts({ currency: 'EUR', baseCurrency: 'EUR' }))).toBe(
      true,
    );
  });

  test('exposure: the sign of the delta-adjusted exposure (a long put is short)', () => {
    const longPut = facts({
      instrumentType: 'EQUITY_OPTION',
      optionRight: 'P',
      quantity: 2,
      exposure: 800,
      deltaExposure: -4_500,
    });
    expect(matches("exposure('short')", longPut)).toBe(true);
    expect(matches("exposure('long')", longPut)).toBe(false);
    const shortPut = { ...longPut, quantity: -2, deltaExposure: 4_500 };
    expect(matches("exposure('long')", shortPut)).toBe(true);
    expect(matches("exposure('long')", facts({ quantity: -5, exposure: -500, deltaExposure: -500 }))).toBe(
      false,
    );
    // No exposure: neither long nor short.
    const flat = facts({ quantity: 0, exposure: 0, deltaExposure: 0 });
    expect(matches("exposure('long') or exposure('short')", flat)).toBe(false);
  });

  test('type: instrument type, side by delta, and the master country for equities', () => {
    const us = facts();
    const de = facts({ attributes: { country: 'DE' } });
    const unknown = facts({ attributes: {} });
    expect(matches("type('us equity long')", us)).toBe(true);
    expect(matches("type('us equity short')", us)).toBe(false);
    expect(matches("type('foreign equity long')", de)).toBe(true);
    expect(matches("type('us equity long')", de)).toBe(false);
    // No country in the master: not US.
    expect(matches("type('foreign equity long')", unknown)).toBe(true);
    expect(
      matches("type('foreign equity short')", facts({ deltaExposure: -1, attributes: { country: 'DE' } })),
    ).toBe(true);
    // An ETF is not an equity for `type`.
    expect(matches("type('us equity long')", facts({ instrumentType: 'ETF' }))).toBe(false);
    const option = facts({ instrumentType: 'EQUITY_OPTION', deltaExposure: 300 });
    expect(matches("type('equity option long delta')", option)).toBe(true);
    expect(matches("type('equity option short delta')", option)).toBe(false);
    expect(matches("type('us equity long')", option)).toBe(false);
    const futureOption = facts({ instrumentType: 'FUTURE_OPTION', deltaExposure: -3 });
    expect(matches("type('future option short delta')", futureOption)).toBe(true);
    expect(matches("type('fx forward')", facts({ instrumentType: 'FX_FORWARD', deltaExposure: -1 }))).toBe(
      true,
    );
    expect(matches("type('fx option long delta')", facts({ instrumentType: 'FX_OPTION' }))).toBe(true);
    expect(matches("type('fx option short delta')", facts({ instrumentType: 'FX_OPTION' }))).toBe(false);
  });

  test('liquidity = |quantity| / (0.20 × ADV20) in percent; each bucket is closed above', () => {
    // ADV20 500: 0.20 × 500 = 100 shares a day, so |quantity| is the percentage itself.
    const at = (quantity: number) => facts({ quantity, adv20: 500 });
    expect(liquidityPercent(at(-37))).toBe(37);
    const cases: Array<[number, string]> = [
      [0, '0-5%'],
      [5, '0-5%'],
      [5.0001, '5-25%'],
      [25, '5-25%'],
      [25.0001, '25-50%'],
      [50, '25-50%'],
      [50.0001, '50-100%'],
      [100, '50-100%'],
      [100.0001, '100-300%'],
      [300, '100-300%'],
      [300.0001, '>300%'],
      [-1e6, '>300%'],
    ];
    for (const [quantity, bucket] of cases) {
      expect(liquidityBucket(at(quantity))).toBe(bucket);
      for (const other of Object.keys(FILTER_FUNCTIONS.liquidity)) {
        expect(matches(`liquidity('${other}')`, at(quantity))).toBe(other === bucket);
      }
    }
  });

  test('no volume (no series, or nothing traded) fails every liquidity condition, and not() of it holds', () => {
    for (const adv20 of [null, 0]) {
      const f = facts({ quantity: 1, adv20 });
      expect(liquidityBucket(f)).toBeNull();
      for (const bucket of Object.keys(FILTER_FUNCTIONS.liquidity)) {
        expect(matches(`liquidity('${bucket}')`, f)).toBe(false);
        expect(matches(`not(liquidity('${bucket}'))`, f)).toBe(true);
      }
    }
  });

  test('property: and, or, not are boolean logic (De Morgan, double negation)', () => {
    const pair = fc.tuple(expressions, expressions);
    fc.assert(
      fc.property(pair, anyFacts, ([a, b], f) => {
        const A = matchesFilter(a, f);
        const B = matchesFilter(b, f);
        expect(matchesFilter({ kind: 'and', operands: [a, b] }, f)).toBe(A && B);
        expect(matchesFilter({ kind: 'or', operands: [a, b] }, f)).toBe(A || B);
        expect(matchesFilter({ kind: 'not', operand: { kind: 'not', operand: a } }, f)).toBe(A);
        const [pa, pb] = [printFilter(a), printFilter(b)];
        expect(matchesFilter(parseFilter(`not((${pa}) and (${pb}))`), f)).toBe(!(A && B));
        expect(matchesFilter(parseFilter(`not(${pa}) or not(${pb})`), f)).toBe(!(A && B));
      }),
      { numRuns: 300 },
    );
  });

  test('property: exactly one of long and short holds for a position with exposure', () => {
    fc.assert(
      fc.property(anyFacts, (f) => {
        const sides = [matches("exposure('long')", f), matches("exposure('short')", f)];
        expect(sides.filter(Boolean)).toHaveLength(f.deltaExposure === 0 ? 0 : 1);
        const domestic = matches("currency('domestic securities')", f);
        expect(matches("currency('foreign securities')", f)).toBe(!domestic);
      }),
    );
  });
});

describe('reportedIds: the positions a filter reports', () => {
  const book = [
    facts({ id: 'a' }),
    facts({ id: 'b', quantity: -10, exposure: -1000, deltaExposure: -1000 }),
    facts({ id: 'c', currency: 'EUR' }),
  ];

  test('the matching positions, in any combination', () => {
    expect([...reportedIds(parseFilter("exposure('short')"), book)]).toEqual(['b']);
    expect([
      ...reportedIds(parseFilter("exposure('long') and currency('domestic securities')"), book),
    ]).toEqual(['a']);
    expect([
      ...reportedIds(parseFilter("not(exposure('long') and currency('domestic securities'))"), book),
    ]).toEqual(['b', 'c']);
  });

  test('no filter, or one that matches nothing, reports the whole portfolio', () => {
    expect([...reportedIds(null, book)]).toEqual(['a', 'b', 'c']);
    expect([...reportedIds(parseFilter("type('fx forward')"), book)]).toEqual(['a', 'b', 'c']);
  });
});
