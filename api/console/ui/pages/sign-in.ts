/** Sign-in: with an API key (SID and auth token) or an OAuth client (id and secret). */
import { call, type Session } from '../api';
import { h, replace } from '../dom';
import { errorBox } from '../parts/elements';
import { app } from '../parts/frame';
import { go } from '../router';
import { startSession } from '../session';

export function signInPage(message?: string): void {
  const mode = { current: 'key' as 'key' | 'client' };
  const first = h('input', { name: 'first', autocomplete: 'username', required: true, spellcheck: 'false' });
  const second = h('input', {
    name: 'second',
    type: 'password',
    autocomplete: 'current-password',
    required: true,
  });
  const firstLabel = h('label', { for: 'signin-first' }, 'Account SID');
  const secondLabel = h('label', { for: 'signin-second' }, 'Auth token');
  first.id = 'signin-first';
  second.id = 'signin-second';
  const status = h('div', { 'aria-live': 'polite' }, message ? h('p', { class: 'note' }, message) : null);
  const tab = (which: 'key' | 'client', text: string) =>
    h(
      'button',
      {
        type: 'button',
        class: which === 'key' ? 'tab active' : 'tab',
        'aria-pressed': which === 'key' ? 'true' : 'false',
        on: {
          click: (event) => {
            mode.current = which;
            for (const button of form.querySelectorAll('.tab')) {
              button.classList.toggle('active', button === event.currentTarget);
              button.setAttribute('aria-pressed', button === event.currentTarget ? 'true' : 'false');
            }
            firstLabel.textContent = which === 'key' ? 'Account SID' : 'Client id';
            secondLabel.textContent = which === 'key' ? 'Auth token' : 'Client secret';
          },
        },
      },
      text,
    );
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'signin card',
      on: {
        submit: (event) => {
          event.preventDefault();
          const body =
            mode.current === 'key'
              ? { sid: first.value.trim(), token: second.value }
              : { client_id: first.value.trim(), client_secret: second.value };
          call<Session>('POST', '/console/session', body).then(
            (opened) => {
              startSession(opened);
              go('#/workflows');
            },
            (error: unknown) => replace(status, errorBox(error)),
          );
        },
      },
    },
    h('h1', null, 'Sign in'),
    h(
      'div',
      { class: 'tabs', role: 'group', 'aria-label': 'Credential' },
      tab('key', 'API key'),
      tab('client', 'OAuth client'),
    ),
    h('div', { class: 'field' }, firstLabel, first),
    h('div', { class: 'field' }, secondLabel, second),
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
    status,
  );
  replace(app, h('main', { class: 'center' }, h('p', { class: 'brand' }, 'Portfolio Analytics'), form));
  first.focus();
}
