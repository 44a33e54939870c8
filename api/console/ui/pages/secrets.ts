/**
 * Secrets of the workspace chosen at the top right: store one, give it a new value, delete it. A
 * value goes to the API once and is never on the page afterwards: the API never answers one, and
 * the field holding it is emptied as soon as the API has taken it (a failed request keeps it, to be
 * corrected). Nothing here shows a value, masked or by its length.
 */
import { call, query } from '../api';
import { h, replace, type Stamp, when } from '../dom';
import { FieldErrors } from '../parts/field-errors';
import type { PageKit } from '../page-kit';

export interface Secret {
  id: string;
  name: string;
  workspace: string;
  description: string | null;
  version: string;
  created: Stamp;
  updated: Stamp;
}

interface IntegrationUse {
  name: string;
  type: string;
  secrets_used?: string[];
}

/** Every secret of a workspace, newest first (a workspace holds tens, not thousands: a few pages at most). */
export async function listSecrets(workspace: string): Promise<Secret[]> {
  const secrets: Secret[] = [];
  let token: string | null = null;
  for (let page = 0; page < 20; page++) {
    const answer: { secrets: Secret[]; next_page_token: string | null } = await call(
      'GET',
      `/v2/secrets${query({ workspace, page_size: 100, page_token: token })}`,
    );
    secrets.push(...answer.secrets);
    token = answer.next_page_token;
    if (!token) break;
  }
  return secrets;
}

const NAME_RULE = 'A letter or _, then letters, digits or _ (64 at most). It cannot be renamed.';

/** A password field that no browser fills in or offers to remember. */
function valueInput(id: string): HTMLInputElement {
  return h('input', {
    id,
    name: id,
    type: 'password',
    autocomplete: 'off',
    required: true,
    spellcheck: 'false',
  });
}

export async function secretsPage(kit: PageKit): Promise<void> {
  const workspace = kit.workspace();
  const status = h('div', { id: 'secrets-status', 'aria-live': 'polite' });
  const formHolder = h('div');
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  const newButton = h('button', { type: 'button', id: 'new-secret', 'aria-expanded': 'false' }, 'New secret');
  await kit.frame(
    'Secrets',
    h(
      'div',
      null,
      h('div', { class: 'heading' }, h('h1', null, 'Secrets'), newButton),
      h(
        'p',
        { class: 'note' },
        `Tokens and passwords of workspace ${workspace}, for integrations (`,
        h('code', null, '{{secret:NAME}}'),
        ' in a header, an SMTP password) and scripts (',
        h('code', null, 'sdk.secret(name)'),
        '). A value is stored encrypted and never shown again, here or through the API: to change one, set a new value.',
      ),
      status,
      formHolder,
      body,
    ),
  );
  const said = (text: string) => replace(status, h('p', { class: 'done' }, text));

  const closeForm = () => {
    replace(formHolder);
    newButton.setAttribute('aria-expanded', 'false');
  };
  newButton.addEventListener('click', () => {
    if (newButton.getAttribute('aria-expanded') === 'true') {
      closeForm();
      return;
    }
    replace(status);
    replace(
      formHolder,
      createForm(kit, workspace, closeForm, (secret) => {
        void load().then(() => said(`Stored ${secret.name} (version ${secret.version}).`));
      }),
    );
    newButton.setAttribute('aria-expanded', 'true');
    formHolder.querySelector('input')?.focus();
  });

  const load = async () => {
    let secrets: Secret[];
    try {
      secrets = await listSecrets(workspace);
    } catch (error) {
      replace(body, kit.errorBox(error));
      return;
    }
    if (secrets.length === 0) {
      replace(body, h('p', { class: 'note' }, `No secrets in workspace ${workspace} yet.`));
      return;
    }
    /** The row's panel (a new value or a delete to confirm), in a row of its own under it. */
    const openPanel = (secret: Secret, panel: (close: () => void) => HTMLElement) => {
      for (const open of table.querySelectorAll('tr.row-panel')) open.remove();
      const row = table.querySelector(`tr[data-secret="${secret.id}"]`);
      if (!row) return;
      const holder = h('tr', { class: 'row-panel' });
      const close = () => {
        holder.remove();
        (row.querySelector('button') as HTMLButtonElement | null)?.focus();
      };
      holder.append(h('td', { colspan: 6 }, panel(close)));
      row.after(holder);
      holder.querySelector<HTMLElement>('input, button.danger')?.focus();
    };
    const table = kit.listTable(
      secrets,
      [
        { title: 'Name', cell: (s) => h('code', null, s.name) },
        { title: 'Version', cell: (s) => s.version },
        { title: 'Description', cell: (s) => s.description ?? '' },
        { title: 'Created', cell: (s) => when(s.created) },
        { title: 'Updated', cell: (s) => when(s.updated) },
        {
          title: 'Actions',
          cell: (s) =>
            h(
              'span',
              { class: 'row-actions' },
              h(
                'button',
                {
                  type: 'button',
                  'aria-label': `Set new value for ${s.name}`,
                  on: {
                    click: () =>
                      openPanel(s, (close) =>
                        rotateForm(kit, s, close, (saved) => {
                          void load().then(() =>
                            said(`${saved.name} has a new value (version ${saved.version}).`),
                          );
                        }),
                      ),
                  },
                },
                'Set new value',
              ),
              h(
                'button',
                {
                  type: 'button',
                  'aria-label': `Delete ${s.name}`,
                  on: {
                    click: () =>
                      openPanel(s, (close) =>
                        deleteConfirm(kit, s, close, () => {
                          void load().then(() => said(`Deleted ${s.name}.`));
                        }),
                      ),
                  },
                },
                'Delete',
              ),
            ),
        },
      ],
      { id: 'secrets', row: (s) => ({ 'data-secret': s.id }) },
    );
    replace(body, table);
  };
  await load();
}

function createForm(
  kit: PageKit,
  workspace: string,
  close: () => void,
  created: (secret: Secret) => void,
): HTMLElement {
  const name = h('input', {
    id: 'secret-name',
    required: true,
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'VENDOR_TOKEN',
    'aria-describedby': 'secret-name-rule',
  });
  const value = valueInput('secret-value');
  const description = h('input', { id: 'secret-description', autocomplete: 'off' });
  const general = h('div', { 'aria-live': 'polite' });
  const errors = new FieldErrors(general);
  const save = h('button', { type: 'submit', class: 'primary' }, 'Store secret');
  const form = h(
    'form',
    {
      id: 'secret-form',
      class: 'card',
      novalidate: true,
      on: {
        submit: (event) => {
          event.preventDefault();
          save.disabled = true;
          call<{ secret: Secret }>('POST', '/v2/secrets', {
            name: name.value.trim(),
            value: value.value,
            description: description.value.trim() || null,
            workspace,
          })
            .then(
              ({ secret }) => {
                // The value leaves the page as soon as the API holds it.
                value.value = '';
                close();
                created(secret);
              },
              (error: unknown) => errors.show(error, (_, status) => (status === 409 ? 'name' : null)),
            )
            .finally(() => (save.disabled = false));
        },
      },
    },
    h('h2', null, `New secret in workspace ${workspace}`),
    kit.field(
      'Name',
      name,
      h(
        'div',
        null,
        h('p', { class: 'note hint', id: 'secret-name-rule' }, NAME_RULE),
        errors.hint('name', name),
      ),
    ),
    kit.field(
      'Value',
      value,
      h(
        'div',
        null,
        h('p', { class: 'note hint', id: 'secret-value-rule' }, 'Shown nowhere once stored, not even here.'),
        errors.hint('value', value),
      ),
    ),
    kit.field('Description (optional)', description, errors.hint('description', description)),
    general,
    h('p', { class: 'form-actions' }, save, h('button', { type: 'button', on: { click: close } }, 'Cancel')),
  );
  value.setAttribute('aria-describedby', 'secret-value-rule');
  return form;
}

function rotateForm(
  kit: PageKit,
  secret: Secret,
  close: () => void,
  saved: (secret: Secret) => void,
): HTMLElement {
  const value = valueInput('secret-new-value');
  const general = h('div', { 'aria-live': 'polite' });
  const errors = new FieldErrors(general);
  const save = h('button', { type: 'submit', class: 'primary' }, 'Save new value');
  return h(
    'form',
    {
      id: 'rotate-form',
      class: 'row-form',
      novalidate: true,
      on: {
        submit: (event) => {
          event.preventDefault();
          save.disabled = true;
          call<{ secret: Secret }>('PUT', `/v2/secrets/${encodeURIComponent(secret.id)}`, {
            value: value.value,
            workspace: secret.workspace,
          })
            .then(
              ({ secret: after }) => {
                value.value = '';
                saved(after);
              },
              (error: unknown) => errors.show(error),
            )
            .finally(() => (save.disabled = false));
        },
      },
    },
    kit.field(`New value for ${secret.name}`, value, errors.hint('value', value)),
    h(
      'p',
      { class: 'note' },
      `Steps that start after you save use it; the version goes to ${Number(secret.version) + 1}.`,
    ),
    general,
    h('p', { class: 'form-actions' }, save, h('button', { type: 'button', on: { click: close } }, 'Cancel')),
  );
}

function deleteConfirm(kit: PageKit, secret: Secret, close: () => void, deleted: () => void): HTMLElement {
  const users = h('p', { class: 'note', 'aria-live': 'polite' });
  // Integrations are the account's: any that names this secret fails in this workspace once it is gone.
  call<{ integrations: IntegrationUse[] }>('GET', `/v2/integrations${query({ page_size: 100 })}`).then(
    ({ integrations }) => {
      const using = integrations.filter((i) => (i.secrets_used ?? []).includes(secret.name));
      replace(
        users,
        using.length === 0
          ? 'No integration names it.'
          : `Named by ${using.map((i) => `${i.name} (${i.type})`).join(', ')}: their calls from workspace ${secret.workspace} fail until a secret of this name exists again.`,
      );
    },
    () => undefined,
  );
  const outcome = h('div', { 'aria-live': 'polite' });
  return h(
    'div',
    { class: 'row-form', id: 'delete-confirm', role: 'group', 'aria-label': `Delete ${secret.name}` },
    h('p', null, h('strong', null, `Delete ${secret.name}?`), ' Scripts that read it will fail too.'),
    users,
    outcome,
    h(
      'p',
      { class: 'form-actions' },
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          on: {
            click: () =>
              call(
                'DELETE',
                `/v2/secrets/${encodeURIComponent(secret.id)}${query({ workspace: secret.workspace })}`,
              ).then(deleted, (error: unknown) => replace(outcome, kit.errorBox(error))),
          },
        },
        `Yes, delete ${secret.name}`,
      ),
      h('button', { type: 'button', on: { click: close } }, 'Cancel'),
    ),
  );
}
