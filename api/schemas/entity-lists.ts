import { type TObject, type TProperties, Type } from '@sinclair/typebox';
import type { ListRequest } from '../../engine/store/list-query';
import { NextPageToken, PageSize } from './common';
import { PeriodBound, StorableText, WorkspaceParam } from '../../engine/store/field-schemas';

/**
 * The list parameters every list takes; `workspace` too for workspace-bound kinds, and a period on
 * `date` only for kinds with a date.
 */
export function listQuerystring(workspaceBound: boolean, hasDate: boolean) {
  return Type.Object({
    query: Type.Optional(
      StorableText({
        maxLength: 10_000,
        description:
          'An entity id; `#tag1 tag2` (every tag); `&<link_uid>`; a JSON object {filters, order, projection, distinct_on, page_size}; or a name prefix. URL-encode it.',
      }),
    ),
    page_size: Type.Optional(PageSize),
    page_token: Type.Optional(Type.String({ description: 'The next_page_token of the previous response.' })),
    start: Type.Optional(PeriodBound),
    end: Type.Optional(PeriodBound),
    date_time: Type.Optional(PeriodBound),
    // A kind without a date is offered updated_on only (the engine words the refusal the same).
    period_field: Type.Optional(
      hasDate
        ? Type.Union([Type.Literal('date'), Type.Literal('updated_on'), Type.Literal('')], {
            description: '`date` (the default) or `updated_on`.',
          })
        : Type.Union([Type.Literal('updated_on'), Type.Literal('')], {
            'x-message': 'These entities have no date: use period_field=updated_on.',
            description: '`updated_on` (the default: these entities have no date).',
          }),
    ),
    ...(workspaceBound ? { workspace: WorkspaceParam } : {}),
  });
}

export function listRequest(query: {
  query?: string;
  page_size?: number | string;
  page_token?: string;
  start?: string;
  end?: string;
  date_time?: string;
  period_field?: string;
  workspace?: string;
}): ListRequest & { workspace?: string } {
  return {
    query: query.query ?? null,
    page_size: query.page_size === undefined ? null : String(query.page_size),
    page_token: query.page_token ?? null,
    start: query.start ?? null,
    end: query.end ?? null,
    date_time: query.date_time ?? null,
    period_field: query.period_field ?? null,
    workspace: query.workspace,
  };
}

/** A list response: items may be projected, so every field of the item schema is optional there. */
export function listReply<T extends TProperties>(plural: string, item: TObject<T>) {
  return Type.Object({ [plural]: Type.Array(Type.Partial(item)), next_page_token: NextPageToken });
}

export { Nullable } from '../../engine/store/field-schemas';

export { LooseBoolean } from '../../engine/store/field-schemas';

export function looseBoolean(value: boolean | string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value === 'boolean') return value;
  return value.toLowerCase() === 'true' || value === '1';
}
