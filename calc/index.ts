/** The calculation core's public surface: what the endpoints, kernels and workers build on. */
export { CalcInputError } from './input-error';
export { checkFigures, nonFinitePath, OVERFLOW, overflowError } from './figures';
export {
  dayNumber,
  formatDay,
  pricesFromReturns,
  type DateInput,
  type MarketMemo,
  type PriceSeries,
  type Sampling,
  type SeriesSource,
} from './market-data';
export { estimateFactorModel, type FactorModel } from './estimation';
export { blackScholes, blackScholesDelta, impliedVolatility, type VolatilitySurface } from './black-scholes';
export {
  instrumentTypeOf,
  parseOptionSymbol,
  positionFacts,
  type OptionSymbol,
  type ReferenceSource,
} from './instruments';
export type { AttributeValue, InstrumentType, PositionFacts } from './position-facts';
export { canonicalJson, fillNormals, normalAt, seedFromNumber, seedFromRequest, type Seed } from './random';
export {
  positionComponents,
  simulate,
  unconditionalScenario,
  type PathSetResult,
  type Regime,
  type Scenario,
  type ScenarioLines,
  type SimulationOptions,
  type SimulationResult,
} from './simulation';
export {
  CONFIDENCE_TAILS,
  DEFAULT_PATHS,
  MAX_LEVEL_SHOCK,
  MAX_PROJECTIONS,
  MAX_RELATIVE_MOVE,
  RESIDUAL,
  type CalcOptions,
  type CalcSecurity,
  type Confidence,
  type Forecast,
  type ProjectionValue,
} from './calculation-request';
export {
  conditionalScenario,
  dynamicRange,
  prepareStressTest,
  runStressTest,
  type PreparedStressTest,
  type StressTestRequest,
  type StressTestResult,
} from './stress-test';
export {
  prepareRiskAttribution,
  runRiskAttribution,
  volatilityAttribution,
  type PreparedRiskAttribution,
  type RiskAttributionRequest,
  type RiskAttributionResult,
  type RiskMeasure,
} from './risk-attribution';
export {
  AGGREGATIONS,
  checkAggregation,
  groupOf,
  reportResults,
  reportRiskAttribution,
  reportStressTest,
  UNCLASSIFIED,
  type Aggregation,
  type ReportOptions,
} from './aggregation';
export {
  FILTER_FUNCTIONS,
  liquidityBucket,
  liquidityPercent,
  matchesFilter,
  parseFilter,
  printFilter,
  reportedIds,
  type FilterExpression,
} from './filter';
export type { BackendName, SimulationBackend } from './backends/backend';
export {
  chooseBackend,
  createBackend,
  probeScenario,
  type BackendPreferences,
  type ProbeResult,
} from './backends/choose';
export {
  exposureOf,
  prepareBook,
  runExposure,
  WHOLE_BOOK,
  type ExposureElement,
  type ExposureRequest,
  type ExposureResult,
} from './exposure';
export { blackScholesGreeks, SENSITIVITY_TYPES, type Greeks, type SensitivityType } from './greeks';
export {
  confidenceLevel,
  MAX_HISTORICAL_DAYS,
  MIN_HISTORICAL_DAYS,
  parametricOf,
  prepareParametric,
  runParametricRiskAttribution,
  type ParametricElement,
  type ParametricRequest,
  type ParametricResult,
} from './parametric-risk';
export {
  checkStressValues,
  MAX_STRESS_VALUES,
  notionalGreek,
  positionGreeks,
  runSensitivity,
  runUnderlyingStressSensitivity,
  sensitivityOf,
  stressPnl,
  underlyingStressOf,
  type SensitivityRequest,
  type SensitivityResult,
  type StressValue,
  type UnderlyingStressRequest,
  type UnderlyingStressResult,
} from './sensitivity';
export {
  prepareProperties,
  runProperties,
  type PreparedProperties,
  type PropertiesRequest,
  type PropertiesResult,
} from './properties';
