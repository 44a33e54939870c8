import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Every relative import of the TypeScript and JavaScript files under `folders`, type imports included. */
export type ImportGraph = Map<string, string[]>;

const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;
const EXTENSIONS = ['.ts', '.mts', '.js', '.mjs', '.cjs', '/index.ts', '/index.js'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

function resolve(from: string, specifier: string): string | undefined {
  const base = path.resolve(path.dirname(from), specifier);
  if (existsSync(base) && statSync(base).isFile()) return base;
  return EXTENSIONS.map((ext) => base + ext).find((candidate) => existsSync(candidate));
}

/**
 * Reads the files under `folders` (relative to `root`) and keeps the edges between them, as paths
 * relative to `root`. `ts.preProcessFile` sees `import`, `import type`, `export … from`, `import()`
 * and `require()`: a cycle closed by a type import is still a cycle for a reader.
 */
export function importGraph(root: string, folders: string[]): ImportGraph {
  const files = folders.flatMap((folder) => sourceFiles(path.join(root, folder)));
  const inside = new Set(files);
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles
      .map((imported) => imported.fileName)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => resolve(file, specifier))
      .filter((target): target is string => target !== undefined && inside.has(target))
      .map((target) => path.relative(root, target));
    graph.set(path.relative(root, file), [...new Set(targets)].sort());
  }
  return graph;
}

/** The strongly connected components with more than one member (or a self-import): each is a circle. */
export function cycles(graph: ImportGraph): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];

  // Tarjan's algorithm, iterative so a deep import chain cannot overflow the call stack.
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: start, next: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = graph.get(frame.node) ?? [];
      if (frame.next < edges.length) {
        const target = edges[frame.next++]!;
        if (!index.has(target)) {
          index.set(target, counter);
          low.set(target, counter++);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, next: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(target)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1 || edges.includes(frame.node)) found.push(component.sort());
      }
    }
  }
  return found;
}

/** The same graph one level up: each file stands for the folder that holds it (`depth` segments). */
export function folderGraph(graph: ImportGraph, depth: number): ImportGraph {
  const folderOf = (file: string) => path.dirname(file).split(path.sep).slice(0, depth).join('/');
  const folders: ImportGraph = new Map();
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    const edges = new Set(folders.get(from) ?? []);
    for (const target of targets) if (folderOf(target) !== from) edges.add(folderOf(target));
    folders.set(from, [...edges].sort());
  }
  return folders;
}
