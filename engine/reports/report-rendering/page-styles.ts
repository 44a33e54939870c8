/**
 * The report page's one stylesheet, inlined (the page loads nothing else: no CDN, no fonts, no
 * scripts, which is what its Content-Security-Policy enforces). Both themes are variables on
 * `<html class="theme-…">`; the charts take their colours from here, so an SVG holds no colour.
 */
export const PAGE_STYLES = `
:root {
  --bg: #f4f6f9; --card: #ffffff; --text: #17202b; --muted: #5d6876; --faint: #8a94a1;
  --border: #e1e6ec; --rule: #edf0f4; --stripe: #f9fafc; --accent: #1d5bbf;
  --grid: #e8ecf1; --axis: #98a2ae; --pos: #2563c9; --neg: #c63d32; --area-opacity: 0.10;
  --s0: #2563c9; --s1: #e08a1e; --s2: #2f9e6e; --s3: #8b5cc7; --s4: #d2477a; --s5: #3aa1b8;
  --s6: #7d8794; --s7: #b5922b;
  --shadow: 0 1px 2px rgba(16, 24, 40, 0.05), 0 1px 3px rgba(16, 24, 40, 0.04);
}
.theme-dark {
  --bg: #0e131a; --card: #161d26; --text: #e7ecf2; --muted: #9ba7b6; --faint: #6f7b8a;
  --border: #253140; --rule: #1f2935; --stripe: #19212b; --accent: #6ea2f7;
  --grid: #222c38; --axis: #5a6779; --pos: #5b95f0; --neg: #ef6f64; --area-opacity: 0.16;
  --s0: #5b95f0; --s1: #f0a54a; --s2: #4cc08c; --s3: #a98be0; --s4: #ec6f9d; --s5: #5cc3d8;
  --s6: #9aa4b1; --s7: #d4b24c;
  --shadow: none;
}
* { box-sizing: border-box; }
html { background: var(--bg); color: var(--text); }
body {
  margin: 0;
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "Liberation Sans", Arial, sans-serif;
  -webkit-font-smoothing: antialiased;
}
.page { max-width: 1160px; margin: 0 auto; padding: 44px 32px 40px; }
.report-head { margin-bottom: 28px; padding-bottom: 22px; border-bottom: 1px solid var(--border); }
.eyebrow {
  margin: 0; color: var(--muted); font-size: 12px; font-weight: 600;
  letter-spacing: 0.08em; text-transform: uppercase;
}
h1 { margin: 6px 0 8px; font-size: 30px; line-height: 1.2; font-weight: 650; letter-spacing: -0.015em; }
.report-name { margin: 4px 0 0; font-size: 18px; font-weight: 600; }
.description { margin: 0; max-width: 72ch; color: var(--muted); font-size: 16px; white-space: pre-line; }
.tags { display: flex; flex-wrap: wrap; gap: 6px; margin: 14px 0 0; padding: 0; list-style: none; }
.tags li {
  padding: 2px 10px; border: 1px solid var(--border); border-radius: 999px;
  color: var(--muted); font-size: 12px;
}
.grid {
  display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 440px), 1fr)); gap: 20px;
  grid-auto-flow: row dense;
}
/* One widget on its own: a chart at a readable size, not stretched to the window. */
.widget-page { max-width: 880px; }
.widget-page .grid { grid-template-columns: 1fr; }
.card {
  min-width: 0; padding: 20px 22px 18px; background: var(--card);
  border: 1px solid var(--border); border-radius: 10px; box-shadow: var(--shadow);
}
.card.wide { grid-column: 1 / -1; }
.card h2 { margin: 0 0 4px; font-size: 15px; font-weight: 600; letter-spacing: -0.005em; }
.caption { margin: 0 0 12px; color: var(--muted); font-size: 13px; }
.card h2 + .table-scroll, .card h2 + svg, .card h2 + .prose, .card h2 + pre { margin-top: 12px; }
.table-scroll { overflow-x: auto; }
table { width: 100%; border-collapse: collapse; font-size: 14px; font-variant-numeric: tabular-nums; }
th {
  padding: 8px 12px; border-bottom: 1px solid var(--border); color: var(--muted); text-align: left;
  font-size: 11.5px; font-weight: 600; letter-spacing: 0.05em; text-transform: uppercase; white-space: nowrap;
}
td { padding: 8px 12px; border-bottom: 1px solid var(--rule); vertical-align: top; }
tbody tr:last-child td { border-bottom: 0; }
tbody tr:nth-child(even) td { background: var(--stripe); }
.num { text-align: right; white-space: nowrap; }
td.neg { color: var(--neg); }
td.missing { color: var(--faint); text-align: center; }
.prose p { margin: 0 0 10px; max-width: 80ch; white-space: pre-line; }
.prose p:last-child { margin-bottom: 0; }
pre.json {
  margin: 0; padding: 14px; overflow: auto; max-height: 480px; border-radius: 8px; background: var(--stripe);
  font: 12.5px/1.5 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
}
.empty, .note { margin: 8px 0 0; color: var(--muted); font-size: 13px; }
svg.chart { display: block; width: 100%; height: auto; margin-top: 8px; overflow: visible; }
svg.chart text { fill: var(--muted); font-family: inherit; font-variant-numeric: tabular-nums; }
svg.chart .value-label { fill: var(--text); font-weight: 600; }
svg.chart .legend-label { fill: var(--text); }
svg.chart .grid { stroke: var(--grid); stroke-width: 1; }
svg.chart .axis, svg.chart .tick { stroke: var(--axis); stroke-width: 1; }
svg.chart .zero { stroke: var(--axis); stroke-width: 1.25; }
svg.chart .bar.pos { fill: var(--pos); }
svg.chart .bar.neg { fill: var(--neg); }
svg.chart .line { fill: none; stroke-width: 2; stroke-linejoin: round; stroke-linecap: round; }
svg.chart path.area { stroke: none; opacity: var(--area-opacity); }
svg.chart .marker { stroke: var(--card); stroke-width: 1.5; }
svg.chart .s0 { fill: var(--s0); stroke: var(--s0); } svg.chart .s1 { fill: var(--s1); stroke: var(--s1); }
svg.chart .s2 { fill: var(--s2); stroke: var(--s2); } svg.chart .s3 { fill: var(--s3); stroke: var(--s3); }
svg.chart .s4 { fill: var(--s4); stroke: var(--s4); } svg.chart .s5 { fill: var(--s5); stroke: var(--s5); }
svg.chart .s6 { fill: var(--s6); stroke: var(--s6); } svg.chart .s7 { fill: var(--s7); stroke: var(--s7); }
svg.chart .line.s0, svg.chart .line.s1, svg.chart .line.s2, svg.chart .line.s3,
svg.chart .line.s4, svg.chart .line.s5, svg.chart .line.s6, svg.chart .line.s7 { fill: none; }
svg.chart .marker { stroke: var(--card); }
svg.chart .bar, svg.chart .swatch { stroke: none; }
.page-foot {
  display: flex; flex-wrap: wrap; justify-content: space-between; gap: 8px; margin-top: 32px; padding-top: 16px;
  border-top: 1px solid var(--border); color: var(--faint); font-size: 12px;
}
.message-page { max-width: 620px; padding-top: 12vh; }
.message h1 { font-size: 24px; }
.message p:last-child { margin: 0; color: var(--muted); }
@media (max-width: 640px) {
  .page { padding: 24px 16px; }
  h1 { font-size: 24px; }
  .card { padding: 16px; }
}
@media print {
  .card { box-shadow: none; break-inside: avoid; }
}
`;
