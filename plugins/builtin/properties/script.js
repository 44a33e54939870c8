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
      'horizon',
      'confidence',
      'sampling',
      'volatility_half_life',
      'correlation_half_life',
      'forecasts',
      'drift',
    ]),
  };
  const result = await sdk.runProperties(body);
  const datastoreId = await saveTable(args.script_inputs, analyticsTable('properties', result), 'Properties');
  return { properties: result, datastore_id: datastoreId };
}
