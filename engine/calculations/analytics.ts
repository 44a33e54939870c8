/**
 * The analytics beside the stress test (methodology §16–§19): exposure, parametric risk attribution,
 * sensitivity, underlying stress sensitivity and properties. Each takes a part of the common body of
 * the two simulated calculations (portfolio_id, securities, date, base_currency, nlv, aggregation,
 * filter, …), validated at the edge with its schema (calculation-schemas.ts) and made ready by the
 * same code, reads the same market, and is audited as EXECUTE on a Calculation. One table below says,
 * per kind, which of its own fields it passes and which calc/ function runs it; the routes and the
 * workers' SDK both go through `runAnalyticsCalculation`.
 */
import {
  type CalcOptions,
  prepareProperties,
  runExposure,
  runParametricRiskAttribution,
  runSensitivity,
  runUnderlyingStressSensitivity,
  type SimulationBackend,
} from '../../calc';
import { referenceBackend } from '../../calc/backends/reference';
import type { SeriesSource } from '../../calc/market-data';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import {
  asInvalidInput,
  auditCalculation,
  checkedMarket,
  type CheckedRequest,
  finiteResult,
  looseBoolean,
  storedBook,
} from './calculation-service';
import { type CalculationBodyOf, declaredFields, type SensitivityBody } from './calculation-schemas';
import { StageTimer } from './stage-timing';

export const ANALYTICS_KINDS = [
  'exposure',
  'parametric_risk_attribution',
  'sensitivity',
  'underlying_stress_sensitivity',
  'properties',
] as const;
export type AnalyticsKind = (typeof ANALYTICS_KINDS)[number];

/** The defaults of a sensitivity's own fields, "True"/"False" read as booleans. */
const sensitivityFields = (body: Pick<SensitivityBody, 'sensitivity_type' | 'compute_notional'>) => ({
  sensitivity_type: body.sensitivity_type ?? 'delta',
  compute_notional: looseBoolean(body.compute_notional, false),
});

interface Run {
  readonly checked: CheckedRequest;
  readonly market: SeriesSource;
  readonly options: CalcOptions;
  readonly backend: SimulationBackend;
  readonly timer: StageTimer;
}

interface AnalyticsDeclaration<K extends AnalyticsKind> {
  /** What the audit record says was run. */
  readonly noun: string;
  run(run: Run, body: CalculationBodyOf<K>): Promise<unknown>;
}

const common = (checked: CheckedRequest) => checked.common;

/** Per kind: its own fields and the calc/ call (the common body is made ready once for all). */
export const ANALYTICS: { readonly [K in AnalyticsKind]: AnalyticsDeclaration<K> } = {
  exposure: {
    noun: 'exposure',
    run: async ({ checked, market, options }) =>
      asInvalidInput(() => runExposure(common(checked), market, options, checked)),
  },
  parametric_risk_attribution: {
    noun: 'parametric risk attribution',
    run: async ({ checked, market, options }, body) =>
      asInvalidInput(() =>
        runParametricRiskAttribution(
          {
            ...common(checked),
            confidence: checked.confidence,
            historical_days: body.historical_days ?? null,
            exponential_decay: body.exponential_decay ?? null,
            use_cashflow: looseBoolean(body.use_cashflow, true),
          },
          market,
          options,
          checked,
        ),
      ),
  },
  sensitivity: {
    noun: 'sensitivity',
    run: async ({ checked, market, options }, body) =>
      asInvalidInput(() =>
        runSensitivity({ ...common(checked), ...sensitivityFields(body) }, market, options, checked),
      ),
  },
  underlying_stress_sensitivity: {
    noun: 'underlying stress sensitivity',
    run: async ({ checked, market, options }, body) =>
      asInvalidInput(() =>
        runUnderlyingStressSensitivity(
          { ...common(checked), ...sensitivityFields(body), stress_values: body.stress_values },
          market,
          options,
          checked,
        ),
      ),
  },
  properties: {
    noun: 'properties',
    run: async ({ checked, market, options, backend, timer }) => {
      const prepared = timer.timeSync('estimation', () =>
        asInvalidInput(() =>
          prepareProperties(
            { ...common(checked), horizon: checked.horizon ?? 5, confidence: checked.confidence },
            market,
            options,
            checked,
          ),
        ),
      );
      // The two runs of the dedicated risk attribution (var, cvar), on the process's backend.
      return timer.time('simulation', async () => {
        const varResult = await backend.simulate(prepared.var.scenario, prepared.var.simulation);
        const cvarResult = await backend.simulate(prepared.cvar.scenario, prepared.cvar.simulation);
        // finish refuses figures past ±1.8e308 naming the parameter (calc/figures.ts): a 400 too.
        return asInvalidInput(() => prepared.finish(varResult, cvarResult));
      });
    },
  },
};

const REFERENCE: SimulationBackend = referenceBackend();

/**
 * POST /calculations/<kind> for the kinds of §16–§19: the body made ready (its common fields as for
 * risk attribution), the market up to `date`, the run, the audit record (EXECUTE). Only the fields the
 * kind's schema declares are read: another key of the body (a field of another calculation) is
 * ignored, as the document says. The figures are computed (and reported: aggregation, filter) in the
 * `estimation` stage of `timer`; properties' Monte Carlo var and cvar in `simulation`.
 */
export async function runAnalyticsCalculation<K extends AnalyticsKind>(
  db: Database,
  actor: Actor,
  kind: K,
  body: CalculationBodyOf<K>,
  workspace: string | undefined,
  options: CalcOptions = {},
  backend: SimulationBackend = REFERENCE,
  timer: StageTimer = new StageTimer(),
): Promise<unknown> {
  const declaration = ANALYTICS[kind] as AnalyticsDeclaration<K>;
  const fields = declaredFields(kind, body);
  // Horizon, confidence and the common fields take risk attribution's rules (§17, §19: "as risk attribution").
  const { checked, market } = await checkedMarket(db, actor, 'risk_attribution', fields, workspace, timer);
  const run = { checked, market, options, backend, timer };
  const result = finiteResult(
    kind,
    kind === 'properties'
      ? await declaration.run(run, fields)
      : await timer.time('estimation', () => declaration.run(run, fields)),
    fields,
    storedBook(fields, checked),
  );
  await timer.time('audit', () => auditCalculation(db, actor, declaration.noun, kind, checked));
  return result;
}
