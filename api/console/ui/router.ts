/**
 * The console's addresses are hashes (`#/runs/wf_…/exec_…?…`). What each one shows is main.ts's
 * table, handed in at the start, so that pages can import `go` without this file importing them.
 * A page with unsaved changes (the workflow editor) sets a leave check: going elsewhere in the
 * console asks first, and so does closing or reloading the tab.
 */

let show: () => Promise<void> = () => Promise.resolve();
/** The question to ask before leaving the page shown, or null when nothing would be lost. */
let leaveCheck: (() => string | null) | null = null;
/** The address shown, to go back to when leaving is called off. */
let shown = '';

/** Shows `page` for the current address now and again whenever the address changes. */
export function startRouter(page: () => Promise<void>): void {
  show = () => {
    shown = location.hash;
    return page();
  };
  window.addEventListener('hashchange', () => {
    if (!mayLeave()) {
      // Called off: the address goes back to the page still shown, without showing it again.
      history.replaceState(null, '', shown || location.pathname);
      return;
    }
    void show();
  });
  window.addEventListener('beforeunload', (event) => {
    if (leaveCheck?.()) event.preventDefault();
  });
  void show();
}

/**
 * While the page shown holds something unsaved: `check` answers the question to ask (null when
 * nothing would be lost). Cleared when another page is shown.
 */
export function setLeaveCheck(check: (() => string | null) | null): void {
  leaveCheck = check;
}

/** Asks, if the page shown would lose something; true when it may be left. */
export function mayLeave(): boolean {
  const question = leaveCheck?.();
  if (question && !window.confirm(question)) return false;
  leaveCheck = null;
  return true;
}

/** The address after `#`: its path as decoded parts, and its query. */
export function currentAddress(): { parts: string[]; params: URLSearchParams } {
  const [path = '', search = ''] = location.hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(search) };
}

/** Opens an address; the one already open is shown again (setting the same hash fires no event). */
export function go(hash: string): void {
  if (location.hash === hash) {
    if (!mayLeave()) return;
    void show();
  } else {
    location.hash = hash;
  }
}
