import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../../engine/config';
import { SEARCH_ATTRIBUTES } from '../../engine/workflows/run-input';

/**
 * The scale-out deployment (docker-compose.yml + Dockerfile) is checked against the code it runs:
 * npm scripts and their entry files, the configuration table, the Temporal search attributes. There is
 * no Docker engine in CI, so this reads the files; `docker compose config` runs when the plugin exists.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  ports?: Array<string | number | { published?: string | number; target?: number; protocol?: string }>;
  deploy?: { replicas?: number };
  healthcheck?: { test?: string | string[] };
}

// Compose uses YAML 1.1 merge keys (`<<: *anchor`) for the shared settings.
const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
const packageScripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
const configNames = new Set(CONFIG_VARIABLES.map((variable) => variable.name));

/** Compose interpolation as `docker compose` would do it with no variables set: defaults, `$$` → `$`. */
function interpolate(value: string): string {
  let text = value.replaceAll('$$', '\u0000');
  const variable = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^${}]*))?\}/;
  // Innermost first, so nested defaults (`${A:-${B:-x}}`) resolve.
  while (variable.test(text)) text = text.replace(variable, (_, _name, fallback?: string) => fallback ?? '');
  return text.replaceAll('\u0000', '$');
}

function environmentOf(service: Service): Record<string, string> {
  const env = service.environment ?? {};
  const entries = Array.isArray(env)
    ? env.map((line) => {
        const at = line.indexOf('=');
        return at < 0 ? [line, ''] : [line.slice(0, at), line.slice(at + 1)];
      })
    : Object.entries(env).map(([name, value]) => [name, value === null ? '' : String(value)]);
  return Object.fromEntries(entries.map(([name, value]) => [name, interpolate(value!)]));
}

function commandText(service: Service): string {
  const command = service.command ?? '';
  return Array.isArray(command) ? command.join(' ') : command;
}

function dependencies(service: Service): Record<string, string> {
  const deps = service.depends_on ?? [];
  if (Array.isArray(deps)) return Object.fromEntries(deps.map((name) => [name, 'service_started']));
  return Object.fromEntries(
    Object.entries(deps).map(([name, spec]) => [name, spec.condition ?? 'service_started']),
  );
}

/** Services that run our image (built from this repository's Dockerfile). */
const ourServices = Object.entries(services).filter(([, service]) => {
  if (service.build === undefined) return false;
  const build = typeof service.build === 'string' ? { context: service.build } : service.build;
  return (
    path.resolve(ROOT, build.context ?? '.') === ROOT && (build.dockerfile ?? 'Dockerfile') === 'Dockerfile'
  );
});
const ourService = (name: string): Service => {
  const service = services[name];
  if (!service?.build)
    throw new Error(`docker-compose.yml has no service "${name}" built from our Dockerfile`);
  return service;
};

/** The file `node … <entry>` runs in an npm script (skipping Node's options and their values). */
function scriptEntry(script: string): string {
  // `exec node …`: the shell npm runs the script in is replaced by node (see the exec test below).
  const words = script.replace(/^exec\s+/, '').split(/\s+/);
  if (words[0] !== 'node') throw new Error(`script does not start with node: ${script}`);
  const takesValue = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader']);
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    if (takesValue.has(word)) i++;
    else if (!word.startsWith('-')) return word;
  }
  throw new Error(`no entry file in script: ${script}`);
}

// --- Dockerfile ----------------------------------------------------------------------------------

interface Instruction {
  keyword: string;
  args: string;
}

const dockerfile: Instruction[] = read('Dockerfile')
  .replace(/\\\r?\n/g, ' ') // line continuations
  .split(/\r?\n/)
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#'))
  .map((line) => {
    const [keyword, ...rest] = line.split(/\s+/);
    return { keyword: keyword!.toUpperCase(), args: rest.join(' ') };
  });

interface Copy {
  sources: string[];
  destination: string;
  index: number;
}

/** COPY/ADD from the build context (not from another stage), without their --flags. */
const copies: Copy[] = dockerfile.flatMap(({ keyword, args }, index) => {
  if (keyword !== 'COPY' && keyword !== 'ADD') return [];
  const words = args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/);
  if (words.some((word) => word.startsWith('--from'))) return [];
  const paths = words.filter((word) => !word.startsWith('--'));
  return [{ sources: paths.slice(0, -1), destination: paths.at(-1)!, index }];
});

/** Where a COPY puts a source, relative to WORKDIR (Docker's rule: a `/` destination is a folder). */
function copiedTo({ sources, destination }: Copy, source: string): string {
  const intoFolder = destination.endsWith('/') || sources.length > 1;
  return path.posix.normalize(
    intoFolder ? path.posix.join(destination, path.posix.basename(source)) : destination,
  );
}

/** .dockerignore semantics: patterns from the context root, a match covers a folder's contents, `!` re-includes. */
const ignorePatterns = read('.dockerignore')
  .split(/\r?\n/)
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#'));

function excludedFromContext(file: string): boolean {
  const parts = file.split('/');
  const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let excluded = false;
  for (const raw of ignorePatterns) {
    const negated = raw.startsWith('!');
    const pattern = path.posix.normalize(raw.slice(negated ? 1 : 0).replace(/^\/+/, '')).replace(/\/$/, '');
    if (candidates.some((candidate) => path.matchesGlob(candidate, pattern))) excluded = !negated;
  }
  return excluded;
}

/** True when the image holds the repository file at the same relative path. */
function inImage(file: string): boolean {
  if (excludedFromContext(file)) return false;
  return copies.some((copy) =>
    copy.sources.some(
      (source) =>
        copiedTo(copy, source) === path.posix.normalize(source) &&
        (file === path.posix.normalize(source) || file.startsWith(`${path.posix.normalize(source)}/`)),
    ),
  );
}

/** Every repository file reachable from `entry` through relative imports (static, dynamic, require). */
function reachableFiles(entry: string): Set<string> {
  const seen = new Set<string>();
  const pending = [entry];
  const specifier =
    /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+|\brequire(?:\.resolve)?\s*\(\s*)['"](\.\.?\/[^'"]+)['"]/g;
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const match of read(file).matchAll(specifier)) {
      const base = path.posix.join(path.posix.dirname(file), match[1]!);
      const resolved = [
        base,
        `${base}.ts`,
        `${base}.mts`,
        `${base}.js`,
        `${base}.mjs`,
        `${base}/index.ts`,
      ].find(
        (candidate) =>
          existsSync(path.join(ROOT, candidate)) && statSync(path.join(ROOT, candidate)).isFile(),
      );
      if (!resolved) throw new Error(`${file}: cannot resolve import "${match[1]}"`);
      pending.push(resolved);
    }
  }
  return seen;
}

const cmd = dockerfile.filter(({ keyword }) => keyword === 'CMD').at(-1);
const cmdWords = cmd ? (JSON.parse(cmd.args) as string[]) : [];

/** npm scripts the image runs: the Dockerfile's CMD and every `command` of our services. */
const scriptsRun = new Set([
  ...(cmdWords[0] === 'npm' && cmdWords[1] === 'run' ? [cmdWords[2]!] : []),
  ...ourServices.map(([, service]) => commandText(service).split(/\s+/)[2]!),
]);

// --- the checks ------------------------------------------------------------------------------------

describe('docker-compose.yml', () => {
  test('every service has an image or a build', () => {
    const incomplete = Object.entries(services)
      .filter(([, service]) => !service.image && !service.build)
      .map(([name]) => name);
    expect(incomplete).toEqual([]);
  });

  test('migrate, api and worker run our image', () => {
    expect(ourServices.map(([name]) => name).sort()).toEqual(
      expect.arrayContaining(['api', 'migrate', 'worker']),
    );
  });

  test.each(ourServices)(
    '%s runs an npm script that exists, whose entry file is in the image',
    (_, service) => {
      const words = commandText(service).trim().split(/\s+/);
      expect(words.slice(0, 2)).toEqual(['npm', 'run']);
      expect(words).toHaveLength(3);
      const script = packageScripts[words[2]!];
      expect(script).toBeDefined();
      const entry = scriptEntry(script!);
      expect(existsSync(path.join(ROOT, entry))).toBe(true);
      expect(inImage(entry)).toBe(true);
    },
  );

  test.each(ourServices)(
    '%s: its npm script execs node, so the SIGTERM npm passes on reaches node (a shell would die of it)',
    (_, service) => {
      const words = commandText(service).trim().split(/\s+/);
      expect(packageScripts[words[2]!]).toMatch(/^exec node /);
    },
  );

  test.each(ourServices)(
    '%s sets only variables the app reads, with values loadConfig accepts',
    (_, service) => {
      const env = environmentOf(service);
      expect(Object.keys(env).filter((name) => !configNames.has(name))).toEqual([]);
      expect(() => loadConfig(env, '/app')).not.toThrow();
    },
  );

  test.each(['api', 'worker', 'migrate'])(
    '%s is pointed at the cluster, not the embedded servers',
    (name) => {
      const config = loadConfig(environmentOf(ourService(name)), '/app');
      expect(config.databaseUrl).toMatch(/^postgres:\/\/[^@]+@postgres:5432\/\w+$/);
      expect(config.temporalAddress).toBe('temporal:7233');
    },
  );

  test('api listens on all interfaces and its health check probes that port', () => {
    const api = ourService('api');
    const config = loadConfig(environmentOf(api), '/app');
    expect(config.host).toBe('0.0.0.0');
    const probe = [api.healthcheck?.test ?? []].flat().join(' ');
    expect(probe).toContain(`:${config.port}/v2/health_check`);
  });

  test('api trusts X-Forwarded-For only when clients cannot reach the replicas directly', () => {
    const api = ourService('api');
    if (loadConfig(environmentOf(api), '/app').trustProxy) expect(api.ports ?? []).toEqual([]);
  });

  test('api and worker run as several replicas', () => {
    expect(ourService('api').deploy?.replicas).toBeGreaterThanOrEqual(2);
    expect(ourService('worker').deploy?.replicas).toBeGreaterThanOrEqual(2);
  });

  test('depends_on names existing services with valid conditions', () => {
    const conditions = ['service_started', 'service_healthy', 'service_completed_successfully'];
    for (const [name, service] of Object.entries(services)) {
      for (const [target, condition] of Object.entries(dependencies(service))) {
        expect({ service: name, target, exists: target in services }).toEqual({
          service: name,
          target,
          exists: true,
        });
        expect(conditions).toContain(condition);
        if (condition === 'service_healthy') expect(services[target]!.healthcheck).toBeDefined();
      }
    }
  });

  test('api and worker start after the migrations and the search-attribute registration have finished', () => {
    const registrar = searchAttributeService()[0];
    for (const name of ['api', 'worker']) {
      expect(dependencies(ourService(name))).toMatchObject({
        migrate: 'service_completed_successfully',
        [registrar]: 'service_completed_successfully',
      });
    }
  });

  function searchAttributeService(): [string, Service] {
    const found = Object.entries(services).filter(([, service]) =>
      /operator\s+search-attribute\s+create/.test(commandText(service)),
    );
    expect(found).toHaveLength(1);
    return found[0]!;
  }

  test('every SEARCH_ATTRIBUTES key is registered with its type, in the namespace the app uses', () => {
    const [, registrar] = searchAttributeService();
    const script = commandText(registrar);
    const create = script.slice(script.search(/operator\s+search-attribute\s+create/));
    const registered = Object.fromEntries(
      [...create.matchAll(/--name\s+(\S+)\s+--type\s+(\S+)/g)].map((match) => [match[1]!, match[2]!]),
    );
    expect(registered).toEqual(SEARCH_ATTRIBUTES);
    expect(create).toMatch(/--namespace\s+"?\$\$?\{?TEMPORAL_NAMESPACE\}?"?/);
    const appNamespace = loadConfig(environmentOf(ourService('api')), '/app').temporalNamespace;
    expect(environmentOf(registrar).TEMPORAL_NAMESPACE).toBe(appNamespace);
    expect(loadConfig(environmentOf(ourService('worker')), '/app').temporalNamespace).toBe(appNamespace);
  });

  test('published host ports do not collide, and scaled services publish none', () => {
    const published: string[] = [];
    for (const [name, service] of Object.entries(services)) {
      for (const port of service.ports ?? []) {
        let host: string | undefined;
        let protocol = 'tcp';
        if (typeof port === 'object') {
          host = port.published === undefined ? undefined : interpolate(String(port.published));
          protocol = port.protocol ?? protocol;
        } else {
          const [mapping, proto] = interpolate(String(port)).split('/');
          protocol = proto ?? protocol;
          const parts = mapping!.split(':');
          host = parts.length >= 2 ? parts.at(-2) : undefined; // [ip:]host:container, or container only
        }
        if (host === undefined || host === '') continue; // an ephemeral port cannot collide
        expect({ service: name, replicas: service.deploy?.replicas ?? 1 }).toEqual({
          service: name,
          replicas: 1,
        });
        published.push(`${host}/${protocol}`);
      }
    }
    expect(published.length).toBeGreaterThan(0);
    expect(published.filter((port, i) => published.indexOf(port) !== i)).toEqual([]);
  });

  test('`docker compose config` accepts the file (when the compose plugin is installed)', () => {
    const plugin = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' });
    if (plugin.error || plugin.status !== 0) {
      // Reading the file above needs no Docker; validating with Docker's own parser does.
      console.warn('docker compose config not run: the docker compose plugin is not installed here');
      return;
    }
    const result = spawnSync('docker', ['compose', '-f', 'docker-compose.yml', 'config', '-q'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect({ status: result.status, stderr: result.stderr }).toEqual({ status: 0, stderr: '' });
  });
});

describe('Dockerfile', () => {
  test('builds on the Node major version the project pins', () => {
    const from = dockerfile.find(({ keyword }) => keyword === 'FROM');
    expect(from?.args).toBe(`node:${read('.nvmrc').trim()}-bookworm-slim`);
  });

  test('its CMD runs an npm script that exists', () => {
    expect(cmdWords.slice(0, 2)).toEqual(['npm', 'run']);
    expect(packageScripts).toHaveProperty([cmdWords[2]!]);
  });

  test('every file it COPYs exists and is in the build context', () => {
    const sources = copies.flatMap((copy) => copy.sources);
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      expect({ source, exists: existsSync(path.join(ROOT, source)) }).toEqual({ source, exists: true });
      expect({ source, excluded: excludedFromContext(path.posix.normalize(source)) }).toEqual({
        source,
        excluded: false,
      });
    }
  });

  test('every file the processes import is in the image', () => {
    const missing = [...scriptsRun]
      .flatMap((script) => [...reachableFiles(scriptEntry(packageScripts[script]!))])
      .filter((file) => !inImage(file));
    expect(missing).toEqual([]);
  });

  test('npm ci runs after its postinstall script is copied, with the Temporal CLI download off', () => {
    const install = dockerfile.findIndex(({ keyword, args }) => keyword === 'RUN' && /\bnpm ci\b/.test(args));
    expect(install).toBeGreaterThan(-1);
    const postinstall = packageScripts.postinstall;
    if (postinstall) {
      const script = scriptEntry(postinstall);
      const copiedBefore = copies.some(
        (copy) => copy.index < install && copy.sources.some((source) => copiedTo(copy, source) === script),
      );
      expect({ script, copiedBefore }).toEqual({ script, copiedBefore: true });
    }
    const env = dockerfile.slice(0, install).filter(({ keyword }) => keyword === 'ENV');
    expect(env.map(({ args }) => args).join(' ')).toMatch(/\bPAS_SKIP_TEMPORAL_DOWNLOAD=1\b/);
  });

  test('the processes run as a user other than root', () => {
    const user = dockerfile.filter(({ keyword }) => keyword === 'USER').at(-1)?.args;
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user!.split(':')[0]);
  });

  test('what git ignores stays out of the build context', () => {
    const gitignored = read('.gitignore')
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#') && !line.startsWith('!'));
    // A sample path each pattern matches at the top of the repository.
    const samples = gitignored.map((pattern) =>
      pattern.endsWith('/') ? `${pattern}sample` : pattern.replaceAll('*', 'sample'),
    );
    expect(samples.filter((sample) => !excludedFromContext(sample))).toEqual([]);
  });
});
