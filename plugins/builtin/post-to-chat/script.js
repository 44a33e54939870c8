/* global sdk */

/** The longest message most chat webhooks take (Slack's text limit is 40,000 characters). */
const MAX_TEXT = 39000;

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
async function main(args) {
  const inputs = args.script_inputs;
  const previous = args.inputs;
  let text =
    inputs.text !== undefined && inputs.text !== null && inputs.text !== ''
      ? inputs.text
      : typeof previous === 'string'
        ? previous
        : '```\n' + JSON.stringify(previous, null, 2) + '\n```';
  if (inputs.title) text = `${inputs.title}\n${text}`;
  if (text.length > MAX_TEXT) text = text.slice(0, MAX_TEXT) + '\n… (cut)';
  // `text` is what Slack's, Teams' and Mattermost's incoming webhooks show.
  const answer = await sdk.request(inputs.integration, {
    method: 'POST',
    path: '',
    body: { text },
    response: 'text',
  });
  if (answer.status < 200 || answer.status > 299) {
    throw new Error(`the chat webhook answered HTTP ${answer.status}: ${String(answer.body).slice(0, 200)}`);
  }
  return { status: answer.status, characters: text.length };
}
