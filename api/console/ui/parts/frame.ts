/**
 * The frame of every signed-in page: the header with the sections, the workspace chosen at the top
 * right, the user and Sign out; the page's content below it.
 */
import { call, query } from '../api';
import { h, replace } from '../dom';
import { go, mayLeave } from '../router';
import { chooseWorkspace, currentSession, currentWorkspace, signOut } from '../session';

/** Where the console draws (the page's only element). */
export const app = document.getElementById('app')!;

export async function frame(active: string, content: HTMLElement): Promise<void> {
  const switcher = h('select', {
    id: 'workspace',
    on: {
      change: (event) => {
        const chosen = event.target as HTMLSelectElement;
        // Unsaved changes (the workflow editor's) are asked about before the page goes.
        if (!mayLeave()) {
          chosen.value = currentWorkspace();
          return;
        }
        chooseWorkspace(chosen.value);
        go('#/workflows');
      },
    },
  });
  const nav = (hash: string, text: string) =>
    h(
      'a',
      { href: hash, class: active === text ? 'active' : '', 'aria-current': active === text ? 'page' : null },
      text,
    );
  replace(
    app,
    h(
      'header',
      { class: 'top' },
      h('span', { class: 'brand' }, 'Portfolio Analytics'),
      h(
        'nav',
        { 'aria-label': 'Sections' },
        nav('#/workflows', 'Workflows'),
        nav('#/runs', 'Runs'),
        nav('#/templates', 'Templates'),
        nav('#/integrations', 'Integrations'),
        nav('#/secrets', 'Secrets'),
        nav('#/data', 'Data'),
      ),
      h('div', { class: 'who' }, h('label', { for: 'workspace' }, 'Workspace'), switcher),
      h('span', { class: 'user' }, currentSession()?.user.email ?? ''),
      h(
        'button',
        { type: 'button', id: 'sign-out', on: { click: () => mayLeave() && void signOut() } },
        'Sign out',
      ),
    ),
    h('main', { class: 'page' }, content),
  );
  try {
    const { workspaces } = await call<{ workspaces: Array<{ name: string }> }>(
      'GET',
      `/v2/workspaces${query({ page_size: 100 })}`,
    );
    const workspace = currentWorkspace();
    const names = workspaces.map((w) => w.name);
    if (!names.includes(workspace)) names.unshift(workspace);
    replace(
      switcher,
      ...names.map((name) => h('option', { value: name, selected: name === workspace }, name)),
    );
  } catch {
    const workspace = currentWorkspace();
    replace(switcher, h('option', { value: workspace }, workspace));
  }
}
