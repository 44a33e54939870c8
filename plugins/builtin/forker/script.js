function listOf(args) {
  const { list, field } = args.script_inputs;
  if (Array.isArray(list)) return list;
  const input = args.inputs;
  if (typeof field === 'string' && field !== '') {
    const value = input !== null && typeof input === 'object' ? input[field] : undefined;
    if (!Array.isArray(value)) throw new Error(`The previous worker's output has no list in "${field}".`);
    return value;
  }
  if (Array.isArray(input)) return input;
  if (input !== null && typeof input === 'object') {
    if (Array.isArray(input.items)) return input.items;
    if (Array.isArray(input.securities)) return input.securities;
  }
  throw new Error(
    "No list to split: set the list input, or name the field of the previous worker's output that holds it.",
  );
}

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
function main(args) {
  const items = listOf(args);
  const size = args.script_inputs.chunk_size;
  if (size === undefined || size === null) return { items };
  if (!Number.isInteger(size) || size < 1)
    throw new Error('chunk_size must be a whole number of at least 1.');
  const chunks = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return { items: chunks };
}
