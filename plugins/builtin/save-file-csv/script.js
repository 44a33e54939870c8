/* global sdk, tabulate -- from the libraries in template.json */

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** One CSV field (RFC 4180): quoted when it holds a comma, a quote, a line break or edge spaces. */
function csvField(value, protectFormulas) {
  if (value === null) return '';
  let text = String(value);
  // A spreadsheet runs a cell that starts with = + - @ (or a tab or CR) as a formula.
  if (protectFormulas && typeof value === 'string' && /^[=+\-@\t\r]/.test(text) && !NUMBER.test(text)) {
    text = `'${text}`;
  }
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function toCsv(table, header, protectFormulas) {
  const lines = (header ? [table.columns, ...table.rows] : table.rows).map((row) =>
    row.map((value) => csvField(value, protectFormulas)).join(','),
  );
  return lines.length ? `${lines.join('\r\n')}\r\n` : '';
}

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
async function main(args) {
  const { description, tags, header, protect_formulas: protectFormulas } = args.script_inputs;
  const name = /\.csv$/i.test(args.script_inputs.name)
    ? args.script_inputs.name
    : `${args.script_inputs.name}.csv`;
  const table = tabulate(args.inputs);
  const text = toCsv(table, header !== false, protectFormulas !== false);
  // Files need a description (it may be empty).
  const fields = { name, text, content_type: 'text/csv', description: description ?? '' };
  if (tags !== undefined && tags !== null) fields.tags = tags;
  const file = await sdk.createFile(fields);
  return { file_id: file.id, name: file.name, url: file.url, rows: table.rows.length };
}
