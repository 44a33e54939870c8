// Go for the test suite's Temporal server build (build-temporal-server.mjs), when the machine has none
// new enough. Debian 12's golang-go is 1.19, older than the 1.21 that fetches the toolchain a module
// asks for, so apt cannot give one. Instead this fetches the toolchain module the go command itself
// downloads for `GOTOOLCHAIN` (golang.org/toolchain on the Go module proxy), checks it against the
// checksum pinned below and unpacks it into the project:
//
//   tools/go/<version>/bin/go
//
// No root is needed and nothing outside the project is written. Plain Node with no dependencies, like
// the other install steps.
//
//   node scripts/install-go.mjs          # prints the go binary it found or installed
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { download, extractAll, listEntries } from './pypi-wheel.mjs';

/** The oldest go command that fetches the toolchain a module's go.mod asks for by itself. */
export const MINIMUM_GO = [1, 21];

/**
 * The toolchain fetched when none is found, with the module checksum (the go.sum `h1:` form) of each
 * platform's zip, as the go command computes it for the module proxy's zip (2026-11-27). The checksum database is not reachable
 * from every machine, so the pin is what makes the download trustworthy.
 */
export const GO_TOOLCHAIN = {
  version: 'go1.26.8',
  h1: {
    'linux-amd64': 'h1:ZOmGe1OnfREDMIdb1Qi4G9JSuDPBLGExZMQ4nis1RXM=',
  },
};

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const GO_ROOT = path.join(projectRoot, 'tools', 'go');

const log = (line) => console.error(`[go] ${line}`);

/** `go1.26.8` → [1, 26, 8]; null for anything else. */
export function parseGoVersion(text) {
  const match = /\bgo(\d+)\.(\d+)(?:\.(\d+))?/.exec(text ?? '');
  return match ? [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)] : null;
}

export function newEnough(version) {
  if (!version) return false;
  return version[0] > MINIMUM_GO[0] || (version[0] === MINIMUM_GO[0] && version[1] >= MINIMUM_GO[1]);
}

/** What `go version` says of a binary, without letting it fetch another toolchain first. */
function versionOf(binary, env = process.env) {
  const probe = spawnSync(binary, ['version'], {
    encoding: 'utf8',
    env: { ...env, GOTOOLCHAIN: 'local' },
    timeout: 10_000,
  });
  if (probe.error || probe.status !== 0) return null;
  return parseGoVersion(probe.stdout);
}

/** The Go platform name of this machine, or null where Go publishes none we pin. */
export function goPlatform(platform = process.platform, arch = process.arch) {
  const os = { linux: 'linux', darwin: 'darwin' }[platform];
  const cpu = { x64: 'amd64', arm64: 'arm64' }[arch];
  return os && cpu ? `${os}-${cpu}` : null;
}

/** The project's own toolchain folder, where it is complete. */
export function projectGo() {
  const binary = path.join(GO_ROOT, GO_TOOLCHAIN.version, 'bin', 'go');
  return existsSync(binary) ? binary : null;
}

/**
 * The go command the build uses: `go` on PATH when it is 1.21 or later, else the project's own under
 * tools/go. Null when neither is there. `env` is the environment whose PATH is searched.
 */
export function findGo(env = process.env) {
  const onPath = versionOf('go', env);
  if (newEnough(onPath)) return { binary: 'go', version: onPath.join('.'), source: 'PATH' };
  const own = projectGo();
  const version = own && versionOf(own, env);
  if (newEnough(version)) return { binary: own, version: version.join('.'), source: 'tools/go' };
  return { binary: null, found: onPath ? onPath.join('.') : null };
}

/** The first proxy of GOPROXY (the go command's own setting), skipping `direct` and `off`. */
export function moduleProxy(goproxy = process.env.GOPROXY) {
  const first = (goproxy ?? '')
    .split(/[,|]/)
    .map((entry) => entry.trim())
    .find((entry) => entry !== '' && entry !== 'direct' && entry !== 'off');
  return (first ?? 'https://proxy.golang.org').replace(/\/$/, '');
}

/**
 * A module zip's `h1:` checksum (golang.org/x/mod/sumdb/dirhash Hash1): the SHA-256 of the lines
 * "<sha256 of the file>  <name in the zip>\n", sorted by name, in base64. `files` maps each name to
 * where its content lies on disk.
 */
export async function moduleHash(files) {
  const names = [...files.keys()].sort();
  const summary = createHash('sha256');
  for (const name of names) {
    if (name.includes('\n')) throw new Error(`file name with a newline: ${JSON.stringify(name)}`);
    const digest = createHash('sha256')
      .update(await readFile(files.get(name)))
      .digest('hex');
    summary.update(`${digest}  ${name}\n`);
  }
  return `h1:${summary.digest('base64')}`;
}

/** The go command's own rule for a toolchain zip: binaries under bin/ and pkg/tool/ are executable. */
export function toolchainMode(relative) {
  const parts = relative.split('/');
  const executable =
    (parts[0] === 'bin' && parts.length === 2) ||
    (parts[0] === 'pkg' && parts[1] === 'tool' && parts.length === 4);
  return executable ? 0o755 : 0o644;
}

/** Fetches, checks and unpacks the pinned toolchain into tools/go/<version>; answers its go binary. */
export async function installGo() {
  const platform = goPlatform();
  const expected = platform && GO_TOOLCHAIN.h1[platform];
  if (!expected) {
    throw new Error(
      `No Go toolchain is pinned for ${process.platform}/${process.arch}: install Go 1.21 or later ` +
        'from https://go.dev/dl/ and put it on PATH.',
    );
  }
  const moduleVersion = `v0.0.1-${GO_TOOLCHAIN.version}.${platform}`;
  const url = `${moduleProxy()}/golang.org/toolchain/@v/${moduleVersion}.zip`;
  const target = path.join(GO_ROOT, GO_TOOLCHAIN.version);
  const partial = `${target}.partial`;
  const zip = `${target}.zip`;
  await mkdir(GO_ROOT, { recursive: true });
  await rm(partial, { recursive: true, force: true });
  const started = Date.now();
  log(`downloading ${url}`);
  // No sha256 to check while streaming: the h1 checksum below covers every file.
  await download({ url, filename: path.basename(zip), hashes: {} }, zip, { verify: false });
  const prefix = `golang.org/toolchain@${moduleVersion}/`;
  const names = (await listEntries(zip)).filter((name) => !name.endsWith('/'));
  if (names.some((name) => !name.startsWith(prefix))) throw new Error(`${url}: a file outside ${prefix}`);
  await extractAll(zip, partial, { prefix, mode: toolchainMode });
  const actual = await moduleHash(
    new Map(names.map((name) => [name, path.join(partial, name.slice(prefix.length))])),
  );
  if (actual !== expected) {
    await rm(partial, { recursive: true, force: true });
    await rm(zip, { force: true });
    throw new Error(`${url}: checksum ${actual}, expected ${expected} (the pin in scripts/install-go.mjs)`);
  }
  await rm(target, { recursive: true, force: true });
  await rename(partial, target);
  await rm(zip, { force: true });
  const binary = path.join(target, 'bin', 'go');
  const version = versionOf(binary);
  if (!newEnough(version)) throw new Error(`${binary} does not answer \`go version\``);
  const size = (await stat(binary)).size;
  log(
    `installed ${GO_TOOLCHAIN.version} (${names.length} files, go binary ${Math.round(size / 1e6)} MB) ` +
      `into tools/go in ${Math.round((Date.now() - started) / 1000)} s`,
  );
  return binary;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const found = findGo();
    console.log(found.binary ?? (await installGo()));
  } catch (error) {
    console.error(`[go] ${error.message}`);
    process.exit(1);
  }
}
