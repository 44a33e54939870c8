/* global sdk, portfolioPart, settings, analyticsTable, saveTable -- from the libraries in template.json */

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
async function main(args) {
  const inputs = args.script_inputs;
  const body = {
    ...portfolioPart(args),
    ...settings(inputs, [
      'date',
      'base_currency',
      'nlv',
      'backtest_date1',
      'backtest_date2',
      'backtest_periodicity',
      'backtest_benchmark_ticker',
      'backtest_rfrate_ticker',
      'projection_tickers',
      'output_type',
    ]),
  };
  const result = await sdk.runBacktest(body);
  const datastoreId = await saveTable(inputs, analyticsTable('backtest', result), 'Backtest');
  return { backtest: result, datastore_id: datastoreId };
}
