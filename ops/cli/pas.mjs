#!/usr/bin/env node
// `pas` CLI launcher: runs the TypeScript CLI on the project's pinned Node (24) through tsx.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const pinned = path.join(root, 'node_modules', 'node', 'bin', 'node');
const node = existsSync(pinned) ? pinned : process.execPath;
const result = spawnSync(
  node,
  [
    '--no-node-snapshot',
    '--import',
    import.meta.resolve('tsx'),
    path.join(root, 'ops', 'cli', 'main.ts'),
    ...process.argv.slice(2),
  ],
  // The project root, so a relative DATA_DIR means the same folder as for `npm start`.
  { stdio: 'inherit', cwd: root },
);
process.exit(result.status ?? 1);
