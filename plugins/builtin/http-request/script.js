/* global sdk */

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
async function main(args) {
  const inputs = args.script_inputs;
  const request = {
    method: inputs.method || 'GET',
    path: inputs.path || '',
    query: inputs.query || {},
    headers: inputs.headers || {},
    response: inputs.response || 'json',
  };
  if (inputs.send_input) request.body = args.inputs === undefined ? null : args.inputs;
  const answer = await sdk.request(inputs.integration, request);
  if ((answer.status < 200 || answer.status > 299) && !inputs.allow_error_status) {
    throw new Error(`${request.method} ${request.path || '/'} answered HTTP ${answer.status}`);
  }
  return answer;
}
