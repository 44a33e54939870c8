/**
 * "Try it": a script once in a worker's sandbox, on script inputs and an input typed here, without
 * a run (POST /v2/worker_templates/try for a draft, /v2/worker_templates/{id}/try for a published
 * template). The templates page and the workflow editor's step panel both show it.
 */
import { call } from '../api';
import { h, pretty, replace, seconds } from '../dom';
import { badge, errorBox, section } from './elements';
import { jsonField } from './form-fields';

interface Trial {
  status: string;
  result: unknown;
  error_message: string | null;
  logs: Array<{ level?: string; message?: string } | string>;
  duration: number;
  cpu_time: number;
}

/** What is tried: a request to make, or a sentence saying why nothing can be tried here. */
export type TrialTarget = { path: string; body: Record<string, unknown> } | string;

export interface TryPanelOptions {
  /** Prefix of the panel's element ids (`try` on the templates page). */
  id?: string;
  /** The script inputs to start from (a JSON object). */
  scriptInputs?: Record<string, unknown>;
  /** Read at each try instead of a field of its own (a step's inputs, edited above the panel). */
  readScriptInputs?: () => Record<string, unknown>;
  workspace: () => string;
}

export function tryPanel(source: () => TrialTarget, options: TryPanelOptions): HTMLElement {
  const id = options.id ?? 'try';
  const scriptInputs = options.readScriptInputs
    ? null
    : jsonField(
        'Script inputs (the form values, a JSON object)',
        `${id}-script-inputs`,
        JSON.stringify(options.scriptInputs ?? {}),
      );
  const inputs = jsonField('Input (what the previous step returned, JSON)', `${id}-inputs`, 'null');
  const out = h('div', { id: `${id}-output`, 'aria-live': 'polite' });
  const button = h('button', { type: 'submit', class: 'primary', id: `${id}-button` }, 'Try it');
  const form = h(
    'form',
    {
      id: `${id}-form`,
      on: {
        submit: (event) => {
          event.preventDefault();
          const a = scriptInputs
            ? scriptInputs.read()
            : { ok: true as const, value: options.readScriptInputs!() };
          const b = inputs.read();
          if (!a.ok || !b.ok) return;
          if (a.value === null || typeof a.value !== 'object' || Array.isArray(a.value)) {
            replace(out, h('p', { class: 'error' }, 'Script inputs must be a JSON object.'));
            return;
          }
          const target = source();
          if (typeof target === 'string') {
            replace(out, h('p', { class: 'note' }, target));
            return;
          }
          button.disabled = true;
          replace(out, h('p', { class: 'note' }, 'Running in the sandbox…'));
          call<{ trial: Trial }>('POST', target.path, {
            ...target.body,
            script_inputs: a.value,
            inputs: b.value,
            workspace: options.workspace(),
          })
            .then(
              ({ trial }) =>
                replace(
                  out,
                  h(
                    'h3',
                    null,
                    'Outcome ',
                    badge(trial.status),
                    ' ',
                    h('span', { class: 'note' }, seconds(trial.duration)),
                  ),
                  trial.error_message
                    ? h('pre', { class: 'error-text', id: `${id}-error` }, trial.error_message)
                    : null,
                  h('h4', null, 'Log'),
                  trial.logs.length
                    ? h(
                        'ol',
                        { class: 'log', id: `${id}-log`, tabindex: 0 },
                        trial.logs.map((line) =>
                          typeof line === 'string'
                            ? h('li', null, line)
                            : h(
                                'li',
                                { class: `log-${line.level ?? 'info'}` },
                                h('span', { class: 'level' }, line.level ?? ''),
                                ' ',
                                line.message ?? '',
                              ),
                        ),
                      )
                    : h('p', { class: 'note' }, 'No log lines.'),
                  h('h4', null, 'Result'),
                  h('pre', { id: `${id}-result` }, pretty(trial.result ?? null)),
                ),
              (error: unknown) => replace(out, errorBox(error)),
            )
            .finally(() => (button.disabled = false));
        },
      },
    },
    scriptInputs?.element,
    inputs.element,
    h(
      'p',
      { class: 'note' },
      'Runs once in a worker’s sandbox with a step’s limits. No run is recorded; SDK calls take effect.',
    ),
    button,
  );
  return section('Try it', form, out);
}
