/**
 * What the integration form's HTTP and SMTP sections (integration-http.ts, integration-smtp.ts)
 * share: the integration as the API answers it, what each section is given, and reading a field.
 */
import { h, type Stamp } from '../dom';
import type { PageKit } from '../page-kit';
import type { FieldErrors } from './field-errors';

export interface Integration {
  id: string;
  name: string;
  description: string | null;
  type: 'WEBHOOK' | 'HTTP' | 'SMTP';
  webhook_path: string | null;
  secrets_used: string[];
  base_url: string | null;
  headers: Record<string, string> | null;
  timeout_ms: number | null;
  allowed_methods: string[] | null;
  allow_http: boolean | null;
  host: string | null;
  port: number | null;
  security: string | null;
  username: string | null;
  password_secret: string | null;
  from: string | null;
  updated: Stamp;
  version: string;
}

/** What a type's section of the form is given. */
export interface SettingsParts {
  kit: PageKit;
  /** The integration being changed; null for a new one. */
  existing: Integration | null;
  workspace: string;
  /** The names of the workspace's secrets, sorted. */
  secrets: string[];
  errors: FieldErrors;
  /** One timeout for both types, so what was typed stays when the type changes. */
  timeout: HTMLInputElement;
  secretsLink: HTMLElement;
}

/** The timeout input, filled from the integration being changed. */
export function timeoutInput(existing: Integration | null): HTMLInputElement {
  return h('input', {
    id: 'intg-timeout',
    type: 'number',
    min: 1,
    max: 60000,
    step: 1,
    placeholder: '10000',
    value:
      existing?.timeout_ms === null || existing?.timeout_ms === undefined ? '' : String(existing.timeout_ms),
  });
}

/** The timeout's field, with the hint for the API's message about it. */
export const timeoutField = ({ kit, timeout, errors }: SettingsParts) =>
  kit.field('Timeout (ms, at most 60000; empty: 10000)', timeout, errors.hint('timeout_ms', timeout));

/** A note under a field. */
export const note = (text: string, ...more: Array<HTMLElement | string>) =>
  h('p', { class: 'note hint' }, text, ...more);

/** An input's value for the body: null when empty. */
export const numberOrNull = (input: HTMLInputElement) =>
  input.value.trim() === '' ? null : Number(input.value);
export const textOrNull = (input: HTMLInputElement) => input.value.trim() || null;
