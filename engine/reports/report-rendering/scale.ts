/** Axis arithmetic shared by the charts: round tick values and linear maps from data to pixels. */

export interface Ticks {
  /** The axis domain, widened to whole steps so the extreme ticks sit on the plot's edges. */
  min: number;
  max: number;
  step: number;
  values: number[];
}

/**
 * 1, 2, 2.5 or 5 times a power of ten: the steps people read without effort. The nearest one, not
 * the next larger, so the axis does not run far past the data.
 */
function niceStep(rough: number): number {
  const power = Math.pow(10, Math.floor(Math.log10(rough)));
  const fraction = rough / power;
  const nice = fraction <= 1.5 ? 1 : fraction <= 2.25 ? 2 : fraction <= 3.5 ? 2.5 : fraction <= 7.5 ? 5 : 10;
  return nice * power;
}

/**
 * About `count` round ticks covering [min, max]. A flat domain (every value equal) is widened
 * around its value, so a constant series still gets an axis.
 */
export function niceTicks(min: number, max: number, count = 5): Ticks {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return niceTicks(0, 1, count);
  if (min > max) [min, max] = [max, min];
  // A span lost in the values' rounding error (or below what a double can step through) is flat.
  if (max - min <= Math.max(Math.abs(min), Math.abs(max)) * 1e-9 || max - min < 1e-200) {
    const mid = (min + max) / 2;
    const pad = Math.abs(mid) > 1e-200 ? Math.abs(mid) * 0.1 : 1;
    return niceTicks(mid - pad, mid + pad, count);
  }
  const step = niceStep((max - min) / Math.max(1, count - 1));
  const low = Math.floor(min / step + 1e-9) * step;
  const high = Math.ceil(max / step - 1e-9) * step;
  const values: number[] = [];
  // Multiplying (not adding) keeps float error from piling up over the ticks.
  for (let i = 0; low + i * step <= high + step * 1e-9; i++) {
    const value = low + i * step;
    values.push(Math.abs(value) < step * 1e-9 ? 0 : Number(value.toPrecision(12)));
  }
  return { min: values[0]!, max: values[values.length - 1]!, step, values };
}

/** A linear map of [domainMin, domainMax] onto [rangeStart, rangeEnd] (either may run backwards). */
export function linearScale(
  domainMin: number,
  domainMax: number,
  rangeStart: number,
  rangeEnd: number,
): (value: number) => number {
  const span = domainMax - domainMin;
  if (span === 0) return () => (rangeStart + rangeEnd) / 2;
  return (value) => rangeStart + ((value - domainMin) / span) * (rangeEnd - rangeStart);
}

/** SVG coordinates with two decimals: exact enough for any screen, and short. */
export function px(value: number): string {
  return String(Math.round(value * 100) / 100);
}

/** `count` indices spread evenly over 0..length-1, first and last included. */
export function spreadIndices(length: number, count: number): number[] {
  if (length <= 0) return [];
  if (length <= count) return Array.from({ length }, (_, i) => i);
  const picked = new Set<number>();
  for (let i = 0; i < count; i++) picked.add(Math.round((i * (length - 1)) / (count - 1)));
  return [...picked].sort((a, b) => a - b);
}
