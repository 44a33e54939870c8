import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');

/** Where the suites' virtualenvs live: inside the project (ignored by git), one folder per tool. */
export const VENV_ROOT = path.join(ROOT, '.venvs');

/** Python 3.11 or later is a documented prerequisite of `npm test` (schemathesis, the PyPI clients). */
/** Interpreters a pyenv installation holds (pyenv's shims answer only for the active version). */
function pyenvInterpreters(minor: number): string[] {
  const root = process.env.PYENV_ROOT ?? path.join(process.env.HOME ?? '/root', '.pyenv');
  try {
    return readdirSync(path.join(root, 'versions'))
      .filter((version) => version.startsWith(`3.${minor}.`))
      .sort()
      .reverse()
      .map((version) => path.join(root, 'versions', version, 'bin', 'python3'));
  } catch {
    return [];
  }
}

async function findPython(preferred: readonly string[] = []): Promise<string> {
  const wanted = preferred.flatMap((name) => {
    const minor = Number(/^python3\.(\d+)$/.exec(name)?.[1]);
    return Number.isInteger(minor) ? [name, ...pyenvInterpreters(minor)] : [name];
  });
  for (const candidate of [...wanted, 'python3', 'python3.13', 'python3.12', 'python3.11', 'python']) {
    try {
      const { stdout } = await run(candidate, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])']);
      const [major, minor] = stdout.trim().split('.').map(Number);
      if (major === 3 && (minor ?? 0) >= 11) return candidate;
    } catch {
      // not on PATH: try the next name
    }
  }
  throw new Error('npm test needs Python 3.11 or later on PATH (python3) for the contract and client tests.');
}

/**
 * A project-local virtualenv named `name` holding exactly `requirements` (pinned specifiers), created on
 * first use and reused while the requirements are unchanged. Answers the path of its `bin/` folder.
 * Each suite uses its own name: the two PyPI clients install the same module (`everysk`).
 */
export async function pythonVenv(
  name: string,
  requirements: string[],
  options: { preferPython?: readonly string[] } = {},
): Promise<string> {
  const dir = path.join(VENV_ROOT, name);
  const bin = path.join(dir, 'bin');
  const stamp = path.join(dir, '.requirements');
  const wanted = [...(options.preferPython ?? []), ...requirements].join('\n');
  if (existsSync(stamp) && (await readFile(stamp, 'utf8')) === wanted) return bin;

  await rm(dir, { recursive: true, force: true });
  await mkdir(VENV_ROOT, { recursive: true });
  await run(await findPython(options.preferPython), ['-m', 'venv', dir]);
  await run(
    path.join(bin, 'python'),
    ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-input', ...requirements],
    { maxBuffer: 16 * 1024 * 1024, env: { ...process.env, PIP_NO_INPUT: '1' } },
  );
  await writeFile(stamp, wanted);
  return bin;
}
