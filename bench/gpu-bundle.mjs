// Packs the GPU check (bench/gpu.bench.ts) for a GPU machine that has no project install and no
// registry access, into bench/out/gpu-check (ignored by git; about 40 MB, under the GPU machine's 64 MiB carry):
//
//   node.xz             the project's pinned Node (the npm `node` package's binary), xz-compressed
//   libvulkan1_*.deb    Debian's Vulkan loader: GPU server images carry the driver's ICD but often no
//                       libvulkan.so.1 (run.sh unpacks it with dpkg -x, nothing is installed)
//   app.tar.xz          calc/, the two bench files, the synthetic market helper, tsconfig.json and
//                       the node_modules they load: tsx (with esbuild's linux-x64 binary), gpu.js and
//                       webgpu with only its linux-x64 Dawn build
//   run.sh              unpacks what it needs under the folder itself and runs the check
//
//   node bench/gpu-bundle.mjs          # then: bench/out/gpu-check/run.sh on the GPU machine
//
// Linux x64 only (the GPU machines this is for). Plain Node, no dependencies.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'bench', 'out', 'gpu-check');
const STAGING = path.join(ROOT, 'bench', 'out', 'gpu-check-staging');
const APP = path.join(STAGING, 'app');
const MODULES = path.join(ROOT, 'node_modules');

/** Packages the check loads, and everything they depend on (dependencies and installed optional ones). */
const ROOTS = ['tsx', 'gpu.js'];
/** Left out: gpu.js's optional headless-gl (never loaded for webgpu/webasm/cpu), and its build tool. */
const LEFT_OUT = new Set(['gl', 'node-gyp']);

const log = (line) => console.log(`[gpu-bundle] ${line}`);

function packageDir(name) {
  const dir = path.join(MODULES, name);
  if (!existsSync(path.join(dir, 'package.json')))
    throw new Error(`${name} is not installed: run npm ci first`);
  return dir;
}

/** The closure of ROOTS over the hoisted node_modules (npm's layout; nested copies come with their parent). */
function closure() {
  const seen = new Set();
  const pending = [...ROOTS];
  while (pending.length > 0) {
    const name = pending.pop();
    if (seen.has(name) || LEFT_OUT.has(name)) continue;
    const manifest = JSON.parse(readFileSync(path.join(packageDir(name), 'package.json'), 'utf8'));
    seen.add(name);
    const optional = Object.keys(manifest.optionalDependencies ?? {}).filter((dep) =>
      existsSync(path.join(MODULES, dep, 'package.json')),
    );
    for (const dep of [...Object.keys(manifest.dependencies ?? {}), ...optional]) {
      if (existsSync(path.join(MODULES, dep, 'package.json'))) pending.push(dep);
    }
  }
  return [...seen].sort();
}

function sizeOf(target) {
  const stat = statSync(target);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(target).reduce((total, entry) => total + sizeOf(path.join(target, entry)), 0);
}

function main() {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error('the GPU check is packed for Linux x64 machines; run this on one');
  }
  rmSync(OUT, { recursive: true, force: true });
  rmSync(STAGING, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  mkdirSync(APP, { recursive: true });

  // The sources, in the repository's layout so relative imports resolve.
  for (const item of [
    'calc',
    'tsconfig.json',
    'bench/gpu.bench.ts',
    'bench/calc-books.ts',
    'test/calc/support/synthetic-market.ts',
  ]) {
    cpSync(path.join(ROOT, item), path.join(APP, item), { recursive: true });
  }
  writeFileSync(
    path.join(APP, 'package.json'),
    `${JSON.stringify({ name: 'pas-gpu-check', private: true, description: 'bench/gpu-bundle.mjs' }, null, 2)}\n`,
  );

  const packages = closure();
  for (const name of packages) {
    const from = packageDir(name);
    const to = path.join(APP, 'node_modules', name);
    if (name === 'webgpu') {
      // Only the linux-x64 Dawn build (the package carries every platform's).
      cpSync(from, to, {
        recursive: true,
        filter: (file) => !/[\\/]dist[\\/](?!linux-x64)[^\\/]+$/.test(file),
      });
    } else {
      cpSync(from, to, { recursive: true, filter: (file) => !file.endsWith('.map') });
    }
  }
  // The esbuild binary tsx runs (a platform package of esbuild's).
  for (const scoped of ['@esbuild/linux-x64']) {
    if (existsSync(path.join(MODULES, scoped))) {
      cpSync(path.join(MODULES, scoped), path.join(APP, 'node_modules', scoped), { recursive: true });
    }
  }
  log(`node_modules: ${packages.join(', ')} (+ @esbuild/linux-x64)`);
  execFileSync('sh', ['-c', `tar -C "${STAGING}" -cf - app | xz -T0 -6 > "${path.join(OUT, 'app.tar.xz')}"`]);
  rmSync(STAGING, { recursive: true, force: true });

  // The pinned Node, compressed.
  const node = path.join(MODULES, 'node', 'bin', 'node');
  if (!existsSync(node)) throw new Error('node_modules/node/bin/node is missing: run npm ci first');
  execFileSync('sh', ['-c', `xz -T0 -6 -c "${node}" > "${path.join(OUT, 'node.xz')}"`]);

  // Debian's Vulkan loader, as a .deb for dpkg -x.
  const download = spawnSync('apt-get', ['download', 'libvulkan1'], { cwd: OUT, encoding: 'utf8' });
  if (download.status !== 0) {
    log(
      `apt-get download libvulkan1 failed (${download.error?.message ?? download.stderr.trim()}); put Debian's ` +
        'libvulkan1 .deb into bench/out/gpu-check by hand, or rely on the GPU machine having libvulkan.so.1',
    );
  }

  writeFileSync(
    path.join(OUT, 'run.sh'),
    `#!/bin/sh
# The GPU check (bench/gpu.bench.ts), packed by bench/gpu-bundle.mjs. Writes only under this folder.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$here/node" ] || xz -dc "$here/node.xz" > "$here/node"
chmod +x "$here/node"
[ -d "$here/app" ] || xz -dc "$here/app.tar.xz" | tar -C "$here" -xf -
# The Vulkan loader from the .deb, unless the machine has one.
if ls "$here"/libvulkan1_*.deb > /dev/null 2>&1 && [ ! -d "$here/vulkan" ]; then
  dpkg -x "$here"/libvulkan1_*.deb "$here/vulkan"
fi
export LD_LIBRARY_PATH="$here/vulkan/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64:\${LD_LIBRARY_PATH:-}"
# NVIDIA's container images keep the driver's ICD outside the loader's default folders.
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "\${VK_DRIVER_FILES:-}\${VK_ICD_FILENAMES:-}" ] && [ -f "$icd" ]; then
  export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"
fi
cd "$here/app"
exec "$here/node" --no-node-snapshot --import tsx bench/gpu.bench.ts "$@"
`,
  );
  chmodSync(path.join(OUT, 'run.sh'), 0o755);
  log(
    `bench/out/gpu-check: ${(sizeOf(OUT) / 1e6).toFixed(1)} MB; on the GPU machine: bench/out/gpu-check/run.sh`,
  );
}

main();
