/* global sdk, tabulate -- from the libraries in template.json */

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
async function main(args) {
  const { name, description, tags, datastore_id: datastoreId } = args.script_inputs;
  const table = tabulate(args.inputs);
  const fields = { name, data: [table.columns, ...table.rows] };
  if (description !== undefined && description !== null) fields.description = description;
  if (tags !== undefined && tags !== null) fields.tags = tags;
  const datastore =
    typeof datastoreId === 'string' && datastoreId !== ''
      ? await sdk.updateDatastore(datastoreId, fields)
      : await sdk.createDatastore(fields);
  return {
    datastore_id: datastore.id,
    name: datastore.name,
    columns: table.columns.length,
    rows: table.rows.length,
  };
}
