/**
 * The console's addresses are hashes (`#/runs/wf_…/exec_…?…`). What each one shows is main.ts's
 * table, handed in at the start, so that pages can import `go` without this file importing them.
 */

let show: () => Promise<void> = () => Promise.resolve();

/** Shows `page` for the current address now and again whenever the address changes. */
export function startRouter(page: () => Promise<void>): void {
  show = page;
  window.addEventListener('hashchange', () => void show());
  void show();
}

/** The address after `#`: its path as decoded parts, and its query. */
export function currentAddress(): { parts: string[]; params: URLSearchParams } {
  const [path = '', search = ''] = location.hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(search) };
}

/** Opens an address; the one already open is shown again (setting the same hash fires no event). */
export function go(hash: string): void {
  if (location.hash === hash) void show();
  else location.hash = hash;
}
