/* global sdk, portfolioPart, settings, analyticsTable, saveTable -- from the libraries in template.json */

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
async function main(args) {
  const inputs = args.script_inputs;
  const part = portfolioPart(args);
  const benchmark = inputs.benchmark_id;
  if (typeof benchmark !== 'string' || benchmark === '') {
    throw new Error('No benchmark: set the benchmark_id input to a portfolio id (port_…).');
  }
  const body = {
    // portfolio1 is an id, or the previous worker's book inline.
    portfolio1: part.portfolio_id ?? { ...part, ...settings(inputs, ['date', 'base_currency', 'nlv']) },
    portfolio2: benchmark,
    ...settings(inputs, ['weekly', 'nDays', 'nWeeks', 'EWMA', 'exponential_decay']),
  };
  const result = await sdk.runMarginalTrackingError(body);
  const datastoreId = await saveTable(
    inputs,
    analyticsTable('marginal_tracking_error', result),
    'Marginal tracking error',
  );
  return { marginal_tracking_error: result, datastore_id: datastoreId };
}
