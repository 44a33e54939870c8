/**
 * The integration form's SMTP section: the mail server and its security, the login (its password a
 * secret of the sending run's workspace, by name), the sender and the timeout.
 */
import { h } from '../dom';
import { note, numberOrNull, type SettingsParts, textOrNull, timeoutField } from './integration-settings';

const SECURITY: Array<[string, string]> = [
  ['starttls', 'STARTTLS (default: refused if the server does not offer it)'],
  ['tls', 'TLS from the first byte (port 465)'],
  ['none', 'None: in the clear'],
];

export function smtpSettings(parts: SettingsParts): {
  section(): HTMLElement;
  /** The section's fields of the body. */
  read(): Record<string, unknown>;
} {
  const { kit, existing, workspace, secrets, errors, secretsLink } = parts;
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

  const section = () =>
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
        h('div', null, note('The sender: an address, or a name and <address>.'), errors.hint('from', from)),
      ),
      timeoutField(parts),
    );

  const read = () => ({
    host: textOrNull(host),
    port: numberOrNull(port),
    security: security.value,
    username: textOrNull(username),
    password_secret: passwordSecret.value || null,
    from: textOrNull(from),
    timeout_ms: numberOrNull(parts.timeout),
  });
  return { section, read };
}
