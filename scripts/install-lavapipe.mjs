// Mesa's lavapipe (Vulkan on the CPU, through LLVM) for the tests that execute gpu.js's WGSL in its
// webgpu mode without a GPU (issue 42). Dawn (`webgpu` 0.6) accepts Mesa 25 from Debian 12's
// bookworm-backports and refuses bookworm's own 22.3, so this fetches the backports' driver and the
// libraries it needs newer than bookworm's, as .debs checked against the SHA-256 pinned below, and
// unpacks them with `dpkg -x` into the project:
//
//   tools/lavapipe/<driver version>/usr/share/vulkan/icd.d/lvp_icd.json   (rewritten to its own path)
//   tools/lavapipe/<driver version>/usr/lib/x86_64-linux-gnu/             (libvulkan_lvp.so, libvulkan.so.1, libdrm…)
//
// Nothing is installed into the system and the machine's apt sources are never read or changed: a
// test points VK_ICD_FILENAMES and LD_LIBRARY_PATH at the folder for its own processes only. The
// other libraries the driver links (LLVM 15, libxcb, libwayland, …) are bookworm's, present on the
// Debian 12 machines the suite runs on; `ldd` names any that is missing.
//
//   node scripts/install-lavapipe.mjs     # prints the folder, or why it cannot be had here
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { download } from './pypi-wheel.mjs';

const MIRROR = 'http://deb.debian.org/debian/';

/** The packages, pinned by version and SHA-256 (Debian's Packages index, 2026-12-01). */
export const LAVAPIPE_DEBS = [
  {
    name: 'mesa-vulkan-drivers',
    version: '25.0.7-2~bpo12+1',
    path: 'pool/main/m/mesa/mesa-vulkan-drivers_25.0.7-2~bpo12+1_amd64.deb',
    sha256: '3899f1800424c60a05df5d6913076a526ca8fdbabec43672cd397563d1ca3263',
  },
  {
    name: 'libdrm2',
    version: '2.4.123-1~bpo12+1',
    path: 'pool/main/libd/libdrm/libdrm2_2.4.123-1~bpo12+1_amd64.deb',
    sha256: '9cc2f341964286295124a32d3625edb76730500625e54a1e682761f883064d7b',
  },
  {
    name: 'libdrm-amdgpu1',
    version: '2.4.123-1~bpo12+1',
    path: 'pool/main/libd/libdrm/libdrm-amdgpu1_2.4.123-1~bpo12+1_amd64.deb',
    sha256: '334e2ae389af0e9cb607c2ccfbbf7ae9feb34131ff998550baeffeeae6cda296',
  },
  {
    name: 'libdrm-common',
    version: '2.4.123-1~bpo12+1',
    path: 'pool/main/libd/libdrm/libdrm-common_2.4.123-1~bpo12+1_all.deb',
    sha256: '5f37e8608d172fe6881d8ab149fe325af122a83ab8b13a5cd8d02022a9397ffc',
  },
  {
    name: 'libvulkan1',
    version: '1.3.239.0-1',
    path: 'pool/main/v/vulkan-loader/libvulkan1_1.3.239.0-1_amd64.deb',
    sha256: '622f28b807ba55a1f5ad1622ff83aa2c5b11fedbec074850e04c10a8f28b43d3',
  },
];

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const LAVAPIPE_ROOT = path.join(projectRoot, 'tools', 'lavapipe', LAVAPIPE_DEBS[0].version);
const LIB_DIR = 'usr/lib/x86_64-linux-gnu';

/** What a process needs in its environment to see lavapipe (and nothing else changes). */
export function lavapipeEnvironment(root = LAVAPIPE_ROOT) {
  return {
    VK_ICD_FILENAMES: path.join(root, 'usr/share/vulkan/icd.d/lvp_icd.json'),
    LD_LIBRARY_PATH: path.join(root, LIB_DIR),
  };
}

/** Why lavapipe cannot be had on this machine, or null where it can. */
export function unavailableReason(platform = process.platform, arch = process.arch) {
  if (platform !== 'linux' || arch !== 'x64') {
    return `lavapipe from Debian's packages runs on Linux x86-64 only (this is ${platform} ${arch}); run the webgpu-mode tests on a Debian 12 x86-64 machine`;
  }
  if (spawnSync('dpkg-deb', ['--version'], { encoding: 'utf8' }).status !== 0) {
    return 'dpkg-deb is missing (Debian package dpkg): the lavapipe .debs cannot be unpacked';
  }
  return null;
}

const log = (line) => console.error(`[lavapipe] ${line}`);

/** The folder with lavapipe unpacked, fetching and checking it the first time. */
export async function ensureLavapipe(root = LAVAPIPE_ROOT) {
  const done = path.join(root, 'installed.json');
  if (existsSync(done)) return root;
  const why = unavailableReason();
  if (why) throw new Error(why);
  // A folder without its installed.json was left by an interrupted install of an older version.
  if (existsSync(root)) await rm(root, { recursive: true, force: true });
  // A staging folder of its own: two tests may install at once, and the first complete one wins.
  await mkdir(path.dirname(root), { recursive: true });
  const staging = await mkdtemp(`${root}.partial-`);
  const downloads = await mkdtemp(path.join(os.tmpdir(), 'pas-lavapipe-'));
  try {
    for (const deb of LAVAPIPE_DEBS) {
      const file = path.join(downloads, path.basename(deb.path));
      log(`fetching ${deb.name} ${deb.version}`);
      await download(
        { url: MIRROR + deb.path, filename: path.basename(deb.path), hashes: { sha256: deb.sha256 } },
        file,
      );
      const unpacked = spawnSync('dpkg-deb', ['-x', file, staging], { encoding: 'utf8' });
      if (unpacked.status !== 0)
        throw new Error(`dpkg-deb -x ${path.basename(file)} failed: ${unpacked.stderr}`);
    }
    // The ICD names its library by an absolute system path: point it at the unpacked one.
    const icdFile = path.join(staging, 'usr/share/vulkan/icd.d/lvp_icd.json');
    const icd = JSON.parse(await readFile(icdFile, 'utf8'));
    icd.ICD.library_path = path.join(root, LIB_DIR, 'libvulkan_lvp.so');
    await writeFile(icdFile, `${JSON.stringify(icd, null, 2)}\n`);
    // Every library the driver links must be found (the unpacked ones first).
    const ldd = spawnSync('ldd', [path.join(staging, LIB_DIR, 'libvulkan_lvp.so')], {
      encoding: 'utf8',
      env: { ...process.env, LD_LIBRARY_PATH: path.join(staging, LIB_DIR) },
    });
    const missing = (ldd.stdout ?? '').split('\n').filter((line) => line.includes('not found'));
    if (missing.length > 0) {
      throw new Error(
        `lavapipe needs libraries this machine lacks: ${missing.map((l) => l.trim().split(' ')[0]).join(', ')} (install them with apt, e.g. apt-get install libllvm15 libxcb-dri3-0)`,
      );
    }
    await writeFile(
      path.join(staging, 'installed.json'),
      `${JSON.stringify({ debs: LAVAPIPE_DEBS.map((d) => `${d.name}=${d.version}`) }, null, 2)}\n`,
    );
    await mkdir(path.dirname(root), { recursive: true });
    try {
      await rename(staging, root);
    } catch (error) {
      // Another process (a test beside this one) installed it first: theirs is complete; use it.
      if (!existsSync(done)) throw error;
    }
    // The ICD file was written with the final path already.
    return root;
  } finally {
    await rm(downloads, { recursive: true, force: true });
    await rm(staging, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ensureLavapipe().then(
    (root) => console.log(root),
    (error) => {
      console.error(`[lavapipe] ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
