import { type LogLevel as TemporalLogLevel, type LogMetadata, Runtime } from '@temporalio/worker';
import type { LogFormat, LogLevel } from '../engine/platform/config';
import { levelWord } from '../engine/platform/log-format';

const SEVERITY: Record<string, number> = { TRACE: 10, DEBUG: 20, INFO: 30, WARN: 40, ERROR: 50 };
const OURS: Record<LogLevel, number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: 100,
};

/**
 * webpack's listing of the workflow bundle (30-odd lines of module paths at every worker start) is
 * the bundler's detail: it goes to debug, so LOG_LEVEL=debug still shows it.
 */
export const isBundleListing = (message: string): boolean =>
  message.includes('\n') && /webpack [\d.]+ compiled|modules by path|asset workflow-bundle/.test(message);

/**
 * The Temporal SDK's runtime for this worker process: its log lines in the process's format (pretty
 * or JSON, at LOG_LEVEL), and with `metricsPort` its core's Prometheus exporter on that loopback port
 * (the worker serves those series with its own on METRICS_PORT). Once per process, before any
 * connection.
 */
export function installTemporalRuntime(options: {
  format: LogFormat;
  level: LogLevel;
  metricsPort: number | null;
}): void {
  const threshold = OURS[options.level];
  const colour = Boolean(process.stdout.isTTY);
  const write = (level: TemporalLogLevel, message: string, meta?: LogMetadata) => {
    const effective = level === 'INFO' && isBundleListing(message) ? 'DEBUG' : level;
    if ((SEVERITY[effective] ?? 30) < threshold) return;
    if (options.format === 'json') {
      process.stdout.write(
        `${JSON.stringify({ level: SEVERITY[effective], time: Date.now(), component: 'temporal', msg: message, ...meta })}\n`,
      );
    } else {
      const where = meta?.taskQueue ? ` (${String(meta.taskQueue)})` : '';
      const time = new Date().toISOString().slice(11, 23);
      process.stdout.write(`${time} ${levelWord(effective, colour)} worker ${message}${where}\n`);
    }
  };
  Runtime.install({
    logger: {
      log: write,
      trace: (message, meta) => write('TRACE', message, meta),
      debug: (message, meta) => write('DEBUG', message, meta),
      info: (message, meta) => write('INFO', message, meta),
      warn: (message, meta) => write('WARN', message, meta),
      error: (message, meta) => write('ERROR', message, meta),
    },
    ...(options.metricsPort === null
      ? {}
      : {
          telemetryOptions: {
            metrics: {
              prometheus: { bindAddress: `127.0.0.1:${options.metricsPort}`, countersTotalSuffix: true },
            },
          },
        }),
  });
}
