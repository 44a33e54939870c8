import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface DashboardPanel {
  title: string;
  datasource: { uid: string };
  targets: Array<{ expr: string }>;
}

/** The Grafana dashboard kept in the repository (monitoring/grafana/dashboards). */
export function loadDashboard(): { uid: string; panels: DashboardPanel[] } {
  const file = path.resolve(
    __dirname,
    '..',
    '..',
    'monitoring',
    'grafana',
    'dashboards',
    'portfolio-analytics.json',
  );
  return JSON.parse(readFileSync(file, 'utf8')) as { uid: string; panels: DashboardPanel[] };
}

/** The metric names a PromQL expression reads (ours and the Temporal SDK's). */
export function metricNames(expr: string): string[] {
  return [...new Set([...expr.matchAll(/\b((?:pas|temporal)_[a-z0-9_]+)\b/g)].map((m) => m[1]!))];
}

/** Every metric name the dashboard's queries use. */
export function dashboardMetricNames(): string[] {
  return [...new Set(loadDashboard().panels.flatMap((p) => p.targets.flatMap((t) => metricNames(t.expr))))];
}
