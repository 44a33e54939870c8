import fc from 'fast-check';
import { InvalidInput } from '../../engine/platform/errors';
import { renderBarChart } from '../../engine/reports/report-rendering/bar-chart';
import {
  MAX_DRAWN_POINTS,
  renderLineChart,
  thinSeries,
} from '../../engine/reports/report-rendering/line-chart';
import {
  formatInstantUtc,
  formatNumber,
  formatReportDate,
  formatShortDate,
  formatTicks,
} from '../../engine/reports/report-rendering/number-format';
import {
  MAX_JSON_CHARS,
  renderReportData,
  tabularShape,
} from '../../engine/reports/report-rendering/report-data';
import {
  type ReportPageModel,
  renderMessagePage,
  renderReportPage,
  renderWidgetPage,
} from '../../engine/reports/report-rendering/report-page';
import { escapeHtml, markup, trustedHtml } from '../../engine/reports/report-rendering/safe-html';
import { niceTicks, spreadIndices } from '../../engine/reports/report-rendering/scale';
import { MAX_TABLE_ROWS, renderTable } from '../../engine/reports/report-rendering/table';
import { readWidget } from '../../engine/reports/report-rendering/widget-format';

const XSS = '<script>alert("x")</script>';
const ESCAPED_XSS = '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;';

interface Rect {
  tone: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The bars of a rendered bar chart, in document order. */
function bars(svg: string): Rect[] {
  return [
    ...svg.matchAll(/<rect class="bar ([^"]+)" x="([^"]+)" y="([^"]+)" width="([^"]+)" height="([^"]+)"/g),
  ].map((m) => ({
    tone: m[1]!,
    x: Number(m[2]),
    y: Number(m[3]),
    width: Number(m[4]),
    height: Number(m[5]),
  }));
}

function zeroLineY(svg: string): number {
  const match = /<line class="zero" x1="[^"]+" x2="[^"]+" y1="([^"]+)" y2="\1"\/>/.exec(svg);
  if (!match) throw new Error('no zero line');
  return Number(match[1]);
}

function texts(svg: string, className: string): string[] {
  return [...svg.matchAll(new RegExp(`<text class="${className}"[^>]*>([^<]*)</text>`, 'g'))].map(
    (m) => m[1]!,
  );
}

/** Every element's tag name: proves a hostile string did not open a tag of its own. */
function tagNames(text: string): string[] {
  return [...text.matchAll(/<([a-zA-Z][a-zA-Z0-9-]*)/g)].map((m) => m[1]!.toLowerCase());
}

describe('safe HTML', () => {
  test('interpolated text is escaped; SafeHtml, arrays and nothing-values are not', () => {
    const inner = markup`<b>${'a & b'}</b>`;
    expect(
      markup`<p title="${'"quoted" \'x\''}">${XSS}${inner}${['<i>', inner]}${null}${undefined}${false}${0}</p>`
        .value,
    ).toBe(
      `<p title="&quot;quoted&quot; &#39;x&#39;">${ESCAPED_XSS}<b>a &amp; b</b>&lt;i&gt;<b>a &amp; b</b>0</p>`,
    );
    expect(trustedHtml('<style>a{}</style>').value).toBe('<style>a{}</style>');
  });

  test('property: no string can open a tag or leave an attribute', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const out = markup`<td data-x="${text}">${text}</td>`.value;
        expect(tagNames(out)).toEqual(['td']);
        expect(out.slice('<td data-x="'.length, out.indexOf('">'))).not.toContain('"');
        expect(escapeHtml(text)).not.toMatch(/[<>"']/);
      }),
    );
  });
});

describe('number formats', () => {
  test.each([
    [1234567.891, {}, '1,234,567.89'],
    [-1234.5, {}, '-1,234.5'],
    [0.000123, {}, '0.000123'],
    [0.5, {}, '0.5'],
    [0, {}, '0'],
    [-0.0001, { decimals: 2 }, '0.00'],
    [2024, { format: 'plain' }, '2024'],
    [-0.1234, { format: 'percent' }, '-12.34%'],
    [0.5, { format: 'percent', decimals: 0 }, '50%'],
    [-1234.5, { format: 'currency' }, '-$1,234.50'],
    [1234.5, { format: 'currency', currency: 'EUR', decimals: 0 }, '€1,235'],
    [null, {}, '—'],
    [Number.NaN, { format: 'percent' }, '—'],
    [Number.POSITIVE_INFINITY, {}, '—'],
  ] as const)('formatNumber(%p, %j) → %p', (value, style, expected) => {
    expect(formatNumber(value, style)).toBe(expected);
  });

  test('ticks: compact from 10,000, decimals just enough for the step', () => {
    const big = niceTicks(0, 2_400_000);
    expect(formatTicks(big.values, big.step)).toEqual(['0', '500K', '1M', '1.5M', '2M', '2.5M']);
    const pct = niceTicks(-0.05, 0.12);
    expect(formatTicks(pct.values, pct.step, { format: 'percent' })).toEqual([
      '-5%',
      '0%',
      '5%',
      '10%',
      '15%',
    ]);
    const halves = niceTicks(0.5, 2);
    expect(formatTicks(halves.values, halves.step)).toEqual(['0.5', '1.0', '1.5', '2.0']);
    const money = niceTicks(0, 25_000);
    // One style along an axis: never "$5,000" beside "$10K".
    expect(formatTicks(money.values, money.step, { format: 'currency' })).toEqual([
      '$0',
      '$5K',
      '$10K',
      '$15K',
      '$20K',
      '$25K',
    ]);
    expect(formatTicks([0, 2500, 5000], 2500, { format: 'currency' })).toEqual(['$0', '$2,500', '$5,000']);
  });

  test('dates are spelled out, timezone-free', () => {
    expect(formatReportDate('20240301')).toBe('1 March 2024');
    expect(formatReportDate('not a date')).toBe('not a date');
    expect(formatReportDate(null)).toBe('');
    expect(formatShortDate('20241231')).toBe('31 Dec 2024');
    expect(formatShortDate('2024-02-05T10:00:00Z')).toBe('5 Feb 2024');
    expect(formatShortDate('AAPL')).toBeNull();
    expect(formatShortDate('20241399')).toBeNull();
    expect(formatInstantUtc(new Date(Date.UTC(2024, 2, 1, 14, 5, 59)))).toBe('1 March 2024, 14:05 UTC');
  });
});

describe('axis ticks', () => {
  test('round steps that cover the data; a flat domain still gets an axis', () => {
    expect(niceTicks(-3.2, 7.9)).toEqual({
      min: -5,
      max: 10,
      step: 2.5,
      values: [-5, -2.5, 0, 2.5, 5, 7.5, 10],
    });
    expect(niceTicks(0, 2_400_000).values).toEqual([0, 500_000, 1_000_000, 1_500_000, 2_000_000, 2_500_000]);
    expect(niceTicks(0, 0).values).toEqual([-1, -0.5, 0, 0.5, 1]);
    expect(niceTicks(100, 100).values).toEqual([90, 95, 100, 105, 110]);
    expect(niceTicks(0.001, 0.0042).values).toEqual([0.001, 0.002, 0.003, 0.004, 0.005]);
  });

  test('property: ticks cover [min, max] in 2 to 12 round, evenly spaced steps', () => {
    const finite = fc.double({ min: -1e12, max: 1e12, noNaN: true, noDefaultInfinity: true });
    fc.assert(
      fc.property(finite, finite, (a, b) => {
        const ticks = niceTicks(a, b);
        // Tick values are rounded to 12 significant digits; a hair of float error is allowed.
        const slack = ticks.step * 1e-9;
        expect(ticks.min).toBeLessThanOrEqual(Math.min(a, b) + slack);
        expect(ticks.max).toBeGreaterThanOrEqual(Math.max(a, b) - slack);
        expect(ticks.values.length).toBeGreaterThanOrEqual(2);
        expect(ticks.values.length).toBeLessThanOrEqual(12);
        const mantissa = ticks.step / Math.pow(10, Math.floor(Math.log10(ticks.step) + 1e-9));
        expect([1, 2, 2.5, 5].some((m) => Math.abs(mantissa - m) < 1e-6)).toBe(true);
        for (let i = 1; i < ticks.values.length; i++) {
          expect(ticks.values[i]! - ticks.values[i - 1]!).toBeCloseTo(ticks.step, 6);
        }
      }),
    );
  });

  test('spreadIndices keeps the ends and spreads the rest', () => {
    expect(spreadIndices(3, 5)).toEqual([0, 1, 2]);
    expect(spreadIndices(101, 5)).toEqual([0, 25, 50, 75, 100]);
    expect(spreadIndices(0, 5)).toEqual([]);
  });
});

describe('table', () => {
  const columns = [
    { name: 'Security' },
    { name: 'Weight', format: 'percent' as const },
    { name: `P&L ${XSS}` },
  ];

  test('heading, numeric columns right-aligned, negatives marked, missing cells dashed, all text escaped', () => {
    const out = renderTable({
      columns,
      rows: [
        [XSS, 0.25, -1500.5],
        ['MSFT', null, 2000],
        ['Cash', 0.1, true],
      ],
    }).value;
    expect(out).toContain(
      `<thead><tr><th scope="col">Security</th><th scope="col" class="num">Weight</th><th scope="col">P&amp;L ${ESCAPED_XSS}</th></tr></thead>`,
    );
    expect(out).toContain(
      `<tr><td>${ESCAPED_XSS}</td><td class="num">25.00%</td><td class="num neg">-1,500.5</td></tr>`,
    );
    expect(out).toContain('<tr><td>MSFT</td><td class="missing">—</td><td class="num">2,000</td></tr>');
    expect(out).toContain('<td>Yes</td>');
    expect(tagNames(out)).not.toContain('script');
  });

  test('empty rows say so; a long table is cut with a note', () => {
    expect(renderTable({ columns, rows: [] }).value).toBe('<p class="empty">No rows to show.</p>');
    const rows = Array.from({ length: MAX_TABLE_ROWS + 5 }, (_, i) => [`S${i}`, i / 1000, i]);
    const out = renderTable({ columns, rows }).value;
    expect(out.match(/<tr>/g)).toHaveLength(MAX_TABLE_ROWS + 1);
    expect(out).toContain('Showing the first 1,000 of 1,005 rows.');
  });
});

describe('bar chart', () => {
  const labels = ['AAPL', 'MSFT', 'TLT'];

  test('one bar per value; positive bars stand on the zero line, negative bars hang below it', () => {
    const svg = renderBarChart({
      id: 'mctr',
      title: 'Risk',
      labels,
      series: [{ name: '', values: [4, 2, -1] }],
    }).value;
    expect(
      svg.startsWith('<svg class="chart bar-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 '),
    ).toBe(true);
    expect(svg).toContain('role="img" aria-labelledby="mctr-title"');
    expect(svg).toContain('<title id="mctr-title">Risk</title>');
    const zero = zeroLineY(svg);
    const [a, b, c] = bars(svg);
    expect([a!.tone, b!.tone, c!.tone]).toEqual(['pos', 'pos', 'neg']);
    expect(a!.y + a!.height).toBeCloseTo(zero, 1);
    expect(b!.y + b!.height).toBeCloseTo(zero, 1);
    expect(c!.y).toBeCloseTo(zero, 1);
    // Heights are proportional to the values.
    expect(a!.height / b!.height).toBeCloseTo(2, 1);
    expect(a!.height / c!.height).toBeCloseTo(4, 1);
    for (const bar of [a!, b!, c!]) expect(bar.width).toBeGreaterThan(10);
    expect(a!.x).toBeLessThan(b!.x);
    expect(texts(svg, 'category-label')).toEqual(labels);
    expect(texts(svg, 'value-label')).toEqual(['4', '2', '-1']);
    expect(svg).toContain('<title>TLT: -1</title>');
  });

  test('grouped series: a colour per series, a legend, negative values still below zero', () => {
    const svg = renderBarChart({
      id: 'sectors',
      title: 'Sectors',
      labels: ['Tech', 'Energy'],
      series: [
        { name: 'Portfolio', values: [0.3, -0.02] },
        { name: `Bench ${XSS}`, values: [0.25, null] },
      ],
      style: { format: 'percent' },
    }).value;
    const drawn = bars(svg);
    expect(drawn.map((bar) => bar.tone)).toEqual(['s0', 's1', 's0']);
    expect(drawn[2]!.y).toBeCloseTo(zeroLineY(svg), 1);
    // Legend names are cut at 28 characters before escaping.
    expect(texts(svg, 'legend-label')).toEqual([
      'Portfolio',
      'Bench &lt;script&gt;alert(&quot;x&quot;)&lt;/s…',
    ]);
    expect(svg).toContain('<title>Energy · Portfolio: -2.00%</title>');
    expect(tagNames(svg)).not.toContain('script');
    expect(texts(svg, 'tick-label')).toContain('0%');
  });

  test('long or many labels turn and thin out; many bars drop their value labels', () => {
    const many = Array.from({ length: 120 }, (_, i) => `Security number ${i} with a long name`);
    const svg = renderBarChart({
      id: 'many',
      title: 'Many',
      labels: many,
      series: [{ name: '', values: many.map((_, i) => i - 60) }],
    }).value;
    expect(bars(svg)).toHaveLength(120);
    expect(texts(svg, 'value-label')).toEqual([]);
    const categories = [...svg.matchAll(/<text class="category-label"[^>]*transform="rotate\(-40 /g)];
    expect(categories.length).toBeGreaterThan(5);
    expect(categories.length).toBeLessThan(120);
    expect(svg).toContain('>Security number 4…</text>');
  });

  test('no labels or only nulls: a sentence, not an empty SVG', () => {
    expect(
      renderBarChart({ id: 'e', title: 'E', labels: [], series: [{ name: '', values: [] }] }).value,
    ).toBe('<p class="empty">No values to chart.</p>');
    expect(
      renderBarChart({ id: 'e', title: 'E', labels: ['A'], series: [{ name: '', values: [null] }] }).value,
    ).toBe('<p class="empty">No values to chart.</p>');
  });

  test('escapes the title and labels', () => {
    const svg = renderBarChart({
      id: 'x',
      title: XSS,
      labels: [XSS],
      series: [{ name: '', values: [1] }],
    }).value;
    expect(svg).toContain(`<title id="x-title">${ESCAPED_XSS}</title>`);
    expect(tagNames(svg)).not.toContain('script');
  });
});

describe('line chart', () => {
  const x = ['20240102', '20240103', '20240104', '20240105'];

  test('a path through every point, axes with ticks and date labels, markers with tooltips', () => {
    const svg = renderLineChart({
      id: 'nav',
      title: 'NAV',
      x,
      series: [{ name: '', values: [100, 102, 101, 105] }],
    }).value;
    const paths = [...svg.matchAll(/<path class="line s0" d="([^"]+)"/g)].map((m) => m[1]!);
    expect(paths).toHaveLength(1);
    expect(paths[0]!.match(/[ML]/g)).toEqual(['M', 'L', 'L', 'L']);
    expect(svg).toContain('<line class="axis"');
    expect(texts(svg, 'tick-label')).toEqual(
      expect.arrayContaining(['100', '105', '2 Jan 2024', '5 Jan 2024']),
    );
    expect(svg.match(/<circle class="marker s0"/g)).toHaveLength(4);
    expect(svg).toContain('<title>4 Jan 2024: 101</title>');
    // One series: shaded, no legend.
    expect(svg).toContain('<path class="area s0"');
    expect(svg).not.toContain('class="legend"');
    // The value axis fits the data instead of starting at zero.
    expect(texts(svg, 'tick-label')).not.toContain('0');
  });

  test('higher values are drawn higher', () => {
    const svg = renderLineChart({
      id: 'n',
      title: 'N',
      x: [1, 2],
      series: [{ name: '', values: [1, 3] }],
    }).value;
    const match = /<path class="line s0" d="M[\d.]+ ([\d.]+)L[\d.]+ ([\d.]+)"/.exec(svg)!;
    expect(Number(match[1])).toBeGreaterThan(Number(match[2]));
  });

  test('nulls break the line; a lone point is a dot; several series get a legend; zero line when crossing', () => {
    const svg = renderLineChart({
      id: 'pnl',
      title: 'P&L',
      x: [1, 2, 3, 4, 5, 6, 7],
      series: [
        { name: 'Fund', values: [-1, 2, null, 3, 3.5, null, 4] },
        { name: XSS, values: [1, 1, 1, 1, 1, 1, 1] },
      ],
    }).value;
    expect(svg.match(/<path class="line s0"/g)).toHaveLength(2);
    expect(svg.match(/<circle class="dot s0"/g)).toHaveLength(1);
    expect(svg.match(/<path class="line s1"/g)).toHaveLength(1);
    expect(svg).not.toContain('class="area');
    expect(texts(svg, 'legend-label')).toEqual(['Fund', ESCAPED_XSS]);
    expect(svg).toContain('<line class="zero"');
    expect(tagNames(svg)).not.toContain('script');
  });

  test('a 100,000-point series is thinned but keeps its extremes', () => {
    const values = Array.from({ length: 100_000 }, (_, i) => Math.sin(i / 1000));
    values[42_424] = 50;
    values[77_777] = -50;
    const thinned = thinSeries(values);
    expect(thinned.length).toBeLessThanOrEqual(MAX_DRAWN_POINTS + 2);
    expect(thinned.some((p) => p.value === 50 && p.index === 42_424)).toBe(true);
    expect(thinned.some((p) => p.value === -50 && p.index === 77_777)).toBe(true);
    const indices = thinned.map((p) => p.index);
    expect(indices).toEqual([...indices].sort((a, b) => a - b));
    const svg = renderLineChart({
      id: 'long',
      title: 'Long',
      x: values.map((_, i) => i),
      series: [{ name: '', values }],
    }).value;
    expect(svg.length).toBeLessThan(60_000);
    expect(svg).not.toContain('class="marker');
  });

  test('empty: a sentence', () => {
    expect(renderLineChart({ id: 'e', title: 'E', x: [], series: [{ name: '', values: [] }] }).value).toBe(
      '<p class="empty">No values to chart.</p>',
    );
  });
});

describe('widget format', () => {
  const read = (raw: Record<string, unknown>) => readWidget({ id: 'w', name: 'W', ...raw }, 'widgets[0]');
  const refusal = (raw: Record<string, unknown>) => {
    try {
      read(raw);
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidInput);
      return (error as Error).message;
    }
    throw new Error('accepted');
  };

  test('tables from arrays with columns, or from objects', () => {
    expect(
      read({ type: 'table', columns: ['A', { name: 'B', format: 'percent' }], rows: [[1], ['x', 0.5]] }),
    ).toMatchObject({
      type: 'table',
      columns: [{ name: 'A' }, { name: 'B', format: 'percent' }],
      rows: [
        [1, null],
        ['x', 0.5],
      ],
    });
    expect(read({ type: 'table', rows: [{ a: 1 }, { b: 2, a: 3 }] })).toMatchObject({
      columns: [{ name: 'a' }, { name: 'b' }],
      rows: [
        [1, null],
        [3, 2],
      ],
    });
  });

  test('bars and lines take values or series; unknown types pass through untouched', () => {
    expect(read({ type: 'bar', labels: ['A', 2], values: [1, null] })).toMatchObject({
      labels: ['A', '2'],
      series: [{ name: '', values: [1, null] }],
    });
    expect(read({ type: 'line', x: [1, '2'], series: [{ values: [1, 2] }] })).toMatchObject({
      series: [{ name: 'Series 1', values: [1, 2] }],
    });
    expect(read({ type: 'chart', format: 'anything', config: {} })).toEqual({
      id: 'w',
      name: 'W',
      description: null,
      type: 'other',
      declaredType: 'chart',
    });
  });

  test.each([
    [{ type: 'table', rows: {} }, 'widgets[0].rows must be an array.'],
    [{ type: 'table', rows: [[1]] }, 'widgets[0].columns is required when rows are arrays.'],
    [
      { type: 'table', columns: ['a'], rows: [[1, 2]] },
      'widgets[0].rows[0] has 2 cells but there are 1 columns.',
    ],
    [
      { type: 'table', columns: ['a'], rows: [[{}]] },
      'widgets[0].rows[0][0] must be a string, number, boolean or null.',
    ],
    [
      { type: 'table', columns: [7], rows: [] },
      'widgets[0].columns[0] must be a column name or {name, format?, currency?, decimals?}.',
    ],
    [{ type: 'bar', labels: ['a', 'b'], values: [1] }, 'widgets[0].values has 1 values but labels has 2.'],
    [{ type: 'bar', labels: ['a'], values: ['1'] }, 'widgets[0].values[0] must be a number or null.'],
    [{ type: 'bar', labels: [{}], values: [1] }, 'widgets[0].labels[0] must be a string or a number.'],
    [{ type: 'bar', labels: ['a'] }, 'widgets[0] needs values (one series) or series: [{name, values}].'],
    [{ type: 'line', x: [1], series: [] }, 'widgets[0].series must hold 1 to 8 series.'],
    [{ type: 'line', x: [1], series: [5] }, 'widgets[0].series[0] must be an object with name and values.'],
    [{ type: 'text', text: 5 }, 'widgets[0].text must be a string of at most 20000 characters.'],
    [
      { type: 'text', text: 'x', format: 'euros' },
      'widgets[0].format must be one of number, percent, currency, plain.',
    ],
    [
      { type: 'bar', labels: [], values: [], currency: 'usd' },
      'widgets[0].currency must be a 3-letter ISO 4217 code such as USD.',
    ],
    [
      { type: 'bar', labels: [], values: [], decimals: 9 },
      'widgets[0].decimals must be a whole number from 0 to 8.',
    ],
    [
      { type: 'text', text: 'x', description: 3 },
      'widgets[0].description must be a string of at most 500 characters.',
    ],
  ])('%j is refused: %s', (raw, message) => {
    expect(refusal(raw)).toBe(message);
  });
});

describe('report data', () => {
  test('array of arrays with a heading row, array of objects, headless rows, other shapes', () => {
    expect(
      tabularShape([
        ['Symbol', 'Weight'],
        ['AAPL', 0.5],
      ]),
    ).toEqual({
      kind: 'table',
      columns: [{ name: 'Symbol' }, { name: 'Weight' }],
      rows: [['AAPL', 0.5]],
      header: true,
    });
    expect(tabularShape([{ a: 1, b: { nested: true } }, { c: 'x' }])).toEqual({
      kind: 'table',
      columns: [{ name: 'a' }, { name: 'b' }, { name: 'c' }],
      rows: [
        [1, '{"nested":true}', null],
        [null, null, 'x'],
      ],
      header: true,
    });
    expect(tabularShape([[1, 2], [3]])).toMatchObject({
      kind: 'table',
      header: false,
      rows: [
        [1, 2],
        [3, null],
      ],
    });
    expect(tabularShape([])).toEqual({ kind: 'empty' });
    expect(tabularShape([1, 'two'])).toEqual({ kind: 'json' });
    expect(renderReportData([])).toBeNull();
    expect(renderReportData([[1, 2]])!.value).not.toContain('<thead>');
  });

  test('other shapes are shown as escaped JSON, cut when huge', () => {
    const out = renderReportData([XSS, { deep: [1] }])!.value;
    expect(out).toContain('<pre class="json">');
    expect(out).toContain('&lt;script&gt;');
    expect(tagNames(out)).toEqual(['pre']);
    const huge = renderReportData([1, 'x'.repeat(MAX_JSON_CHARS * 2)])!.value;
    expect(huge.length).toBeLessThan(MAX_JSON_CHARS + 500);
    expect(huge).toContain('Showing the first 100,000 of');
  });
});

describe('report page', () => {
  const model = (overrides: Partial<ReportPageModel> = {}): ReportPageModel => ({
    name: `Q1 review ${XSS}`,
    description: `For <b>clients</b>`,
    tags: ['risk', '<x>'],
    date: '20240328',
    updatedAt: new Date(Date.UTC(2024, 2, 28, 18, 30)),
    data: [
      ['Measure', 'Value'],
      [XSS, -0.05],
    ],
    widgets: [
      { id: 'holdings', name: `Holdings ${XSS}`, type: 'table', columns: ['Security'], rows: [[XSS]] },
      { id: 'mctr', name: 'MCTR', type: 'bar', labels: [XSS, 'B'], values: [1, -1] },
      { id: 'nav', name: 'NAV', type: 'line', x: ['20240101', '20240102'], values: [1, 2] },
      { id: 'note', name: 'Note', type: 'text', text: `First ${XSS}\n\nSecond` },
      { id: 'legacy', name: 'Legacy', type: 'bar', labels: ['a'], values: ['not a number'] },
      { id: 'other', name: 'Other', type: 'pie' },
    ],
    theme: 'dark',
    ...overrides,
  });

  test('every user string is escaped: the only elements are the page’s own', () => {
    const page = renderReportPage(model());
    expect(page.startsWith('<!doctype html>\n<html lang="en" class="theme-dark">')).toBe(true);
    expect(tagNames(page)).not.toContain('script');
    expect(tagNames(page)).not.toContain('b');
    expect(tagNames(page)).not.toContain('x');
    expect(page).toContain(`<title>Q1 review ${ESCAPED_XSS}</title>`);
    expect(page).toContain(`<h1>Q1 review ${ESCAPED_XSS}</h1>`);
    expect(page).toContain('<p class="description">For &lt;b&gt;clients&lt;/b&gt;</p>');
    expect(page).toContain('<li>#&lt;x&gt;</li>');
    expect(page).toContain('Portfolio report · <time>28 March 2024</time>');
    expect(page).toContain('Last updated 28 March 2024, 18:30 UTC');
  });

  test('widgets in order, each drawn by its type; a broken one explains itself', () => {
    const page = renderReportPage(model({ sharedUntil: new Date(Date.UTC(2024, 2, 28, 19, 30)) }));
    const ids = [...page.matchAll(/<section class="card[^"]*" id="([^"]+)"/g)].map((m) => m[1]);
    expect(ids).toEqual([
      'widget-holdings',
      'widget-mctr',
      'widget-nav',
      'widget-note',
      'widget-legacy',
      'widget-other',
      'report-data',
    ]);
    expect(page).toContain('<section class="card wide" id="widget-holdings" data-widget-type="table">');
    expect(page).toContain('<svg class="chart bar-chart"');
    expect(page).toContain('<svg class="chart line-chart"');
    expect(page).toContain(`<div class="prose"><p>First ${ESCAPED_XSS}</p><p>Second</p></div>`);
    expect(page).toContain('This widget could not be drawn: widgets[4].values[0] must be a number or null.');
    expect(page).toContain('This widget (pie) has no picture on this page.');
    expect(page).toContain('<td class="num neg">-0.05</td>');
    expect(page).toContain('Shared link · valid until 28 March 2024, 19:30 UTC');
  });

  test('an empty report says so; the light theme is a class', () => {
    const page = renderReportPage(
      model({ widgets: [], data: [], theme: 'light', description: null, tags: [] }),
    );
    expect(page).toContain('class="theme-light"');
    expect(page).toContain('<p class="empty">This report has no content yet.</p>');
    expect(page).not.toContain('class="description"');
    expect(page).not.toContain('<svg');
  });

  test('a widget page holds that widget only; an unknown widget id has none', () => {
    const page = renderWidgetPage(model(), 'mctr')!;
    expect(page).toContain('<title>MCTR · Q1 review');
    expect(page.match(/<section class="card/g)).toHaveLength(1);
    expect(page).toContain('<svg class="chart bar-chart"');
    expect(page).not.toContain('<h1>');
    expect(renderWidgetPage(model(), 'nope')).toBeNull();
  });

  test('message pages escape their words', () => {
    const page = renderMessagePage({ status: 410, title: 'This shared link has expired', message: XSS });
    expect(page).toContain('<h1>This shared link has expired</h1>');
    expect(page).toContain('Portfolio Analytics · 410');
    expect(page).toContain(ESCAPED_XSS);
    expect(tagNames(page)).not.toContain('script');
  });
});
