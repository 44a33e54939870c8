/**
 * Exposure (methodology §16): each position's value, delta-adjusted exposure and its fraction of
 * NLV, grouped (§14) and filtered (§15), with the long, short, gross and net fractions of the
 * reported positions. No projection and no simulation: the book is priced at the date as §9–§11 price
 * it for the two simulated calculations, so the same position has the same value and delta there.
 */
import { type ReportOptions, reportResults } from './aggregation';
import { reportedIds } from './filter';
import type { SeriesSource } from './market-data';
import { blameOverflow, checkFigures } from './figures';
import { bookSuspects, preparePortfolio, type PreparedPortfolio } from './portfolio-model';
import {
  type CalcOptions,
  type CommonRequest,
  normaliseCommon,
  type NormalisedCommon,
} from './calculation-request';

/** Every figure of every position; aggregation and filter applied by `report`. */
export const WHOLE_BOOK: ReportOptions = { aggregation: 'position', filter: null };

/**
 * The book priced at the date (§9–§11) for the calculations that do not model risk (§16, §18):
 * `projection` gives only the calendar (its first symbol, default IND:SPX), so the other projections
 * cost nothing. A position without ≥ 60 returns in the window is unmapped, as in the two simulated
 * calculations; an option priced by its underlying's EWMA vol takes the same vol as there.
 */
export function prepareBook(
  request: CommonRequest,
  market: SeriesSource,
  options: CalcOptions = {},
): { normalised: NormalisedCommon; prepared: PreparedPortfolio } {
  const normalised = normaliseCommon(request);
  const calendarOnly = { ...normalised, projection: normalised.projection.slice(0, 1) };
  const prepared = preparePortfolio(calendarOnly, market, [], options.distress ?? true);
  return { normalised, prepared };
}

export interface ExposureElement {
  /** Position id, or the group label (§14). */
  id: string;
  /** v_i in base currency (an option's premium value q·m·fx·P0). */
  notional: number;
  /** Delta-adjusted exposure in base currency: q·m·fx·Δ·S for an option, v_i otherwise. */
  delta_notional: number;
  /** delta_notional / NLV. */
  exposure: number;
}

/** The `exposure` object of §16. */
export interface ExposureResult {
  nlv: number;
  base_currency: string;
  unmapped_tickers: string[];
  results: ExposureElement[];
  /** Σ of the reported positions' positive exposures. */
  long: number;
  /** Σ of their negative exposures (≤ 0). */
  short: number;
  /** long − short. */
  gross: number;
  /** long + short. */
  net: number;
}

export type ExposureRequest = CommonRequest;

/** Per position, in the book's order (= facts' order). */
export function positionExposures(prepared: PreparedPortfolio): ExposureElement[] {
  return prepared.book.map((position) => ({
    id: position.id,
    notional: position.value,
    delta_notional: position.linear,
    exposure: position.linear / prepared.nlv,
  }));
}

/**
 * long / short of the reported positions, position by position whatever the aggregation (a group
 * holding a long and a short would otherwise net them).
 */
export function sideTotals(
  prepared: PreparedPortfolio,
  report: ReportOptions,
): Pick<ExposureResult, 'long' | 'short' | 'gross' | 'net'> {
  const reported = reportedIds(report.filter, prepared.facts);
  const positions = positionExposures(prepared).filter((p) => reported.has(p.id));
  let long = 0;
  let short = 0;
  for (const { exposure } of positions) {
    if (exposure > 0) long += exposure;
    else short += exposure;
  }
  return { long, short, gross: long - short, net: long + short };
}

export function exposureOf(
  normalised: NormalisedCommon,
  prepared: PreparedPortfolio,
  report: ReportOptions = WHOLE_BOOK,
): ExposureResult {
  const results = reportResults(positionExposures(prepared), prepared.facts, report, (id, members) => {
    const group = { id, notional: 0, delta_notional: 0, exposure: 0 };
    for (const member of members) {
      group.notional += member.notional;
      group.delta_notional += member.delta_notional;
      group.exposure += member.exposure;
    }
    return group;
  });
  return checkFigures(
    {
      nlv: prepared.nlv,
      base_currency: normalised.base_currency,
      unmapped_tickers: [...prepared.unmapped],
      results,
      ...sideTotals(prepared, report),
    },
    () => blameOverflow(bookSuspects(prepared)),
  );
}

/** §16 on a request: the book priced at the date, reported by `report`. */
export function runExposure(
  request: ExposureRequest,
  market: SeriesSource,
  options: CalcOptions = {},
  report: ReportOptions = WHOLE_BOOK,
): ExposureResult {
  const { normalised, prepared } = prepareBook(request, market, options);
  return exposureOf(normalised, prepared, report);
}
