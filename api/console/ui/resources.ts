/**
 * The API's records that more than one page shows (workflows, runs, worker templates), and the reads
 * of one record that more than one page makes.
 */
import { call, query } from './api';
import type { Stamp } from './dom';
import type { OnFailure } from './parts/on-failure';
import type { WorkflowWorker } from './parts/graph';
import { currentWorkspace } from './session';

export interface Workflow {
  id: string;
  name: string;
  description: string | null;
  trigger_type: string;
  trigger_config: Record<string, unknown>;
  trigger_enabled: boolean;
  workers?: WorkflowWorker[];
  on_failure?: OnFailure | null;
  workspace: string;
  updated: string;
  version: string;
}
export interface Run {
  id: string;
  run_status: string;
  workflow_id: string;
  workflow_name: string;
  trigger: string;
  created: Stamp;
  started: Stamp | null;
  duration: number | null;
  ender_worker_execution_id: string | null;
  resume?: { failure?: { worker_id: string; parallel_index: number } | null } | null;
}
export interface Template {
  id: string;
  name: string;
  description: string | null;
  category: string;
  type: string;
  script_runtime: string;
  script_entry_point: string;
  container_status: string;
  visible: boolean;
  updated: string;
  version: string;
  script?: string;
  form_inputs?: unknown[];
  requirements?: string[];
  builtin?: boolean;
  environment?: { build_log_tail?: string | null } | null;
}

/** One workflow of the current workspace, with its workers. */
export async function getWorkflow(id: string): Promise<Workflow> {
  return (
    await call<{ workflow: Workflow }>(
      'GET',
      `/v2/workflows/${encodeURIComponent(id)}${query({ workspace: currentWorkspace() })}`,
    )
  ).workflow;
}

/** One worker template, with its script and form inputs. */
export async function getTemplate(id: string): Promise<Template> {
  return (await call<{ worker_template: Template }>('GET', `/v2/worker_templates/${encodeURIComponent(id)}`))
    .worker_template;
}
