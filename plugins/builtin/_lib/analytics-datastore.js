/* global sdk -- the SDK of the run */
/* Shared by the analytics templates (exposure, parametric risk attribution, sensitivity, underlying
 * stress sensitivity, properties: "analytics-datastore.js" in their libraries): prepended to their
 * script when published. */

/**
 * A calculation result of calc-methodology §16–§19 as a table `{columns, rows}`, one row per
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
    default:
      throw new Error(`no table for ${kind}`);
  }
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
