// Builds the Temporal server and its SQL schema tool at the version docker-compose.yml pins, from the Go
// module go.temporal.io/server, and caches them with the schema files the admin-tools image ships:
//
//   tools/temporal-server/<version>/temporal-server      (the `temporalio/server` image's binary)
//   tools/temporal-server/<version>/temporal-sql-tool    (the `temporalio/admin-tools` image's tool)
//   tools/temporal-server/<version>/schema/              (the admin-tools image's /etc/temporal/schema)
//   tools/temporal-server/<version>/build.json           (written last: the cache is complete)
//
// The test suite runs the compose topology as processes on these (test/support/topology.ts); `npm test`
// runs this first. Not part of `npm ci` (the Docker image runs that and needs none of it). A first build
// takes about 10 minutes on 2 cores; later runs reuse the cache. Prints the folder as its last line.
//
//   node scripts/build-temporal-server.mjs [--json]
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, cp, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { findGo, installGo } from './install-go.mjs';

const MODULE = 'go.temporal.io/server';
/** The images' own build (the module's Makefile and docker/ folder): static binaries, the same tags. */
const BUILD = {
  env: { CGO_ENABLED: '0' },
  tags: 'disable_grpc_modules',
  commands: { 'temporal-server': `${MODULE}/cmd/server`, 'temporal-sql-tool': `${MODULE}/cmd/tools/sql` },
};
/** Part of the cache key: a changed recipe rebuilds. */
const RECIPE = 1;

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CACHE_ROOT = path.join(projectRoot, 'tools', 'temporal-server');

const log = (line) => console.error(`[temporal-server] ${line}`);

/**
 * The version the compose file pins for the server, checked against its admin-tools jobs (they ship the
 * schema and the SQL tool of the same release).
 */
export function composeTemporalVersion(composeText) {
  const compose = parse(composeText, { merge: true });
  const versions = new Map();
  for (const [name, service] of Object.entries(compose.services ?? {})) {
    const match = /^temporalio\/(server|admin-tools):(.+)$/.exec(String(service.image ?? ''));
    if (match) versions.set(`${name} (${match[1]})`, match[2]);
  }
  const distinct = [...new Set(versions.values())];
  if (distinct.length !== 1 || ![...versions.keys()].some((key) => key.endsWith('(server)'))) {
    throw new Error(
      `docker-compose.yml must pin one version for temporalio/server and temporalio/admin-tools; found ${JSON.stringify(Object.fromEntries(versions))}`,
    );
  }
  return distinct[0];
}

function fail(message) {
  throw Object.assign(new Error(message), { reported: true });
}

/**
 * The go command: Go 1.21 or later on PATH, else the project's own under tools/go, fetched from the Go
 * module proxy when neither is there (install-go.mjs; Debian 12's golang-go is too old).
 */
async function goCommand() {
  const found = findGo();
  const binary = found.binary ?? (await installGo());
  const probe = spawnSync(binary, ['version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0)
    fail(`${binary} version failed: ${probe.error?.message ?? probe.stderr}`);
  return { binary, version: probe.stdout.trim() };
}

/** Runs a command; with `progress`, its stderr lines (`go install -v`: one per package) are counted. */
function run(command, args, options, progress = false) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let stderr = '';
    let lines = 0;
    const started = Date.now();
    const timer = progress
      ? setInterval(
          () => log(`  … ${lines} packages in ${Math.round((Date.now() - started) / 1000)} s`),
          30_000,
        )
      : null;
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      lines += String(chunk)
        .split('\n')
        .filter((line) => line.trim() !== '').length;
      if (!progress) log(`  ${String(chunk).trim()}`);
    });
    child.once('exit', () => timer && clearInterval(timer));
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0
        ? resolve(output)
        : reject(
            new Error(
              `${command} ${args.join(' ')} failed (${signal ?? `exit ${code}`}):\n${stderr.slice(-8000)}`,
            ),
          ),
    );
  });
}

async function makeWritable(folder) {
  await chmod(folder, 0o755);
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    const file = path.join(folder, entry.name);
    if (entry.isDirectory()) await makeWritable(file);
    else await chmod(file, 0o644);
  }
}

async function readMarker(folder) {
  try {
    return JSON.parse(await readFile(path.join(folder, 'build.json'), 'utf8'));
  } catch {
    return null;
  }
}

/** The cached build for `version`, built first when missing, incomplete or from another recipe. */
export async function ensureTemporalServer(version) {
  const folder = path.join(CACHE_ROOT, version);
  const marker = await readMarker(folder);
  if (marker?.version === version && marker.recipe === RECIPE) {
    log(`reusing ${path.relative(projectRoot, folder)} (built ${marker.builtAt} with ${marker.go})`);
    return { folder, ...marker };
  }
  const go = await goCommand();
  const started = Date.now();
  log(`building ${MODULE}@v${version} with ${go.version} (a first build takes about 10 minutes on 2 cores)`);
  await mkdir(CACHE_ROOT, { recursive: true });
  const partial = path.join(CACHE_ROOT, `.${version}-${randomBytes(4).toString('hex')}.partial`);
  try {
    const bin = path.join(partial, 'bin');
    await mkdir(bin, { recursive: true });
    const env = { ...process.env, ...BUILD.env, GOBIN: bin };
    const packages = Object.values(BUILD.commands).map((pkg) => `${pkg}@v${version}`);
    await run(go.binary, ['install', '-v', '-tags', BUILD.tags, ...packages], { env }, true);
    for (const [name, pkg] of Object.entries(BUILD.commands)) {
      await rename(path.join(bin, path.posix.basename(pkg)), path.join(partial, name));
    }
    await rm(bin, { recursive: true });
    // The schema files come from the same module version (what the admin-tools image copies).
    const download = JSON.parse(
      await run(go.binary, ['mod', 'download', '-json', `${MODULE}@v${version}`], { env }),
    );
    await cp(path.join(download.Dir, 'schema'), path.join(partial, 'schema'), { recursive: true });
    // The module cache is read-only; the copy must not be, or it could not be replaced or removed.
    await makeWritable(path.join(partial, 'schema'));
    const sqlToolVersion = (
      await run(path.join(partial, 'temporal-sql-tool'), ['--version'], { env })
    ).trim();
    const built = {
      version,
      recipe: RECIPE,
      go: go.version,
      tags: BUILD.tags,
      env: BUILD.env,
      sqlToolVersion,
      builtAt: new Date().toISOString(),
      buildSeconds: Math.round((Date.now() - started) / 1000),
    };
    // Written last, then the folder moves into place: an interrupted build leaves no complete-looking cache.
    await writeFile(path.join(partial, 'build.json'), `${JSON.stringify(built, null, 2)}\n`);
    await rm(folder, { recursive: true, force: true });
    await rename(partial, folder);
    log(`built ${path.relative(projectRoot, folder)} in ${built.buildSeconds} s`);
    return { folder, ...built };
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
}

const isMain = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  try {
    const version = composeTemporalVersion(
      await readFile(path.join(projectRoot, 'docker-compose.yml'), 'utf8'),
    );
    const built = await ensureTemporalServer(version);
    console.log(process.argv.includes('--json') ? JSON.stringify(built) : built.folder);
  } catch (error) {
    console.error(`[temporal-server] ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
