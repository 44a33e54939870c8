import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The repository's Dockerfile and .dockerignore read as Docker reads them, for the static checks
 * (test/deploy/docker-compose.test.ts) and for replaying the build without a container engine
 * (test/support/container-image.ts). Only what our Dockerfile uses: one stage, ARG, FROM, ENV,
 * WORKDIR, COPY from the context, RUN in shell or exec form, USER, EXPOSE, CMD.
 */

export const PROJECT_ROOT = path.resolve(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(PROJECT_ROOT, file), 'utf8');

export interface Instruction {
  keyword: string;
  args: string;
}

export function parseDockerfile(text: string): Instruction[] {
  return text
    .replace(/\\\r?\n/g, ' ') // line continuations
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [keyword, ...rest] = line.split(/\s+/);
      return { keyword: keyword!.toUpperCase(), args: rest.join(' ') };
    });
}

export const dockerfile: Instruction[] = parseDockerfile(read('Dockerfile'));

/** Shell-form words of an instruction, or the JSON array of its exec form. */
function wordsOf(args: string): string[] {
  return args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/).filter(Boolean);
}

/** `ARG NAME=default` values declared before the first FROM. */
export function argDefaults(instructions: Instruction[] = dockerfile): Record<string, string> {
  const defaults: Record<string, string> = {};
  for (const { keyword, args } of instructions) {
    if (keyword === 'FROM') break;
    if (keyword !== 'ARG') continue;
    const at = args.indexOf('=');
    if (at > 0) defaults[args.slice(0, at)] = args.slice(at + 1).replace(/^"(.*)"$/, '$1');
  }
  return defaults;
}

/** A FROM's image, without the stage name (`FROM image AS name`). */
export function fromImage(args: string): string {
  return args.replace(/\s+as\s+\S+\s*$/i, '');
}

/** Where the stage holding instruction `index` starts: the last FROM at or before it. */
export function stageStart(index: number, instructions = dockerfile): number {
  let start = -1;
  instructions.forEach(({ keyword }, at) => {
    if (keyword === 'FROM' && at <= index) start = at;
  });
  return start;
}

/** The FROM image with its build arguments substituted (their defaults unless given). */
export function baseImage(buildArgs: Record<string, string> = {}, instructions = dockerfile): string {
  const from = instructions.find(({ keyword }) => keyword === 'FROM');
  if (!from) throw new Error('the Dockerfile has no FROM');
  const values = { ...argDefaults(instructions), ...buildArgs };
  return fromImage(from.args).replace(
    /\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g,
    (_, name: string) => values[name] ?? '',
  );
}

/**
 * Environment set by ENV instructions before instruction `index` (`ENV A=1 B=2` form), in its stage
 * (every stage here starts from the base image, so none inherits another's ENV).
 */
export function environmentBefore(index: number, instructions = dockerfile): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { keyword, args } of instructions.slice(Math.max(0, stageStart(index, instructions)), index)) {
    if (keyword !== 'ENV') continue;
    for (const pair of args.split(/\s+/).filter(Boolean)) {
      const at = pair.indexOf('=');
      if (at <= 0) throw new Error(`ENV in the legacy "ENV name value" form is not read here: ${args}`);
      env[pair.slice(0, at)] = pair.slice(at + 1).replace(/^"(.*)"$/, '$1');
    }
  }
  return env;
}

/** The WORKDIR in effect at instruction `index` (Docker's default is `/`). */
export function workdirAt(index: number, instructions = dockerfile): string {
  let workdir = '/';
  for (const { keyword, args } of instructions.slice(Math.max(0, stageStart(index, instructions)), index)) {
    if (keyword === 'WORKDIR') workdir = path.posix.resolve(workdir, args);
  }
  return workdir;
}

export interface Copy {
  sources: string[];
  destination: string;
  index: number;
}

/** COPY/ADD from the build context (not from another stage), without their --flags. */
export function copiesOf(instructions: Instruction[] = dockerfile): Copy[] {
  return instructions.flatMap(({ keyword, args }, index) => {
    if (keyword !== 'COPY' && keyword !== 'ADD') return [];
    const words = wordsOf(args);
    if (words.some((word) => word.startsWith('--from'))) return [];
    const paths = words.filter((word) => !word.startsWith('--'));
    return [{ sources: paths.slice(0, -1), destination: paths.at(-1)!, index }];
  });
}

export const copies: Copy[] = copiesOf(dockerfile);

/** Where a COPY puts a source, relative to WORKDIR (Docker's rule: a `/` destination is a folder). */
export function copiedTo({ sources, destination }: Copy, source: string): string {
  const intoFolder = destination.endsWith('/') || sources.length > 1;
  return path.posix.normalize(
    intoFolder ? path.posix.join(destination, path.posix.basename(source)) : destination,
  );
}

/** .dockerignore semantics: patterns from the context root, a match covers a folder's contents, `!` re-includes. */
const ignorePatterns = read('.dockerignore')
  .split(/\r?\n/)
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#'));

export function excludedFromContext(file: string): boolean {
  const parts = file.split('/');
  const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let excluded = false;
  for (const raw of ignorePatterns) {
    const negated = raw.startsWith('!');
    const pattern = path.posix.normalize(raw.slice(negated ? 1 : 0).replace(/^\/+/, '')).replace(/\/$/, '');
    if (candidates.some((candidate) => path.matchesGlob(candidate, pattern))) excluded = !negated;
  }
  return excluded;
}

/**
 * True when the image holds the repository file at the same path relative to WORKDIR once the
 * instructions before `before` have run (all of them by default).
 */
export function inImage(file: string, before = Infinity): boolean {
  if (excludedFromContext(file)) return false;
  // Only what the stage of `before` copied (the image's own: the last stage).
  const start = stageStart(Math.min(before, dockerfile.length - 1));
  return copies.some(
    (copy) =>
      copy.index > start &&
      copy.index < before &&
      copy.sources.some((source) => {
        const from = path.posix.normalize(source);
        return copiedTo(copy, source) === from && (file === from || file.startsWith(`${from}/`));
      }),
  );
}

/** Every repository file reachable from `entry` through relative imports (static, dynamic, require). */
export function reachableFiles(entry: string): Set<string> {
  const seen = new Set<string>();
  const pending = [entry];
  const specifier =
    /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+|\brequire(?:\.resolve)?\s*\(\s*)['"](\.\.?\/[^'"]+)['"]/g;
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const match of read(file).matchAll(specifier)) {
      const base = path.posix.join(path.posix.dirname(file), match[1]!);
      const resolved = [
        base,
        `${base}.ts`,
        `${base}.mts`,
        `${base}.js`,
        `${base}.mjs`,
        `${base}/index.ts`,
      ].find(
        (candidate) =>
          existsSync(path.join(PROJECT_ROOT, candidate)) &&
          statSync(path.join(PROJECT_ROOT, candidate)).isFile(),
      );
      if (!resolved) throw new Error(`${file}: cannot resolve import "${match[1]}"`);
      pending.push(resolved);
    }
  }
  return seen;
}

export const packageScripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> })
  .scripts;

/** The file `node … <entry>` runs (skipping Node's options and their values). */
export function nodeEntry(words: string[]): string {
  if (words[0] !== 'node') throw new Error(`not a node command: ${words.join(' ')}`);
  const takesValue = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader']);
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    if (takesValue.has(word)) i++;
    else if (!word.startsWith('-')) return word;
  }
  throw new Error(`no entry file in: ${words.join(' ')}`);
}

/**
 * The simple commands of a shell command line, as words: split at `&&`, `||`, `;` and `|`. Quoting
 * is not interpreted (none of our scripts and RUN steps quote), so a quote fails loudly instead.
 */
export function shellCommands(line: string): string[][] {
  if (/['"`$()]/.test(line)) throw new Error(`quoting and substitutions are not read here: ${line}`);
  return line
    .split(/&&|\|\||;|\|/)
    .map((command) => command.trim().split(/\s+/).filter(Boolean))
    .filter((words) => words.length > 0);
}

/** Lifecycle scripts of the root package that `npm ci` / `npm install` run, in npm's order. */
const INSTALL_SCRIPTS = [
  'preinstall',
  'install',
  'postinstall',
  'prepublish',
  'preprepare',
  'prepare',
  'postprepare',
];

/**
 * The repository files a command needs in its working folder: the manifest and lock file and every
 * install script's files for `npm ci`/`npm install`, a script's files for `npm run`, the entry file
 * and its relative imports for `node`, and any other word naming a repository path (one with a `/`
 * or a dot, such as `scripts/setup.sh`).
 */
export function filesNeeded(words: string[], seen = new Set<string>()): string[] {
  const [program, verb] = words;
  const scriptFiles = (name: string): string[] => {
    const script = packageScripts[name];
    if (script === undefined || seen.has(name)) return [];
    seen.add(name);
    return shellCommands(script).flatMap((command) => filesNeeded(command, seen));
  };
  if (program === 'npm' && (verb === 'ci' || verb === 'install' || verb === 'i')) {
    // --ignore-scripts: the project's own install scripts do not run either.
    const scripts = words.includes('--ignore-scripts') ? [] : INSTALL_SCRIPTS.flatMap(scriptFiles);
    return ['package.json', 'package-lock.json', ...scripts];
  }
  if (program === 'npm' && (verb === 'run' || verb === 'run-script') && words[2]) {
    const name = words[2];
    if (packageScripts[name] === undefined) throw new Error(`npm run ${name}: no such script`);
    return ['package.json', ...[`pre${name}`, name, `post${name}`].flatMap(scriptFiles)];
  }
  if (program === 'node') return [...reachableFiles(path.posix.normalize(nodeEntry(words)))];
  return words
    .slice(1)
    .filter((word) => !word.startsWith('-') && /[/.]/.test(word))
    .map((word) => path.posix.normalize(word))
    .filter((word) => !word.startsWith('..') && existsSync(path.join(PROJECT_ROOT, word)));
}

/** The RUN steps with their index and simple commands. */
export function runSteps(instructions = dockerfile): Array<{ index: number; commands: string[][] }> {
  return instructions.flatMap(({ keyword, args }, index) => {
    if (keyword !== 'RUN') return [];
    return [{ index, commands: args.startsWith('[') ? [wordsOf(args)] : shellCommands(args) }];
  });
}
