/* global sdk */

/** The portfolio id: the input first, then what the previous worker handed on. */
function portfolioIdOf(args) {
  const given = args.script_inputs.portfolio_id;
  if (typeof given === 'string' && given !== '') return given;
  const input = args.inputs;
  if (typeof input === 'string' && input !== '') return input;
  if (input !== null && typeof input === 'object' && !Array.isArray(input)) {
    if (typeof input.portfolio_id === 'string' && input.portfolio_id !== '') return input.portfolio_id;
    if (typeof input.id === 'string' && input.id.startsWith('port_')) return input.id;
    if (input.portfolio && typeof input.portfolio.id === 'string') return input.portfolio.id;
  }
  throw new Error(
    'No portfolio id: set the portfolio_id input, or have the previous worker output an id or {portfolio_id}.',
  );
}

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the sandbox calls main
async function main(args) {
  return sdk.retrievePortfolio(portfolioIdOf(args));
}
