// The first step of `npm test`: every program from outside the project that the suite runs is checked
// before anything else, in well under a second. On Debian as root, what is missing is installed with
// apt, saying what and why (as `playwright install --with-deps` does); anywhere else the step stops at
// once with one line per missing program and the exact command that installs it. It never installs a
// program that is already there: a program whose Debian package is installed but which is not where
// the suite looks (PATH) is named as such, and nothing is installed for it.
//
//   node test/preflight.mjs                 # npm test runs this first
//   PAS_PREFLIGHT=check node test/…         # only check, never install
//   PAS_PREFLIGHT=install node test/…       # install with apt even where the step would not choose to
//
// docs/testing.md lists each program with the tests that need it. Plain Node, no dependencies: it runs
// before the type check.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { findGo, GO_TOOLCHAIN, MINIMUM_GO } from '../scripts/install-go.mjs';
import { LAVAPIPE_DEBS, LAVAPIPE_ROOT, unavailableReason } from '../scripts/install-lavapipe.mjs';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Whether `file` is an executable file. */
function executable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where `name` is found on the PATH of `env`, or null. */
export function onPath(name, env = process.env) {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir !== '' && executable(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}

const pathOrFile = (name, file) => (env) => onPath(name, env) !== null || executable(file);

/**
 * A library of Debian 12's that lavapipe (fetched into tools/lavapipe by the webgpu-mode tests, with
 * the newer Mesa and DRM libraries it needs) links from the system: `ldd` of its driver, mapped to
 * packages with `dpkg -S`. Most Debian 12 images with any graphics library have them.
 */
const LAVAPIPE_LIBRARIES = [
  ['libllvm15', 'libLLVM-15.so.1'],
  ['libxcb1', 'libxcb.so.1'],
  ['libxcb-dri3-0', 'libxcb-dri3.so.0'],
  ['libxcb-present0', 'libxcb-present.so.0'],
  ['libxcb-randr0', 'libxcb-randr.so.0'],
  ['libxcb-shm0', 'libxcb-shm.so.0'],
  ['libxcb-sync1', 'libxcb-sync.so.1'],
  ['libxcb-xfixes0', 'libxcb-xfixes.so.0'],
  ['libx11-xcb1', 'libX11-xcb.so.1'],
  ['libxshmfence1', 'libxshmfence.so.1'],
  ['libwayland-client0', 'libwayland-client.so.0'],
  ['libzstd1', 'libzstd.so.1'],
].map(([apt, soname]) => ({
  name: soname,
  where: `/usr/lib/x86_64-linux-gnu/${soname}`,
  found: () => existsSync(`/usr/lib/x86_64-linux-gnu/${soname}`),
  apt,
  why: 'lavapipe, the software Vulkan the webgpu-mode kernel tests run on (test/calc/gpujs-lavapipe.test.ts)',
}));

/**
 * Each program the suite runs: how the suite finds it (so this step looks where the tests look), the
 * Debian package that has it, and the tests that need it. `after` names a requirement checked only when
 * that one is met (the venv module of an interpreter that is missing is missing too).
 */
export const REQUIREMENTS = [
  {
    name: 'nginx',
    where: '/usr/sbin/nginx',
    found: () => executable('/usr/sbin/nginx'),
    apt: 'nginx',
    why: 'the load balancer of the compose topology tests (test/deploy/topology.test.ts)',
  },
  {
    name: 'podman',
    where: 'PATH',
    found: (env) => onPath('podman', env) !== null,
    apt: 'podman',
    why: 'the image test, which builds and runs the Dockerfile (test/deploy/image.test.ts)',
  },
  {
    name: 'runc',
    where: 'PATH or /usr/sbin/runc',
    found: pathOrFile('runc', '/usr/sbin/runc'),
    apt: 'runc',
    why: "podman's container runtime in the image test",
  },
  {
    name: 'catatonit',
    where: 'PATH or /usr/libexec/podman/catatonit',
    found: pathOrFile('catatonit', '/usr/libexec/podman/catatonit'),
    apt: 'catatonit',
    why: "the image's init (compose `init: true`, podman --init) in the image test",
  },
  {
    name: 'netavark',
    where: 'PATH or /usr/lib/podman/netavark',
    found: pathOrFile('netavark', '/usr/lib/podman/netavark'),
    apt: 'netavark',
    why: "podman's network for the image build's RUN steps",
  },
  {
    name: 'iptables',
    where: 'PATH or /usr/sbin/iptables',
    found: pathOrFile('iptables', '/usr/sbin/iptables'),
    apt: 'iptables',
    why: "netavark's firewall rules in the image test",
  },
  {
    name: 'debootstrap',
    where: 'PATH',
    found: (env) => onPath('debootstrap', env) !== null,
    apt: 'debootstrap',
    why: "the image test's Debian base image, made locally (no image registry is reachable)",
  },
  {
    name: 'debian-archive-keyring',
    where: '/usr/share/keyrings/debian-archive-keyring.gpg',
    found: () => existsSync('/usr/share/keyrings/debian-archive-keyring.gpg'),
    apt: 'debian-archive-keyring',
    why: "debootstrap's check of the Debian mirror's signatures",
  },
  {
    name: 'bwrap',
    where: '/usr/bin/bwrap',
    found: () => executable('/usr/bin/bwrap'),
    apt: 'bubblewrap',
    why: "the Python steps' sandbox (test/plugins/python-sandbox.test.ts, test/workflows/python-*.test.ts)",
  },
  {
    name: 'python3.11',
    where: '/usr/bin/python3.11',
    found: () => executable('/usr/bin/python3.11'),
    apt: 'python3.11',
    why: "Debian's interpreter that Python steps run on",
  },
  {
    name: 'python3.11 -m venv',
    where: '/usr/bin/python3.11 with ensurepip',
    after: 'python3.11',
    found: () =>
      spawnSync('/usr/bin/python3.11', ['-c', 'import ensurepip'], { timeout: 5_000 }).status === 0,
    apt: 'python3.11-venv',
    why: "Python templates' virtualenvs (their requirements) and the suite's virtualenvs for the real clients and schemathesis",
  },
  {
    name: 'prlimit and setpriv',
    where: '/usr/bin/prlimit, /usr/bin/setpriv',
    found: () => executable('/usr/bin/prlimit') && executable('/usr/bin/setpriv'),
    apt: 'util-linux',
    why: "the Python sandbox's resource limits and its drop to an unprivileged user",
  },
  {
    name: 'ps',
    where: 'PATH',
    found: (env) => onPath('ps', env) !== null,
    apt: 'procps',
    why: 'the embedded PostgreSQL tests look for leftover processes',
  },
  {
    name: 'dpkg-deb',
    where: 'PATH',
    found: (env) => onPath('dpkg-deb', env) !== null,
    apt: 'dpkg',
    why: "unpacking lavapipe's .debs into tools/lavapipe (test/calc/gpujs-lavapipe.test.ts)",
  },
  ...LAVAPIPE_LIBRARIES,
];

/**
 * Machine settings no package gives: named, never changed. `projectRoot`: as root, the suite's
 * embedded PostgreSQL runs as the user postgres, which must pass through every folder above it.
 */
export function settingProblems(projectRoot = PROJECT_ROOT, uid = process.getuid?.()) {
  const problems = [];
  if (uid === 0) {
    for (let dir = path.dirname(projectRoot); ; dir = path.dirname(dir)) {
      try {
        if ((statSync(dir).mode & 0o001) === 0) {
          problems.push(
            `the user postgres (the suite's PostgreSQL, started as root) cannot enter ${dir}: chmod o+x ${dir}, or clone elsewhere`,
          );
        }
      } catch {
        // A folder we cannot stat is named by the suite itself.
      }
      if (dir === path.dirname(dir)) break;
    }
  }
  try {
    const max = Number(readFileSync('/proc/sys/user/max_user_namespaces', 'utf8').trim());
    if (max === 0) {
      problems.push(
        'user namespaces are off (/proc/sys/user/max_user_namespaces is 0); bubblewrap needs them for ' +
          'Python steps: sysctl -w user.max_user_namespaces=15000',
      );
    }
  } catch {
    // Not Linux, or no such setting: the bwrap check speaks for itself.
  }
  return problems;
}

/** Why lavapipe's .debs (Linux x86-64 only) cannot serve this machine, or null. */
export function lavapipeUnavailable(platform = process.platform, arch = process.arch) {
  if (platform !== 'linux' || arch !== 'x64') return unavailableReason(platform, arch);
  return null;
}

/** Whether a Debian package is installed (dpkg's own record), or null where there is no dpkg. */
export function debianPackageInstalled(pkg, env = process.env) {
  const dpkg = onPath('dpkg-query', env);
  if (!dpkg) return null;
  const result = spawnSync(dpkg, ['-W', '-f=${Status}', pkg], { encoding: 'utf8', env, timeout: 5_000 });
  return result.status === 0 && /\binstall ok installed\b/.test(result.stdout);
}

/**
 * What to do, from what was found: `missing` (not on the machine: its package is to be installed),
 * `misplaced` (its package is installed, but the suite cannot find the program: no install helps).
 */
export function plan(requirements, env = process.env, isInstalled = debianPackageInstalled) {
  const missing = [];
  const misplaced = [];
  const unmet = new Set();
  for (const requirement of requirements) {
    if (requirement.after && unmet.has(requirement.after)) {
      missing.push(requirement);
      continue;
    }
    if (requirement.found(env)) continue;
    unmet.add(requirement.name);
    if (isInstalled(requirement.apt, env) === true) misplaced.push(requirement);
    else missing.push(requirement);
  }
  return { missing, misplaced, packages: [...new Set(missing.map((requirement) => requirement.apt))] };
}

/** Install (apt here, as root), or only check: PAS_PREFLIGHT decides, else the machine. */
export function chooseMode(env = process.env) {
  const asked = env.PAS_PREFLIGHT;
  if (asked === 'check' || asked === 'install') return { mode: asked, reason: `PAS_PREFLIGHT=${asked}` };
  if (asked !== undefined && asked !== '') {
    throw new Error(`PAS_PREFLIGHT must be check or install, not ${JSON.stringify(asked)}`);
  }
  if (process.platform !== 'linux' || !existsSync('/etc/debian_version')) {
    return { mode: 'check', reason: 'not Debian' };
  }
  if (!onPath('apt-get', env)) return { mode: 'check', reason: 'no apt-get on PATH' };
  if (process.getuid?.() !== 0) return { mode: 'check', reason: 'not root' };
  return { mode: 'install', reason: 'Debian, as root' };
}

/** The command that installs `packages` for someone who is not root, or on a machine without apt. */
export function installCommand(packages) {
  const debian = process.platform === 'linux' && existsSync('/etc/debian_version');
  if (!debian) return null;
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  return `${sudo}apt-get update && ${sudo}apt-get install -y ${packages.join(' ')}`;
}

const say = (line) => console.log(`preflight: ${line}`);

/** Runs apt-get; answers its exit status and the end of what it printed. */
function apt(env, args) {
  const aptGet = onPath('apt-get', env) ?? 'apt-get';
  const result = spawnSync(aptGet, args, {
    env: { ...env, DEBIAN_FRONTEND: 'noninteractive' },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return {
    status: result.status,
    output: `${result.stdout ?? ''}${result.stderr ?? ''}`.trim(),
    error: result.error,
  };
}

export function main(env = process.env) {
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  let mode;
  try {
    mode = chooseMode(env);
  } catch (error) {
    say(error.message);
    return 2;
  }
  let { missing, misplaced, packages } = plan(REQUIREMENTS, env);
  const settings = settingProblems();
  const noLavapipe = lavapipeUnavailable();
  if (noLavapipe) settings.push(`lavapipe cannot be had here: ${noLavapipe}`);

  for (const requirement of misplaced) {
    say(
      `${requirement.name} is not found at ${requirement.where}, but its Debian package ${requirement.apt} ` +
        `is installed: nothing to install; put it where the suite looks (PATH is ${env.PATH ?? ''}). ` +
        `Needed for ${requirement.why}.`,
    );
  }
  if (missing.length > 0 && mode.mode === 'install' && misplaced.length === 0) {
    for (const requirement of missing)
      say(`installing ${requirement.apt}: ${requirement.name}, for ${requirement.why}`);
    say(`apt-get update && apt-get install -y ${packages.join(' ')}  (${mode.reason})`);
    const update = apt(env, ['update', '-qq']);
    const install = update.status === 0 ? apt(env, ['install', '-y', '-qq', ...packages]) : update;
    if (install.status !== 0) {
      say(
        `apt-get failed (${install.error?.message ?? `exit ${install.status}`}):\n${install.output.slice(-3000)}`,
      );
      return 1;
    }
    ({ missing, misplaced } = plan(REQUIREMENTS, env));
    if (missing.length === 0) say(`installed ${packages.join(' ')} in ${elapsed()}`);
  }
  if (missing.length > 0) {
    for (const requirement of missing) {
      say(
        `missing ${requirement.name} (${requirement.where}), for ${requirement.why}: Debian package ${requirement.apt}`,
      );
    }
    const command = installCommand([...new Set(missing.map((requirement) => requirement.apt))]);
    say(
      command
        ? `install them with: ${command}`
        : "this is not Debian: install the programs above with your system's packages (docs/testing.md says which tests need each).",
    );
  }
  for (const problem of settings) say(problem);

  const go = findGo(env);
  const goLine = go.binary
    ? `go ${go.version} (${go.source})`
    : `no go ${MINIMUM_GO.join('.')} or later${go.found ? ` (PATH has ${go.found})` : ''}: the Temporal server build fetches ${GO_TOOLCHAIN.version} into tools/go from the Go module proxy`;
  if (missing.length > 0 || misplaced.length > 0 || settings.length > 0) {
    say(`stopped in ${elapsed()}: the suite needs the programs above (${mode.reason}; docs/testing.md)`);
    return 1;
  }
  const [mesa] = LAVAPIPE_DEBS;
  const lavapipeLine = existsSync(path.join(LAVAPIPE_ROOT, 'installed.json'))
    ? `lavapipe ${mesa.version} (${path.relative(PROJECT_ROOT, LAVAPIPE_ROOT)})`
    : `no lavapipe yet: the webgpu-mode tests fetch ${mesa.name} ${mesa.version} from deb.debian.org into ${path.relative(PROJECT_ROOT, LAVAPIPE_ROOT)}`;
  say(`${REQUIREMENTS.length} requirements present; ${goLine}; ${lavapipeLine} (${elapsed()})`);
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main();
}
