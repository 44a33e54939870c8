/* global sdk, portfolioPart, settings -- from the libraries in template.json */

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
async function main(args) {
  const body = {
    ...portfolioPart(args),
    ...settings(args.script_inputs, [
      'shock',
      'magnitude',
      'horizon',
      'confidence',
      'projection',
      'aggregation',
      'date',
      'sampling',
      'volatility_half_life',
      'correlation_half_life',
      'base_currency',
      'volatility_surface',
      'forecasts',
      'drift',
    ]),
  };
  return { stress_test: await sdk.runStressTest(body) };
}
