/**
 * Filter expressions (methodology §15; spec "filter"): a tokenizer and a recursive-descent parser for
 *
 *   expr   := term ('or' term)*
 *   term   := factor ('and' factor)*
 *   factor := 'not' '(' expr ')' | '(' expr ')' | call
 *   call   := name '(' string ')'          string: single-quoted, no escapes
 *
 * keywords, function names and arguments in any case; and an evaluator over the model's per-position
 * facts. A malformed expression is a CalcInputError naming the position (counting from 1) where it
 * goes wrong, so the endpoint answers `400 filter: … at position N.`
 */
import { CalcInputError } from './input-error';
import type { PositionFacts } from './position-facts';

export type FilterFunction = 'currency' | 'exposure' | 'type' | 'liquidity';

export type FilterExpression =
  | { readonly kind: 'or'; readonly operands: readonly FilterExpression[] }
  | { readonly kind: 'and'; readonly operands: readonly FilterExpression[] }
  | { readonly kind: 'not'; readonly operand: FilterExpression }
  | { readonly kind: 'call'; readonly name: FilterFunction; readonly argument: string };

/** Share of ADV20 traded at a 20% participation rate (§15). */
export const PARTICIPATION_RATE = 0.2;

/**
 * |quantity| / (0.20 × ADV20) in percent, or null when the position has no volume (no series, or
 * nothing traded in the last 20 days): such a position fails every liquidity condition (§15).
 */
export function liquidityPercent(facts: PositionFacts): number | null {
  const adv = facts.adv20;
  if (adv === null || !(adv > 0)) return null;
  return (Math.abs(facts.quantity) / (PARTICIPATION_RATE * adv)) * 100;
}

/**
 * The spec's liquidity buckets, closed above: `'>300%'` is strictly above 300, so 300 itself is in
 * `'100-300%'`, 5 in `'0-5%'`, and so on.
 */
export const LIQUIDITY_BUCKETS: ReadonlyArray<{ readonly label: string; readonly upTo: number }> = [
  { label: '0-5%', upTo: 5 },
  { label: '5-25%', upTo: 25 },
  { label: '25-50%', upTo: 50 },
  { label: '50-100%', upTo: 100 },
  { label: '100-300%', upTo: 300 },
  { label: '>300%', upTo: Infinity },
];

/** The liquidity bucket of a position, or null without volume. */
export function liquidityBucket(facts: PositionFacts): string | null {
  const percent = liquidityPercent(facts);
  if (percent === null) return null;
  return LIQUIDITY_BUCKETS.find((bucket) => percent <= bucket.upTo)!.label;
}

/** Side by delta-adjusted exposure (§11): a long put is short; zero is neither. */
const long = (facts: PositionFacts) => facts.deltaExposure > 0;
const short = (facts: PositionFacts) => facts.deltaExposure < 0;
const isType = (facts: PositionFacts, type: PositionFacts['instrumentType']) => facts.instrumentType === type;
/** §15: a US equity is one whose master `country` is `US`; any other (or none) is foreign. */
const inUs = (facts: PositionFacts) =>
  typeof facts.attributes.country === 'string' && facts.attributes.country.toUpperCase() === 'US';

type Condition = (facts: PositionFacts) => boolean;

/** Every function and its arguments, as the spec lists them, with what each means for a position. */
export const FILTER_FUNCTIONS: Readonly<Record<FilterFunction, Readonly<Record<string, Condition>>>> = {
  currency: {
    'foreign securities': (f) => f.currency !== f.baseCurrency,
    'domestic securities': (f) => f.currency === f.baseCurrency,
  },
  exposure: { long, short },
  type: {
    'equity option long delta': (f) => isType(f, 'EQUITY_OPTION') && long(f),
    'equity option short delta': (f) => isType(f, 'EQUITY_OPTION') && short(f),
    'future option long delta': (f) => isType(f, 'FUTURE_OPTION') && long(f),
    'future option short delta': (f) => isType(f, 'FUTURE_OPTION') && short(f),
    'foreign equity long': (f) => isType(f, 'EQUITY') && !inUs(f) && long(f),
    'foreign equity short': (f) => isType(f, 'EQUITY') && !inUs(f) && short(f),
    'us equity long': (f) => isType(f, 'EQUITY') && inUs(f) && long(f),
    'us equity short': (f) => isType(f, 'EQUITY') && inUs(f) && short(f),
    'fx forward': (f) => isType(f, 'FX_FORWARD'),
    'fx option long delta': (f) => isType(f, 'FX_OPTION') && long(f),
    'fx option short delta': (f) => isType(f, 'FX_OPTION') && short(f),
  },
  liquidity: Object.fromEntries(
    LIQUIDITY_BUCKETS.map(({ label }) => [label, (f: PositionFacts) => liquidityBucket(f) === label]),
  ),
};

const FUNCTION_NAMES = Object.keys(FILTER_FUNCTIONS) as FilterFunction[];

// ---------------------------------------------------------------------------------------------------
// Tokenizer

type Token =
  | { readonly type: 'name'; readonly text: string; readonly at: number }
  | { readonly type: 'string'; readonly text: string; readonly at: number }
  | { readonly type: '(' | ')' | 'end'; readonly at: number };

/** `at` is a 0-based offset; messages count from 1. */
function fail(at: number, message: string): never {
  throw new CalcInputError('filter', `${message} at position ${at + 1}.`);
}

const NAME_START = /[A-Za-z_]/;
const NAME_PART = /[A-Za-z0-9_]/;
const SPACE = /\s/;

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (SPACE.test(c)) {
      i++;
    } else if (c === '(' || c === ')') {
      tokens.push({ type: c, at: i });
      i++;
    } else if (c === "'") {
      const close = text.indexOf("'", i + 1);
      if (close < 0) fail(i, 'unterminated string (no closing quote)');
      tokens.push({ type: 'string', text: text.slice(i + 1, close), at: i });
      i = close + 1;
    } else if (NAME_START.test(c)) {
      const start = i;
      while (i < text.length && NAME_PART.test(text[i]!)) i++;
      tokens.push({ type: 'name', text: text.slice(start, i), at: start });
    } else {
      // One code point, so a character outside the BMP is named whole.
      const character = String.fromCodePoint(text.codePointAt(i)!);
      fail(
        i,
        c === '"'
          ? 'unexpected character " (arguments are single-quoted)'
          : `unexpected character ${JSON.stringify(character)}`,
      );
    }
  }
  tokens.push({ type: 'end', at: text.length });
  return tokens;
}

// ---------------------------------------------------------------------------------------------------
// Parser

const describeToken = (token: Token): string =>
  token.type === 'end'
    ? 'the end of the expression'
    : token.type === 'name'
      ? `"${token.text}"`
      : token.type === 'string'
        ? `the string '${token.text}'`
        : `"${token.type}"`;

const isKeyword = (token: Token, keyword: 'and' | 'or' | 'not') =>
  token.type === 'name' && token.text.toLowerCase() === keyword;

class Parser {
  private index = 0;

  constructor(private readonly tokens: readonly Token[]) {}

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.index + offset, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const token = this.peek();
    if (token.type !== 'end') this.index++;
    return token;
  }

  private expect(type: '(' | ')', context: string): void {
    const token = this.next();
    if (token.type !== type) fail(token.at, `expected "${type}" ${context}, found ${describeToken(token)}`);
  }

  parse(): FilterExpression {
    const expression = this.expression();
    const rest = this.peek();
    if (rest.type !== 'end') {
      fail(
        rest.at,
        rest.type === ')'
          ? 'unexpected ")" with no "(" to close'
          : `expected "and", "or" or the end, found ${describeToken(rest)}`,
      );
    }
    return expression;
  }

  private expression(): FilterExpression {
    const operands = [this.term()];
    while (isKeyword(this.peek(), 'or')) {
      this.next();
      operands.push(this.term());
    }
    return operands.length === 1 ? operands[0]! : { kind: 'or', operands };
  }

  private term(): FilterExpression {
    const operands = [this.factor()];
    while (isKeyword(this.peek(), 'and')) {
      this.next();
      operands.push(this.factor());
    }
    return operands.length === 1 ? operands[0]! : { kind: 'and', operands };
  }

  private factor(): FilterExpression {
    const token = this.peek();
    if (token.type === '(') {
      this.next();
      const inner = this.expression();
      this.expect(')', 'to close the "(" at position ' + String(token.at + 1));
      return inner;
    }
    if (isKeyword(token, 'not')) {
      this.next();
      this.expect('(', 'after not');
      const operand = this.expression();
      this.expect(')', 'to close not(');
      return { kind: 'not', operand };
    }
    if (token.type === 'name' && !isKeyword(token, 'and') && !isKeyword(token, 'or')) {
      return this.call();
    }
    return fail(
      token.at,
      `expected a condition (${FUNCTION_NAMES.map((n) => `${n}(…)`).join(', ')}, not(…) or "("), found ${describeToken(token)}`,
    );
  }

  private call(): FilterExpression {
    const nameToken = this.next() as Extract<Token, { type: 'name' }>;
    const name = nameToken.text.toLowerCase() as FilterFunction;
    if (!FUNCTION_NAMES.includes(name)) {
      fail(nameToken.at, `unknown function "${nameToken.text}" (one of ${FUNCTION_NAMES.join(', ')})`);
    }
    this.expect('(', `after ${name}`);
    const argument = this.next();
    if (argument.type !== 'string') {
      fail(argument.at, `expected a single-quoted argument of ${name}, found ${describeToken(argument)}`);
    }
    const allowed = Object.keys(FILTER_FUNCTIONS[name]);
    const canonical = allowed.find((a) => a === argument.text.toLowerCase());
    if (canonical === undefined) {
      fail(
        argument.at,
        `${name} does not take '${argument.text}' (one of ${allowed.map((a) => `'${a}'`).join(', ')})`,
      );
    }
    this.expect(')', `to close ${name}(`);
    return { kind: 'call', name, argument: canonical };
  }
}

/** The expression's tree, function names and arguments in their canonical (spec) spelling. */
export function parseFilter(text: string): FilterExpression {
  if (typeof text !== 'string') throw new CalcInputError('filter', 'must be a filter expression (a string).');
  return new Parser(tokenize(text)).parse();
}

/**
 * The canonical text of a tree: `parseFilter(printFilter(e))` gives `e` back. An operand of the same
 * kind as its parent, or an `or` inside an `and`, is parenthesised, so the tree's shape survives.
 */
export function printFilter(expression: FilterExpression): string {
  switch (expression.kind) {
    case 'call':
      return `${expression.name}('${expression.argument}')`;
    case 'not':
      return `not(${printFilter(expression.operand)})`;
    case 'and':
    case 'or': {
      const parent = expression.kind;
      return expression.operands
        .map((operand) => {
          const text = printFilter(operand);
          const wrap = operand.kind === parent || (parent === 'and' && operand.kind === 'or');
          return wrap ? `(${text})` : text;
        })
        .join(` ${parent} `);
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Evaluation

export function matchesFilter(expression: FilterExpression, facts: PositionFacts): boolean {
  switch (expression.kind) {
    case 'call':
      return FILTER_FUNCTIONS[expression.name][expression.argument]!(facts);
    case 'not':
      return !matchesFilter(expression.operand, facts);
    case 'and':
      return expression.operands.every((operand) => matchesFilter(operand, facts));
    case 'or':
      return expression.operands.some((operand) => matchesFilter(operand, facts));
  }
}

/**
 * The ids of the positions a filter reports (§15): those that match, or every position when none
 * does (or there is no filter). The calculation itself always runs on the whole portfolio.
 */
export function reportedIds(
  expression: FilterExpression | null,
  facts: readonly PositionFacts[],
): ReadonlySet<string> {
  const all = new Set(facts.map((f) => f.id));
  if (expression === null) return all;
  const matching = new Set(facts.filter((f) => matchesFilter(expression, f)).map((f) => f.id));
  return matching.size === 0 ? all : matching;
}
