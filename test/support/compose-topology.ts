import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

/**
 * docker-compose.yml as processes on one machine without Docker: every setting comes from the compose
 * file, and every change that running outside containers needs is made here and nowhere else, each
 * named in MAPPING. test/support/topology.ts starts what this module describes; test/deploy/topology
 * fails when the two drift (a rewrite that no longer matches the compose text throws).
 */

const ROOT = path.resolve(__dirname, '..', '..');
export const COMPOSE_FILE = path.join(ROOT, 'docker-compose.yml');

export interface ComposeService {
  image?: string;
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  configs?: Array<{ source: string; target: string }>;
  deploy?: { replicas?: number };
}

export interface Compose {
  services: Record<string, ComposeService>;
  configs: Record<string, { content?: string }>;
}

/** What the mapping changes, for a reader and for the drift test; the code below applies exactly these. */
export const MAPPING = {
  hosts:
    'service names reached over the compose network (postgres:5432, temporal:7233) become 127.0.0.1 and ' +
    'the loopback port that service listens on here',
  bindAddresses:
    '0.0.0.0 (HOST of the api, BIND_ON_IP of Temporal) becomes 127.0.0.1: nothing leaves loopback',
  apiPort: 'PORT 8080 becomes a port per api replica (two processes cannot both bind 8080 on one host)',
  temporalPorts:
    "the Temporal server's ports (fixed inside its container) are free ports, given through the same " +
    'variables its config template reads (FRONTEND_GRPC_PORT, …); TEMPORAL_BROADCAST_ADDRESS is 127.0.0.1, ' +
    "what the image's entrypoint derives from the container's hostname",
  configFiles:
    'a `configs:` entry mounted at a path (the dynamic config, the nginx site) is written to a temporary ' +
    'file and the variable or include that names the path points there',
  schemaFolder: "/etc/temporal/schema (the admin-tools image's schema files) is the cached schema folder",
  tools: '`temporal-sql-tool` and `temporal` on PATH are the cached server build and the project CLI',
  nginx:
    'Docker DNS (`resolver`, `server api:8080 resolve`) becomes one `server 127.0.0.1:PORT` line per api ' +
    'replica; `listen 80` becomes a loopback port; the image-level nginx.conf is a minimal wrapper',
  variables:
    'compose variables the test sets, as an operator would in .env: RATE_LIMIT_PER_MINUTE (the load ' +
    'tests send more than 120 requests a minute with one key) and LOG_LEVEL',
  image: "the Dockerfile's ENV is the processes' base environment, as in the image",
} as const;

/** Compose variables set for the test run (others take the compose file's defaults). */
export const COMPOSE_VARIABLES: Record<string, string> = {
  RATE_LIMIT_PER_MINUTE: '1000000',
  LOG_LEVEL: 'warn',
};

export function loadCompose(file = COMPOSE_FILE): Compose {
  return parseCompose(readFileSync(file, 'utf8'));
}

export function parseCompose(text: string): Compose {
  // Compose uses YAML 1.1 merge keys (`<<: *anchor`) for the shared settings.
  return parse(text, { merge: true }) as Compose;
}

/** Compose interpolation: `${NAME}`, `${NAME:-default}`, `${NAME-default}` (nested), `$$` → `$`. */
export function interpolate(value: string, variables: Record<string, string> = {}): string {
  let text = value.replaceAll('$$', '\u0000');
  const variable = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^${}]*))?\}/;
  // Innermost first, so nested defaults (`${A:-${B:-x}}`) resolve.
  while (variable.test(text)) {
    text = text.replace(variable, (_, name: string, operator?: string, fallback?: string) => {
      const set = variables[name];
      if (operator === ':-') return set !== undefined && set !== '' ? set : (fallback ?? '');
      if (operator === '-') return set ?? fallback ?? '';
      return set ?? '';
    });
  }
  return text.replaceAll('\u0000', '$');
}

export function service(compose: Compose, name: string): ComposeService {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service "${name}"`);
  return found;
}

export function environmentOf(
  svc: ComposeService,
  variables: Record<string, string> = COMPOSE_VARIABLES,
): Record<string, string> {
  const env = svc.environment ?? {};
  const entries = Array.isArray(env)
    ? env.map((line) => {
        const at = line.indexOf('=');
        return at < 0 ? [line, ''] : [line.slice(0, at), line.slice(at + 1)];
      })
    : Object.entries(env).map(([name, value]) => [name, value === null ? '' : String(value)]);
  return Object.fromEntries(entries.map(([name, value]) => [name, interpolate(value!, variables)]));
}

/** The command as argv (a string command is split on blanks, as compose does for a plain string). */
export function commandOf(svc: ComposeService, variables = COMPOSE_VARIABLES): string[] {
  const command = svc.command ?? [];
  const argv = Array.isArray(command) ? command : command.trim().split(/\s+/);
  return argv.map((word) => interpolate(word, variables));
}

/** The `sh -c` script of a one-shot admin-tools job. */
export function shellScriptOf(svc: ComposeService): string {
  const argv = commandOf(svc);
  if (argv.length !== 3 || argv[0] !== '/bin/sh' || argv[1] !== '-c') {
    throw new Error(`expected a "/bin/sh -c <script>" command, found ${JSON.stringify(argv)}`);
  }
  return argv[2]!;
}

export function configContent(compose: Compose, svc: ComposeService, target: string): string {
  const mount = (svc.configs ?? []).find((config) => config.target === target);
  const content = mount ? compose.configs?.[mount.source]?.content : undefined;
  if (content === undefined) throw new Error(`no config with inline content is mounted at ${target}`);
  return interpolate(content, COMPOSE_VARIABLES);
}

/** The version the compose file pins for temporalio/server (build-temporal-server.mjs checks admin-tools). */
export function temporalServerVersion(compose: Compose): string {
  const image = service(compose, 'temporal').image ?? '';
  const match = /^temporalio\/server:(.+)$/.exec(image);
  if (!match) throw new Error(`the temporal service runs ${image}, not temporalio/server:<version>`);
  return match[1]!;
}

/** `ENV` of the Dockerfile: what every process of our image starts with. */
export function imageEnvironment(dockerfile = path.join(ROOT, 'Dockerfile')): Record<string, string> {
  const env: Record<string, string> = {};
  const instructions = readFileSync(dockerfile, 'utf8')
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.trim());
  for (const line of instructions) {
    const match = /^ENV\s+(.*)$/i.exec(line);
    if (!match) continue;
    for (const pair of match[1]!.trim().split(/\s+/)) {
      const at = pair.indexOf('=');
      if (at > 0) env[pair.slice(0, at)] = pair.slice(at + 1).replace(/^"(.*)"$/, '$1');
    }
  }
  return env;
}

// --- the rewrites -----------------------------------------------------------------------------------

export const LOOPBACK = '127.0.0.1';

/** The port every api and worker container serves its Prometheus metrics on (monitoring/prometheus.yml). */
export const METRICS_CONTAINER_PORT = '9464';

export interface TopologyPorts {
  postgres: number;
  temporal: TemporalPorts;
  api: number[];
  nginx: number;
  /** Each replica's metrics port (METRICS_PORT 9464 in every container), and the server's. */
  metrics: { api: number[]; worker: number[]; temporal: number };
}

/** The variables of the server's config template that set its ports. */
export const TEMPORAL_PORT_VARIABLES = [
  'FRONTEND_GRPC_PORT',
  'FRONTEND_HTTP_PORT',
  'FRONTEND_MEMBERSHIP_PORT',
  'INTERNAL_FRONTEND_GRPC_PORT',
  'INTERNAL_FRONTEND_HTTP_PORT',
  'INTERNAL_FRONTEND_MEMBERSHIP_PORT',
  'HISTORY_GRPC_PORT',
  'HISTORY_MEMBERSHIP_PORT',
  'MATCHING_GRPC_PORT',
  'MATCHING_MEMBERSHIP_PORT',
  'WORKER_GRPC_PORT',
  'WORKER_MEMBERSHIP_PORT',
] as const;
export type TemporalPorts = Record<(typeof TEMPORAL_PORT_VARIABLES)[number], number>;

/** Compose's service hosts and the ports their containers listen on, mapped to loopback ports here. */
function hostMap(ports: TopologyPorts): Record<string, { containerPort: string; port: number }> {
  return {
    postgres: { containerPort: '5432', port: ports.postgres },
    temporal: { containerPort: '7233', port: ports.temporal.FRONTEND_GRPC_PORT },
  };
}

/** `host:port` and `@host:port` of a compose service in a value, and a value that is just the host. */
export function mapHosts(value: string, ports: TopologyPorts): string {
  const hosts = hostMap(ports);
  const bare = hosts[value];
  if (bare) return LOOPBACK;
  return value.replace(
    /(^|[@/])([a-z][a-z0-9-]*):(\d+)(?=$|[/?])/g,
    (whole, before: string, host: string, port) => {
      const mapped = hosts[host];
      if (!mapped) return whole;
      if (port !== mapped.containerPort) throw new Error(`${host}:${port} is not a port ${host} listens on`);
      return `${before}${LOOPBACK}:${mapped.port}`;
    },
  );
}

const mapBind = (value: string) => (value === '0.0.0.0' ? LOOPBACK : value);

/** Replaces `from` with `to` in `text`, which must contain it: a compose edit that drops it fails here. */
export function rewrite(text: string, from: string | RegExp, to: string, what: string): string {
  const found = typeof from === 'string' ? text.includes(from) : from.test(text);
  if (!found) throw new Error(`docker-compose.yml changed: ${what} (${String(from)}) is no longer there`);
  return typeof from === 'string' ? text.replaceAll(from, to) : text.replace(from, to);
}

/** migrate, api and worker: the compose command and environment (plus the image's ENV). */
export function appProcess(
  compose: Compose,
  name: 'migrate' | 'api' | 'worker',
  ports: TopologyPorts,
  replica = 0,
): { command: string[]; env: Record<string, string> } {
  const svc = service(compose, name);
  const env: Record<string, string> = { ...imageEnvironment() };
  for (const [key, value] of Object.entries(environmentOf(svc))) env[key] = mapHosts(value, ports);
  if (name === 'api') {
    env.HOST = mapBind(env.HOST ?? '');
    if (env.PORT !== '8080') throw new Error(`the api listens on ${env.PORT}, expected 8080`);
    env.PORT = String(ports.api[replica]);
  }
  // Every container serves its metrics on 9464; on one host each replica takes its own port.
  if (env.METRICS_PORT !== undefined && name !== 'migrate') {
    if (env.METRICS_PORT !== METRICS_CONTAINER_PORT) {
      throw new Error(
        `the ${name} serves metrics on ${env.METRICS_PORT}, expected ${METRICS_CONTAINER_PORT}`,
      );
    }
    env.METRICS_PORT = String(ports.metrics[name][replica]);
    env.METRICS_HOST = mapBind(env.METRICS_HOST ?? '');
  }
  return { command: commandOf(svc), env };
}

/** The temporal service's environment, read by the server's templated config as in the image. */
export function temporalServerEnvironment(
  compose: Compose,
  ports: TopologyPorts,
  dynamicConfigFile: string,
): { env: Record<string, string>; dynamicConfig: string } {
  const svc = service(compose, 'temporal');
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(environmentOf(svc))) env[key] = mapHosts(value, ports);
  env.BIND_ON_IP = mapBind(env.BIND_ON_IP ?? '');
  if (env.DB_PORT !== hostMap(ports).postgres!.containerPort) {
    throw new Error(`the temporal service reaches PostgreSQL on ${env.DB_PORT}, expected 5432`);
  }
  env.DB_PORT = String(ports.postgres);
  env.TEMPORAL_BROADCAST_ADDRESS = LOOPBACK;
  // Its Prometheus endpoint (0.0.0.0:8000 in the container) on a loopback port of its own.
  if (env.PROMETHEUS_ENDPOINT !== undefined)
    env.PROMETHEUS_ENDPOINT = `${LOOPBACK}:${ports.metrics.temporal}`;
  for (const variable of TEMPORAL_PORT_VARIABLES) env[variable] = String(ports.temporal[variable]);
  const dynamicConfig = configContent(compose, svc, env.DYNAMIC_CONFIG_FILE_PATH ?? '');
  env.DYNAMIC_CONFIG_FILE_PATH = dynamicConfigFile;
  return { env, dynamicConfig };
}

/** A one-shot admin-tools job (temporal-schema, temporal-setup): its script and environment, mapped. */
export function adminJob(
  compose: Compose,
  name: 'temporal-schema' | 'temporal-setup',
  ports: TopologyPorts,
  schemaFolder: string,
): { script: string; env: Record<string, string> } {
  const svc = service(compose, name);
  if (svc.image !== `temporalio/admin-tools:${temporalServerVersion(compose)}`) {
    throw new Error(`${name} runs ${svc.image}; the server is ${service(compose, 'temporal').image}`);
  }
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(environmentOf(svc))) env[key] = mapHosts(value, ports);
  let script = shellScriptOf(svc);
  if (name === 'temporal-schema') {
    // The SQL tool is given the host and port on its command line.
    script = rewrite(
      script,
      '--ep postgres -p 5432',
      `--ep ${LOOPBACK} -p ${ports.postgres}`,
      'the SQL endpoint',
    );
    script = rewrite(script, '/etc/temporal/schema/', `${schemaFolder}/`, 'the schema folder');
  }
  return { script, env };
}

/** The nginx-api site, made to run on Debian's nginx on loopback, and the wrapper nginx.conf. */
export function nginxConfig(
  compose: Compose,
  ports: TopologyPorts,
  runDir: string,
): { site: string; main: string } {
  let site = configContent(compose, service(compose, 'load-balancer'), '/etc/nginx/conf.d/default.conf');
  site = rewrite(site, /^\s*resolver [^;]*;\s*\n/m, '', "Docker's DNS resolver");
  site = rewrite(
    site,
    /^(\s*)server api:8080 resolve;/m,
    ports.api.map((port) => `$1server ${LOOPBACK}:${port};`).join('\n'),
    'the api upstream',
  );
  site = rewrite(site, /^(\s*)listen 80;/m, `$1listen ${LOOPBACK}:${ports.nginx};`, 'the listen port');
  const temp = (name: string) => `${name}_temp_path ${path.join(runDir, `${name}-temp`)};`;
  // What the nginx image's own nginx.conf sets around conf.d/*.conf, with every path in runDir.
  const main = [
    'daemon off;',
    'worker_processes 1;',
    ...(process.getuid?.() === 0 ? ['user root;'] : []),
    `pid ${path.join(runDir, 'nginx.pid')};`,
    `error_log ${path.join(runDir, 'error.log')} warn;`,
    'events { worker_connections 1024; }',
    'http {',
    // Which replica answered each request (the tests read it); observation only.
    "  log_format topology '$msec $request_method $request_uri $status $upstream_addr';",
    `  access_log ${path.join(runDir, 'access.log')} topology;`,
    '  sendfile on;',
    '  keepalive_timeout 65;',
    `  ${temp('client_body')}`,
    `  ${temp('proxy')}`,
    `  ${temp('fastcgi')}`,
    `  ${temp('uwsgi')}`,
    `  ${temp('scgi')}`,
    `  include ${path.join(runDir, 'default.conf')};`,
    '}',
    '',
  ].join('\n');
  return { site, main };
}

/** The postgres service's first-start settings (the image creates this superuser and database). */
export function postgresSettings(compose: Compose): { user: string; password: string; database: string } {
  const env = environmentOf(service(compose, 'postgres'));
  const user = env.POSTGRES_USER ?? 'postgres';
  return { user, password: env.POSTGRES_PASSWORD ?? '', database: env.POSTGRES_DB ?? user };
}

/**
 * The scrape targets of monitoring/prometheus.yml (the compose `monitoring` profile's Prometheus),
 * mapped to the loopback processes: its DNS names `api` and `worker` on 9464 are every replica's
 * metrics port, `temporal:8000` the server's. Whatever the file names that the topology does not run
 * fails here.
 */
export function prometheusTargets(ports: TopologyPorts): Array<{ job: string; url: string }> {
  const config = parse(readFileSync(path.join(ROOT, 'monitoring', 'prometheus.yml'), 'utf8')) as {
    scrape_configs: Array<{
      job_name: string;
      metrics_path?: string;
      dns_sd_configs?: Array<{ names: string[]; port: number }>;
      static_configs?: Array<{ targets: string[] }>;
    }>;
  };
  const out: Array<{ job: string; url: string }> = [];
  for (const job of config.scrape_configs) {
    const metricsPath = job.metrics_path ?? '/metrics';
    for (const sd of job.dns_sd_configs ?? []) {
      for (const name of sd.names) {
        if (name !== 'api' && name !== 'worker') throw new Error(`${job.job_name}: no service ${name} here`);
        if (String(sd.port) !== METRICS_CONTAINER_PORT) {
          throw new Error(
            `${job.job_name} scrapes ${name} on ${sd.port}, its containers serve ${METRICS_CONTAINER_PORT}`,
          );
        }
        for (const port of ports.metrics[name])
          out.push({ job: job.job_name, url: `http://${LOOPBACK}:${port}${metricsPath}` });
      }
    }
    for (const target of (job.static_configs ?? []).flatMap((c) => c.targets)) {
      if (target !== 'temporal:8000') throw new Error(`${job.job_name}: no target ${target} here`);
      out.push({ job: job.job_name, url: `http://${LOOPBACK}:${ports.metrics.temporal}${metricsPath}` });
    }
  }
  return out;
}
