import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

/** Runs the real `pas` bin (ops/cli/pas.mjs) against the database at `url`; waits for it. */
export function pas(
  url: string,
  ...args: string[]
): { status: number | null; stdout: string; stderr: string } {
  return pasWith({}, url, ...args);
}

/** `pas` with more of the environment set (SECRETS_KEY_FILE, say). */
export function pasWith(
  env: Record<string, string>,
  url: string,
  ...args: string[]
): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [path.join(ROOT, 'ops/cli/pas.mjs'), ...args], {
    env: { ...process.env, ...env, DATABASE_URL: url },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
