/**
 * Portfolio properties (methodology §19): in one object, the figures the dedicated calculations give
 * for the same body. Each is computed by the dedicated calculation's own code on the same request,
 * so they agree by construction, not by a second implementation:
 * - `long`, `short`, `gross`, `net`: exposure (§16), over the reported positions;
 * - `betas`: Σ e_i·β_ij / NLV over the reported positions, on the risk model's betas (§3; a foreign
 *   position adds its FX driver's betas, §10);
 * - `volatility`: risk attribution `vol` (§8), the whole book's;
 * - `var`, `cvar`: risk attribution `var` and `cvar` (§8, Monte Carlo at `horizon` and `confidence`),
 *   the sum of every position's components, i.e. the whole book's;
 * - `parametric_var`, `parametric_cvar`: §17 at the same confidence, scaled to the horizon by √(h/s);
 * - `delta`, `gamma`, `vega`, `theta`: the §18 notional totals of the reported positions.
 */
import type { ReportOptions } from './aggregation';
import { exposureOf, prepareBook, WHOLE_BOOK } from './exposure';
import { reportedIds } from './filter';
import { SENSITIVITY_TYPES, type SensitivityType } from './greeks';
import type { SeriesSource } from './market-data';
import { blameOverflow, checkFigures } from './figures';
import { parametricOf, prepareParametric } from './parametric-risk';
import { bookSuspects, forecastSuspects } from './portfolio-model';
import {
  checkHorizon,
  type CalcOptions,
  type CommonRequest,
  type Confidence,
  type ProjectionValue,
  tailOf,
} from './calculation-request';
import {
  prepareRiskAttribution,
  type RiskAttributionResult,
  type PreparedRiskAttribution,
} from './risk-attribution';
import { sensitivityOf } from './sensitivity';
import { simulate, type SimulationResult } from './simulation';

export interface PropertiesRequest extends CommonRequest {
  /** Days, default 5 (Monte Carlo var and cvar; the parametric ones are scaled to it). */
  readonly horizon?: number;
  /** Default `95%`. */
  readonly confidence?: Confidence;
}

/** The `properties` object of §19. */
export interface PropertiesResult {
  nlv: number;
  base_currency: string;
  unmapped_tickers: string[];
  long: number;
  short: number;
  gross: number;
  net: number;
  betas: ProjectionValue[];
  volatility: number;
  var: number;
  cvar: number;
  parametric_var: number;
  parametric_cvar: number;
  delta: number;
  gamma: number;
  vega: number;
  theta: number;
}

type SimulatedAttribution = Extract<PreparedRiskAttribution, { kind: 'simulation' }>;

/** The two Monte Carlo runs properties needs, and how to finish once they have run. */
export interface PreparedProperties {
  readonly var: SimulatedAttribution;
  readonly cvar: SimulatedAttribution;
  finish(varResult: SimulationResult, cvarResult: SimulationResult): PropertiesResult;
}

/** Σ of every component of every position: the portfolio figure the endpoint's components add to. */
function total(result: RiskAttributionResult): number {
  let sum = 0;
  for (const element of result.results) for (const part of element.mctr) sum += part.value;
  return sum;
}

function simulated(prepared: PreparedRiskAttribution): SimulatedAttribution {
  if (prepared.kind !== 'simulation') throw new Error('var and cvar risk attribution simulate');
  return prepared;
}

export function prepareProperties(
  request: PropertiesRequest,
  market: SeriesSource,
  options: CalcOptions = {},
  report: ReportOptions = WHOLE_BOOK,
): PreparedProperties {
  const horizon = checkHorizon(request.horizon ?? 5);
  const confidence = request.confidence ?? '95%';
  tailOf(confidence);

  const book = prepareBook(request, market, options);
  const exposure = exposureOf(book.normalised, book.prepared, report);
  const greeks = Object.fromEntries(
    SENSITIVITY_TYPES.map((type) => [type, sensitivityOf(book.prepared, type, true, report).total!]),
  ) as Record<SensitivityType, number>;

  // The risk model on the request's projection, default window and half-lives: §8's and §17's.
  const { normalised, prepared } = prepareParametric({ ...request, confidence }, market, options);
  const sampling = normalised.common.sampling;
  const parametric = parametricOf(prepared, sampling, confidence);
  const toHorizon = Math.sqrt(horizon / sampling);

  const { k, beta } = prepared.model;
  const reported = reportedIds(report.filter, prepared.facts);
  const betas = prepared.projection.map((projection) => ({ projection, value: 0 }));
  for (const position of prepared.book) {
    if (!reported.has(position.id)) continue;
    for (const d of [position.primary, position.fx]) {
      if (d < 0) continue;
      for (let j = 0; j < k; j++) betas[j]!.value += (position.linear * beta[d * k + j]!) / prepared.nlv;
    }
  }

  const attribution = { ...request, horizon, confidence };
  const varRun = simulated(prepareRiskAttribution({ ...attribution, risk_measure: 'var' }, market, options));
  const cvarRun = simulated(
    prepareRiskAttribution({ ...attribution, risk_measure: 'cvar' }, market, options),
  );

  // A sum past ±1.8e308 (each part checked its own figures): the book's money or fractions, or a forecast.
  const suspects = [...bookSuspects(prepared), ...forecastSuspects(normalised.common, prepared, horizon)];
  return {
    var: varRun,
    cvar: cvarRun,
    finish: (varResult, cvarResult) =>
      checkFigures<PropertiesResult>(
        {
          nlv: exposure.nlv,
          base_currency: exposure.base_currency,
          unmapped_tickers: parametric.unmapped_tickers,
          long: exposure.long,
          short: exposure.short,
          gross: exposure.gross,
          net: exposure.net,
          betas,
          volatility: parametric.volatility,
          var: total(varRun.finish(varResult)),
          cvar: total(cvarRun.finish(cvarResult)),
          parametric_var: parametric.var * toHorizon,
          parametric_cvar: parametric.cvar * toHorizon,
          delta: greeks.delta,
          gamma: greeks.gamma,
          vega: greeks.vega,
          theta: greeks.theta,
        },
        () => blameOverflow(suspects),
      ),
  };
}

/** §19 on the reference simulation. */
export function runProperties(
  request: PropertiesRequest,
  market: SeriesSource,
  options: CalcOptions = {},
  report: ReportOptions = WHOLE_BOOK,
): PropertiesResult {
  const prepared = prepareProperties(request, market, options, report);
  return prepared.finish(
    simulate(prepared.var.scenario, prepared.var.simulation),
    simulate(prepared.cvar.scenario, prepared.cvar.simulation),
  );
}
