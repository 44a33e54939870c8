/* global sdk -- the SDK of the run */
/* Shared by the analytics templates (exposure, parametric risk attribution, sensitivity, underlying
 * stress sensitivity, properties, marginal tracking error, backtest: "analytics-datastore.js" in
 * their libraries): prepended to their script when published. */

/**
 * A calculation result of calc-methodology §16–§21 as a table `{columns, rows}`, one row per
 * position (or group) and figure, so a datastore holds every number the endpoint answered.
 */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- used by the templates
function analyticsTable(kind, result) {
  const rows = [];
  switch (kind) {
    case 'exposure':
      for (const r of result.results) rows.push([r.id, r.notional, r.delta_notional, r.exposure]);
      for (const side of ['long', 'short', 'gross', 'net']) rows.push([side, null, null, result[side]]);
      return { columns: ['id', 'notional', 'delta_notional', 'exposure'], rows };
    case 'parametric_risk_attribution':
      for (const r of result.results) {
        for (const measure of ['volatility', 'var', 'cvar']) {
          for (const part of r[measure]) rows.push([r.id, measure, part.projection, part.value]);
        }
      }
      for (const measure of ['volatility', 'var', 'cvar'])
        rows.push(['portfolio', measure, null, result[measure]]);
      return { columns: ['id', 'measure', 'projection', 'value'], rows };
    case 'sensitivity':
      for (const r of result.results) rows.push([r.id, result.sensitivity_type, r.value]);
      rows.push(['total', result.sensitivity_type, result.total]);
      return { columns: ['id', 'sensitivity_type', 'value'], rows };
    case 'underlying_stress_sensitivity':
      for (const r of result.results) for (const v of r.values) rows.push([r.id, v.stress, v.value]);
      for (const v of result.total) rows.push(['total', v.stress, v.value]);
      return { columns: ['id', 'stress', 'value'], rows };
    case 'properties':
      for (const [key, value] of Object.entries(result)) {
        if (key === 'betas') for (const b of value) rows.push([`beta ${b.projection}`, b.value]);
        else if (key === 'unmapped_tickers') rows.push([key, value.join(' ')]);
        else rows.push([key, value]);
      }
      return { columns: ['property', 'value'], rows };
    case 'marginal_tracking_error':
      for (const r of result.results) rows.push([r.id, r.symbol, r.weight_active, r.mte, r.cte]);
      rows.push(['te', null, null, null, result.te]);
      rows.push(['observations', null, null, null, result.observations]);
      return { columns: ['id', 'symbol', 'weight_active', 'mte', 'cte'], rows };
    case 'backtest':
    case 'backtest_statistics':
      return backtestTable(result);
    default:
      throw new Error(`no table for ${kind}`);
  }
}

/**
 * A backtest (§21) in long form, `{name, date, value}`: its periods and nlv, every statistic (a
 * period's with its date), and with output_type full each series by date.
 */
function backtestTable(result) {
  const rows = [
    ['periods', null, result.periods],
    ['nlv', result.start, result.nlv],
  ];
  const walk = (prefix, value) => {
    if (typeof value === 'number') rows.push([prefix, null, value]);
    else if (Array.isArray(value))
      for (const p of value) walk(`${prefix}.${p.symbol}`, { beta: p.beta, correlation: p.correlation });
    else if (value !== null && typeof value === 'object') {
      if (typeof value.date === 'string') rows.push([prefix, value.date, value.return]);
      else
        for (const [key, inner] of Object.entries(value))
          walk(prefix === '' ? key : `${prefix}.${key}`, inner);
    }
  };
  walk('', result.statistics);
  const series = result.series;
  if (series) {
    const dated = (name, values, offset) => {
      if (values) values.forEach((v, k) => rows.push([name, series.dates[k + offset], v]));
    };
    dated('portfolio', series.portfolio, 0);
    dated('benchmark', series.benchmark, 0);
    dated('return', series.returns, 1);
    dated('benchmark_return', series.benchmark_returns, 1);
    dated('rf_return', series.rf_returns, 1);
    for (const p of series.projections) dated(`projection ${p.symbol}`, p.values, 0);
  }
  return { columns: ['name', 'date', 'value'], rows };
}

/**
 * Writes the table to a datastore of the run's workspace: the `datastore_id` input updates that
 * one, otherwise a new one is created under the `datastore_name` input (or `fallbackName`). The
 * first row holds the column headings, as the save-datastore template writes them.
 */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- used by the templates
async function saveTable(inputs, table, fallbackName) {
  const name =
    typeof inputs.datastore_name === 'string' && inputs.datastore_name !== ''
      ? inputs.datastore_name
      : fallbackName;
  const fields = { name, data: [table.columns, ...table.rows] };
  const id = inputs.datastore_id;
  const datastore =
    typeof id === 'string' && id !== ''
      ? await sdk.updateDatastore(id, fields)
      : await sdk.createDatastore(fields);
  return datastore.id;
}
