import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BUILTIN_TEMPLATES_DIR } from '../../engine/worker-templates/builtin-templates';
import { readTemplateFolder } from '../../engine/worker-templates/template-folder';
import { runScript } from '../../plugins/sandbox/script-sandbox';

/** Template folders with `libraries`: shared helpers from `_lib/` prepended when published. */
describe('template folders: libraries', () => {
  let root: string;
  const folder = () => path.join(root, 'doubler');

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'pas-libraries-'));
    await mkdir(path.join(root, '_lib'));
    await mkdir(folder());
    await writeFile(path.join(root, '_lib', 'twice.js'), 'function twice(n) { return 2 * n; }\n');
    await writeFile(
      path.join(folder(), 'script.js'),
      'function main(args) { return { n: twice(args.inputs) }; }\n',
    );
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  const withMeta = (meta: object) =>
    writeFile(path.join(folder(), 'template.json'), JSON.stringify({ name: 'Doubler', ...meta }));

  test('the listed libraries come first in the stored script, which then runs on its own', async () => {
    await withMeta({ libraries: ['twice.js'] });
    const { input } = await readTemplateFolder(folder());
    const script = input.script as string;
    expect(script.indexOf('function twice')).toBeLessThan(script.indexOf('function main'));
    const outcome = await runScript({ source: script, entryPoint: 'main', args: { inputs: 21 } });
    expect(outcome).toMatchObject({ ok: true, result: { n: 42 } });
  });

  test.each([
    ['not a list', 'twice.js', /libraries must be a list/],
    ['a path out of _lib', ['../doubler/script.js'], /must be a \.js file name in _lib/],
    ['a TypeScript file', ['twice.ts'], /must be a \.js file name in _lib/],
    ['a missing file', ['thrice.js'], /library thrice\.js cannot be read/],
  ])('%s is refused', async (_case, libraries, message) => {
    await withMeta({ libraries });
    await expect(readTemplateFolder(folder())).rejects.toThrow(message);
  });

  test('the built-ins that share helpers carry them in their published script', async () => {
    for (const name of ['save-file-csv', 'save-datastore', 'generate-report']) {
      const { input } = await readTemplateFolder(path.join(BUILTIN_TEMPLATES_DIR, name));
      expect(input.script).toContain('function tabulate(');
    }
    for (const name of ['stress-test', 'risk-attribution']) {
      const { input } = await readTemplateFolder(path.join(BUILTIN_TEMPLATES_DIR, name));
      expect(input.script).toContain('function portfolioPart(');
    }
    for (const name of [
      'exposure',
      'parametric-risk-attribution',
      'sensitivity',
      'underlying-stress-sensitivity',
      'properties',
    ]) {
      const { input } = await readTemplateFolder(path.join(BUILTIN_TEMPLATES_DIR, name));
      expect(input.script).toContain('function portfolioPart(');
      expect(input.script).toContain('function analyticsTable(');
      expect(input.script).toContain('function saveTable(');
    }
  });
});

/** A Python template folder: script.py makes the runtime python3.11; requirements.txt its requirements. */
describe('template folders: Python', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'pas-python-folder-'));
    await writeFile(path.join(dir, 'script.py'), 'def main(args):\n    return 1\n');
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const meta = (fields: object = {}) =>
    writeFile(path.join(dir, 'template.json'), JSON.stringify({ name: 'Py', ...fields }));

  test('script.py is python3.11; requirements.txt gives the requirements, comments and blanks skipped', async () => {
    await meta();
    await writeFile(path.join(dir, 'requirements.txt'), '# pinned\nnumpy==2.2.6\n\npandas==2.2.3  # data\n');
    const { input } = await readTemplateFolder(dir);
    expect(input).toMatchObject({
      script_runtime: 'python3.11',
      requirements: ['numpy==2.2.6', 'pandas==2.2.3'],
    });
  });

  test('requirements in both places, or a runtime that does not fit the file, are refused', async () => {
    await meta({ requirements: ['numpy==2.2.6'] });
    await writeFile(path.join(dir, 'requirements.txt'), 'numpy==2.2.6\n');
    await expect(readTemplateFolder(dir)).rejects.toThrow(/not both/);
    await rm(path.join(dir, 'requirements.txt'));
    await meta({ script_runtime: 'javascript' });
    await expect(readTemplateFolder(dir)).rejects.toThrow(/does not fit script\.py/);
  });

  test('the built-in Python templates pin every requirement', async () => {
    for (const name of ['python-return-statistics', 'python-custom-script']) {
      const { input } = await readTemplateFolder(path.join(BUILTIN_TEMPLATES_DIR, name));
      expect(input.script_runtime).toBe('python3.11');
      const requirements = input.requirements as string[];
      expect(requirements).toEqual(expect.arrayContaining(['numpy==2.2.6', 'pandas==2.2.3']));
      for (const line of requirements) expect(line).toMatch(/^[A-Za-z0-9._-]+==[0-9][0-9A-Za-z.]*$/);
    }
  });
});
