/* global sdk */

/** File ids in the previous output: a file_id, an id that is a file's, or a list of either. */
function inputFiles(value) {
  if (typeof value === 'string') return /^file_[A-Za-z0-9]{25}$/.test(value) ? [value] : [];
  if (Array.isArray(value)) return value.flatMap(inputFiles);
  if (value && typeof value === 'object') {
    return [value.file_id, value.id].filter(
      (id) => typeof id === 'string' && /^file_[A-Za-z0-9]{25}$/.test(id),
    );
  }
  return [];
}

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
async function main(args) {
  const inputs = args.script_inputs;
  const previous = args.inputs;
  const body =
    inputs.body !== undefined && inputs.body !== null && inputs.body !== ''
      ? inputs.body
      : typeof previous === 'string'
        ? previous
        : JSON.stringify(previous, null, 2);
  const attachments = [
    ...(inputs.attachments || []),
    ...(inputs.attach_input_files ? inputFiles(previous) : []),
  ];
  const sent = await sdk.sendEmail(inputs.integration, {
    to: inputs.to,
    cc: inputs.cc || [],
    subject: inputs.subject,
    ...(inputs.html ? { html: body } : { text: body }),
    attachments: [...new Set(attachments)],
  });
  return sent;
}
