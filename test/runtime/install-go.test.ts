import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * scripts/install-go.mjs fetches a Go toolchain into tools/go when the machine has no Go 1.21 or
 * later. Its download is trusted through the module checksum (`h1:`) pinned in the file, so the
 * checksum code must agree with the go command's own: here it is checked on module zips of the go
 * command's download cache (the Temporal server build, which `npm test` runs first, fills it), each
 * unpacked by the installer's zip reader, against the `.ziphash` the go command wrote beside it.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const INSTALLER = path.join(ROOT, 'scripts', 'install-go.mjs');
const WHEEL = path.join(ROOT, 'scripts', 'pypi-wheel.mjs');

/** Runs an ES module snippet that imports the installer; answers its JSON output. */
function esm(code: string, env: NodeJS.ProcessEnv = process.env): unknown {
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    encoding: 'utf8',
    env,
    timeout: 120_000,
  });
  if (result.status !== 0) throw new Error(`snippet exited ${result.status}: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

/** The go command's module download cache, from the build's go (PATH or tools/go). */
function moduleZips(count: number): Array<{ zip: string; h1: string; prefix: string }> {
  const found = esm(
    `import { findGo } from ${JSON.stringify(INSTALLER)}; console.log(JSON.stringify(findGo()));`,
  ) as {
    binary: string | null;
  };
  if (!found.binary)
    throw new Error('no go command: the Temporal server build (npm test runs it first) would fetch one');
  const cache = spawnSync(found.binary, ['env', 'GOMODCACHE'], { encoding: 'utf8' }).stdout.trim();
  const downloads = path.join(cache, 'cache', 'download');
  const zips: Array<{ zip: string; h1: string; prefix: string }> = [];
  const walk = (dir: string, modulePath: string[]) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (zips.length >= count) return;
      if (entry.isDirectory() && entry.name === '@v') {
        for (const file of readdirSync(path.join(dir, '@v')).filter((name) => name.endsWith('.ziphash'))) {
          const zip = path.join(dir, '@v', file.replace(/\.ziphash$/, '.zip'));
          if (!existsSync(zip) || zips.length >= count) continue;
          // Module paths with upper-case letters are escaped as !x in the cache.
          const module = modulePath
            .join('/')
            .replace(/!([a-z])/g, (_, letter: string) => letter.toUpperCase());
          const version = file
            .replace(/\.ziphash$/, '')
            .replace(/!([a-z])/g, (_, letter: string) => letter.toUpperCase());
          zips.push({
            zip,
            h1: readFileSync(path.join(dir, '@v', file), 'utf8').trim(),
            prefix: `${module}@${version}/`,
          });
        }
      } else if (entry.isDirectory()) {
        walk(path.join(dir, entry.name), [...modulePath, entry.name]);
      }
    }
  };
  walk(downloads, []);
  return zips;
}

test('the installer’s zip reader and h1 checksum agree with the go command on real module zips', () => {
  const zips = moduleZips(12);
  expect(zips.length).toBeGreaterThanOrEqual(5);
  const hashes = esm(
    `import { mkdtemp, rm } from 'node:fs/promises';
     import os from 'node:os';
     import path from 'node:path';
     import { moduleHash } from ${JSON.stringify(INSTALLER)};
     import { extractAll, listEntries } from ${JSON.stringify(WHEEL)};
     const zips = ${JSON.stringify(zips)};
     const out = [];
     for (const { zip, prefix } of zips) {
       const dir = await mkdtemp(path.join(os.tmpdir(), 'pas-h1-'));
       try {
         const names = (await listEntries(zip)).filter((name) => !name.endsWith('/'));
         await extractAll(zip, dir, { prefix });
         out.push(await moduleHash(new Map(names.map((name) => [name, path.join(dir, name.slice(prefix.length))]))));
       } finally {
         await rm(dir, { recursive: true, force: true });
       }
     }
     console.log(JSON.stringify(out));`,
  ) as string[];
  expect(hashes).toEqual(zips.map((zip) => zip.h1));
});

test('a toolchain’s binaries are made executable as the go command does, and nothing else', () => {
  const modes = esm(
    `import { toolchainMode } from ${JSON.stringify(INSTALLER)};
     const names = ['bin/go', 'bin/gofmt', 'pkg/tool/linux_amd64/compile', 'src/fmt/print.go', 'bin/sub/x', 'pkg/tool/x'];
     console.log(JSON.stringify(names.map((name) => toolchainMode(name).toString(8))));`,
  );
  expect(modes).toEqual(['755', '755', '755', '644', '644', '644']);
});

test('versions, platforms and the proxy are read as the go command reads them', () => {
  const answers = esm(
    `import { goPlatform, moduleProxy, newEnough, parseGoVersion } from ${JSON.stringify(INSTALLER)};
     console.log(JSON.stringify({
       v: parseGoVersion('go version go1.26.8 linux/amd64'),
       old: newEnough(parseGoVersion('go version go1.19.8 linux/amd64')),
       min: newEnough(parseGoVersion('go1.21')),
       none: parseGoVersion('bash: go: not found'),
       linux: goPlatform('linux', 'x64'),
       win: goPlatform('win32', 'x64'),
       proxyDefault: moduleProxy(undefined),
       proxyList: moduleProxy('direct,https://goproxy.example/,https://proxy.golang.org'),
       proxyPipe: moduleProxy('https://a.example|https://b.example'),
     }));`,
  );
  expect(answers).toEqual({
    v: [1, 26, 8],
    old: false,
    min: true,
    none: null,
    linux: 'linux-amd64',
    win: null,
    proxyDefault: 'https://proxy.golang.org',
    proxyList: 'https://goproxy.example',
    proxyPipe: 'https://a.example',
  });
});
