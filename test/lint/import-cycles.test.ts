import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cycles, folderGraph, importGraph } from '../support/import-graph';

const ROOT = path.resolve(__dirname, '../..');

/**
 * engine/ and api/ read top-down: no two files import each other, even through others or through a
 * type import, and no two folders do (a folder-level loop is a circle a reader sees in the tree).
 */
describe('import circles', () => {
  const graph = importGraph(ROOT, ['engine', 'api']);

  test('the graph is read (a sanity check on the parser)', () => {
    expect(graph.get('api/app.ts')).toEqual(expect.arrayContaining(['engine/platform/config.ts']));
    expect(graph.size).toBeGreaterThan(100);
  });

  test('no file of engine/ or api/ imports itself through others', () => {
    expect(cycles(graph)).toEqual([]);
  });

  test('no folder of engine/ or api/ imports itself through others', () => {
    expect(cycles(folderGraph(graph, 2))).toEqual([]);
  });
});

describe('the circle finder', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'import-graph-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function write(files: Record<string, string>) {
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      writeFileSync(path.join(dir, name), text);
    }
  }

  test('finds a circle closed by a type import, and only it', () => {
    write({
      'src/a.ts': "import { b } from './b';\nexport const a = b;\n",
      'src/b.ts': "import { c } from './c';\nexport const b = c;\n",
      'src/c.ts':
        "import type { A } from './a';\nimport { d } from './d';\nexport const c: A | number = d;\n",
      'src/d.ts': 'export const d = 1;\n',
    });
    expect(cycles(importGraph(dir, ['src']))).toEqual([['src/a.ts', 'src/b.ts', 'src/c.ts']]);
  });

  test('finds a loop between folders whose files form no circle', () => {
    write({
      'src/one/a.ts': "import { b } from '../two/b';\nexport const a = b;\n",
      'src/two/b.ts': 'export const b = 1;\n',
      'src/two/c.ts': "import { a } from '../one/a';\nexport const c = a;\n",
    });
    const graph = importGraph(dir, ['src']);
    expect(cycles(graph)).toEqual([]);
    expect(cycles(folderGraph(graph, 2))).toEqual([['src/one', 'src/two']]);
  });

  test('follows index files, re-exports and dynamic imports', () => {
    write({
      'src/kinds/index.ts': "export { x } from './x';\n",
      'src/kinds/x.ts': "export const x = () => import('../user');\n",
      'src/user.ts': "import { x } from './kinds';\nexport const y = x;\n",
    });
    expect(cycles(importGraph(dir, ['src']))).toEqual([
      ['src/kinds/index.ts', 'src/kinds/x.ts', 'src/user.ts'],
    ]);
  });
});
