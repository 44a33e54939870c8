/**
 * The workflow editor's settings, drawn from the draft: the name and description above the steps;
 * the trigger (a schedule with its next firings, or a webhook), whether it is enabled, and on_failure
 * below them. Each change goes to the page as a new draft; the API's message about a field shows in
 * its hint.
 */
import { call, query } from '../api';
import { type Child, h, replace, when } from '../dom';
import type { Workflow } from '../resources';
import { nextFirings } from './cron-preview';
import { section } from './elements';
import { field } from './form-fields';
import type { OnFailure } from './on-failure';
import { scheduleFirings, webhookAddress } from './trigger-details';
import { setField, setName, type WorkflowDraft } from './workflow-draft';

const TRIGGERS = ['MANUAL', 'API', 'TIME_BASED', 'FILE_RECEIVED'];

/** Where the API's message about a field shows, and the control it marks. */
export interface FieldHint {
  hint: HTMLElement;
  input: HTMLElement | null;
}

export interface WorkflowSettings {
  /** The name and description, shown above the steps. */
  names: HTMLElement;
  /** The trigger and on_failure, shown below them. */
  settings: HTMLElement;
  /** The hints by field (`name`, `trigger_config.cron`, `on_failure`…), as last drawn. */
  hints: ReadonlyMap<string, FieldHint>;
  /** Draws both again from the draft. */
  draw(): void;
}

export function workflowSettings(ctx: {
  draft: () => WorkflowDraft;
  /** A new draft; `key` merges typing into one undo step. */
  commit: (next: WorkflowDraft, options?: { key?: string }) => void;
  /** The workflow as read; null for a new one. */
  existing: Workflow | null;
  workspace: string;
}): WorkflowSettings {
  const { commit, existing, workspace } = ctx;
  const namesHolder = h('div');
  const settingsHolder = h('div');
  const fieldHints = new Map<string, FieldHint>();
  const fieldHint = (key: string, input: HTMLElement | null) => {
    const hint = h('div', {
      class: 'field-error',
      'data-problem': key,
      id: `problem-${key.replace(/\W/g, '-')}`,
    });
    fieldHints.set(key, { hint, input });
    return hint;
  };
  /** Kept per trigger type while the page is open, so trying another type and back loses nothing. */
  const configs = new Map<string, Record<string, unknown>>();

  function draw(): void {
    fieldHints.clear();
    const name = h('input', {
      id: 'wf-name',
      required: true,
      value: ctx.draft().name ?? '',
      autocomplete: 'off',
    });
    name.addEventListener('input', () =>
      commit(setName(ctx.draft(), { name: name.value }), { key: 'wf-name' }),
    );
    const description = h('input', {
      id: 'wf-description',
      value: ctx.draft().description ?? '',
      autocomplete: 'off',
    });
    description.addEventListener('input', () =>
      commit(setName(ctx.draft(), { description: description.value === '' ? null : description.value }), {
        key: 'wf-description',
      }),
    );
    const type = ctx.draft().trigger_type ?? 'MANUAL';
    const triggerType = h(
      'select',
      { id: 'wf-trigger' },
      TRIGGERS.map((t) => h('option', { value: t, selected: type === t }, t)),
      TRIGGERS.includes(type) ? null : h('option', { value: type, selected: true }, type),
    );
    triggerType.addEventListener('change', () => {
      configs.set(type, ctx.draft().trigger_config ?? {});
      const next = triggerType.value;
      const config =
        configs.get(next) ??
        (next === 'TIME_BASED'
          ? { cron: '', timezone: 'UTC' }
          : next === 'FILE_RECEIVED'
            ? { integration_id: '' }
            : {});
      commit(setField(setField(ctx.draft(), 'trigger_type', next), 'trigger_config', config));
    });
    const config = ctx.draft().trigger_config ?? {};
    const setConfig = (key: string, value: string) => {
      const next: Record<string, unknown> = { ...(ctx.draft().trigger_config ?? {}) };
      if (value === '' && key === 'timezone') delete next[key];
      else next[key] = value;
      commit(setField(ctx.draft(), 'trigger_config', next), { key: `trigger:${key}` });
    };
    const details: Child[] = [];
    if (type === 'TIME_BASED') {
      const cron = h('input', {
        id: 'wf-cron',
        placeholder: '0 7 * * 1-5',
        spellcheck: 'false',
        autocomplete: 'off',
        value: typeof config.cron === 'string' ? config.cron : '',
      });
      const zones =
        (Intl as unknown as { supportedValuesOf?: (key: string) => string[] }).supportedValuesOf?.(
          'timeZone',
        ) ?? [];
      const timezone = h('input', {
        id: 'wf-timezone',
        placeholder: 'UTC',
        list: 'time-zones',
        autocomplete: 'off',
        value: typeof config.timezone === 'string' ? config.timezone : '',
      });
      const firings = h('div', { 'aria-live': 'polite' });
      const saved = existing?.trigger_type === 'TIME_BASED' ? existing.trigger_config : null;
      /** The scheduler's own list while the schedule is the saved one; a preview computed here otherwise. */
      const drawFirings = () => {
        const now = ctx.draft().trigger_config ?? {};
        const same =
          saved &&
          saved.cron === now.cron &&
          (saved.timezone ?? 'UTC') === ((now.timezone as string) || 'UTC');
        if (existing && same) {
          replace(firings, scheduleFirings(existing.id, workspace, 'Next firings, as scheduled'));
          return;
        }
        const next = nextFirings(String(now.cron ?? ''), String(now.timezone ?? 'UTC'), Date.now());
        replace(
          firings,
          h('h3', null, 'Next firings (a preview computed here; saved, the scheduler’s own list shows)'),
          typeof next === 'string'
            ? h('p', { class: 'note', id: 'firings-preview-note' }, next)
            : h(
                'ol',
                { id: 'next-firings-preview' },
                next.map((at) => h('li', null, when(new Date(at).toISOString()))),
              ),
        );
      };
      cron.addEventListener('input', () => {
        setConfig('cron', cron.value.trim());
        drawFirings();
      });
      timezone.addEventListener('input', () => {
        setConfig('timezone', timezone.value.trim());
        drawFirings();
      });
      drawFirings();
      details.push(
        field('Schedule (cron: minute hour day month weekday)', cron, fieldHint('trigger_config.cron', cron)),
        field('Time zone', timezone, fieldHint('trigger_config.timezone', timezone)),
        h(
          'datalist',
          { id: 'time-zones' },
          zones.map((zone) => h('option', { value: zone })),
        ),
        firings,
      );
    } else if (type === 'FILE_RECEIVED') {
      const current = typeof config.integration_id === 'string' ? config.integration_id : '';
      const integration = h(
        'select',
        { id: 'wf-integration' },
        h('option', { value: current }, current ? `${current} (loading…)` : 'Loading…'),
      );
      integration.addEventListener('change', () => {
        setConfig('integration_id', integration.value);
        replace(address, integration.value ? webhookAddress(integration.value) : null);
      });
      const address = h('div', null, current ? webhookAddress(current) : null);
      call<{ integrations: Array<{ id: string; name: string; type: string }> }>(
        'GET',
        `/v2/integrations${query({ page_size: 100 })}`,
      ).then(
        ({ integrations }) => {
          const hooks = integrations.filter((i) => i.type === 'WEBHOOK');
          replace(
            integration,
            current && !hooks.some((i) => i.id === current)
              ? h('option', { value: current, selected: true }, `${current} (not found)`)
              : null,
            !current
              ? h(
                  'option',
                  { value: '', selected: true },
                  hooks.length ? '(choose a webhook)' : '(no webhook integration yet)',
                )
              : null,
            hooks.map((i) => h('option', { value: i.id, selected: i.id === current }, i.name)),
          );
        },
        () =>
          replace(
            integration,
            h('option', { value: current }, current || '(integrations could not be read)'),
          ),
      );
      details.push(
        field('Webhook integration', integration, fieldHint('trigger_config.integration_id', integration)),
        h(
          'p',
          { class: 'note' },
          'A JSON object posted to the webhook starts a run; its STARTER receives it as body. ',
          h('a', { href: '#/integrations/new' }, 'New webhook integration'),
        ),
        address,
      );
    } else {
      details.push(
        h(
          'p',
          { class: 'note' },
          type === 'API'
            ? 'Runs start through the API (POST /v2/workflows/{id}/run) or a client.'
            : 'Runs start by hand: the workflow page’s Run form, or the API.',
        ),
      );
    }
    const enabled = h('input', {
      id: 'wf-enabled',
      type: 'checkbox',
      checked: ctx.draft().trigger_enabled === true,
    });
    enabled.addEventListener('change', () =>
      commit(setField(ctx.draft(), 'trigger_enabled', enabled.checked)),
    );
    const onFailureHolder = h('div', null, h('p', { class: 'note' }, 'Loading…'));
    void import('./on-failure').then(({ onFailureField }) => {
      const onFailure = onFailureField({
        current: (ctx.draft().on_failure ?? null) as OnFailure | null,
        workflowId: existing?.id ?? null,
        workspace,
        onChange: () => commit(setField(ctx.draft(), 'on_failure', onFailure.read()), { key: 'on_failure' }),
      });
      fieldHints.set('on_failure', { hint: onFailure.hint, input: null });
      replace(onFailureHolder, onFailure.element);
    });
    replace(
      namesHolder,
      section(
        'Workflow',
        h(
          'div',
          { class: 'field-grid' },
          field('Name', name, fieldHint('name', name)),
          field('Description', description, fieldHint('description', description)),
        ),
      ),
    );
    replace(
      settingsHolder,
      section(
        'Trigger',
        field('Trigger type', triggerType, fieldHint('trigger_type', triggerType)),
        details,
        h('div', { class: 'field check' }, enabled, h('label', { for: 'wf-enabled' }, 'Trigger enabled')),
        fieldHint('trigger_enabled', enabled),
        fieldHint('trigger_config', null),
      ),
      section('On failure', onFailureHolder),
    );
  }

  return { names: namesHolder, settings: settingsHolder, hints: fieldHints, draw };
}
