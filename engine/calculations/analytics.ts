/**
 * The analytics beside the stress test (methodology §16–§19): exposure, parametric risk attribution,
 * sensitivity, underlying stress sensitivity and properties. Each takes the same common body as the
 * two simulated calculations (portfolio_id, securities, date, base_currency, nlv, aggregation, filter,
 * …), checked by the same code, reads the same market, and is audited as EXECUTE on a Calculation.
 * One table below says, per kind, which extra fields it checks and which calc/ function runs it; the
 * routes and the workers' SDK both go through `runAnalyticsCalculation`.
 */
import {
  checkStressValues,
  type CalcOptions,
  MAX_HISTORICAL_DAYS,
  MAX_STRESS_VALUES,
  MIN_HISTORICAL_DAYS,
  prepareProperties,
  runExposure,
  runParametricRiskAttribution,
  runSensitivity,
  runUnderlyingStressSensitivity,
  SENSITIVITY_TYPES,
  type SensitivityType,
  type SimulationBackend,
} from '../../calc';
import { referenceBackend } from '../../calc/backends/reference';
import type { SeriesSource } from '../../calc/market-data';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';
import {
  asInvalidInput,
  auditCalculation,
  type CalculationBody,
  checkedMarket,
  type CheckedRequest,
  looseBoolean,
} from './calculation-service';
import { StageTimer } from './stage-timing';

/** The model's limits, as the API's schemas state them. */
export { MAX_HISTORICAL_DAYS, MAX_STRESS_VALUES, MIN_HISTORICAL_DAYS, SENSITIVITY_TYPES };

export const ANALYTICS_KINDS = [
  'exposure',
  'parametric_risk_attribution',
  'sensitivity',
  'underlying_stress_sensitivity',
  'properties',
] as const;
export type AnalyticsKind = (typeof ANALYTICS_KINDS)[number];

const given = (value: unknown) => value !== undefined && value !== null;

function sensitivityFields(body: CalculationBody) {
  const type = body.sensitivity_type ?? 'delta';
  if (!SENSITIVITY_TYPES.includes(type as SensitivityType)) {
    throw new InvalidInput(
      `sensitivity_type must be one of ${SENSITIVITY_TYPES.map((t) => JSON.stringify(t)).join(', ')}.`,
    );
  }
  return {
    sensitivity_type: type as SensitivityType,
    compute_notional: looseBoolean(body.compute_notional, 'compute_notional', false),
  };
}

function parametricFields(body: CalculationBody) {
  const days = body.historical_days;
  if (
    given(days) &&
    !(
      Number.isInteger(days) &&
      (days as number) >= MIN_HISTORICAL_DAYS &&
      (days as number) <= MAX_HISTORICAL_DAYS
    )
  ) {
    throw new InvalidInput(
      `historical_days must be a whole number of observations from ${MIN_HISTORICAL_DAYS} to ${MAX_HISTORICAL_DAYS}.`,
    );
  }
  const decay = body.exponential_decay;
  if (given(decay) && !(typeof decay === 'number' && decay > 0 && decay <= 1)) {
    throw new InvalidInput(
      'exponential_decay must be a number greater than 0 and at most 1 (1: equal weights).',
    );
  }
  return {
    historical_days: given(days) ? (days as number) : null,
    exponential_decay: given(decay) ? (decay as number) : null,
    use_cashflow: looseBoolean(body.use_cashflow, 'use_cashflow', true),
  };
}

interface Run {
  readonly checked: CheckedRequest;
  readonly market: SeriesSource;
  readonly options: CalcOptions;
  readonly backend: SimulationBackend;
  readonly timer: StageTimer;
}

interface AnalyticsDeclaration {
  /** What the audit record says was run. */
  readonly noun: string;
  /** The kind's own fields, checked before any market data is read. */
  check(body: CalculationBody): Record<string, unknown>;
  run(run: Run, fields: Record<string, unknown>): Promise<unknown>;
}

const common = (checked: CheckedRequest) => checked.common;

/** Per kind: its own fields and the calc/ call (the common body is checked once for all). */
export const ANALYTICS: Readonly<Record<AnalyticsKind, AnalyticsDeclaration>> = {
  exposure: {
    noun: 'exposure',
    check: () => ({}),
    run: async ({ checked, market, options }) =>
      asInvalidInput(() => runExposure(common(checked), market, options, checked)),
  },
  parametric_risk_attribution: {
    noun: 'parametric risk attribution',
    check: parametricFields,
    run: async ({ checked, market, options }, fields) =>
      asInvalidInput(() =>
        runParametricRiskAttribution(
          { ...common(checked), confidence: checked.confidence, ...fields },
          market,
          options,
          checked,
        ),
      ),
  },
  sensitivity: {
    noun: 'sensitivity',
    check: sensitivityFields,
    run: async ({ checked, market, options }, fields) =>
      asInvalidInput(() => runSensitivity({ ...common(checked), ...fields }, market, options, checked)),
  },
  underlying_stress_sensitivity: {
    noun: 'underlying stress sensitivity',
    check: (body) => ({
      ...sensitivityFields(body),
      stress_values: asInvalidInput(() => checkStressValues(body.stress_values)),
    }),
    run: async ({ checked, market, options }, fields) =>
      asInvalidInput(() =>
        runUnderlyingStressSensitivity(
          { ...common(checked), ...(fields as { stress_values: number[] }) },
          market,
          options,
          checked,
        ),
      ),
  },
  properties: {
    noun: 'properties',
    check: () => ({}),
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
        return prepared.finish(varResult, cvarResult);
      });
    },
  },
};

const REFERENCE: SimulationBackend = referenceBackend();

/**
 * POST /calculations/<kind> for the kinds of §16–§19: checks the body (common fields as for risk
 * attribution, then the kind's own), loads the market up to `date`, runs, audits (EXECUTE). The
 * figures are computed (and reported: aggregation, filter) in the `estimation` stage of `timer`;
 * properties' Monte Carlo var and cvar in `simulation`.
 */
export async function runAnalyticsCalculation(
  db: Database,
  actor: Actor,
  kind: AnalyticsKind,
  body: CalculationBody,
  workspace: unknown,
  options: CalcOptions = {},
  backend: SimulationBackend = REFERENCE,
  timer: StageTimer = new StageTimer(),
): Promise<unknown> {
  const declaration = ANALYTICS[kind];
  // Horizon, confidence and the common fields take risk attribution's rules (§17, §19: "as risk attribution").
  const { checked, market, fields } = await checkedMarket(
    db,
    actor,
    'risk_attribution',
    body,
    workspace,
    timer,
    () => declaration.check(body),
  );
  const run = { checked, market, options, backend, timer };
  const result =
    kind === 'properties'
      ? await declaration.run(run, fields)
      : await timer.time('estimation', () => declaration.run(run, fields));
  await timer.time('audit', () => auditCalculation(db, actor, ANALYTICS[kind].noun, kind, checked));
  return result;
}
