/**
 * Runs: the list (filtered, paged, retried in bulk) and one run (its steps on a time line, a step's
 * log, outbound calls and result, retry from the failed step), both updated live.
 */
import { call, query } from '../api';
import { h, millis, pretty, replace, seconds, type Stamp, when } from '../dom';
import { badge, errorBox, link, section } from '../parts/elements';
import { apiDay, field, filterTo } from '../parts/form-fields';
import { frame } from '../parts/frame';
import { outboundCallsTable } from '../parts/outbound-calls';
import { listTable } from '../parts/table';
import type { Run, Workflow } from '../resources';
import { go } from '../router';
import { currentSession, currentWorkspace, whenRunChanges } from '../session';

interface StepSummary {
  worker_id: string;
  worker_name: string;
  is_parallel_execution: boolean;
  execution: {
    id: string;
    worker_type: string;
    status: string;
    created: Stamp;
    started: Stamp | null;
    ended: Stamp | null;
    duration: number | null;
    parallel_index: number;
  };
}
interface Step {
  id: string;
  status: string;
  worker_id: string;
  worker_name: string;
  worker_type: string;
  parallel_index: number;
  started: string | null;
  ended: string | null;
  duration: number | null;
  result?: unknown;
  input_params: Record<string, unknown> | null;
  error_message: string | null;
  logs?: Array<{ level: string; message: string; at: number }>;
  reused_from: string | null;
}

export async function runsPage(params: URLSearchParams): Promise<void> {
  const filters = {
    workflow_id: params.get('workflow_id') ?? '',
    run_status: params.get('run_status') ?? '',
    trigger: params.get('trigger') ?? '',
    start: params.get('start') ?? '',
    end: params.get('end') ?? '',
  };
  const tokens = (params.get('pages') ?? '').split(',').filter(Boolean);
  const table = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  const select = (name: keyof typeof filters, label: string, options: string[]) =>
    field(
      label,
      h(
        'select',
        { name },
        h('option', { value: '' }, 'any'),
        options.map((o) => h('option', { value: o, selected: filters[name] === o }, o)),
      ),
    );
  const workflowSelect = h('select', { name: 'workflow_id' }, h('option', { value: '' }, 'any'));
  const form = h(
    'form',
    {
      class: 'filters',
      on: { submit: filterTo('#/runs') },
    },
    field('Workflow', workflowSelect),
    select('run_status', 'Status', ['RUNNING', 'SUCCEEDED', 'FAILED']),
    select('trigger', 'Trigger', ['MANUAL', 'API', 'TIME_BASED', 'FILE_RECEIVED']),
    field('From', h('input', { type: 'date', name: 'start', value: filters.start })),
    field('To', h('input', { type: 'date', name: 'end', value: filters.end })),
    h('button', { type: 'submit' }, 'Filter'),
  );
  // Bulk retry: every FAILED run of one workflow in the period shown, each from its failed step.
  const bulkStatus = h('span', { 'aria-live': 'polite', id: 'bulk-status' });
  const bulk =
    filters.workflow_id && filters.run_status === 'FAILED'
      ? h(
          'p',
          null,
          h(
            'button',
            {
              type: 'button',
              id: 'retry-failed',
              on: {
                click: () =>
                  call<{ started: number; skipped: unknown[]; has_more: boolean }>(
                    'POST',
                    `/v2/workflows/${encodeURIComponent(filters.workflow_id)}/retry_failed`,
                    {
                      start: filters.start ? apiDay(filters.start) : '20000101',
                      ...(filters.end ? { end: apiDay(filters.end) } : {}),
                      workspace: currentWorkspace(),
                    },
                  ).then(
                    (outcome) =>
                      replace(
                        bulkStatus,
                        h(
                          'span',
                          { class: 'note' },
                          `Retried ${outcome.started}; skipped ${outcome.skipped.length}${outcome.has_more ? '; more remain: retry again' : ''}.`,
                        ),
                      ),
                    (error: unknown) => replace(bulkStatus, errorBox(error)),
                  ),
              },
            },
            'Retry every failed run shown, from its failed step',
          ),
          ' ',
          bulkStatus,
        )
      : null;
  await frame(
    'Runs',
    h(
      'div',
      null,
      h('h1', null, 'Runs'),
      form,
      bulk,
      table,
      h('p', { class: 'note' }, 'Updates live (server-sent events).'),
    ),
  );
  call<{ workflows: Workflow[] }>(
    'GET',
    `/v2/workflows${query({ workspace: currentWorkspace(), page_size: 100 })}`,
  ).then(
    ({ workflows }) =>
      workflowSelect.append(
        ...workflows.map((w) => h('option', { value: w.id, selected: w.id === filters.workflow_id }, w.name)),
      ),
    () => undefined,
  );
  const load = async () => {
    try {
      const page = await call<{ workflow_executions: Run[]; next_page_token: string | null }>(
        'GET',
        `/v2/workflow_executions${query({
          workspace: currentWorkspace(),
          workflow_id: filters.workflow_id,
          run_status: filters.run_status,
          trigger: filters.trigger,
          start: filters.start && apiDay(filters.start),
          end: filters.end && apiDay(filters.end),
          page_size: 20,
          page_token: tokens[tokens.length - 1],
        })}`,
      );
      const pageLink = (pages: string[]) => {
        const next = new URLSearchParams(params);
        if (pages.length) next.set('pages', pages.join(','));
        else next.delete('pages');
        return `#/runs?${next.toString()}`;
      };
      replace(
        table,
        page.workflow_executions.length === 0
          ? h('p', { class: 'note' }, 'No runs match.')
          : listTable(
              page.workflow_executions,
              [
                { title: 'Status', cell: (run) => badge(run.run_status) },
                {
                  title: 'Workflow',
                  cell: (run) =>
                    link(
                      `#/runs/${encodeURIComponent(run.workflow_id)}/${encodeURIComponent(run.id)}`,
                      run.workflow_name,
                    ),
                },
                { title: 'Trigger', cell: (run) => run.trigger },
                { title: 'Started', cell: (run) => when(run.started ?? run.created) },
                { title: 'Duration', cell: (run) => seconds(run.duration) },
              ],
              { id: 'runs', row: (run) => ({ 'data-run': run.id }) },
            ),
        h(
          'div',
          { class: 'pager' },
          tokens.length > 0 ? link(pageLink(tokens.slice(0, -1)), '← Newer') : null,
          page.next_page_token ? link(pageLink([...tokens, page.next_page_token]), 'Older →') : null,
        ),
      );
    } catch (error) {
      replace(table, errorBox(error));
    }
  };
  let pending = false;
  whenRunChanges(() => {
    // Many steps change at once: one reload per burst.
    if (pending) return;
    pending = true;
    setTimeout(() => {
      pending = false;
      void load();
    }, 300);
  });
  await load();
}

function temporalLink(run: Run): HTMLElement | null {
  const base = currentSession()?.temporal_ui_url;
  if (!base) return null;
  const url = `${base.replace(/\/$/, '')}/namespaces/default/workflows/${encodeURIComponent(run.id)}`;
  return h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, 'Open in the Temporal UI');
}

export async function runPage(workflowId: string, executionId: string): Promise<void> {
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame('Runs', body);
  const base = `/v2/workflows/${encodeURIComponent(workflowId)}`;
  const detail = h('div', { class: 'step-detail', id: 'step-detail', 'aria-live': 'polite' });
  let selected: string | null = null;
  const showStep = async (stepId: string) => {
    selected = stepId;
    try {
      const { worker_execution: step } = await call<{ worker_execution: Step }>(
        'GET',
        `${base}/worker_executions${query({ worker_execution_id: stepId, with_result: true, workspace: currentWorkspace() })}`,
      );
      const outboundCalls = outboundCallsTable(step.logs);
      replace(
        detail,
        h('h3', null, step.worker_name, ' ', badge(step.status)),
        step.reused_from
          ? h('p', { class: 'note' }, `Reused from ${step.reused_from} (not run again in this retry).`)
          : null,
        step.error_message
          ? h(
              'div',
              null,
              h('h4', null, 'Error'),
              h('pre', { class: 'error-text', id: 'step-error' }, step.error_message),
            )
          : null,
        h('h4', null, 'Log'),
        step.logs && step.logs.length
          ? h(
              'ol',
              { class: 'log', id: 'step-log', tabindex: 0 },
              step.logs.map((line) =>
                h(
                  'li',
                  { class: `log-${line.level}` },
                  h('span', { class: 'level' }, line.level),
                  ' ',
                  line.message,
                ),
              ),
            )
          : h('p', { class: 'note' }, 'No log lines.'),
        outboundCalls ? [h('h4', null, 'Outbound calls'), outboundCalls] : null,
        h('h4', null, 'Result'),
        h(
          'pre',
          { id: 'step-result' },
          step.result === undefined || step.result === null ? 'null' : pretty(step.result),
        ),
        h('h4', null, 'Inputs'),
        h('pre', null, pretty(step.input_params ?? {})),
      );
    } catch (error) {
      replace(detail, errorBox(error));
    }
  };
  const load = async () => {
    let run: Run;
    let steps: StepSummary[];
    try {
      run = (
        await call<{ workflow_execution: Run }>(
          'GET',
          `${base}/workflow_executions${query({ workflow_execution_id: executionId, with_resume: true, workspace: currentWorkspace() })}`,
        )
      ).workflow_execution;
      steps = (
        await call<{ worker_executions: StepSummary[] }>(
          'GET',
          `${base}/worker_executions${query({ workflow_execution_id: executionId, workspace: currentWorkspace() })}`,
        )
      ).worker_executions;
    } catch (error) {
      replace(body, errorBox(error));
      return;
    }
    const failed = steps.find((s) => s.execution.status === 'ERROR');
    const actions = h('span', { 'aria-live': 'polite' });
    const retry =
      run.run_status === 'FAILED'
        ? h(
            'button',
            {
              type: 'button',
              class: 'primary',
              id: 'retry',
              on: {
                click: () =>
                  call<{ workflow_execution: Run }>(
                    'POST',
                    `${base}/workflow_executions/${encodeURIComponent(executionId)}/retry`,
                    { workspace: currentWorkspace() },
                  ).then(
                    ({ workflow_execution: again }) =>
                      go(`#/runs/${encodeURIComponent(workflowId)}/${encodeURIComponent(again.id)}`),
                    (error: unknown) => replace(actions, errorBox(error)),
                  ),
              },
            },
            failed ? `Retry from “${failed.worker_name}”` : 'Retry',
          )
        : null;
    // Where each step sits on the run's time line. Stamps have whole seconds, so steps in one
    // second follow each other by their durations (a branch of a fan-out starts with its siblings).
    const now = Date.now();
    const runStart = millis(run.started ?? run.created);
    let cursor = 0;
    const place = new Map<string, { start: number; length: number }>();
    for (const s of steps) {
      const stamped = millis(s.execution.started ?? s.execution.created) - runStart;
      const length =
        s.execution.duration !== null
          ? s.execution.duration * 1000
          : Math.max(0, now - millis(s.execution.started ?? s.execution.created));
      const start = s.execution.parallel_index > 0 ? Math.max(0, stamped) : Math.max(stamped, cursor);
      place.set(s.execution.id, { start, length });
      cursor = Math.max(cursor, start + length);
    }
    const span = Math.max(1, cursor, (run.duration ?? 0) * 1000);
    replace(
      body,
      h('h1', null, run.workflow_name, ' ', badge(run.run_status)),
      h(
        'p',
        { class: 'ids' },
        h('code', null, run.id),
        ` · ${run.trigger} · started ${when(run.started ?? run.created)} · ${seconds(run.duration)} · `,
        link(`#/workflows/${encodeURIComponent(workflowId)}`, 'Workflow'),
        ' · ',
        temporalLink(run),
      ),
      h('p', null, retry, actions),
      section(
        'Steps',
        h(
          'ol',
          { class: 'timeline', id: 'timeline' },
          steps.map((s) => {
            const { start, length } = place.get(s.execution.id)!;
            const bar = h('span', { class: `bar bar-${s.execution.status.toLowerCase()}` });
            // Geometry through the CSSOM (a style attribute would need 'unsafe-inline').
            bar.style.marginLeft = `${Math.min(99, (100 * start) / span)}%`;
            bar.style.width = `${Math.max(1, (100 * length) / span)}%`;
            return h(
              'li',
              { class: s.execution.id === selected ? 'selected' : '' },
              h(
                'button',
                {
                  type: 'button',
                  class: 'step',
                  'data-step': s.execution.id,
                  'aria-pressed': s.execution.id === selected ? 'true' : 'false',
                  on: {
                    click: () => {
                      selected = s.execution.id;
                      void load();
                    },
                  },
                },
                h(
                  'span',
                  { class: 'name' },
                  s.worker_name,
                  s.is_parallel_execution ? ` [${s.execution.parallel_index}]` : '',
                ),
                badge(s.execution.status),
                h('span', { class: 'time' }, seconds(s.execution.duration)),
              ),
              h('span', { class: 'track' }, bar),
            );
          }),
        ),
        detail,
      ),
    );
    if (selected === null && failed) void showStep(failed.execution.id);
    else if (selected !== null) void showStep(selected);
  };
  whenRunChanges((changed) => {
    if (changed === null || changed === executionId) void load();
  });
  await load();
}
