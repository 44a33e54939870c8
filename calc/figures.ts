/**
 * Finite figures. A double holds magnitudes up to ±1.8e308; a figure past that is Infinity, and
 * Infinity or NaN cannot stand in a response where a number is due (JSON writes both as null). So a
 * calculation that would answer one refuses instead, naming the request parameter that took it
 * there (a `CalcInputError`, the API's 400), and the model never overflows on its own account: it
 * scales what it squares (risk-attribution.ts, tracking-error.ts). Each calculation checks its own
 * figures when it has computed them (`checkFigures`) and says which of its inputs is to blame
 * (`blameOverflow`): the one that moves the figures by the most decades.
 */
import { CalcInputError } from './input-error';

/** The words every refusal of an overflowing figure ends with. */
export const OVERFLOW = 'the figures would overflow (past ±1.8e308)';

/** A refusal of `parameter` whose figures would overflow: `why` says how, the rest is the same for all. */
export function overflowError(parameter: string, why: string): CalcInputError {
  return new CalcInputError(parameter, `${why}: ${OVERFLOW}.`);
}

/**
 * The path of the first number in `value` that is not finite (`results[2].values[0].value`), or null
 * when every number is. Walks objects, arrays and typed arrays; other values are not figures.
 */
export function nonFinitePath(value: unknown, path = ''): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : path || '(the figure)';
  if (value === null || typeof value !== 'object') return null;
  if (ArrayBuffer.isView(value)) {
    const numbers = value as unknown as ArrayLike<number>;
    for (let i = 0; i < numbers.length; i++) {
      if (!Number.isFinite(numbers[i]!)) return `${path}[${i}]`;
    }
    return null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nonFinitePath(value[i], `${path}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    const found = nonFinitePath(item, path === '' ? key : `${path}.${key}`);
    if (found !== null) return found;
  }
  return null;
}

/** `result` when all its numbers are finite; otherwise the refusal `blame` names (given the path). */
export function checkFigures<T>(result: T, blame: (path: string) => CalcInputError): T {
  const path = nonFinitePath(result);
  if (path !== null) throw blame(path);
  return result;
}

/** One input that scales the figures: `decades` is log10 of the factor it multiplies them by. */
export interface Suspect {
  readonly parameter: string;
  readonly decades: number;
  /** How it makes the figures overflow (before `: the figures would overflow …`). */
  readonly why: string;
}

/** The suspect that moves the figures by the most decades (the first on ties); `securities` if none. */
export function blameOverflow(suspects: readonly Suspect[]): CalcInputError {
  if (suspects.length === 0) return overflowError('securities', 'the book');
  let worst = suspects[0]!;
  for (const suspect of suspects) if (suspect.decades > worst.decades) worst = suspect;
  return overflowError(worst.parameter, worst.why);
}

/** log10 |x|, and 0 for 0 (a factor of zero moves nothing). */
export function decadesOf(x: number): number {
  const size = Math.abs(x);
  return size === 0 ? 0 : Math.log10(size);
}

/**
 * A power of two near |x| (1 for 0): dividing by it keeps every digit, so a computation run on the
 * scaled values and scaled back gives the same bits as on the values themselves, without their
 * squares leaving the range of a double.
 */
export function binaryScale(x: number): number {
  const size = Math.abs(x);
  if (size === 0 || !Number.isFinite(size)) return 1;
  return 2 ** Math.max(-1022, Math.min(1023, Math.round(Math.log2(size))));
}

/** The number as a message shows it: 9.96e+306, 0.1. */
export function shown(x: number): string {
  return String(x);
}
