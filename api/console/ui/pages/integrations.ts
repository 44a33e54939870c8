/**
 * Integrations (account-wide): the list, and one form to create or change an HTTP, SMTP or WEBHOOK
 * integration. Credentials never go into an integration: a header takes `{{secret:NAME}}` and an SMTP
 * login names the secret that holds its password, each looked up in the workspace of the run. The
 * form's HTTP and SMTP sections are parts/integration-http.ts and parts/integration-smtp.ts.
 */
import { call, query } from '../api';
import { h, replace, when } from '../dom';
import { FieldErrors } from '../parts/field-errors';
import { httpSettings } from '../parts/integration-http';
import { type Integration, note, type SettingsParts, timeoutInput } from '../parts/integration-settings';
import { smtpSettings } from '../parts/integration-smtp';
import type { PageKit } from '../page-kit';
import { listSecrets } from './secrets';

const TYPES = ['HTTP', 'SMTP', 'WEBHOOK'] as const;

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

  const parts: SettingsParts = {
    kit,
    existing,
    workspace,
    secrets,
    errors,
    timeout: timeoutInput(existing),
    secretsLink: h('a', { href: '#/secrets' }, `Secrets of workspace ${workspace}`),
  };
  const http = httpSettings(parts);
  const smtp = smtpSettings(parts);

  const settings = h('div');
  const showSettings = () => {
    errors.clear();
    const chosen = existing?.type ?? type.value;
    if (chosen === 'HTTP') {
      replace(settings, http.section());
    } else if (chosen === 'SMTP') {
      replace(settings, smtp.section());
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
            const fields = http.read();
            if (fields === false) return;
            Object.assign(payload, fields);
          } else if (chosen === 'SMTP') {
            Object.assign(payload, smtp.read());
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
