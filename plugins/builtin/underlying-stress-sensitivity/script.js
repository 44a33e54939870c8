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
      'stress_values',
    ]),
  };
  const result = await sdk.runUnderlyingStressSensitivity(body);
  const datastoreId = await saveTable(
    args.script_inputs,
    analyticsTable('underlying_stress_sensitivity', result),
    'Underlying stress sensitivity',
  );
  return { underlying_stress_sensitivity: result, datastore_id: datastoreId };
}
