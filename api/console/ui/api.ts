/** The console's calls: the same /v2 API as every client, with the session cookie and CSRF token. */
export interface Session {
  user: { id: string; email: string; account_id: string; is_owner: boolean; credential: string };
  csrf_token: string;
  expires_at: string;
  idle_expires_at: string;
  temporal_ui_url: string | null;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number | string,
    message: string,
  ) {
    super(message);
  }
}

let csrf = '';
let onSignedOut: () => void = () => undefined;

export function useSession(session: Session | null, signedOut?: () => void): void {
  csrf = session?.csrf_token ?? '';
  if (signedOut) onSignedOut = signedOut;
}

export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrf;
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!response.ok) {
    const error = parsed as { code?: number | string; message?: string } | null;
    if (response.status === 401 && !path.startsWith('/console/session')) onSignedOut();
    throw new ApiError(
      response.status,
      error?.code ?? response.status,
      error?.message ?? response.statusText,
    );
  }
  return parsed as T;
}

/** A query string of the defined values. */
export function query(values: Record<string, string | number | boolean | null | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) {
    if (value !== null && value !== undefined && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}
