import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CONFIG_VARIABLES } from '../engine/config';

/** The README is the newcomer's contract: it must keep up with the code. */
describe('README', () => {
  const readme = readFileSync(path.resolve(__dirname, '..', 'README.md'), 'utf8');
  const packageJson = JSON.parse(readFileSync(path.resolve(__dirname, '..', 'package.json'), 'utf8'));

  test('shows the two commands', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm test');
  });

  test.each(CONFIG_VARIABLES.map((v) => [v.name, v.default]))(
    'documents %s with its default',
    (name, fallback) => {
      const row = readme.split('\n').find((line) => new RegExp(`^\\| \`${name}\` +\\|`).test(line));
      expect(row).toBeDefined();
      expect(row).toContain(fallback);
    },
  );

  test('every `npm run` script it mentions exists', () => {
    const mentioned = [...readme.matchAll(/npm run ([a-z][a-z:-]*[a-z])/g)].map((m) => m[1]!);
    expect(mentioned.length).toBeGreaterThan(0);
    for (const script of mentioned) expect(Object.keys(packageJson.scripts)).toContain(script);
  });
});
