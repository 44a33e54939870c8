/** Data (read-only): datastores (one shown as a table or JSON), files, reports and the audit log. */
import { call, query } from '../api';
import { type Child, h, pretty, replace, type Stamp, when } from '../dom';
import { badge, errorBox, link, section } from '../parts/elements';
import { apiDay, field, filterTo } from '../parts/form-fields';
import { frame } from '../parts/frame';
import { pagedList } from '../parts/paged-list';
import { currentWorkspace } from '../session';

interface Stored {
  id: string;
  name: string;
  description?: string | null;
  updated: Stamp;
  tags?: string[];
}

function dataNav(active: string): HTMLElement {
  const item = (hash: string, text: string) =>
    h(
      'a',
      { href: hash, class: active === text ? 'active' : '', 'aria-current': active === text ? 'page' : null },
      text,
    );
  return h(
    'nav',
    { class: 'subnav', 'aria-label': 'Data' },
    item('#/data/datastores', 'Datastores'),
    item('#/data/files', 'Files'),
    item('#/data/reports', 'Reports'),
    item('#/data/audit', 'Audit log'),
  );
}

export function datastoresPage(params: URLSearchParams): Promise<void> {
  return pagedList<Stored>({
    active: 'Data',
    title: 'Datastores',
    path: '/v2/datastores',
    key: 'datastores',
    params,
    base: '#/data/datastores',
    extra: { workspace: currentWorkspace() },
    filters: dataNav('Datastores'),
    id: 'datastores',
    columns: [
      { title: 'Name', cell: (d) => link(`#/data/datastores/${encodeURIComponent(d.id)}`, d.name) },
      { title: 'Tags', cell: (d) => (d.tags ?? []).join(' ') },
      { title: 'Updated', cell: (d) => when(d.updated) },
    ],
  });
}

const PREVIEW_ROWS = 50;

export async function datastorePage(id: string, params: URLSearchParams): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame('Data', h('div', null, dataNav('Datastores'), body));
  try {
    const { datastore } = await call<{ datastore: Stored & { data: unknown } }>(
      'GET',
      `/v2/datastores/${encodeURIComponent(id)}${query({ workspace: currentWorkspace() })}`,
    );
    const data = datastore.data;
    let preview: Child;
    if (Array.isArray(data) && data.length > 0 && data.every(Array.isArray)) {
      // Rows of cells, the first the headings: shown PREVIEW_ROWS at a time.
      const [heading, ...rest] = data as unknown[][];
      const from = Math.max(0, Number(params.get('from') ?? 0) || 0);
      const slice = rest.slice(from, from + PREVIEW_ROWS);
      const at = (n: number) => `#/data/datastores/${encodeURIComponent(id)}?from=${n}`;
      const cell = (value: unknown) =>
        typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value ?? '');
      preview = [
        h(
          'table',
          { class: 'list', id: 'datastore-table' },
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              heading!.map((v) => h('th', null, cell(v))),
            ),
          ),
          h(
            'tbody',
            null,
            slice.map((row) =>
              h(
                'tr',
                null,
                row.map((v) => h('td', null, cell(v))),
              ),
            ),
          ),
        ),
        h(
          'div',
          { class: 'pager' },
          h(
            'span',
            { class: 'note' },
            `Rows ${rest.length ? from + 1 : 0}–${from + slice.length} of ${rest.length}`,
          ),
          from > 0 ? link(at(Math.max(0, from - PREVIEW_ROWS)), '← Previous') : null,
          from + PREVIEW_ROWS < rest.length ? link(at(from + PREVIEW_ROWS), 'Next →') : null,
        ),
      ];
    } else {
      preview = h('pre', { id: 'datastore-json' }, pretty(data));
    }
    replace(
      body,
      h('h1', null, datastore.name),
      datastore.description ? h('p', { class: 'note' }, datastore.description) : null,
      h('p', { class: 'ids' }, h('code', null, datastore.id), ' · updated ', when(datastore.updated)),
      section('Data', preview),
    );
  } catch (error) {
    replace(body, errorBox(error));
  }
}

/** An address the API handed out (absolute, with the service's public URL) as a path on this origin. */
const onThisOrigin = (url: string) => {
  const parsed = new URL(url, location.origin);
  return parsed.pathname + parsed.search;
};

export function filesPage(params: URLSearchParams): Promise<void> {
  return pagedList<Stored & { content_type: string; size: number; url: string }>({
    active: 'Data',
    title: 'Files',
    path: '/v2/files',
    key: 'files',
    params,
    base: '#/data/files',
    extra: { workspace: currentWorkspace() },
    filters: dataNav('Files'),
    id: 'files',
    columns: [
      { title: 'Name', cell: (f) => f.name },
      { title: 'Type', cell: (f) => f.content_type },
      { title: 'Size', cell: (f) => `${f.size.toLocaleString('en-US')} bytes` },
      { title: 'Updated', cell: (f) => when(f.updated) },
      { title: '', cell: (f) => h('a', { href: onThisOrigin(f.url), download: f.name }, 'Download') },
    ],
  });
}

export function reportsPage(params: URLSearchParams): Promise<void> {
  return pagedList<Stored & { relative_url: string }>({
    active: 'Data',
    title: 'Reports',
    path: '/v2/reports',
    key: 'reports',
    params,
    base: '#/data/reports',
    extra: { workspace: currentWorkspace() },
    filters: dataNav('Reports'),
    id: 'reports',
    columns: [
      {
        title: 'Name',
        cell: (r) =>
          h('a', { href: onThisOrigin(r.relative_url), target: '_blank', rel: 'noopener' }, r.name),
      },
      { title: 'Tags', cell: (r) => (r.tags ?? []).join(' ') },
      { title: 'Updated', cell: (r) => when(r.updated) },
    ],
  });
}

interface AuditEntry {
  id: string;
  created: Stamp;
  activity: string;
  operation: string;
  source: string;
  status: string;
  entity_type: string;
  entity_name: string | null;
  user_email: string;
}

export function auditPage(params: URLSearchParams): Promise<void> {
  const start = params.get('start') ?? '';
  const end = params.get('end') ?? '';
  const filters = h(
    'div',
    null,
    dataNav('Audit log'),
    h(
      'form',
      {
        class: 'filters',
        on: { submit: filterTo('#/data/audit') },
      },
      field('From', h('input', { type: 'date', name: 'start', value: start })),
      field('To', h('input', { type: 'date', name: 'end', value: end })),
      h('button', { type: 'submit' }, 'Filter'),
    ),
  );
  return pagedList<AuditEntry>({
    active: 'Data',
    title: 'Audit log',
    path: '/v2/audit_logs',
    key: 'audit_logs',
    params,
    base: '#/data/audit',
    extra: { start: start && apiDay(start), end: end && apiDay(end) },
    filters,
    id: 'audit',
    columns: [
      { title: 'When', cell: (a) => when(a.created) },
      { title: 'Who', cell: (a) => a.user_email },
      { title: 'What', cell: (a) => a.activity },
      { title: 'Operation', cell: (a) => a.operation },
      { title: 'Source', cell: (a) => a.source },
      { title: 'Status', cell: (a) => badge(a.status) },
    ],
  });
}
