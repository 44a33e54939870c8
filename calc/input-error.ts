/**
 * A request the calculation cannot run on (an unknown shock symbol, a projection without data, a zero
 * NLV, ...). calc/ knows nothing of HTTP: the endpoint maps this to a 400 naming `parameter`.
 */
export class CalcInputError extends Error {
  constructor(
    readonly parameter: string,
    message: string,
    /** The message is whole as given (it names the parameter itself). */
    whole = false,
  ) {
    super(whole ? message : `${parameter}: ${message}`);
    this.name = 'CalcInputError';
  }
}
