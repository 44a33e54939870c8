import path from 'node:path';
import { ConfigError, loadConfig } from '../engine/platform/config';

describe('configuration', () => {
  test('defaults work on one machine', () => {
    const config = loadConfig({}, '/srv/pas', 2);
    expect(config).toEqual({
      port: 8080,
      host: '127.0.0.1',
      dataDir: path.resolve('/srv/pas/data'),
      databaseUrl: null,
      databaseReadUrl: null,
      embeddedPostgresPort: 54329,
      temporalAddress: null,
      temporalNamespace: 'default',
      temporalTaskQueue: 'portfolio-analytics',
      temporalDevPort: 7233,
      temporalUiPort: 8233,
      temporalUiUrl: 'http://127.0.0.1:8233',
      temporalCliPath: null,
      rateLimitPerMinute: 120,
      logLevel: 'info',
      maxPayloadBytes: 104857600,
      responseGzipLevel: 1,
      ownerEmail: 'owner@localhost',
      trustProxy: false,
      publicUrl: 'http://127.0.0.1:8080',
      calcBackend: 'auto',
      calcThreads: 2,
      loadShedEventLoopDelayMs: 1000,
      loadShedPoolQueue: 500,
      maxConcurrentUploads: 8,
      metricsPort: null,
      metricsHost: '127.0.0.1',
      logFormat: null,
      otelEndpoint: null,
      otelServiceName: null,
      secretsKey: null,
      secretsKeyFile: null,
      egressPrivateAllow: '',
      egressMaxResponseBytes: 10485760,
      egressCaFile: null,
      auditRetentionMonths: null,
      auditArchiveDir: path.resolve('/srv/pas/data/audit-archive'),
      runRetentionDays: null,
    });
  });

  test('RUN_RETENTION_DAYS is read as whole days', () => {
    expect(loadConfig({ RUN_RETENTION_DAYS: ' 90 ' }).runRetentionDays).toBe(90);
    expect(loadConfig({ RUN_RETENTION_DAYS: '' }).runRetentionDays).toBeNull();
  });

  test('AUDIT_RETENTION_MONTHS is read as whole months; AUDIT_ARCHIVE_DIR resolves against the project folder', () => {
    const config = loadConfig(
      { AUDIT_RETENTION_MONTHS: ' 13 ', AUDIT_ARCHIVE_DIR: 'archives/audit' },
      '/srv/pas',
    );
    expect(config.auditRetentionMonths).toBe(13);
    expect(config.auditArchiveDir).toBe(path.resolve('/srv/pas/archives/audit'));
    expect(loadConfig({ AUDIT_RETENTION_MONTHS: '', DATA_DIR: '/var/pas' }, '/srv/pas')).toMatchObject({
      auditRetentionMonths: null,
      auditArchiveDir: path.resolve('/var/pas/audit-archive'),
    });
  });

  test('the secrets key and the egress settings are read; key files resolve against the project folder', () => {
    const hex = 'ab'.repeat(32);
    const config = loadConfig(
      {
        SECRETS_KEY: ` ${hex} , ${Buffer.alloc(32, 7).toString('base64')} `,
        SECRETS_KEY_FILE: 'keys/pas.key',
        EGRESS_PRIVATE_ALLOW: '10.20.0.0/16',
        EGRESS_MAX_RESPONSE_BYTES: '2048',
        EGRESS_CA_FILE: '/etc/pas/vendor-ca.pem',
      },
      '/srv/pas',
    );
    expect(config.secretsKey).toBe(`${hex},${Buffer.alloc(32, 7).toString('base64')}`);
    expect(config.secretsKeyFile).toBe(path.resolve('/srv/pas/keys/pas.key'));
    expect(config.egressPrivateAllow).toBe('10.20.0.0/16');
    expect(config.egressMaxResponseBytes).toBe(2048);
    expect(config.egressCaFile).toBe('/etc/pas/vendor-ca.pem');
  });

  test('LOG_FORMAT and the metrics port are read', () => {
    expect(loadConfig({ LOG_FORMAT: 'JSON', METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' })).toMatchObject({
      logFormat: 'json',
      metricsPort: 9464,
      metricsHost: '0.0.0.0',
    });
  });

  test('values are read and normalised', () => {
    const config = loadConfig(
      {
        PORT: '9000',
        HOST: '0.0.0.0',
        DATA_DIR: '/var/lib/pas',
        DATABASE_URL: 'postgres://u:p@db:5432/pas',
        DATABASE_READ_URL: 'postgresql://u:p@db-replica:5432/pas',
        TEMPORAL_ADDRESS: 'temporal:7233',
        TEMPORAL_UI_URL: 'http://temporal-ui:8080',
        RATE_LIMIT_PER_MINUTE: '600',
        LOG_LEVEL: 'DEBUG',
        TRUST_PROXY: 'true',
        CALC_BACKEND: 'Threads',
        CALC_THREADS: '6',
        LOAD_SHED_EVENT_LOOP_DELAY_MS: '0',
        LOAD_SHED_POOL_QUEUE: '20',
        MAX_CONCURRENT_UPLOADS: '3',
        RESPONSE_GZIP_LEVEL: '6',
      },
      '/',
    );
    expect(config).toMatchObject({
      port: 9000,
      host: '0.0.0.0',
      dataDir: '/var/lib/pas',
      databaseUrl: 'postgres://u:p@db:5432/pas',
      databaseReadUrl: 'postgresql://u:p@db-replica:5432/pas',
      temporalAddress: 'temporal:7233',
      temporalUiUrl: 'http://temporal-ui:8080',
      rateLimitPerMinute: 600,
      responseGzipLevel: 6,
      logLevel: 'debug',
      trustProxy: true,
      calcBackend: 'threads',
      calcThreads: 6,
      loadShedEventLoopDelayMs: 0,
      loadShedPoolQueue: 20,
      maxConcurrentUploads: 3,
    });
  });

  test('without TEMPORAL_UI_URL a cluster has no UI address to guess', () => {
    expect(loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233' }).temporalUiUrl).toBeNull();
  });

  test.each([
    ['PORT', 'eighty', 'PORT must be an integer, got "eighty"'],
    ['PORT', '70000', 'PORT must be between 0 and 65535, got 70000'],
    ['RATE_LIMIT_PER_MINUTE', '0', 'RATE_LIMIT_PER_MINUTE must be between 1 and 1000000, got 0'],
    ['MAX_CONCURRENT_UPLOADS', '0', 'MAX_CONCURRENT_UPLOADS must be between 1 and 10000, got 0'],
    ['LOAD_SHED_POOL_QUEUE', 'many', 'LOAD_SHED_POOL_QUEUE must be an integer, got "many"'],
    ['RATE_LIMIT_PER_MINUTE', '-5', 'RATE_LIMIT_PER_MINUTE must be an integer, got "-5"'],
    [
      'LOG_LEVEL',
      'verbose',
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"',
    ],
    ['DATABASE_URL', 'mysql://x@y/z', 'DATABASE_URL must use postgres: or postgresql:, got "mysql:"'],
    ['DATABASE_URL', 'not a url', 'DATABASE_URL is not a valid URL'],
    [
      'DATABASE_READ_URL',
      'http://replica/pas',
      'DATABASE_READ_URL must use postgres: or postgresql:, got "http:"',
    ],
    ['TEMPORAL_ADDRESS', 'http://temporal', 'TEMPORAL_ADDRESS must be host:port, got "http://temporal"'],
    ['TRUST_PROXY', 'yes', 'TRUST_PROXY must be true or false, got "yes"'],
    [
      'CALC_BACKEND',
      'cuda',
      'CALC_BACKEND must be one of auto, reference, typed, threads, wasm, gpujs, got "cuda"',
    ],
    ['CALC_THREADS', '0', 'CALC_THREADS must be between 1 and 256, got 0'],
    ['MAX_PAYLOAD_BYTES', '12', 'MAX_PAYLOAD_BYTES must be between 1024 and 1073741824, got 12'],
    ['RESPONSE_GZIP_LEVEL', '0', 'RESPONSE_GZIP_LEVEL must be between 1 and 9, got 0'],
    ['LOG_FORMAT', 'xml', 'LOG_FORMAT must be one of pretty, json, got "xml"'],
    ['METRICS_PORT', 'ninety', 'METRICS_PORT must be an integer, got "ninety"'],
    [
      'SECRETS_KEY',
      'hunter2',
      'SECRETS_KEY entry 1 is not a master key (64 hex digits, or the Base64 of 32 bytes; value not shown)',
    ],
    ['EGRESS_MAX_RESPONSE_BYTES', '0', 'EGRESS_MAX_RESPONSE_BYTES must be between 1 and 1073741824, got 0'],
    ['AUDIT_RETENTION_MONTHS', '0', 'AUDIT_RETENTION_MONTHS must be between 1 and 1200, got 0'],
    ['AUDIT_RETENTION_MONTHS', '12m', 'AUDIT_RETENTION_MONTHS must be an integer, got "12m"'],
    ['RUN_RETENTION_DAYS', '0', 'RUN_RETENTION_DAYS must be between 1 and 36500, got 0'],
    ['RUN_RETENTION_DAYS', '30d', 'RUN_RETENTION_DAYS must be an integer, got "30d"'],
  ])('%s=%s stops start-up naming the variable', (name, value, detail) => {
    let caught: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe(name);
    expect((caught as ConfigError).message).toBe(`Invalid configuration: ${detail}`);
  });
});
