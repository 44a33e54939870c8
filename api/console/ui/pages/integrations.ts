/**
 * Integrations (account-wide): the list, and one form to create or change an HTTP, SMTP or WEBHOOK
 * integration. Credentials never go into an integration: a header takes `{{secret:NAME}}` and an SMTP
 * login names the secret that holds its password, each looked up in the workspace of the run.
 */
import { call, query } from '../api';
import { h, replace, type Stamp, when } from '../dom';
import { FieldErrors } from '../parts/field-errors';
import type { PageKit } from '../page-kit';
import { listSecrets } from './secrets';

export interface Integration {
  id: string;
  name: string;
  description: string | null;
  type: 'WEBHOOK' | 'HTTP' | 'SMTP';
  webhook_path: string | null;
  secrets_used: string[];
  base_url: string | null;
  headers: Record<string, string> | null;
  timeout_ms: number | null;
  allowed_methods: string[] | null;
  allow_http: boolean | null;
  host: string | null;
  port: number | null;
  security: string | null;
  username: string | null;
  password_secret: string | null;
  from: string | null;
  updated: Stamp;
  version: string;
}

const TYPES = ['HTTP', 'SMTP', 'WEBHOOK'] as const;
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
const SECURITY: Array<[string, string]> = [
  ['starttls', 'STARTTLS (default: refused if the server does not offer it)'],
  ['tls', 'TLS from the first byte (port 465)'],
  ['none', 'None: in the clear'],
];

/** The account's integrations, most recent first. */
export async function listIntegrations(): Promise<Integration[]> {
  return (await call<{ integrations: Integration[] }>('GET', `/v2/integrations${query({ page_size: 100 })}`))
    .integrations;
}

/** Where an integration sends or receives: its base URL, its mail server, its webhook path. */
function address(i: Integration): string {
  if (i.type === 'HTTP') return i.base_url ?? '';
  if (i.type === 'SMTP') return `${i.host ?? ''}:${i.port ?? ''} (${i.security ?? 'starttls'})`;
  return i.webhook_path ?? '';
}

function secretNames(names: string[]): HTMLElement | string {
  if (names.length === 0) return '—';
  return h(
    'span',
    { class: 'names' },
    names.map((name) => h('code', null, name)),
  );
}

export async function integrationsPage(kit: PageKit): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await kit.frame(
    'Integrations',
    h(
      'div',
      null,
      h(
        'div',
        { class: 'heading' },
        h('h1', null, 'Integrations'),
        h('a', { href: '#/integrations/new' }, 'New integration'),
      ),
      h(
        'p',
        { class: 'note' },
        'Seen from every workspace. Scripts call an API through an HTTP integration (',
        h('code', null, 'sdk.request'),
        ') and send e-mail through an SMTP one (',
        h('code', null, 'sdk.sendEmail'),
        '): the integration holds the address and the credentials, as secrets. A webhook receives files.',
      ),
      body,
    ),
  );
  try {
    const integrations = await listIntegrations();
    if (integrations.length === 0) {
      replace(body, h('p', { class: 'note' }, 'No integrations yet.'));
      return;
    }
    replace(
      body,
      kit.listTable(
        integrations,
        [
          {
            title: 'Name',
            cell: (i) => h('a', { href: `#/integrations/${encodeURIComponent(i.id)}` }, i.name),
          },
          { title: 'Type', cell: (i) => i.type },
          { title: 'Address', cell: (i) => h('code', null, address(i)) },
          { title: 'Secrets used', cell: (i) => secretNames(i.secrets_used ?? []) },
          { title: 'Updated', cell: (i) => when(i.updated) },
        ],
        { id: 'integrations', row: (i) => ({ 'data-integration': i.id }) },
      ),
    );
  } catch (error) {
    replace(body, kit.errorBox(error));
  }
}

interface HeaderRow {
  name: HTMLInputElement;
  value: HTMLInputElement;
  hint: HTMLElement;
  key: string | null;
}

export async function integrationFormPage(kit: PageKit, id: string | null): Promise<void> {
  const workspace = kit.workspace();
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await kit.frame('Integrations', body);
  let existing: Integration | null = null;
  let secrets: string[] = [];
  try {
    const [found, stored] = await Promise.all([
      id ? call<{ integration: Integration }>('GET', `/v2/integrations/${encodeURIComponent(id)}`) : null,
      listSecrets(workspace).catch(() => []),
    ]);
    existing = found?.integration ?? null;
    secrets = stored.map((s) => s.name).sort();
  } catch (error) {
    replace(body, kit.errorBox(error));
    return;
  }
  const general = h('div', { 'aria-live': 'polite', id: 'intg-errors' });
  const errors = new FieldErrors(general);

  const name = h('input', { id: 'intg-name', required: true, value: existing?.name ?? '' });
  const description = h('input', { id: 'intg-description', value: existing?.description ?? '' });
  const type = h(
    'select',
    { id: 'intg-type' },
    TYPES.map((t) => h('option', { value: t, selected: t === (existing?.type ?? 'HTTP') }, t)),
  );

  // HTTP
  const baseUrl = h('input', {
    id: 'intg-base-url',
    inputmode: 'url',
    spellcheck: 'false',
    placeholder: 'https://api.vendor.test/v1',
    value: existing?.base_url ?? '',
  });
  const allowHttp = h('input', {
    id: 'intg-allow-http',
    type: 'checkbox',
    checked: existing?.allow_http === true,
  });
  const headerRows: HeaderRow[] = [];
  const headerList = h('div', { class: 'header-rows', id: 'intg-headers' });
  let target: HTMLInputElement | null = null;
  const renderHeaders = () =>
    replace(
      headerList,
      headerRows.length === 0 ? h('p', { class: 'note' }, 'No headers.') : null,
      headerRows.map((row, index) => {
        row.name.setAttribute('aria-label', `Header ${index + 1} name`);
        row.value.setAttribute('aria-label', `Header ${index + 1} value`);
        return h(
          'div',
          { class: 'header-row', 'data-header': String(index) },
          row.name,
          row.value,
          h(
            'button',
            {
              type: 'button',
              'aria-label': `Remove header ${index + 1}`,
              on: {
                click: () => {
                  headerRows.splice(index, 1);
                  if (target === row.value) target = null;
                  renderHeaders();
                },
              },
            },
            'Remove',
          ),
          row.hint,
        );
      }),
    );
  const addHeader = (headerName = '', headerValue = ''): HeaderRow => {
    const row: HeaderRow = {
      name: h('input', {
        value: headerName,
        spellcheck: 'false',
        placeholder: 'Authorization',
        class: 'header-name',
      }),
      value: h('input', {
        value: headerValue,
        spellcheck: 'false',
        placeholder: 'Bearer {{secret:VENDOR_TOKEN}}',
        class: 'header-value',
      }),
      hint: h('div', { class: 'field-error', 'aria-live': 'polite' }),
      key: null,
    };
    row.value.addEventListener('focus', () => (target = row.value));
    headerRows.push(row);
    renderHeaders();
    return row;
  };
  for (const [headerName, headerValue] of Object.entries(existing?.headers ?? {}))
    addHeader(headerName, headerValue);
  renderHeaders();

  const pick = h(
    'select',
    { id: 'intg-secret-pick', disabled: secrets.length === 0 },
    secrets.length === 0
      ? h('option', { value: '' }, `(no secrets in workspace ${workspace})`)
      : secrets.map((s) => h('option', { value: s }, s)),
  );
  const insert = h(
    'button',
    {
      type: 'button',
      id: 'intg-secret-insert',
      disabled: secrets.length === 0,
      on: {
        click: () => {
          if (!pick.value) return;
          // Into the header value last in focus, else the last one (a new row when there is none).
          const into = target ?? headerRows[headerRows.length - 1]?.value ?? addHeader().value;
          const text = `{{secret:${pick.value}}}`;
          const start = into.selectionStart ?? into.value.length;
          const end = into.selectionEnd ?? into.value.length;
          into.setRangeText(text, start, end, 'end');
          into.focus();
        },
      },
    },
    'Insert into the header value',
  );
  const methods = METHODS.map((m) =>
    h('input', {
      type: 'checkbox',
      id: `intg-method-${m}`,
      value: m,
      checked: (existing?.allowed_methods ?? ['GET', 'POST']).includes(m),
    }),
  );
  const timeout = h('input', {
    id: 'intg-timeout',
    type: 'number',
    min: 1,
    max: 60000,
    step: 1,
    placeholder: '10000',
    value:
      existing?.timeout_ms === null || existing?.timeout_ms === undefined ? '' : String(existing.timeout_ms),
  });

  // SMTP
  const host = h('input', {
    id: 'intg-host',
    spellcheck: 'false',
    placeholder: 'smtp.example.com',
    value: existing?.host ?? '',
  });
  const port = h('input', {
    id: 'intg-port',
    type: 'number',
    min: 1,
    max: 65535,
    placeholder: '587 (465 with TLS)',
    value: existing?.port === null || existing?.port === undefined ? '' : String(existing.port),
  });
  const security = h(
    'select',
    { id: 'intg-security' },
    SECURITY.map(([v, label]) =>
      h('option', { value: v, selected: v === (existing?.security ?? 'starttls') }, label),
    ),
  );
  const username = h('input', {
    id: 'intg-username',
    spellcheck: 'false',
    autocomplete: 'off',
    value: existing?.username ?? '',
  });
  const current = existing?.password_secret ?? '';
  const passwordSecret = h(
    'select',
    { id: 'intg-password-secret' },
    h('option', { value: '' }, '(none: no login)'),
    secrets.map((s) => h('option', { value: s, selected: s === current }, s)),
    current && !secrets.includes(current)
      ? h('option', { value: current, selected: true }, `${current} (not in workspace ${workspace})`)
      : null,
  );
  const from = h('input', {
    id: 'intg-from',
    spellcheck: 'false',
    placeholder: 'Risk desk <risk@example.com>',
    value: existing?.from ?? '',
  });

  const note = (text: string, ...more: Array<HTMLElement | string>) =>
    h('p', { class: 'note hint' }, text, ...more);
  const timeoutField = () =>
    kit.field('Timeout (ms, at most 60000; empty: 10000)', timeout, errors.hint('timeout_ms', timeout));
  const secretsLink = h('a', { href: '#/secrets' }, `Secrets of workspace ${workspace}`);

  const settings = h('div');
  const showSettings = () => {
    errors.clear();
    const chosen = existing?.type ?? type.value;
    if (chosen === 'HTTP') {
      replace(
        settings,
        kit.section(
          'HTTP',
          kit.field(
            'Base URL',
            baseUrl,
            h(
              'div',
              null,
              note(
                'Every call’s path is joined under it. https; its path (never its host) may hold {{secret:NAME}}.',
              ),
              errors.hint('base_url', baseUrl),
            ),
          ),
          h(
            'div',
            { class: 'field check' },
            allowHttp,
            h('label', { for: 'intg-allow-http' }, 'Allow http (calls go in the clear)'),
          ),
          errors.hint('allow_http', allowHttp),
          h(
            'fieldset',
            { class: 'headers', id: 'intg-headers-set' },
            h('legend', null, 'Headers'),
            h(
              'div',
              { class: 'header-row header-titles', 'aria-hidden': 'true' },
              h('span', null, 'Name'),
              h('span', null, 'Value'),
            ),
            headerList,
            h(
              'p',
              null,
              h(
                'button',
                { type: 'button', id: 'intg-add-header', on: { click: () => addHeader().name.focus() } },
                'Add a header',
              ),
            ),
            note(
              '',
              h('code', null, '{{secret:NAME}}'),
              ' in a value is filled in with that secret’s value when a step sends (the secret of the run’s workspace). Credentials (Authorization, Cookie, *-Token, *-Api-Key…) must come from a secret, e.g. ',
              h('code', null, 'Bearer {{secret:VENDOR_TOKEN}}'),
              '.',
            ),
            h('div', { class: 'picker' }, kit.field('Secret to insert', pick), insert, secretsLink),
            errors.hint('headers'),
          ),
          timeoutField(),
          h(
            'fieldset',
            { class: 'methods', id: 'intg-methods' },
            h('legend', null, 'Allowed methods'),
            h(
              'div',
              { class: 'check-row' },
              methods.map((box) =>
                h('span', { class: 'check' }, box, h('label', { for: box.id }, box.value)),
              ),
            ),
            errors.hint('allowed_methods', methods[0]!),
          ),
        ),
      );
    } else if (chosen === 'SMTP') {
      replace(
        settings,
        kit.section(
          'SMTP',
          kit.field('Host', host, errors.hint('host', host)),
          kit.field('Port', port, errors.hint('port', port)),
          kit.field('Security', security, errors.hint('security', security)),
          kit.field('Username (optional)', username, errors.hint('username', username)),
          kit.field(
            'Password secret',
            passwordSecret,
            h(
              'div',
              null,
              note(
                'The secret holding the password, by name, in the workspace of the run that sends. ',
                secretsLink,
              ),
              errors.hint('password_secret', passwordSecret),
            ),
          ),
          kit.field(
            'From',
            from,
            h(
              'div',
              null,
              note('The sender: an address, or a name and <address>.'),
              errors.hint('from', from),
            ),
          ),
          timeoutField(),
        ),
      );
    } else {
      replace(
        settings,
        kit.section(
          'Webhook',
          existing?.webhook_path
            ? [
                h(
                  'p',
                  null,
                  h('code', { id: 'intg-webhook-path' }, `${location.origin}${existing.webhook_path}`),
                ),
                note(
                  'Senders POST files to it with Authorization: Bearer SID:TOKEN (or ?key= an auth token, which makes the URL a secret).',
                ),
              ]
            : note('A webhook receives files; its address shows here once it is created.'),
        ),
      );
    }
  };
  type.addEventListener('change', showSettings);
  showSettings();

  const numberOrNull = (input: HTMLInputElement) => (input.value.trim() === '' ? null : Number(input.value));
  const textOrNull = (input: HTMLInputElement) => input.value.trim() || null;

  /** The header rows as the API's object; a row with a value and no name, or a name twice, is said here. */
  const readHeaders = (): Record<string, string> | null | false => {
    const headers: Record<string, string> = {};
    const seen = new Set<string>();
    for (const [index, row] of headerRows.entries()) {
      const headerName = row.name.value.trim();
      if (row.key) errors.forget(row.key);
      row.key = `header:${headerName.toLowerCase() || index}`;
      errors.attach(row.key, row.hint, row.value);
      if (headerName === '' && row.value.value === '') continue;
      const problem =
        headerName === ''
          ? `Header ${index + 1} needs a name.`
          : seen.has(headerName.toLowerCase())
            ? `${headerName} is given twice: keep one.`
            : null;
      if (problem) {
        errors.attach(row.key, row.hint, row.name);
        errors.show(new Error(problem), () => row.key);
        return false;
      }
      seen.add(headerName.toLowerCase());
      headers[headerName] = row.value.value;
    }
    return Object.keys(headers).length === 0 ? null : headers;
  };

  const save = h('button', { type: 'submit', class: 'primary' }, existing ? 'Save' : 'Create integration');
  const form = h(
    'form',
    {
      id: 'integration-form',
      novalidate: true,
      on: {
        submit: (event) => {
          event.preventDefault();
          errors.clear();
          const chosen = existing?.type ?? type.value;
          const payload: Record<string, unknown> = {
            name: name.value.trim(),
            description: description.value.trim() || null,
          };
          if (!existing) payload.type = chosen;
          if (chosen === 'HTTP') {
            const headers = readHeaders();
            if (headers === false) return;
            Object.assign(payload, {
              base_url: textOrNull(baseUrl),
              allow_http: allowHttp.checked,
              headers,
              timeout_ms: numberOrNull(timeout),
              allowed_methods: methods.filter((box) => box.checked).map((box) => box.value),
            });
          } else if (chosen === 'SMTP') {
            Object.assign(payload, {
              host: textOrNull(host),
              port: numberOrNull(port),
              security: security.value,
              username: textOrNull(username),
              password_secret: passwordSecret.value || null,
              from: textOrNull(from),
              timeout_ms: numberOrNull(timeout),
            });
          }
          save.disabled = true;
          const saved = existing
            ? call<{ integration: Integration }>(
                'PUT',
                `/v2/integrations/${encodeURIComponent(existing.id)}`,
                payload,
              )
            : call<{ integration: Integration }>('POST', '/v2/integrations', payload);
          saved
            .then(
              () => kit.go('#/integrations'),
              (error: unknown) => errors.show(error),
            )
            .finally(() => (save.disabled = false));
        },
      },
    },
    kit.section(
      'Integration',
      kit.field('Name', name, errors.hint('name', name)),
      kit.field('Description (optional)', description, errors.hint('description', description)),
      existing
        ? h(
            'dl',
            { class: 'facts' },
            h('dt', null, 'Type'),
            h(
              'dd',
              null,
              existing.type,
              h('span', { class: 'note' }, ' · a type cannot change: create another'),
            ),
            h('dt', null, 'Secrets used'),
            h('dd', null, secretNames(existing.secrets_used ?? [])),
            h('dt', null, 'Version'),
            h('dd', null, existing.version, ' · updated ', when(existing.updated)),
          )
        : kit.field('Type', type, errors.hint('type', type)),
    ),
    settings,
    general,
    h('p', { class: 'form-actions' }, save, h('a', { href: '#/integrations' }, 'Cancel')),
  );
  replace(
    body,
    h('h1', null, existing ? `Edit ${existing.name}` : 'New integration'),
    existing ? h('p', { class: 'ids' }, h('code', null, existing.id)) : null,
    form,
  );
  if (!existing) name.focus();
}
