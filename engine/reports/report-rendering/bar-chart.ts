import { formatNumber, formatTicks, type NumberStyle } from './number-format';
import { linearScale, niceTicks, px } from './scale';
import { markup, type SafeHtml } from './safe-html';
import {
  chartFrame,
  estimateTextWidth,
  FONT_SIZE,
  horizontalLine,
  legend,
  shorten,
  svgText,
} from './svg-parts';
import type { Series } from './widget-format';

export interface BarChartInput {
  /** Unique on the page: ids inside the SVG derive from it. */
  id: string;
  title: string;
  labels: string[];
  series: Series[];
  style?: NumberStyle;
}

export const BAR_CHART_WIDTH = 520;
export const BAR_CHART_HEIGHT = 290;
/** Bars labelled with their value when there are at most this many; more would overlap. */
const MAX_VALUE_LABELS = 16;
const LABEL_CHARS = 18;

/**
 * Bars of per-category values (securities, sectors), one colour per series. The value axis always
 * holds zero, and negative values hang below it in their own colour (single series), so losses
 * read as losses at a glance.
 */
export function renderBarChart(input: BarChartInput): SafeHtml {
  const { labels, series } = input;
  const style = input.style ?? {};
  const all = series.flatMap((s) => s.values).filter((v): v is number => v !== null);
  if (labels.length === 0 || all.length === 0) return markup`<p class="empty">No values to chart.</p>`;

  const grouped = series.length > 1;
  const groupShare = grouped ? 0.8 : 0.64;
  const right = 12;
  // Values are written on the bars when few enough to read and each fits its bar (a lone bar's label
  // may spread over the gap beside it). The axis labels' width is not known yet: 60 units is about
  // the widest a compact tick needs.
  const valueText = series.map((s) => s.values.map((value) => formatNumber(value, style)));
  const widestValue = Math.max(...valueText.flat().map(estimateTextWidth));
  const roughSlot = (BAR_CHART_WIDTH - 60 - right) / labels.length;
  const room = grouped ? (roughSlot * groupShare) / series.length + 2 : roughSlot - 4;
  const showValues = labels.length * series.length <= MAX_VALUE_LABELS && widestValue <= room;

  const low = Math.min(0, ...all);
  const high = Math.max(0, ...all);
  // Room past the longest bars for their value labels.
  const pad = showValues ? (high - low) * 0.12 : 0;
  const ticks = niceTicks(low < 0 ? low - pad : 0, high > 0 ? high + pad : 0, 5);
  const tickText = formatTicks(ticks.values, ticks.step, style);
  const top = grouped ? 38 : 16;
  const axisLeft = Math.max(36, Math.max(...tickText.map(estimateTextWidth)) + 14);

  // Category labels turn 40° when they would collide; every k-th is kept when even that is too dense.
  const shortLabels = labels.map((label) => shorten(label, LABEL_CHARS));
  const widest = Math.max(...shortLabels.map(estimateTextWidth));
  const rotate = widest > (BAR_CHART_WIDTH - axisLeft - right) / labels.length - 6;
  // A turned label reaches left of its bar by cos 40° of its length: the first must stay in the drawing.
  const firstReach = rotate ? estimateTextWidth(shortLabels[0]!) * 0.77 + 4 : 0;
  const roughHalfSlot = (BAR_CHART_WIDTH - axisLeft - right) / labels.length / 2;
  const left = Math.max(axisLeft, Math.ceil(firstReach - roughHalfSlot));
  const plotWidth = BAR_CHART_WIDTH - left - right;
  const slot = plotWidth / labels.length;
  const every = rotate ? Math.max(1, Math.ceil((FONT_SIZE + 3) / slot)) : 1;
  // Its height below the axis is sin 40° of its length.
  const bottom = rotate ? Math.min(110, Math.ceil(widest * 0.65 + FONT_SIZE + 14)) : 28;
  const height = BAR_CHART_HEIGHT + (rotate ? bottom - 28 : 0);
  const plotBottom = height - bottom;
  const y = linearScale(ticks.min, ticks.max, plotBottom, top);
  const zero = y(0);

  const groupWidth = slot * groupShare;
  const barWidth = Math.max(1, groupWidth / series.length);

  const grid = ticks.values.map(
    (value, i) =>
      markup`${horizontalLine('grid', left, BAR_CHART_WIDTH - right, y(value))}${svgText('tick-label', left - 8, y(value) + 4, tickText[i]!, 'end')}`,
  );

  const bars = labels.map((label, index) => {
    const groupStart = left + slot * index + (slot - groupWidth) / 2;
    return series.map((s, k) => {
      const value = s.values[index] ?? null;
      if (value === null) return '';
      const x = groupStart + k * barWidth;
      const top = Math.min(y(value), zero);
      const barHeight = Math.abs(y(value) - zero);
      const tone = grouped ? `s${k}` : value < 0 ? 'neg' : 'pos';
      const text = valueText[k]![index]!;
      const name = grouped ? `${label} · ${s.name}` : label;
      const labelY = value < 0 ? top + barHeight + FONT_SIZE + 2 : top - 5;
      const valueLabel = showValues ? svgText('value-label', x + barWidth / 2, labelY, text, 'middle') : '';
      return markup`<rect class="bar ${tone}" x="${px(x)}" y="${px(top)}" width="${px(barWidth)}" height="${px(barHeight)}"><title>${name}: ${text}</title></rect>${valueLabel}`;
    });
  });

  const categories = shortLabels.map((label, index) => {
    if (index % every !== 0) return '';
    const x = left + slot * index + slot / 2;
    const labelY = plotBottom + FONT_SIZE + 6;
    return rotate
      ? svgText('category-label', x, labelY, label, 'end', -40)
      : svgText('category-label', x, labelY, label, 'middle');
  });

  return chartFrame({
    id: input.id,
    title: input.title,
    className: 'bar-chart',
    width: BAR_CHART_WIDTH,
    height,
    body: markup`<g class="grid-lines">${grid}</g><g class="bars">${bars}</g>${horizontalLine('zero', left, BAR_CHART_WIDTH - right, zero)}<g class="categories">${categories}</g>${grouped ? legend(series, left, 14) : ''}`,
  });
}
