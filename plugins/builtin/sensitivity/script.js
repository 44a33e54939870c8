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
      'sensitivity_type',
      'compute_notional',
    ]),
  };
  const result = await sdk.runSensitivity(body);
  const datastoreId = await saveTable(
    args.script_inputs,
    analyticsTable('sensitivity', result),
    'Sensitivity',
  );
  return { sensitivity: result, datastore_id: datastoreId };
}
