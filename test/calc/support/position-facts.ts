import type { PositionFacts } from '../../../calc/position-facts';

/** A long US equity position's facts (§14, §15), with whatever the test overrides. */
export function sampleFacts(overrides: Partial<PositionFacts> = {}): PositionFacts {
  return {
    id: 'p',
    symbol: 'AAPL',
    quantity: 100,
    label: '',
    instrumentType: 'EQUITY',
    optionRight: null,
    currency: 'USD',
    baseCurrency: 'USD',
    exposure: 10_000,
    deltaExposure: 10_000,
    attributes: { country: 'US' },
    adv20: null,
    ...overrides,
  };
}
