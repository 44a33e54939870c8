import { type TObject, type TProperties, type TSchema, Type } from '@sinclair/typebox';
import type { ListRequest } from '../../engine/lists/list-query';
import { NextPageToken } from './common';

/** The list parameters every list takes; `workspace` too for workspace-bound kinds. */
export function listQuerystring(workspaceBound: boolean) {
  return Type.Object({
    query: Type.Optional(
      Type.String({
        description:
          'An entity id; `#tag1 tag2` (every tag); `&<link_uid>`; a JSON object {filters, order, projection, distinct_on, page_size}; or a name prefix. URL-encode it.',
      }),
    ),
    page_size: Type.Optional(Type.String({ description: '1 to 100, default 10.' })),
    page_token: Type.Optional(Type.String({ description: 'The next_page_token of the previous response.' })),
    start: Type.Optional(Type.String({ description: 'YYYYMMDD or "YYYYMMDD HH:MM:SS", UTC, inclusive.' })),
    end: Type.Optional(Type.String({ description: 'YYYYMMDD or "YYYYMMDD HH:MM:SS", UTC, inclusive.' })),
    date_time: Type.Optional(Type.String({ description: 'Sets start and end to the same value.' })),
    period_field: Type.Optional(
      Type.String({ description: '`date` (default where entities have one) or `updated_on`.' }),
    ),
    ...(workspaceBound ? { workspace: Type.Optional(Type.String({ default: 'main' })) } : {}),
  });
}

export function listRequest(query: Record<string, string | undefined>): ListRequest & { workspace?: string } {
  return {
    query: query.query ?? null,
    page_size: query.page_size ?? null,
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

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** Python clients send booleans as `True`/`False`; JSON clients as true/false. */
export const LooseBoolean = Type.Union([
  Type.Boolean(),
  Type.String({ pattern: '^(true|false|True|False|TRUE|FALSE|1|0)$' }),
]);

export function looseBoolean(value: boolean | string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value === 'boolean') return value;
  return value.toLowerCase() === 'true' || value === '1';
}
