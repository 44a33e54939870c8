/**
 * The integration form's HTTP section: the base URL, http allowed or not, the headers (a secret's
 * `{{secret:NAME}}` inserted from a list), the timeout and the methods allowed.
 */
import { h, replace } from '../dom';
import { note, numberOrNull, type SettingsParts, textOrNull, timeoutField } from './integration-settings';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

interface HeaderRow {
  name: HTMLInputElement;
  value: HTMLInputElement;
  hint: HTMLElement;
  key: string | null;
}

export function httpSettings(parts: SettingsParts): {
  section(): HTMLElement;
  /** The section's fields of the body; false when a header row is refused here (it says why). */
  read(): Record<string, unknown> | false;
} {
  const { kit, existing, workspace, secrets, errors, secretsLink } = parts;
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

  const section = () =>
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
      timeoutField(parts),
      h(
        'fieldset',
        { class: 'methods', id: 'intg-methods' },
        h('legend', null, 'Allowed methods'),
        h(
          'div',
          { class: 'check-row' },
          methods.map((box) => h('span', { class: 'check' }, box, h('label', { for: box.id }, box.value))),
        ),
        errors.hint('allowed_methods', methods[0]!),
      ),
    );

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

  const read = (): Record<string, unknown> | false => {
    const headers = readHeaders();
    if (headers === false) return false;
    return {
      base_url: textOrNull(baseUrl),
      allow_http: allowHttp.checked,
      headers,
      timeout_ms: numberOrNull(parts.timeout),
      allowed_methods: methods.filter((box) => box.checked).map((box) => box.value),
    };
  };
  return { section, read };
}
