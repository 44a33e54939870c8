/* Shared by the built-in templates that list "tables.js" in their libraries: prepended to
 * their script when published (the sandbox has no imports). */

/**
 * The previous worker's output as a table `{columns, rows}`: a calculation result (one row per
 * security, measure and projection), a list of objects (their keys are the columns), a list of
 * lists (the first is the heading), a list of values, `{items}`, or an object (key and value).
 */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- used by the templates
function tabulate(value) {
  let table = value;
  if (table !== null && typeof table === 'object' && !Array.isArray(table)) {
    if (table.stress_test) table = table.stress_test;
    else if (table.risk_attribution) table = table.risk_attribution;
  }
  if (isCalculation(table)) {
    const rows = [];
    for (const result of table.results) {
      for (const measure of ['ev', 'cvar_neg', 'cvar_pos', 'mctr']) {
        if (!Array.isArray(result[measure])) continue;
        for (const part of result[measure]) rows.push([result.id, measure, part.projection, part.value]);
      }
    }
    return { columns: ['id', 'measure', 'projection', 'value'], rows };
  }
  if (table !== null && typeof table === 'object' && !Array.isArray(table) && Array.isArray(table.items)) {
    table = table.items;
  }
  if (Array.isArray(table)) {
    if (table.length > 0 && table.every((row) => Array.isArray(row))) {
      return { columns: table[0].map(cell), rows: table.slice(1).map((row) => row.map(cell)) };
    }
    if (table.length > 0 && table.every((row) => row !== null && typeof row === 'object')) {
      const columns = [];
      for (const row of table)
        for (const key of Object.keys(row)) if (!columns.includes(key)) columns.push(key);
      return { columns, rows: table.map((row) => columns.map((key) => cell(row[key]))) };
    }
    return { columns: ['value'], rows: table.map((item) => [cell(item)]) };
  }
  if (table !== null && typeof table === 'object') {
    return { columns: ['key', 'value'], rows: Object.entries(table).map(([key, item]) => [key, cell(item)]) };
  }
  return { columns: ['value'], rows: [[cell(table)]] };
}

function isCalculation(value) {
  return (
    value !== null &&
    typeof value === 'object' &&
    Array.isArray(value.results) &&
    value.results.every((result) => result !== null && typeof result === 'object' && 'id' in result)
  );
}

/** A table cell: numbers and strings as they are, null for nothing, anything else as JSON text. */
function cell(value) {
  if (value === undefined || value === null) return null;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}
