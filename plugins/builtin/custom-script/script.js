/* global sdk */

// The code is compiled here, inside the isolate: the isolate is the sandbox, so evaluating the
// publisher's text is exactly what a template script already is.
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
async function main(args) {
  const { code, params } = args.script_inputs;
  if (typeof code !== 'string' || code.trim() === '') {
    throw new Error('Set the code input: the body of an async function of (args, inputs, params, sdk).');
  }
  let run;
  try {
    run = new AsyncFunction('args', 'inputs', 'params', 'sdk', code);
  } catch (error) {
    throw new Error(`The code does not compile: ${error.message}`);
  }
  const result = await run(args, args.inputs, params ?? {}, sdk);
  return result === undefined ? null : result;
}
