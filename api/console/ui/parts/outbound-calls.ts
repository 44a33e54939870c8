/** The step view's "Outbound calls": the step's HTTP requests and e-mails, one row each. */
import { h } from '../dom';
import { outboundCalls } from '../outbound-log';

/** The section's content, or null when the step called nothing (the section is then left out). */
export function outboundCallsTable(
  logs: ReadonlyArray<{ message?: unknown; source?: unknown }> | null | undefined,
): HTMLElement | null {
  const calls = outboundCalls(logs);
  if (calls.length === 0) return null;
  const number = (value: number | null, unit = '') =>
    value === null ? '—' : `${value.toLocaleString('en-US')}${unit}`;
  return h(
    'div',
    { class: 'calls-wrap', tabindex: 0, role: 'region', 'aria-label': 'Outbound calls of this step' },
    h(
      'table',
      { class: 'list calls', id: 'step-calls' },
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          ['Method', 'URL or server', 'Outcome', 'Bytes', 'Time', 'Integration'].map((t) => h('th', null, t)),
        ),
      ),
      h(
        'tbody',
        null,
        calls.map((c) =>
          h(
            'tr',
            { class: c.ok ? 'call-ok' : 'call-bad' },
            h('td', null, h('code', null, c.method)),
            h(
              'td',
              null,
              c.target ? h('code', null, c.target) : '—',
              c.recipients === null ? null : h('span', { class: 'note' }, ` · ${c.recipients} recipient(s)`),
            ),
            h(
              'td',
              null,
              h('span', { class: c.ok ? 'outcome outcome-ok' : 'outcome outcome-bad' }, c.outcome),
              c.reason === null ? null : h('span', { class: 'reason' }, ` ${c.reason}`),
            ),
            h('td', null, number(c.bytes)),
            h('td', null, number(c.ms, ' ms')),
            h('td', null, c.integration ?? '—'),
          ),
        ),
      ),
    ),
  );
}
