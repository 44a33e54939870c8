import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * `npm test`'s first step (test/preflight.mjs), run as a process the way npm runs it, on PATHs made
 * for each case: one that lacks a program must name it within seconds, and apt is never asked for a
 * package that is already installed. apt-get itself is a recording stand-in here (a test must not
 * install into the machine); dpkg-query is the machine's own unless a case says otherwise.
 */

const ROOT = path.resolve(__dirname, '..');
const SCRIPT = path.join(ROOT, 'test', 'preflight.mjs');

/** The programs the step looks up on PATH (the others it finds at their absolute Debian paths). */
const LOOKED_UP_ON_PATH = [
  'podman',
  'runc',
  'catatonit',
  'netavark',
  'iptables',
  'debootstrap',
  'ps',
  'go',
  'dpkg-deb',
];

/** Where a program is on this process's PATH (or in /usr/sbin, root's PATH in Debian). */
function which(name: string): string | null {
  for (const dir of [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/lib/podman']) {
    const candidate = path.join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

let scratch: string;
beforeEach(() => {
  scratch = mkdtempSync(path.join(os.tmpdir(), 'pas-preflight-'));
});
afterEach(() => rmSync(scratch, { recursive: true, force: true }));

/** A folder of links to the programs the step looks for, less `without`, plus the stand-ins given. */
function binFolder(without: string[], standIns: Record<string, string> = {}): string {
  const bin = path.join(scratch, 'bin');
  spawnSync('mkdir', ['-p', bin]);
  for (const name of [...LOOKED_UP_ON_PATH, 'dpkg-query']) {
    const found = which(name);
    if (!without.includes(name) && found && !(name in standIns)) symlinkSync(found, path.join(bin, name));
  }
  for (const [name, script] of Object.entries(standIns)) {
    writeFileSync(path.join(bin, name), `#!/bin/sh\n${script}\n`);
    chmodSync(path.join(bin, name), 0o755);
  }
  return bin;
}

/** An apt-get that only records how it was called (one line per call) and succeeds. */
const recordingAptGet = (log: string) => `echo "$*" >> '${log}'\nexit 0`;

function preflight(PATH: string, extra: Record<string, string> = {}) {
  const started = Date.now();
  const result = spawnSync(process.execPath, [SCRIPT], {
    env: { HOME: process.env.HOME ?? '/root', PATH, ...extra },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return {
    status: result.status,
    output: result.stdout + result.stderr,
    seconds: (Date.now() - started) / 1000,
  };
}

const aptCalls = (log: string) => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []);

test('on this machine (which npm test has prepared) every requirement is present and nothing is installed', () => {
  const log = path.join(scratch, 'apt.log');
  const bin = binFolder([], { 'apt-get': recordingAptGet(log) });
  // The machine's own PATH after the stand-in: every real program is found, so apt must not be called.
  const result = preflight(`${bin}${path.delimiter}${process.env.PATH}${path.delimiter}/usr/sbin`, {
    PAS_PREFLIGHT: 'install',
  });
  expect(result).toMatchObject({ status: 0 });
  expect(result.output).toMatch(/requirements present/);
  expect(aptCalls(log)).toEqual([]);
});

test.each([
  ['podman', 'podman'],
  ['debootstrap', 'debootstrap'],
  ['ps', 'procps'],
  ['dpkg-deb', 'dpkg'],
])('a PATH without %s: the step names it and stops within 5 seconds, installing nothing', (program, pkg) => {
  const log = path.join(scratch, 'apt.log');
  const bin = binFolder([program], { 'apt-get': recordingAptGet(log) });
  const result = preflight(bin, { PAS_PREFLIGHT: 'check' });
  expect(result.status).toBe(1);
  expect(result.seconds).toBeLessThan(5);
  const lines = result.output.split('\n').filter((line) => line.includes(program));
  expect(lines.length).toBeGreaterThan(0);
  // Installed on this machine but not on that PATH: named as such, with nothing to install.
  expect(result.output).toMatch(
    new RegExp(`${program} is not found at .*its Debian package ${pkg} is installed`),
  );
  expect(result.output).toMatch(/stopped in \d+\.\d s/);
  expect(aptCalls(log)).toEqual([]);
});

test('in install mode, a program missing from PATH whose package is installed is never reinstalled', () => {
  const log = path.join(scratch, 'apt.log');
  const bin = binFolder(['podman'], { 'apt-get': recordingAptGet(log) });
  const result = preflight(bin, { PAS_PREFLIGHT: 'install' });
  expect(result.status).toBe(1);
  expect(result.output).toMatch(/podman is not found at PATH, but its Debian package podman is installed/);
  expect(aptCalls(log)).toEqual([]);
});

test('in install mode, only the package of the missing program goes to apt, with what and why', () => {
  const log = path.join(scratch, 'apt.log');
  // dpkg reports podman as not installed (as on a new machine); every other package as installed.
  const bin = binFolder(['podman'], {
    'apt-get': recordingAptGet(log),
    'dpkg-query':
      'for last; do :; done\nif [ "$last" = podman ]; then exit 1; fi\nprintf "install ok installed"',
  });
  const result = preflight(bin, { PAS_PREFLIGHT: 'install' });
  expect(result.output).toMatch(/installing podman: podman, for the image test/);
  expect(aptCalls(log)).toEqual(['update -qq', 'install -y -qq podman']);
  // The stand-in installed nothing, so the step still finds no podman and says so.
  expect(result.status).toBe(1);
  expect(result.output).toMatch(/missing podman \(PATH\).*Debian package podman/);
  expect(result.output).toMatch(/apt-get install -y podman/);
});

test('without apt on PATH it only checks, and gives the exact install command per missing package', () => {
  const bin = binFolder(['podman', 'debootstrap'], {
    'dpkg-query': 'exit 1',
  });
  const result = preflight(bin);
  expect(result.status).toBe(1);
  expect(result.seconds).toBeLessThan(5);
  expect(result.output).toMatch(/missing podman \(PATH\), for the image test/);
  expect(result.output).toMatch(/missing debootstrap \(PATH\)/);
  expect(result.output).toMatch(
    /install them with: (sudo )?apt-get update && (sudo )?apt-get install -y podman debootstrap/,
  );
  expect(result.output).toMatch(/no apt-get on PATH/);
});

test('a PAS_PREFLIGHT other than check or install is refused', () => {
  const result = preflight(binFolder([]), { PAS_PREFLIGHT: 'yes' });
  expect(result.status).toBe(2);
  expect(result.output).toMatch(/PAS_PREFLIGHT must be check or install/);
});

test('as root, a folder above the checkout that the user postgres cannot enter is named with the fix', () => {
  const closed = mkdtempSync(path.join(os.tmpdir(), 'pas-closed-'));
  try {
    chmodSync(closed, 0o700);
    const script = `
      const { settingProblems } = await import(${JSON.stringify(SCRIPT)});
      console.log(JSON.stringify({ root: settingProblems(${JSON.stringify(closed + '/c')}, 0), user: settingProblems(${JSON.stringify(closed + '/c')}, 1000) }));`;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    const answer = JSON.parse(result.stdout) as { root: string[]; user: string[] };
    expect(answer.root).toContain(
      `the user postgres (the suite's PostgreSQL, started as root) cannot enter ${closed}: chmod o+x ${closed}, or clone elsewhere`,
    );
    expect(answer.user.some((line) => line.includes(closed))).toBe(false);
  } finally {
    rmSync(closed, { recursive: true, force: true });
  }
});

test('lavapipe is named: its state on the summary line, its system libraries as requirements with their packages, and a machine it cannot serve', () => {
  const result = preflight(binFolder([]));
  expect(result.status).toBe(0);
  expect(result.output).toMatch(
    /requirements present; .*; (lavapipe 25\.[^ ]+ \(tools\/lavapipe\/25\.[^)]+\)|no lavapipe yet: the webgpu-mode tests fetch mesa-vulkan-drivers 25\.[^ ]+ from deb\.debian\.org into tools\/lavapipe\/25\.[^ ]+)/,
  );
  const script = `
    const { REQUIREMENTS, plan, lavapipeUnavailable } = await import(${JSON.stringify(SCRIPT)});
    const lavapipe = REQUIREMENTS.filter((r) => r.why.includes('lavapipe'));
    const none = plan(lavapipe.map((r) => ({ ...r, found: () => false })), {}, () => false);
    console.log(JSON.stringify({
      packages: none.packages,
      why: [...new Set(none.missing.map((r) => r.why))],
      mac: lavapipeUnavailable('darwin', 'arm64'),
      arm: lavapipeUnavailable('linux', 'arm64'),
      here: lavapipeUnavailable('linux', 'x64'),
    }));`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  const answer = JSON.parse(run.stdout) as Record<string, unknown>;
  // With nothing found, every one of lavapipe's needs is named by its Debian package.
  expect(answer.packages).toEqual(expect.arrayContaining(['dpkg', 'libllvm15', 'libxcb-dri3-0', 'libzstd1']));
  expect(answer.why).toEqual([
    "unpacking lavapipe's .debs into tools/lavapipe (test/calc/gpujs-lavapipe.test.ts)",
    'lavapipe, the software Vulkan the webgpu-mode kernel tests run on (test/calc/gpujs-lavapipe.test.ts)',
  ]);
  expect(answer.mac).toMatch(
    /^lavapipe from Debian's packages runs on Linux x86-64 only \(this is darwin arm64\)/,
  );
  expect(answer.arm).toMatch(/\(this is linux arm64\)/);
  expect(answer.here).toBeNull();
});
