import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { CONFIG_VARIABLES } from '../engine/platform/config';

/** The README is the newcomer's front door, and docs/ holds the rest: both must keep up with the code. */
const ROOT = path.resolve(__dirname, '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const readme = read('README.md');
const pages = [
  'README.md',
  'CONTRIBUTING.md',
  'calc/README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(text: string): Set<string> {
  const withoutCode = text.replace(/```[\s\S]*?```/g, '');
  return new Set([...withoutCode.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]!)));
}

describe('README', () => {
  const packageJson = JSON.parse(read('package.json'));

  test('shows the two commands', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm test');
  });

  test('is a front door: short, with the configuration, scale-out and the Temporal UI', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
    for (const heading of ['## Two commands', '## Configuration', '## Scale-out', '## The Temporal UI'])
      expect(readme).toContain(`\n${heading}\n`);
  });

  test.each(CONFIG_VARIABLES.map((v) => [v.name, v.default]))(
    'documents %s with its default',
    (name, fallback) => {
      const row = readme.split('\n').find((line) => new RegExp(`^\\| \`${name}\` +\\|`).test(line));
      expect(row).toBeDefined();
      expect(row).toContain(fallback);
    },
  );

  test.each(pages)('every `npm run` script %s mentions exists', (page) => {
    const mentioned = [...read(page).matchAll(/npm run (?:--silent )?([a-z][a-z:-]*[a-z])/g)].map(
      (m) => m[1]!,
    );
    for (const script of mentioned) expect(Object.keys(packageJson.scripts)).toContain(script);
  });

  test('CONTRIBUTING.md: its rooms are the top-level folders, and every path it names exists', () => {
    const page = read('CONTRIBUTING.md');
    const rooms = [...page.matchAll(/^\| `([a-z]+)\/` +\|/gm)].map((m) => m[1]!);
    const folders = readdirSync(ROOT, { withFileTypes: true })
      .filter((e) => e.isDirectory() && /^[a-z]+$/.test(e.name))
      .map((e) => e.name);
    for (const room of ['api', 'workers', 'ops', 'scripts', 'engine', 'plugins', 'calc', 'migrations'])
      expect(rooms).toContain(room);
    for (const room of rooms) expect(folders).toContain(room);
    // A code span naming a file or folder of the tree (`engine/kinds/index.ts`) must exist.
    const named = [
      ...page.matchAll(/`((?:api|engine|calc|plugins|test|docs|workers|ops|scripts)\/[^`<>\s]*)`/g),
    ]
      .map((m) => m[1]!)
      .filter((p) => !p.includes('<'));
    expect(named.length).toBeGreaterThan(10);
    for (const p of named) expect({ p, exists: existsSync(path.join(ROOT, p)) }).toEqual({ p, exists: true });
  });

  test.each(pages)('every relative link of %s reaches a file and heading', (page) => {
    const links = [...read(page).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
    for (const link of links.filter((l) => !/^[a-z]+:/.test(l))) {
      const [file, hash] = link.split('#') as [string, string | undefined];
      const target =
        file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), file));
      expect({ link, exists: existsSync(path.join(ROOT, target)) }).toEqual({ link, exists: true });
      if (hash !== undefined && target.endsWith('.md'))
        expect({ link, found: anchorsOf(read(target)).has(hash) }).toEqual({ link, found: true });
    }
  });
});
