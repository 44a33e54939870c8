import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { registry } from '../../engine/platform/metrics';
import { loadCompose, service } from '../support/compose-topology';
import { dashboardMetricNames, loadDashboard } from '../support/dashboard';

const ROOT = path.resolve(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

const dashboard = loadDashboard();

/**
 * The compose `monitoring` profile (issue 32): its Prometheus configuration, its Grafana
 * provisioning, and the dashboard kept in the repository, whose every query must name a series the
 * processes export. (The Temporal SDK's series are checked against a real worker's scrape in the
 * topology suite, after runs have made them.)
 */
describe('the monitoring profile', () => {
  const compose = loadCompose();

  test('Prometheus and Grafana run only with the profile, mounting the files of monitoring/', () => {
    for (const name of ['prometheus', 'grafana']) {
      const svc = service(compose, name) as { profiles?: string[]; volumes?: string[] };
      expect(svc.profiles).toEqual(['monitoring']);
      for (const volume of svc.volumes ?? []) {
        const [source] = volume.split(':');
        if (source!.startsWith('./'))
          expect({ source, exists: existsSync(path.join(ROOT, source!)) }).toEqual({ source, exists: true });
      }
    }
    const provisioning = parse(
      read('monitoring/grafana/provisioning/dashboards/portfolio-analytics.yml'),
    ) as {
      providers: Array<{ options: { path: string } }>;
    };
    const grafana = service(compose, 'grafana') as { volumes: string[] };
    expect(grafana.volumes).toContain(
      `./monitoring/grafana/dashboards:${provisioning.providers[0]!.options.path}:ro`,
    );
    const datasources = parse(read('monitoring/grafana/provisioning/datasources/prometheus.yml')) as {
      datasources: Array<{ uid: string; url: string }>;
    };
    expect(datasources.datasources[0]).toMatchObject({ uid: 'prometheus', url: 'http://prometheus:9090' });
    for (const panel of dashboard.panels) expect(panel.datasource.uid).toBe('prometheus');
  });

  test('every api and worker replica serves metrics on the port Prometheus scrapes; the server its own', () => {
    const config = parse(read('monitoring/prometheus.yml')) as {
      scrape_configs: Array<{ job_name: string; dns_sd_configs?: Array<{ names: string[]; port: number }> }>;
    };
    const app = (name: string) =>
      (service(compose, name) as { environment: Record<string, string> }).environment;
    for (const name of ['api', 'worker']) {
      const job = config.scrape_configs.find((c) => c.dns_sd_configs?.some((sd) => sd.names.includes(name)));
      expect(job).toBeDefined();
      expect(String(job!.dns_sd_configs![0]!.port)).toBe(app(name).METRICS_PORT);
      expect(app(name).METRICS_HOST).toBe('0.0.0.0');
    }
    expect(app('temporal').PROMETHEUS_ENDPOINT).toBe('0.0.0.0:8000');
  });

  test('every pas_ series a dashboard query uses is one the processes export, with a suffix its type has', async () => {
    const exported = new Map((await registry.getMetricsAsJSON()).map((m) => [m.name, String(m.type)]));
    const ours = dashboardMetricNames().filter((name) => name.startsWith('pas_'));
    expect(ours.length).toBeGreaterThanOrEqual(10);
    const missing = ours.filter((name) => {
      const base = name.replace(/_(bucket|count|sum)$/, '');
      const type = exported.get(name) ?? exported.get(base);
      if (type === undefined) return true;
      return name !== base && type !== 'histogram';
    });
    expect(missing).toEqual([]);
    // Requests, errors, latency, runs, steps, calculation stages and Temporal's task latencies.
    const titles = dashboard.panels.map((p) => p.title).join('\n');
    for (const word of ['Requests', 'Errors', 'latency', 'Runs', 'Step', 'Calculation stages', 'Temporal']) {
      expect(titles).toContain(word);
    }
  });
});
