import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CONFIG_VARIABLES, loadConfig } from '../../engine/platform/config';
import { SEARCH_ATTRIBUTES } from '../../engine/workflows/run-input';
import {
  argDefaults,
  baseImage,
  copies,
  dockerfile,
  environmentBefore,
  excludedFromContext,
  filesNeeded,
  fromImage,
  inImage,
  nodeEntry,
  packageScripts,
  reachableFiles,
  runSteps,
} from '../support/dockerfile';
import { commandText, environmentOf, interpolate, type Service, services } from '../support/compose-file';

/**
 * The scale-out deployment (docker-compose.yml + Dockerfile) is checked against the code it runs:
 * npm scripts and their entry files, the configuration table, the Temporal search attributes, and
 * that every RUN step finds the files it needs. These read the files, so they also hold where no
 * container engine exists; `docker compose config` runs when the plugin exists, and image.test.ts
 * builds and runs the image itself.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

const configNames = new Set(CONFIG_VARIABLES.map((variable) => variable.name));

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

/** The file `node … <entry>` runs in an npm script. */
const scriptEntry = (script: string): string => nodeEntry(script.replace(/^exec\s+/, '').split(/\s+/));

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
  test('builds on the Node major version the project pins, a base the build may replace', () => {
    // The image test builds on a locally made equivalent (test/support/container-image.ts).
    // Every stage: the dependencies' and the image's.
    const froms = dockerfile.filter(({ keyword }) => keyword === 'FROM').map(({ args }) => fromImage(args));
    expect(froms).toEqual(['${BASE_IMAGE}', '${BASE_IMAGE}']);
    expect(argDefaults()).toHaveProperty('BASE_IMAGE');
    expect(baseImage()).toBe(`node:${read('.nvmrc').trim()}-bookworm-slim`);
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

  const steps = runSteps();
  const install = steps.find(({ commands }) =>
    commands.some(([program, verb]) => program === 'npm' && verb === 'ci'),
  );

  test('npm ci runs without install scripts; the steps it skips that the image needs run after it, with the Temporal CLI download off', () => {
    expect(install).toBeDefined();
    const installCommand = install!.commands.find(([program, verb]) => program === 'npm' && verb === 'ci')!;
    expect(installCommand).toEqual(expect.arrayContaining(['--omit=dev', '--ignore-scripts']));
    // Of the project's postinstall, the image needs pg_dump (pas backup), not the Temporal CLI.
    const after = install!.commands.map((words) => words.join(' '));
    expect(after).toContain('node scripts/install-postgres-tools.mjs');
    expect(after.some((command) => command.includes('install-temporal-cli'))).toBe(false);
    // Every command of the step, not only the first: `a && b` once ran b's file before it was copied.
    const missing = install!.commands.flatMap((words) =>
      filesNeeded(words)
        .filter((file) => !inImage(file, install!.index))
        .map((file) => `${words.join(' ')}: ${file}`),
    );
    expect(missing).toEqual([]);
    // Should the project's install scripts run after all, the Temporal CLI download stays off.
    expect(environmentBefore(install!.index)).toMatchObject({ PAS_SKIP_TEMPORAL_DOWNLOAD: '1' });
  });

  test.each(steps.map((step) => [dockerfile[step.index]!.args, step] as const))(
    'RUN %s: every file it needs is copied before it',
    (_, step) => {
      const needed = step.commands.flatMap((command) => filesNeeded(command));
      const missing = needed.filter((file) => !inImage(file, step.index));
      expect(missing).toEqual([]);
    },
  );

  test('the image runs the committed wasm kernel module and builds nothing from calc/wasm', () => {
    // The committed calc/wasm/kernel-module.ts is what runs everywhere; its compiler is a dev dependency.
    expect(inImage('calc/wasm/kernel-module.ts')).toBe(true);
    const built = steps.flatMap(({ commands }) => commands.flatMap((command) => filesNeeded(command)));
    expect(built.filter((file) => file.startsWith('calc/wasm/'))).toEqual([]);
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
