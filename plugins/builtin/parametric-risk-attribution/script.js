/* global sdk, portfolioPart, settings, analyticsTable, saveTable -- from the libraries in template.json */

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
async function main(args) {
  const body = {
    ...portfolioPart(args),
    ...settings(args.script_inputs, [
      'date',
      'base_currency',
      'nlv',
      'aggregation',
      'filter',
      'volatility_surface',
      'projection',
      'sampling',
      'volatility_half_life',
      'correlation_half_life',
      'confidence',
      'historical_days',
      'exponential_decay',
      'use_cashflow',
    ]),
  };
  const result = await sdk.runParametricRiskAttribution(body);
  const datastoreId = await saveTable(
    args.script_inputs,
    analyticsTable('parametric_risk_attribution', result),
    'Parametric risk attribution',
  );
  return { parametric_risk_attribution: result, datastore_id: datastoreId };
}
