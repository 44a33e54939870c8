import { px } from './scale';
import { markup, type SafeHtml } from './safe-html';
import type { Series } from './widget-format';

/** Chart text size in SVG units; the page's stylesheet uses the same. */
export const FONT_SIZE = 12;

/**
 * The server has no font metrics, so label widths are estimated: 0.6 em per character is a little
 * generous for the sans-serif fonts the page asks for, which errs towards room to spare.
 */
export function estimateTextWidth(text: string): number {
  return Math.ceil([...text].length * FONT_SIZE * 0.6);
}

/** At most `max` characters, an ellipsis marking the cut (the full text stays in the tooltip). */
export function shorten(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : chars.slice(0, max - 1).join('') + '…';
}

/** A swatch and name per series, left to right from (x, y). */
export function legend(series: Series[], x: number, y: number): SafeHtml {
  let at = x;
  const items = series.map((s, k) => {
    const name = shorten(s.name, 28);
    const swatch = markup`<rect class="swatch s${k}" x="${px(at)}" y="${px(y - 9)}" width="10" height="10" rx="2"/>`;
    const label = markup`<text class="legend-label" x="${px(at + 15)}" y="${px(y)}">${name}</text>`;
    at += 15 + estimateTextWidth(name) + 16;
    return markup`<g class="legend-item">${swatch}${label}</g>`;
  });
  return markup`<g class="legend">${items}</g>`;
}

/**
 * The outer `<svg>`: scales to its container (viewBox, width 100%) and is announced to screen
 * readers by its title.
 */
export function chartFrame(options: {
  id: string;
  title: string;
  className: string;
  width: number;
  height: number;
  body: SafeHtml;
}): SafeHtml {
  const titleId = `${options.id}-title`;
  const viewBox = `0 0 ${px(options.width)} ${px(options.height)}`;
  return markup`<svg class="chart ${options.className}" xmlns="http://www.w3.org/2000/svg" viewBox="${viewBox}" width="100%" role="img" aria-labelledby="${titleId}" font-size="${FONT_SIZE}"><title id="${titleId}">${options.title}</title>${options.body}</svg>`;
}

export function horizontalLine(className: string, x1: number, x2: number, y: number): SafeHtml {
  return markup`<line class="${className}" x1="${px(x1)}" x2="${px(x2)}" y1="${px(y)}" y2="${px(y)}"/>`;
}

export function verticalLine(className: string, x: number, y1: number, y2: number): SafeHtml {
  return markup`<line class="${className}" x1="${px(x)}" x2="${px(x)}" y1="${px(y1)}" y2="${px(y2)}"/>`;
}

/** A label at (x, y), anchored at its start, middle or end, optionally turned about that point. */
export function svgText(
  className: string,
  x: number,
  y: number,
  text: string,
  anchor: 'start' | 'middle' | 'end' = 'start',
  degrees = 0,
): SafeHtml {
  const turn = degrees ? markup` transform="rotate(${degrees} ${px(x)} ${px(y)})"` : '';
  return markup`<text class="${className}" x="${px(x)}" y="${px(y)}" text-anchor="${anchor}"${turn}>${text}</text>`;
}
