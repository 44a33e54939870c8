/**
 * What a trigger shows beside its settings, on the workflow page and in the editor: a schedule's
 * next firings as the scheduler computes them, and a webhook's address with its key masked.
 */
import { call, query } from '../api';
import { h, replace, when } from '../dom';
import { errorBox } from './elements';

/** The next five firings of a saved workflow's schedule (`GET /v2/workflows/{id}/schedule`). */
export function scheduleFirings(
  workflowId: string,
  workspace: string,
  heading = 'Next firings',
): HTMLElement {
  const out = h('div', { 'aria-live': 'polite' });
  call<{ schedule: { paused: boolean; next_firings: string[] } }>(
    'GET',
    `/v2/workflows/${encodeURIComponent(workflowId)}/schedule${query({ workspace })}`,
  ).then(
    ({ schedule }) =>
      replace(
        out,
        h('h3', null, schedule.paused ? `${heading} (paused: none will start until enabled)` : heading),
        h(
          'ol',
          { id: 'next-firings' },
          schedule.next_firings.map((at) => h('li', null, when(at))),
        ),
      ),
    (error: unknown) => replace(out, errorBox(error)),
  );
  return out;
}

/** A webhook integration's address, its key masked, with a button that copies it. */
export function webhookAddress(integrationId: string): HTMLElement {
  const out = h('div', { 'aria-live': 'polite' });
  call<{ integration: { name: string; webhook_path: string | null } }>(
    'GET',
    `/v2/integrations/${encodeURIComponent(integrationId)}`,
  ).then(
    ({ integration }) => {
      if (!integration.webhook_path) return;
      const url = `${location.origin}${integration.webhook_path}`;
      const copied = h('span', { 'aria-live': 'polite', class: 'note' });
      replace(
        out,
        h('h3', null, `Webhook (${integration.name})`),
        h(
          'p',
          null,
          // The key is an auth token: never shown, only its place.
          h('code', { id: 'webhook-url' }, `${url}?key=••••••••`),
          ' ',
          h(
            'button',
            {
              type: 'button',
              id: 'copy-webhook',
              on: {
                click: () =>
                  navigator.clipboard.writeText(`${url}?key=YOUR_AUTH_TOKEN`).then(
                    () =>
                      (copied.textContent =
                        'Copied, with YOUR_AUTH_TOKEN where an API key’s auth token goes.'),
                    () => (copied.textContent = 'The browser refused to copy.'),
                  ),
              },
            },
            'Copy URL',
          ),
          ' ',
          copied,
        ),
        h(
          'p',
          { class: 'note' },
          'Senders that can set headers send Authorization: Bearer SID:TOKEN instead of key.',
        ),
      );
    },
    (error: unknown) => replace(out, errorBox(error)),
  );
  return out;
}
