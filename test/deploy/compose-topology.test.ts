import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  adminJob,
  appProcess,
  COMPOSE_FILE,
  environmentOf,
  imageEnvironment,
  loadCompose,
  nginxConfig,
  parseCompose,
  service,
  TEMPORAL_PORT_VARIABLES,
  temporalServerEnvironment,
  temporalServerVersion,
  type TopologyPorts,
} from '../support/compose-topology';

const run = promisify(execFile);

/**
 * The mapping from docker-compose.yml to loopback processes (test/support/compose-topology.ts), checked
 * without starting anything: what it keeps, what it changes, and that a compose edit it no longer
 * matches fails here rather than running something else. test/deploy/topology.test.ts runs it.
 */
const compose = loadCompose();
const ports: TopologyPorts = {
  postgres: 41001,
  nginx: 41002,
  api: [41003, 41004],
  metrics: { api: [41005, 41006], worker: [41007, 41008], temporal: 41009 },
  temporal: Object.fromEntries(
    TEMPORAL_PORT_VARIABLES.map((name, i) => [name, 21001 + i]),
  ) as TopologyPorts['temporal'],
};
/** A compose service host (postgres, temporal) still named in a value, as a host. */
const namesComposeHost = (value: string) => /(^|[@/])(postgres|temporal)(:\d+)?($|[/?])/.test(value);

describe('docker-compose.yml as loopback processes', () => {
  test.each(['migrate', 'api', 'worker'] as const)(
    '%s: the compose command, the compose environment with hosts on loopback, the image ENV',
    (name) => {
      const composed = environmentOf(service(compose, name));
      const { command, env } = appProcess(compose, name, ports, 1);
      expect(command).toEqual(['npm', 'run', name === 'migrate' ? 'migrate' : `start:${name}`]);
      expect(Object.keys(env).sort()).toEqual(
        [...new Set([...Object.keys(imageEnvironment()), ...Object.keys(composed)])].sort(),
      );
      expect(env.DATABASE_URL).toBe(`postgres://pas:pas@127.0.0.1:${ports.postgres}/pas`);
      expect(env.TEMPORAL_ADDRESS).toBe(`127.0.0.1:${ports.temporal.FRONTEND_GRPC_PORT}`);
      const changed = Object.keys(composed).filter((key) => composed[key] !== env[key]);
      expect(changed.sort()).toEqual(
        (name === 'api'
          ? ['DATABASE_URL', 'HOST', 'PORT', 'TEMPORAL_ADDRESS', 'METRICS_PORT', 'METRICS_HOST']
          : name === 'worker'
            ? ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'METRICS_PORT', 'METRICS_HOST']
            : ['DATABASE_URL', 'TEMPORAL_ADDRESS']
        ).sort(),
      );
      if (name === 'api') expect(env).toMatchObject({ HOST: '127.0.0.1', PORT: String(ports.api[1]) });
      if (name !== 'migrate') {
        expect(env).toMatchObject({
          METRICS_HOST: '127.0.0.1',
          METRICS_PORT: String(ports.metrics[name][1]),
        });
      }
      expect(Object.values(env).filter(namesComposeHost)).toEqual([]);
    },
  );

  test('the Temporal server: the compose environment, its ports and broadcast address on loopback', () => {
    const composed = environmentOf(service(compose, 'temporal'));
    const { env, dynamicConfig } = temporalServerEnvironment(compose, ports, '/tmp/dc.yaml');
    expect(env).toMatchObject({
      DB: 'postgres12',
      POSTGRES_SEEDS: '127.0.0.1',
      DB_PORT: String(ports.postgres),
      BIND_ON_IP: '127.0.0.1',
      TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
      NUM_HISTORY_SHARDS: composed.NUM_HISTORY_SHARDS,
      DYNAMIC_CONFIG_FILE_PATH: '/tmp/dc.yaml',
      PROMETHEUS_ENDPOINT: `127.0.0.1:${ports.metrics.temporal}`,
    });
    for (const name of TEMPORAL_PORT_VARIABLES) expect(env[name]).toBe(String(ports.temporal[name]));
    const unchanged = Object.keys(composed).filter((key) => composed[key] === env[key]);
    expect(unchanged.sort()).toEqual(
      Object.keys(composed)
        .filter(
          (key) =>
            ![
              'POSTGRES_SEEDS',
              'DB_PORT',
              'BIND_ON_IP',
              'DYNAMIC_CONFIG_FILE_PATH',
              'PROMETHEUS_ENDPOINT',
            ].includes(key),
        )
        .sort(),
    );
    expect(dynamicConfig).toContain('{}');
    expect(Object.values(env).filter(namesComposeHost)).toEqual([]);
  });

  test('the admin-tools jobs: their own scripts, pointed at loopback and the cached schema', () => {
    expect(temporalServerVersion(compose)).toMatch(/^\d+\.\d+\.\d+$/);
    const schema = adminJob(compose, 'temporal-schema', ports, '/cache/schema');
    expect(schema.script).toContain(`--ep 127.0.0.1 -p ${ports.postgres} -u pas`);
    expect(schema.script).toContain('"/cache/schema/postgresql/v12/$2/versioned"');
    expect(schema.script).not.toContain('$$');
    expect(schema.env).toEqual({ SQL_PASSWORD: 'pas' });
    const setup = adminJob(compose, 'temporal-setup', ports, '/cache/schema');
    expect(setup.env).toEqual({
      TEMPORAL_ADDRESS: `127.0.0.1:${ports.temporal.FRONTEND_GRPC_PORT}`,
      TEMPORAL_NAMESPACE: 'default',
    });
    expect(setup.script).toContain('temporal operator search-attribute create');
  });

  test('nginx: the compose site with static upstreams and a loopback listener, accepted by `nginx -t`', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pas-nginx-'));
    try {
      const { site, main } = nginxConfig(compose, ports, dir);
      expect(site).toContain('server 127.0.0.1:41003;\n');
      expect(site).toContain('server 127.0.0.1:41004;\n');
      expect(site).toContain('listen 127.0.0.1:41002;');
      expect(site).not.toMatch(/resolve|\$\$|listen 80;/);
      // Everything else is the compose text, line for line.
      const original = (
        parseCompose(await readFile(COMPOSE_FILE, 'utf8')).configs['nginx-api']!.content ?? ''
      ).replaceAll('$$', '$');
      const kept = original.split('\n').filter((line) => !/resolver|server api:8080|listen 80;/.test(line));
      expect(site.split('\n').filter((line) => kept.includes(line))).toEqual(kept);
      await writeFile(path.join(dir, 'default.conf'), site);
      await writeFile(path.join(dir, 'nginx.conf'), main);
      await mkdir(path.join(dir, 'logs'));
      const checked = await run('/usr/sbin/nginx', [
        '-t',
        '-p',
        dir,
        '-e',
        path.join(dir, 'error.log'),
        '-c',
        path.join(dir, 'nginx.conf'),
      ]).catch((error: { code?: string; stderr?: string }) => {
        if (error.code === 'ENOENT')
          throw new Error('This test needs nginx at /usr/sbin/nginx (Debian: apt-get install nginx-light).');
        return { stdout: '', stderr: error.stderr ?? String(error) };
      });
      expect(checked.stderr).toContain('test is successful');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a compose edit the mapping no longer matches fails, naming what changed', async () => {
    const text = await readFile(COMPOSE_FILE, 'utf8');
    const edited = (from: string, to: string) => {
      expect(text).toContain(from);
      return parseCompose(text.replace(from, to));
    };
    expect(() =>
      adminJob(edited('--ep postgres -p 5432', '--ep db -p 5432'), 'temporal-schema', ports, '/s'),
    ).toThrow(/the SQL endpoint .* is no longer there/);
    expect(() => nginxConfig(edited('listen 80;', 'listen 8081;'), ports, '/tmp')).toThrow(/the listen port/);
    expect(() => nginxConfig(edited('server api:8080 resolve;', 'server api:8081;'), ports, '/tmp')).toThrow(
      /the api upstream/,
    );
    expect(() => appProcess(edited("PORT: '8080'", "PORT: '9090'"), 'api', ports)).toThrow(/expected 8080/);
    expect(() =>
      adminJob(
        edited('temporalio/admin-tools:', 'temporalio/admin-tools:0.0.1-'),
        'temporal-schema',
        ports,
        '/s',
      ),
    ).toThrow(/runs temporalio\/admin-tools:0\.0\.1-/);
  });
});
