// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
function main(args) {
  const { field, flatten } = args.script_inputs;
  // A BARRIER's input is the list of its branches' results, in branch order.
  const branches = Array.isArray(args.inputs) ? args.inputs : [args.inputs];
  let items =
    typeof field === 'string' && field !== ''
      ? branches.map(
          (result) => (result !== null && typeof result === 'object' ? result[field] : undefined) ?? null,
        )
      : branches;
  if (flatten === true) {
    items = items.flatMap((item) => {
      if (Array.isArray(item)) return item;
      if (item !== null && typeof item === 'object' && Array.isArray(item.items)) return item.items;
      return [item];
    });
  }
  return { items, count: items.length };
}
