/**
 * Where an API message about a workflow belongs: the step, edge or field it names, so the editor
 * shows it there.
 */
import { EDGE_KINDS, type EdgeKind, targets, type WorkflowDraft } from './draft-model';

/** The part of a step a message is about. */
export type StepField =
  'id' | 'name' | 'type' | 'source' | 'script' | 'inputs' | `input:${string}` | EdgeKind | 'edges';

export type MessageTarget =
  | { kind: 'step'; id: string; field: StepField | null; to?: string }
  | { kind: 'field'; field: string }
  | { kind: 'steps' }
  | { kind: 'general' };

const WORKER_ID = /wrkr_[A-Za-z0-9]+/;

function stepField(rest: string): StepField | null {
  const field = /^\.([a-z_]+)/.exec(rest)?.[1];
  switch (field) {
    case 'id':
    case 'name':
    case 'type':
    case 'next':
    case 'next_true':
    case 'next_false':
      return field;
    case 'template_id':
      return 'source';
    case 'script':
      return 'script';
    case 'script_runtime':
      return 'source';
    case 'script_inputs': {
      const key = /^\.script_inputs\.([^\s.[]+)/.exec(rest)?.[1];
      return key ? `input:${key}` : 'inputs';
    }
    default:
      break;
  }
  if (/needs a template_id or a script|has both template_id and script/.test(rest)) return 'source';
  if (/only a CONDITIONAL has next_true/.test(rest)) return 'edges';
  return null;
}

/**
 * Which step, edge or field an API message concerns. The API names a step by its place
 * (`workers[2].next …`) when the body's shape is wrong, and by its id (`Worker wrkr_… points at an
 * unknown worker wrkr_…`) when the graph is; workflow fields by their names (`trigger_config.cron`).
 */
export function locateMessage(message: string, draft: WorkflowDraft): MessageTarget {
  const byIndex = /^workers\[(\d+)\]/.exec(message);
  if (byIndex) {
    const w = draft.workers[Number(byIndex[1])];
    if (w) return { kind: 'step', id: w.id, field: stepField(message.slice(byIndex[0].length)) };
    return { kind: 'steps' };
  }
  const id = WORKER_ID.exec(message)?.[0];
  const named = id ? draft.workers.filter((w) => w.id === id) : [];
  if (id && named.length > 0) {
    // A message about the step (or an edge of it): which part, from its words.
    const w = named[named.length - 1]!;
    const unknown = /points at an unknown worker (wrkr_[A-Za-z0-9]+)/.exec(message);
    if (unknown) {
      const kind = EDGE_KINDS.find((k) => targets(w, k).includes(unknown[1]!)) ?? 'next';
      return { kind: 'step', id: w.id, field: kind, to: unknown[1]! };
    }
    const input = /script input "([^"]+)"/.exec(message);
    if (input) return { kind: 'step', id: w.id, field: `input:${input[1]!}` };
    if (/unknown script input/.test(message)) return { kind: 'step', id: w.id, field: 'inputs' };
    if (/\(template wtpl_/.test(message)) return { kind: 'step', id: w.id, field: 'inputs' };
    if (/next_true|next_false/.test(message)) {
      const field: EdgeKind =
        targets(w, 'next_true').length !== 1
          ? 'next_true'
          : targets(w, 'next_false').length !== 1
            ? 'next_false'
            : 'next';
      return { kind: 'step', id: w.id, field: /not next\.$/.test(message) ? 'next' : field };
    }
    if (/next worker|cannot have next/.test(message)) return { kind: 'step', id: w.id, field: 'next' };
    if (/used twice/.test(message)) return { kind: 'step', id: w.id, field: 'id' };
    return { kind: 'step', id: w.id, field: null };
  }
  const template = /Unknown worker template (wtpl_[A-Za-z0-9]+)/.exec(message);
  if (template) {
    const w = draft.workers.find((s) => s.template_id === template[1]);
    if (w) return { kind: 'step', id: w.id, field: 'source' };
  }
  if (/^workers\b|\bSTARTER\b|\bENDER\b|at most \d+ workers/.test(message)) return { kind: 'steps' };
  const field = /^([a-z_]+(?:\.[a-z_]+)?)\b/.exec(message)?.[1];
  if (field) {
    for (const known of [
      'trigger_config.cron',
      'trigger_config.timezone',
      'trigger_config.integration_id',
      'trigger_config',
      'trigger_type',
      'trigger_enabled',
      'on_failure',
      'description',
      'name',
      'tags',
    ]) {
      if (field === known || field.startsWith(`${known}.`)) return { kind: 'field', field: known };
    }
    if (field.startsWith('trigger_config')) return { kind: 'field', field: 'trigger_config' };
  }
  if (/^on_failure|handler workflow/.test(message)) return { kind: 'field', field: 'on_failure' };
  return { kind: 'general' };
}
