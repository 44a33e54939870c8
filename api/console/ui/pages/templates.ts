/**
 * Worker templates: the list, one template (its code in the editor, published versions, Try it),
 * and a new template.
 */
import { call, query } from '../api';
import { h, pretty, replace, when } from '../dom';
import { badge, errorBox, link, section } from '../parts/elements';
import { field } from '../parts/form-fields';
import { frame } from '../parts/frame';
import { listTable } from '../parts/table';
import { tryPanel } from '../parts/try-panel';
import { getTemplate, type Template } from '../resources';
import { go } from '../router';
import { currentWorkspace } from '../session';

export async function templatesPage(): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame(
    'Templates',
    h(
      'div',
      null,
      h(
        'div',
        { class: 'heading' },
        h('h1', null, 'Worker templates'),
        link('#/templates/new', 'New template'),
      ),
      body,
    ),
  );
  try {
    const { worker_templates: templates } = await call<{ worker_templates: Template[] }>(
      'GET',
      `/v2/worker_templates${query({ page_size: 100 })}`,
    );
    replace(
      body,
      listTable(templates, [
        { title: 'Name', cell: (t) => link(`#/templates/${encodeURIComponent(t.id)}`, t.name) },
        { title: 'Type', cell: (t) => t.type },
        { title: 'Runtime', cell: (t) => t.script_runtime },
        { title: 'Category', cell: (t) => t.category },
        { title: 'Environment', cell: (t) => badge(t.container_status) },
        { title: 'Updated', cell: (t) => when(t.updated) },
      ]),
    );
  } catch (error) {
    replace(body, errorBox(error));
  }
}

export async function templatePage(id: string): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame('Templates', body);
  let t: Template;
  try {
    t = await getTemplate(id);
  } catch (error) {
    replace(body, errorBox(error));
    return;
  }
  const builtin = t.builtin === true;
  const { codeEditor } = await import('../parts/editor');
  const editor = codeEditor({
    text: t.script ?? '',
    runtime: t.script_runtime,
    readOnly: builtin,
    label: `Code of ${t.name}`,
    id: 'template-code',
  });
  const status = h('span', { 'aria-live': 'polite', id: 'publish-status' });
  const publish = builtin
    ? h(
        'p',
        { class: 'note' },
        'Built in: read-only. ',
        link(`#/templates/new?from=${encodeURIComponent(t.id)}`, 'Start a template of your own from it'),
      )
    : h(
        'p',
        null,
        h(
          'button',
          {
            type: 'button',
            class: 'primary',
            id: 'publish',
            on: {
              click: () => {
                call<{ worker_template: Template }>('PUT', `/v2/worker_templates/${encodeURIComponent(id)}`, {
                  script: editor.text(),
                }).then(
                  ({ worker_template: saved }) => {
                    t = { ...t, ...saved, script: editor.text() };
                    replace(status, h('span', { class: 'note' }, `Published version ${saved.version}.`));
                    replace(versionText, String(saved.version));
                    document
                      .getElementById('versions')
                      ?.closest('section')
                      ?.dispatchEvent(new Event('pas:published'));
                  },
                  (error: unknown) => replace(status, errorBox(error)),
                );
              },
            },
          },
          'Publish a new version',
        ),
        ' ',
        status,
      );
  const versionText = h('span', null, t.version);
  replace(
    body,
    h('h1', null, t.name),
    t.description ? h('p', { class: 'note' }, t.description) : null,
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'Id'),
      h('dd', null, h('code', null, t.id)),
      h('dt', null, 'Type'),
      h('dd', null, t.type),
      h('dt', null, 'Runtime'),
      h('dd', null, t.script_runtime, ' · entry point ', h('code', null, t.script_entry_point)),
      h('dt', null, 'Version'),
      h('dd', null, versionText, ' · updated ', when(t.updated), builtin ? ' · built in' : ''),
      h('dt', null, 'Environment'),
      h('dd', null, badge(t.container_status)),
      t.requirements && t.requirements.length
        ? [h('dt', null, 'Requirements'), h('dd', null, t.requirements.join(', '))]
        : null,
    ),
    t.environment?.build_log_tail
      ? section('Environment build log', h('pre', { id: 'build-log' }, t.environment.build_log_tail))
      : null,
    section('Code', editor.element, publish),
    versionsSection(t.id),
    t.form_inputs && t.form_inputs.length
      ? section('Form inputs', h('pre', null, pretty(t.form_inputs)))
      : null,
    tryPanel(
      () => {
        if (t.script_runtime === 'python3.11')
          return 'Try it runs JavaScript and TypeScript; run a Python template in a workflow step.';
        // The editor's text when it differs from the published one: the draft is what is tried.
        return editor.text() === (t.script ?? '')
          ? { path: `/v2/worker_templates/${encodeURIComponent(id)}/try`, body: {} }
          : {
              path: '/v2/worker_templates/try',
              body: { script: editor.text(), script_runtime: t.script_runtime },
            };
      },
      { workspace: currentWorkspace },
    ),
  );
}

/** The template's published versions, newest first; one opens read-only beside the list. */
function versionsSection(id: string): HTMLElement {
  const list = h('ol', { class: 'versions', id: 'versions' });
  const shown = h('div', { 'aria-live': 'polite', id: 'version-code' });
  const load = () =>
    call<{ versions: Array<{ version: number; script_runtime: string | null; published: string }> }>(
      'GET',
      `/v2/worker_templates/${encodeURIComponent(id)}/versions`,
    ).then(
      ({ versions }) =>
        replace(
          list,
          versions.map((v) =>
            h(
              'li',
              null,
              h(
                'button',
                {
                  type: 'button',
                  'data-version': String(v.version),
                  on: {
                    click: () =>
                      call<{ versions: Array<{ version: number; script?: string }> }>(
                        'GET',
                        `/v2/worker_templates/${encodeURIComponent(id)}/versions${query({ version: v.version })}`,
                      ).then(
                        ({ versions: [one] }) =>
                          replace(
                            shown,
                            h('h3', null, `Version ${v.version}`),
                            h('pre', { class: 'code' }, one?.script ?? ''),
                          ),
                        (error: unknown) => replace(shown, errorBox(error)),
                      ),
                  },
                },
                `Version ${v.version}`,
              ),
              ` · ${v.script_runtime ?? ''} · published ${when(v.published)}`,
            ),
          ),
        ),
      (error: unknown) => replace(list, errorBox(error)),
    );
  void load();
  const section_ = section('Versions', list, shown);
  section_.addEventListener('pas:published', () => void load());
  return section_;
}

const STARTER_CODE: Record<string, string> = {
  javascript: `// args.script_inputs: the form's values; args.inputs: the previous step's result.
async function main(args) {
  console.log('inputs', JSON.stringify(args.inputs));
  return { ok: true, inputs: args.inputs };
}
`,
  typescript: `// args.script_inputs: the form's values; args.inputs: the previous step's result.
async function main(args: { script_inputs: Record<string, unknown>; inputs: unknown }) {
  console.log('inputs', JSON.stringify(args.inputs));
  return { ok: true, inputs: args.inputs };
}
`,
  'python3.11': `def main(args):
    print("inputs", args["inputs"])
    return {"ok": True, "inputs": args["inputs"]}
`,
};

export async function newTemplatePage(params: URLSearchParams): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame('Templates', body);
  let from: Template | null = null;
  const fromId = params.get('from');
  if (fromId) {
    try {
      from = await getTemplate(fromId);
    } catch (error) {
      replace(body, errorBox(error));
      return;
    }
  }
  const name = h('input', { id: 'template-name', required: true, value: from ? `${from.name} (mine)` : '' });
  const runtime = h(
    'select',
    { id: 'template-runtime' },
    ['javascript', 'typescript', 'python3.11'].map((r) =>
      h('option', { value: r, selected: (from?.script_runtime ?? 'javascript') === r }, r),
    ),
  );
  const holder = h('div');
  const { codeEditor } = await import('../parts/editor');
  let editor = codeEditor({
    text: from?.script ?? STARTER_CODE.javascript!,
    runtime: runtime.value,
    readOnly: false,
    label: 'Code',
    id: 'template-code',
  });
  let edited = false;
  editor.onChange(() => (edited = true));
  replace(holder, editor.element);
  runtime.addEventListener('change', () => {
    // A new runtime brings its starter code, unless the code was written here.
    const text = edited ? editor.text() : (STARTER_CODE[runtime.value] ?? '');
    editor = codeEditor({
      text,
      runtime: runtime.value,
      readOnly: false,
      label: 'Code',
      id: 'template-code',
    });
    editor.onChange(() => (edited = true));
    replace(holder, editor.element);
  });
  const errors = h('div', { 'aria-live': 'polite', id: 'template-errors' });
  const form = h(
    'form',
    {
      on: {
        submit: (event) => {
          event.preventDefault();
          call<{ worker_template: Template }>('POST', '/v2/worker_templates', {
            name: name.value,
            type: from?.type ?? 'BASIC',
            script_runtime: runtime.value,
            script: editor.text(),
            ...(from?.form_inputs ? { form_inputs: from.form_inputs } : {}),
          }).then(
            ({ worker_template: made }) => go(`#/templates/${encodeURIComponent(made.id)}`),
            (error: unknown) => replace(errors, errorBox(error)),
          );
        },
      },
    },
    field('Name', name),
    field('Runtime', runtime),
    h('div', { class: 'field' }, h('span', { class: 'label' }, 'Code'), holder),
    errors,
    h('button', { type: 'submit', class: 'primary' }, 'Publish'),
  );
  replace(body, h('h1', null, 'New worker template'), section('Template', form));
  name.focus();
}
