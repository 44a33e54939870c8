/**
 * The reporting step (methodology §14 aggregation, §15 filter): the calculation has run on the whole
 * portfolio and produced one element per position; this step keeps the positions a filter reports and,
 * unless the aggregation is `position`, sums each group's components into one element whose `id` is the
 * group's label. Sums are plain additions of the positions' components, so every group's figures still
 * add up, over groups and projections, to the reported positions' total.
 */
import { CalcInputError } from './input-error';
import { type FilterExpression, liquidityBucket, reportedIds } from './filter';
import type { PositionFacts } from './position-facts';
import type { ProjectionValue } from './calculation-request';
import type { RiskAttributionResult } from './risk-attribution';
import type { StressTestResult } from './stress-test';

/** The spec's aggregations (both endpoints). */
export const AGGREGATIONS = [
  'custom',
  'position',
  'country',
  'sector',
  'gics_sector',
  'market_capitalization',
  'liquidity',
  'implied_rating',
  'duration',
  'security_type',
  'security_type_refined',
  'dividend_yield',
  'exposure',
  'currency',
  'fixed_income',
  'total_esg',
] as const;

export type Aggregation = (typeof AGGREGATIONS)[number];

/** The group of a position whose attribute is missing; always reported last. */
export const UNCLASSIFIED = 'Unclassified';

/** A master attribute as a number: numbers as they are, numeric strings parsed (CSV columns). */
function numeric(facts: PositionFacts, name: string): number | null {
  const value = facts.attributes[name];
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' && value.trim() !== '') {
    const parsed = Number(value.trim().replace(/%$/, ''));
    return Number.isFinite(parsed) ? parsed : null;
  }
  return null;
}

function text(facts: PositionFacts, name: string): string | null {
  const value = facts.attributes[name];
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
}

/** Buckets closed below: a value lands in the first bucket whose upper bound it is under. */
function bucket(value: number | null, buckets: ReadonlyArray<readonly [string, number]>): string {
  if (value === null) return UNCLASSIFIED;
  return buckets.find(([, under]) => value < under)?.[0] ?? UNCLASSIFIED;
}

const MARKET_CAP: ReadonlyArray<readonly [string, number]> = [
  ['Micro', 3e8],
  ['Small', 2e9],
  ['Mid', 10e9],
  ['Large', 200e9],
  // §14: Mega is strictly above 200e9; 200e9 itself is Large.
];

function marketCapitalization(facts: PositionFacts): string {
  const cap = numeric(facts, 'market_cap');
  if (cap === null || cap < 0) return UNCLASSIFIED;
  if (cap > 200e9) return 'Mega';
  if (cap === 200e9) return 'Large';
  return bucket(cap, MARKET_CAP);
}

const DURATION: ReadonlyArray<readonly [string, number]> = [
  ['0-1', 1],
  ['1-3', 3],
  ['3-5', 5],
  ['5-7', 7],
  ['7-10', 10],
  ['10+', Infinity],
];

const DIVIDEND_YIELD: ReadonlyArray<readonly [string, number]> = [
  ['0-1', 1],
  ['1-2', 2],
  ['2-4', 4],
  ['4+', Infinity],
];

function dividendYield(facts: PositionFacts): string {
  const value = numeric(facts, 'dividend_yield');
  if (value === null || value < 0) return UNCLASSIFIED;
  return value === 0 ? '0' : bucket(value, DIVIDEND_YIELD);
}

const ESG: ReadonlyArray<readonly [string, number]> = [
  ['0-20', 20],
  ['20-40', 40],
  ['40-60', 60],
  ['60-80', 80],
  ['80-100', Infinity],
];

function totalEsg(facts: PositionFacts): string {
  const score = numeric(facts, 'esg_score');
  if (score === null || score < 0 || score > 100) return UNCLASSIFIED;
  return bucket(score, ESG);
}

/**
 * §14 `implied_rating`: S&P/Fitch (`AA+`, `BBB-`) or Moody's (`Aa2`, `Baa3`) letters, notches and
 * outlooks dropped, bucketed to AAA … B and `CCC and below`; no rating (or one not of those forms) is
 * `Not rated`.
 */
function impliedRating(facts: PositionFacts): string {
  const rating = text(facts, 'rating');
  if (rating === null) return 'Not rated';
  const letters = /^(AAA|AA|A|BBB|BB|B|CCC|CC|C|D|SD|RD|Aaa|Aa|Baa|Ba|Caa|Ca)(?:[+-]|[123])?\b/.exec(rating);
  if (letters === null) return 'Not rated';
  const moody: Record<string, string> = { Aaa: 'AAA', Aa: 'AA', Baa: 'BBB', Ba: 'BB', Caa: 'CCC', Ca: 'CC' };
  const letter = moody[letters[1]!] ?? letters[1]!;
  return ['AAA', 'AA', 'A', 'BBB', 'BB', 'B'].includes(letter) ? letter : 'CCC and below';
}

/** An instrument type as people write it: `EQUITY_OPTION` → `OPTION`, `FX_FORWARD` → `FX FORWARD`. */
function typeWords(facts: PositionFacts): string {
  return facts.instrumentType === 'EQUITY_OPTION' ? 'OPTION' : facts.instrumentType.replace(/_/g, ' ');
}

/**
 * §14 `security_type_refined`: the master's value, else type and side, the side being how the position
 * is held (a sold put is `OPTION put short`, whatever the sign of its delta).
 */
function securityTypeRefined(facts: PositionFacts): string {
  const master = text(facts, 'security_type_refined');
  if (master !== null) return master;
  const side = facts.quantity < 0 ? 'short' : 'long';
  const right = facts.optionRight === null ? '' : facts.optionRight === 'C' ? ' call' : ' put';
  return `${typeWords(facts)}${right} ${side}`;
}

const FIXED_INCOME_TYPES: ReadonlySet<string> = new Set(['FIXED_INCOME', 'RATE', 'SPREAD', 'SWAP']);

/** The group label of a position under an aggregation other than `position`. */
export function groupOf(aggregation: Exclude<Aggregation, 'position'>, facts: PositionFacts): string {
  switch (aggregation) {
    case 'custom':
      return facts.label === '' ? 'Unlabeled' : facts.label;
    case 'country':
    case 'sector':
    case 'gics_sector':
      return text(facts, aggregation) ?? UNCLASSIFIED;
    case 'currency':
      return facts.currency;
    case 'security_type':
      return facts.instrumentType;
    case 'security_type_refined':
      return securityTypeRefined(facts);
    case 'exposure':
      return facts.deltaExposure > 0 ? 'long' : facts.deltaExposure < 0 ? 'short' : UNCLASSIFIED;
    case 'liquidity':
      return liquidityBucket(facts) ?? UNCLASSIFIED;
    case 'market_capitalization':
      return marketCapitalization(facts);
    case 'implied_rating':
      return impliedRating(facts);
    case 'duration': {
      const years = numeric(facts, 'duration');
      return years === null || years < 0 ? UNCLASSIFIED : bucket(years, DURATION);
    }
    case 'dividend_yield':
      return dividendYield(facts);
    case 'fixed_income':
      return FIXED_INCOME_TYPES.has(facts.instrumentType) ? 'Fixed income' : 'Other';
    case 'total_esg':
      return totalEsg(facts);
  }
}

/** Checks an aggregation name (the endpoint's schema does too; calc/ is callable on its own). */
export function checkAggregation(value: unknown): Aggregation {
  if (value === undefined || value === null) return 'position';
  if (!AGGREGATIONS.includes(value as Aggregation)) {
    throw new CalcInputError('aggregation', `must be one of ${AGGREGATIONS.join(', ')}.`);
  }
  return value as Aggregation;
}

/** Labels in code-unit order, `Unclassified` last (§14). */
export function compareLabels(a: string, b: string): number {
  if (a === b) return 0;
  if (a === UNCLASSIFIED) return 1;
  if (b === UNCLASSIFIED) return -1;
  return a < b ? -1 : 1;
}

/** Element-wise sum of `{projection, value}` arrays that list the same projections in the same order. */
export function sumValues(lists: ReadonlyArray<readonly ProjectionValue[]>): ProjectionValue[] {
  const first = lists[0]!;
  return first.map(({ projection }, j) => {
    let value = 0;
    for (const list of lists) value += list[j]!.value;
    return { projection, value };
  });
}

export interface ReportOptions {
  readonly aggregation: Aggregation;
  readonly filter: FilterExpression | null;
}

/**
 * The reported elements: `results[i]` belongs to `facts[i]`. With `position`, the reported positions
 * in their order; otherwise one element per group, labels sorted, each the sum (by `merge`) of its
 * reported positions.
 */
export function reportResults<T extends { readonly id: string }>(
  results: readonly T[],
  facts: readonly PositionFacts[],
  options: ReportOptions,
  merge: (id: string, members: readonly T[]) => T,
): T[] {
  if (results.length !== facts.length) {
    throw new Error(`reportResults: ${results.length} results for ${facts.length} positions`);
  }
  const reported = reportedIds(options.filter, facts);
  const kept = results.map((result, i) => [result, facts[i]!] as const).filter(([r]) => reported.has(r.id));
  if (options.aggregation === 'position') return kept.map(([result]) => result);
  const groups = new Map<string, T[]>();
  for (const [result, fact] of kept) {
    const label = groupOf(options.aggregation, fact);
    const members = groups.get(label);
    if (members === undefined) groups.set(label, [result]);
    else members.push(result);
  }
  return [...groups.keys()].sort(compareLabels).map((label) => merge(label, groups.get(label)!));
}

/** §14/§15 on a stress test's result: `ev`, `cvar_neg` and `cvar_pos` summed per group. */
export function reportStressTest(
  result: StressTestResult,
  facts: readonly PositionFacts[],
  options: ReportOptions,
): StressTestResult {
  return {
    ...result,
    results: reportResults(result.results, facts, options, (id, members) => ({
      id,
      ev: sumValues(members.map((m) => m.ev)),
      cvar_neg: sumValues(members.map((m) => m.cvar_neg)),
      cvar_pos: sumValues(members.map((m) => m.cvar_pos)),
    })),
  };
}

/** §14/§15 on a risk attribution's result: `mctr` summed per group (Euler parts add up). */
export function reportRiskAttribution(
  result: RiskAttributionResult,
  facts: readonly PositionFacts[],
  options: ReportOptions,
): RiskAttributionResult {
  return {
    ...result,
    results: reportResults(result.results, facts, options, (id, members) => ({
      id,
      mctr: sumValues(members.map((m) => m.mctr)),
    })),
  };
}
