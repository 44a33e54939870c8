/* global sdk, tabulate, isCalculation -- from the libraries in template.json */

/** Per security, the sum of a measure over its projections (its total EV, CVaR or contribution). */
function totals(calculation, measure) {
  return calculation.results.map((result) =>
    Array.isArray(result[measure]) ? result[measure].reduce((sum, part) => sum + part.value, 0) : null,
  );
}

function widgetsFor(input) {
  if (input !== null && typeof input === 'object' && Array.isArray(input.widgets)) return input.widgets;
  const stress = input !== null && typeof input === 'object' ? input.stress_test : undefined;
  const attribution = input !== null && typeof input === 'object' ? input.risk_attribution : undefined;
  if (isCalculation(stress)) {
    const ids = stress.results.map((result) => String(result.id));
    const ev = totals(stress, 'ev');
    return [
      { name: `Expected P&L, shock ${stress.magnitude}`, type: 'bar', labels: ids, values: ev },
      {
        name: 'Stress test by security',
        type: 'table',
        columns: ['id', 'ev', 'cvar_neg', 'cvar_pos'],
        rows: ids.map((id, i) => [id, ev[i], totals(stress, 'cvar_neg')[i], totals(stress, 'cvar_pos')[i]]),
      },
    ];
  }
  if (isCalculation(attribution)) {
    const ids = attribution.results.map((result) => String(result.id));
    const mctr = totals(attribution, 'mctr');
    return [
      { name: 'Risk contribution', type: 'bar', labels: ids, values: mctr },
      {
        name: 'Risk attribution by security',
        type: 'table',
        columns: ['id', 'mctr'],
        rows: ids.map((id, i) => [id, mctr[i]]),
      },
    ];
  }
  if (Array.isArray(input) || (input !== null && typeof input === 'object' && Array.isArray(input.items))) {
    const table = tabulate(input);
    return [{ name: 'Data', type: 'table', columns: table.columns.map(String), rows: table.rows }];
  }
  // A text widget holds at most 20,000 characters.
  const text = JSON.stringify(input, null, 2) ?? 'null';
  return [{ name: 'Output', type: 'text', text: text.length > 20000 ? `${text.slice(0, 19990)}\n…` : text }];
}

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
async function main(args) {
  const { name, description, tags, authorization } = args.script_inputs;
  const fields = { name, authorization, widgets: widgetsFor(args.inputs) };
  if (description !== undefined && description !== null) fields.description = description;
  if (tags !== undefined && tags !== null) fields.tags = tags;
  const report = await sdk.createReport(fields);
  return {
    report_id: report.id,
    name: report.name,
    url: report.url,
    relative_url: report.relative_url,
    absolute_url: report.absolute_url,
    widgets: fields.widgets.length,
  };
}
