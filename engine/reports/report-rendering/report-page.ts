import { renderBarChart } from './bar-chart';
import { renderLineChart } from './line-chart';
import { formatInstantUtc, formatReportDate } from './number-format';
import { renderReportData } from './report-data';
import { markup, type SafeHtml, trustedHtml } from './safe-html';
import { PAGE_STYLES } from './page-styles';
import { renderTable } from './table';
import { readWidget, type Widget } from './widget-format';

export type PageTheme = 'light' | 'dark';
export const PAGE_THEMES: readonly PageTheme[] = ['light', 'dark'];

/** What a report page shows; built by the caller from the stored report (no HTTP, no SQL here). */
export interface ReportPageModel {
  name: string;
  description: string | null;
  tags: string[];
  /** `YYYYMMDD`. */
  date: string | null;
  updatedAt: Date;
  data: unknown[];
  /** Widgets as stored: `id`, `name` and the fields of their type. */
  widgets: (Record<string, unknown> & { id: string; name: string })[];
  theme: PageTheme;
  /** When the page was opened through a share link: the moment the link stops working. */
  sharedUntil?: Date | null;
}

/** A stored widget that no longer reads (stored before the checks, say) shows why instead of failing the page. */
type DrawnWidget = { ok: true; widget: Widget } | { ok: false; id: string; name: string; message: string };

function drawable(raw: ReportPageModel['widgets'][number], index: number): DrawnWidget {
  try {
    return { ok: true, widget: readWidget(raw, `widgets[${index}]`) };
  } catch (error) {
    const message = error instanceof Error ? error.message : 'unreadable widget';
    return { ok: false, id: raw.id, name: raw.name, message };
  }
}

function widgetBody(widget: Widget): SafeHtml {
  const style = { format: widget.format, currency: widget.currency, decimals: widget.decimals };
  const chartId = `chart-${widget.id}`;
  switch (widget.type) {
    case 'table':
      return renderTable({ columns: widget.columns, rows: widget.rows, style });
    case 'bar':
      return renderBarChart({
        id: chartId,
        title: widget.name,
        labels: widget.labels,
        series: widget.series,
        style,
      });
    case 'line':
      return renderLineChart({ id: chartId, title: widget.name, x: widget.x, series: widget.series, style });
    case 'text': {
      const paragraphs = widget.text
        .split(/\n\s*\n/)
        .map((paragraph) => paragraph.trim())
        .filter(Boolean);
      return markup`<div class="prose">${paragraphs.map((paragraph) => markup`<p>${paragraph}</p>`)}</div>`;
    }
    case 'other':
      return markup`<p class="empty">${
        widget.declaredType
          ? `This widget (${widget.declaredType}) has no picture on this page.`
          : 'This widget has no content to show.'
      }</p>`;
  }
}

/** Text longer than this reads better across the page than in a narrow column. */
const SHORT_TEXT_CHARS = 400;

/**
 * Tables and long text take the page's width; charts and short notes sit side by side (the grid
 * fills a gap with the next card that fits, so a wide card does not leave a hole beside a chart).
 */
function isWide(drawn: DrawnWidget): boolean {
  if (!drawn.ok) return false;
  const { widget } = drawn;
  return widget.type === 'table' || (widget.type === 'text' && widget.text.length > SHORT_TEXT_CHARS);
}

export function renderWidgetCard(drawn: DrawnWidget): SafeHtml {
  if (!drawn.ok) {
    return markup`<section class="card" id="widget-${drawn.id}"><h2>${drawn.name}</h2><p class="empty">This widget could not be drawn: ${drawn.message}</p></section>`;
  }
  const { widget } = drawn;
  const caption = widget.description ? markup`<p class="caption">${widget.description}</p>` : '';
  return markup`<section class="card${isWide(drawn) ? ' wide' : ''}" id="widget-${widget.id}" data-widget-type="${widget.type}"><h2>${widget.name}</h2>${caption}${widgetBody(widget)}</section>`;
}

function pageDocument(options: { title: string; theme: PageTheme; body: SafeHtml }): string {
  return markup`<!doctype html>
<html lang="en" class="theme-${options.theme}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<meta name="color-scheme" content="${options.theme}">
<title>${options.title}</title>
<style>${trustedHtml(PAGE_STYLES)}</style>
</head>
<body>
${options.body}
</body>
</html>
`.value;
}

function footer(model: ReportPageModel): SafeHtml {
  const shared = model.sharedUntil
    ? markup`<span>Shared link · valid until ${formatInstantUtc(model.sharedUntil)}</span>`
    : '';
  return markup`<footer class="page-foot"><span>Last updated ${formatInstantUtc(model.updatedAt)}</span>${shared}</footer>`;
}

/** The report's heading: in full on the report page, its name alone above a widget on its own. */
function header(model: ReportPageModel, full: boolean): SafeHtml {
  const date = formatReportDate(model.date);
  const eyebrow = markup`<p class="eyebrow">Portfolio report${date ? markup` · <time>${date}</time>` : ''}</p>`;
  if (!full)
    return markup`<header class="report-head">${eyebrow}<p class="report-name">${model.name}</p></header>`;
  const description = model.description ? markup`<p class="description">${model.description}</p>` : '';
  const tags = model.tags.length
    ? markup`<ul class="tags">${model.tags.map((tag) => markup`<li>#${tag}</li>`)}</ul>`
    : '';
  return markup`<header class="report-head">${eyebrow}<h1>${model.name}</h1>${description}${tags}</header>`;
}

/** The whole report: heading, widgets in a grid, then the report's data. */
export function renderReportPage(model: ReportPageModel): string {
  const widgets = model.widgets.map(drawable).map(renderWidgetCard);
  const data = renderReportData(model.data);
  const dataSection = data
    ? markup`<section class="card wide" id="report-data"><h2>Data</h2>${data}</section>`
    : '';
  const empty =
    widgets.length === 0 && !data ? markup`<p class="empty">This report has no content yet.</p>` : '';
  return pageDocument({
    title: model.name,
    theme: model.theme,
    body: markup`<main class="page">${header(model, true)}<div class="grid">${widgets}${dataSection}</div>${empty}${footer(model)}</main>`,
  });
}

/** One widget on its own page (for embedding), under the report's name. */
export function renderWidgetPage(model: ReportPageModel, widgetId: string): string | null {
  const index = model.widgets.findIndex((widget) => widget.id === widgetId);
  if (index < 0) return null;
  const widget = model.widgets[index]!;
  const card = renderWidgetCard(drawable(widget, index));
  return pageDocument({
    title: `${widget.name} · ${model.name}`,
    theme: model.theme,
    body: markup`<main class="page widget-page">${header(model, false)}<div class="grid">${card}</div>${footer(model)}</main>`,
  });
}

/** A page that explains a refusal (expired link, sign-in needed, not found) in plain words. */
export function renderMessagePage(options: {
  status: number;
  title: string;
  message: string;
  theme?: PageTheme;
}): string {
  return pageDocument({
    title: options.title,
    theme: options.theme ?? 'light',
    body: markup`<main class="page message-page"><section class="card message"><p class="eyebrow">Portfolio Analytics · ${String(options.status)}</p><h1>${options.title}</h1><p>${options.message}</p></section></main>`,
  });
}
