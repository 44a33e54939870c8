import { formatNumber, formatShortDate, formatTicks, type NumberStyle } from './number-format';
import { linearScale, niceTicks, px, spreadIndices } from './scale';
import { markup, type SafeHtml } from './safe-html';
import {
  chartFrame,
  estimateTextWidth,
  FONT_SIZE,
  horizontalLine,
  legend,
  shorten,
  svgText,
  verticalLine,
} from './svg-parts';
import type { Series } from './widget-format';

export interface LineChartInput {
  /** Unique on the page: ids inside the SVG derive from it. */
  id: string;
  title: string;
  x: (string | number)[];
  series: Series[];
  style?: NumberStyle;
}

export const LINE_CHART_WIDTH = 520;
export const LINE_CHART_HEIGHT = 290;
/** Points marked with a dot (and a tooltip) when a series has at most this many. */
const MAX_MARKERS = 40;
/**
 * A series longer than this is thinned to the lowest and highest value of each bucket: a
 * 100,000-point history would make a megabyte of path for a 500-pixel-wide chart, and keeping
 * each bucket's extremes keeps every spike visible.
 */
export const MAX_DRAWN_POINTS = 1200;

interface Point {
  index: number;
  value: number | null;
}

/** The points drawn for a series: all of them, or each bucket's extremes (and gaps) when too many. */
export function thinSeries(values: (number | null)[]): Point[] {
  if (values.length <= MAX_DRAWN_POINTS) return values.map((value, index) => ({ index, value }));
  const bucket = Math.ceil(values.length / (MAX_DRAWN_POINTS / 2));
  const points: Point[] = [];
  for (let start = 0; start < values.length; start += bucket) {
    let low: Point | null = null;
    let high: Point | null = null;
    for (let index = start; index < Math.min(values.length, start + bucket); index++) {
      const value = values[index] ?? null;
      if (value === null) continue;
      if (!low || value < low.value!) low = { index, value };
      if (!high || value > high.value!) high = { index, value };
    }
    if (!low || !high) points.push({ index: start, value: null });
    else if (low.index === high.index) points.push(low);
    else points.push(...(low.index < high.index ? [low, high] : [high, low]));
  }
  return points;
}

/** Runs of consecutive non-null points: a null breaks the line rather than bridging it. */
function segments(points: Point[]): Point[][] {
  const runs: Point[][] = [];
  let run: Point[] = [];
  for (const point of points) {
    if (point.value === null) {
      if (run.length) runs.push(run);
      run = [];
    } else run.push(point);
  }
  if (run.length) runs.push(run);
  return runs;
}

function xLabel(value: string | number): string {
  if (typeof value === 'number') return String(Number(value.toPrecision(12)));
  return formatShortDate(value) ?? shorten(value, 16);
}

/**
 * One or more series over a shared x (dates, or numbers on a linear axis). The value axis fits
 * the data rather than starting at zero (a price history near 100 would be a flat line otherwise);
 * a zero line is drawn when the data crosses it.
 */
export function renderLineChart(input: LineChartInput): SafeHtml {
  const { x, series } = input;
  const style = input.style ?? {};
  const all = series.flatMap((s) => s.values).filter((v): v is number => v !== null);
  if (x.length === 0 || all.length === 0) return markup`<p class="empty">No values to chart.</p>`;

  const ticks = niceTicks(Math.min(...all), Math.max(...all), 5);
  const tickText = formatTicks(ticks.values, ticks.step, style);
  const named = series.length > 1 || series[0]!.name !== '';
  const top = named ? 38 : 16;
  const left = Math.max(36, Math.max(...tickText.map(estimateTextWidth)) + 14);
  const right = 16;
  const bottom = 30;
  const plotRight = LINE_CHART_WIDTH - right;
  const plotBottom = LINE_CHART_HEIGHT - bottom;
  const y = linearScale(ticks.min, ticks.max, plotBottom, top);

  const numericX = x.every((v) => typeof v === 'number');
  let xOf: (index: number) => number;
  let xTicks: { at: number; text: string }[];
  if (numericX) {
    const numbers = x as number[];
    const xt = niceTicks(Math.min(...numbers), Math.max(...numbers), 6);
    const scale = linearScale(xt.min, xt.max, left, plotRight);
    xOf = (index) => scale(numbers[index]!);
    xTicks = xt.values.map((v) => ({ at: scale(v), text: xLabel(v) }));
  } else {
    const scale = linearScale(0, Math.max(1, x.length - 1), left, plotRight);
    xOf = x.length === 1 ? () => (left + plotRight) / 2 : scale;
    const widest = Math.max(...x.map((v) => estimateTextWidth(xLabel(v))));
    const fit = Math.max(2, Math.min(8, Math.floor((plotRight - left) / (widest + 18))));
    xTicks = spreadIndices(x.length, fit).map((index) => ({ at: xOf(index), text: xLabel(x[index]!) }));
  }

  const grid = ticks.values.map(
    (value, i) =>
      markup`${horizontalLine('grid', left, plotRight, y(value))}${svgText('tick-label', left - 8, y(value) + 4, tickText[i]!, 'end')}`,
  );
  const zeroLine = ticks.min < 0 && ticks.max > 0 ? horizontalLine('zero', left, plotRight, y(0)) : '';
  const xAxis = xTicks.map((tick, i) => {
    // The outermost labels hug the plot's edges instead of hanging off the drawing.
    const anchor =
      xTicks.length === 1 ? 'middle' : i === 0 ? 'start' : i === xTicks.length - 1 ? 'end' : 'middle';
    const label = svgText('tick-label', tick.at, plotBottom + FONT_SIZE + 8, tick.text, anchor);
    return markup`${verticalLine('tick', tick.at, plotBottom, plotBottom + 4)}${label}`;
  });

  // A single series is shaded down to zero when the axis holds zero (gains above, losses below),
  // else down to the axis.
  const baseline = y(ticks.min <= 0 && ticks.max >= 0 ? 0 : ticks.min);
  const lines = series.map((s, k) => {
    const runs = segments(thinSeries(s.values));
    const path = (run: Point[]) =>
      run.map((p, i) => `${i === 0 ? 'M' : 'L'}${px(xOf(p.index))} ${px(y(p.value!))}`).join('');
    const close = (run: Point[]) =>
      `L${px(xOf(run[run.length - 1]!.index))} ${px(baseline)}L${px(xOf(run[0]!.index))} ${px(baseline)}Z`;
    const area =
      series.length === 1
        ? runs
            .filter((run) => run.length > 1)
            .map((run) => markup`<path class="area s${k}" d="${path(run) + close(run)}"/>`)
        : '';
    const strokes = runs.map((run) =>
      run.length === 1
        ? markup`<circle class="dot s${k}" cx="${px(xOf(run[0]!.index))}" cy="${px(y(run[0]!.value!))}" r="2.5"/>`
        : markup`<path class="line s${k}" d="${path(run)}"/>`,
    );
    const markers =
      s.values.length <= MAX_MARKERS
        ? s.values.map((value, index) => {
            if (value === null) return '';
            const tip = `${named ? `${s.name} · ` : ''}${xLabel(x[index]!)}: ${formatNumber(value, style)}`;
            return markup`<circle class="marker s${k}" cx="${px(xOf(index))}" cy="${px(y(value))}" r="3"><title>${tip}</title></circle>`;
          })
        : '';
    return markup`<g class="series">${area}${strokes}${markers}</g>`;
  });

  return chartFrame({
    id: input.id,
    title: input.title,
    className: 'line-chart',
    width: LINE_CHART_WIDTH,
    height: LINE_CHART_HEIGHT,
    body: markup`<g class="grid-lines">${grid}</g>${zeroLine}${horizontalLine('axis', left, plotRight, plotBottom)}<g class="x-axis">${xAxis}</g>${lines}${named ? legend(series, left, 14) : ''}`,
  });
}
