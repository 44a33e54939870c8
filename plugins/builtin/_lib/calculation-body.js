/* Shared by the calculation templates ("calculation-body.js" in their libraries): prepended to
 * their script when published. */

/**
 * The portfolio part of a calculation body: the portfolio_id input; else the previous worker's
 * output, a portfolio (or {portfolio}) whose securities are used as they are, or an id.
 */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- used by the templates
function portfolioPart(args) {
  const given = args.script_inputs.portfolio_id;
  if (typeof given === 'string' && given !== '') return { portfolio_id: given };
  const input = args.inputs;
  if (typeof input === 'string' && input !== '') return { portfolio_id: input };
  if (input !== null && typeof input === 'object' && !Array.isArray(input)) {
    const portfolio =
      input.portfolio !== null && typeof input.portfolio === 'object' ? input.portfolio : input;
    if (Array.isArray(portfolio.securities)) {
      const part = { securities: portfolio.securities };
      for (const key of ['date', 'base_currency', 'nlv']) {
        if (portfolio[key] !== undefined && portfolio[key] !== null) part[key] = portfolio[key];
      }
      return part;
    }
    if (typeof input.portfolio_id === 'string' && input.portfolio_id !== '') {
      return { portfolio_id: input.portfolio_id };
    }
  }
  throw new Error(
    'No portfolio: set the portfolio_id input, or have the previous worker output a portfolio, {securities} or an id.',
  );
}

/** The form's settings that are set, as the API names them. */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- used by the templates
function settings(inputs, names) {
  const out = {};
  for (const name of names) {
    if (inputs[name] !== undefined && inputs[name] !== null && inputs[name] !== '') out[name] = inputs[name];
  }
  return out;
}
