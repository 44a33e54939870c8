import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

/** docker-compose.yml read as `docker compose` reads it with no variables set. */

const ROOT = path.resolve(__dirname, '..', '..');

export interface Service {
  image?: string;
  /** Engine security options (the worker's seccomp profile and unmasked /proc for bubblewrap). */
  security_opt?: string[];
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  ports?: Array<string | number | { published?: string | number; target?: number; protocol?: string }>;
  deploy?: { replicas?: number };
  healthcheck?: { test?: string | string[] };
}

// Compose uses YAML 1.1 merge keys (`<<: *anchor`) for the shared settings.
const compose = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
export const services = compose.services;

/** Compose interpolation as `docker compose` would do it with no variables set: defaults, `$$` → `$`. */
export function interpolate(value: string): string {
  let text = value.replaceAll('$$', '\u0000');
  const variable = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^${}]*))?\}/;
  // Innermost first, so nested defaults (`${A:-${B:-x}}`) resolve.
  while (variable.test(text)) text = text.replace(variable, (_, _name, fallback?: string) => fallback ?? '');
  return text.replaceAll('\u0000', '$');
}

export function environmentOf(service: Service): Record<string, string> {
  const env = service.environment ?? {};
  const entries = Array.isArray(env)
    ? env.map((line) => {
        const at = line.indexOf('=');
        return at < 0 ? [line, ''] : [line.slice(0, at), line.slice(at + 1)];
      })
    : Object.entries(env).map(([name, value]) => [name, value === null ? '' : String(value)]);
  return Object.fromEntries(entries.map(([name, value]) => [name, interpolate(value!)]));
}

export function commandText(service: Service): string {
  const command = service.command ?? '';
  return Array.isArray(command) ? command.join(' ') : command;
}
