/**
 * What every page shares: who is signed in, the workspace chosen at the top right, and the stream of
 * run changes (server-sent events) that live views follow.
 */
import { call, type Session, useSession } from './api';

let session: Session | null = null;
let workspace = localStorage.getItem('pas.console.workspace') || 'main';
/** What the current view does when a run changes (live updates); replaced on every navigation. */
let onRunChange: ((executionId: string | null) => void) | null = null;
let events: EventSource | null = null;
/** The page a signed-out browser is shown: main.ts names it, so this file imports no page. */
let signInPage: (message: string) => void = () => undefined;

export function currentSession(): Session | null {
  return session;
}

/** The workspace chosen at the top right, at the time of the call. */
export function currentWorkspace(): string {
  return workspace;
}

/** A workspace chosen at the top right; kept for the next visit. */
export function chooseWorkspace(name: string): void {
  workspace = name;
  localStorage.setItem('pas.console.workspace', workspace);
}

/** What the current view does when a run changes (null: nothing). */
export function whenRunChanges(handler: ((executionId: string | null) => void) | null): void {
  onRunChange = handler;
}

export function whenSignedOut(page: (message: string) => void): void {
  signInPage = page;
}

export function startSession(opened: Session): void {
  session = opened;
  useSession(opened, () => {
    session = null;
    events?.close();
    events = null;
    signInPage('Your session has ended. Sign in again.');
  });
  events?.close();
  events = new EventSource('/console/events');
  events.addEventListener('run', (event) => {
    const data = JSON.parse((event as MessageEvent<string>).data) as { id: string };
    onRunChange?.(data.id);
  });
  events.addEventListener('resync', () => onRunChange?.(null));
}

/** Starts the session the browser's cookie holds, if it holds one (a reload, a new tab). */
export async function resumeSession(): Promise<boolean> {
  let current: (Session & { signed_in: true }) | { signed_in: false } = { signed_in: false };
  try {
    current = await call('GET', '/console/session');
  } catch {
    // Shown as the sign-in page.
  }
  if (!current.signed_in) return false;
  startSession(current);
  return true;
}

const DRAFTS = 'pas.console.workflow-draft:';

/** Where a tab keeps its unsaved draft of a workflow (sessionStorage), per workspace. */
export function workflowDraftKey(workspaceName: string, workflowId: string | null): string {
  return `${DRAFTS}${workspaceName}:${workflowId ?? 'new'}`;
}

export async function signOut(): Promise<void> {
  try {
    await call('DELETE', '/console/session');
  } finally {
    session = null;
    events?.close();
    events = null;
    useSession(null);
    // Unsaved workflow drafts may hold scripts: they do not outlive the session in this tab.
    for (const key of Object.keys(sessionStorage)) {
      if (key.startsWith(DRAFTS)) sessionStorage.removeItem(key);
    }
    history.replaceState(null, '', '/console');
    signInPage('Signed out.');
  }
}
