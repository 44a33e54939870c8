/**
 * The report request bodies, declared once. The API validates `POST /reports` and `PUT /reports/{id}`
 * with them (each route's `body`), and every caller without a route validates with the same schemas,
 * compiled by the API's validator (`validateReportBody`: everysk-lib's Report class, a worker's
 * sdk.createReport), so it is refused with the API's own words. The engine then takes the body typed
 * and checks only what no schema states: see createReport and updateReport in report-store.ts.
 */
import { type Static, Type } from '@sinclair/typebox';
import { bodyValidator } from '../platform/schema-validator';
import {
  DateYmd,
  Description,
  Name,
  StorableJson,
  StorableText,
  StoredJson,
  StoredObject,
  Tags,
  WorkspaceParam,
} from '../store/field-schemas';

// What a schema cannot state stays in the engine: distinct widget ids, and what each drawn widget type needs.
const Widget = StoredObject(
  {
    name: Name,
    // Widget ids become a URL path segment, so they keep to characters that need no escaping.
    id: Type.Optional(
      Type.Union(
        [
          Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$', 'x-rule': '1 to 64 letters, digits, _ or -' }),
          Type.Literal(''),
          Type.Null(),
        ],
        { 'x-rule': '1 to 64 letters, digits, _ or -' },
      ),
    ),
    type: Type.Optional(
      StorableText({ description: 'table, bar, line or text are drawn; others are stored.' }),
    ),
  },
  {
    description:
      'A widget: `name` (REQUIRED) and `id` (generated when missing). ' +
      'The report page draws `type` `table` (`columns`, `rows`), `bar` (`labels` with `values`, or ' +
      '`series: [{name, values}]`), `line` (`x` with `series` or `values`; null leaves a gap) and `text` ' +
      '(`text`); optional `description`, `format` (number, percent, currency, plain), `currency`, ' +
      '`decimals` (0-8). Widgets of these types are checked; other types are stored as sent.',
  },
);
const reportFields = {
  name: Name,
  description: Type.Optional(Type.Union([Description, Type.Null()])),
  tags: Type.Optional(Tags),
  date: Type.Optional(
    Type.Union([DateYmd, Type.Null()], { description: 'YYYYMMDD; default the creation day.' }),
  ),
  data: Type.Optional(Type.Array(StoredJson(), { description: 'The report content. Default [].' })),
  widgets: Type.Optional(Type.Array(Widget, { description: 'Default [].' })),
  authorization: Type.Optional(
    Type.String({
      pattern: '^([Pp][Rr][Ii][Vv][Aa][Tt][Ee]|[Pp][Uu][Bb][Ll][Ii][Cc])$',
      'x-rule': 'PRIVATE or PUBLIC',
      description: 'PRIVATE (default) or PUBLIC, any letter case.',
    }),
  ),
  link_uid: Type.Optional(
    Type.Union([StorableText({ maxLength: 200 }), Type.Null()], {
      'x-rule': 'a string of at most 200 characters',
      description: 'Caller-chosen identifier linking related entities.',
    }),
  ),
  workspace: WorkspaceParam,
};
export const ReportCreate = Type.Object(reportFields, { description: 'name is required.' });
export const ReportUpdate = Type.Partial(Type.Object(reportFields), { description: 'Every field optional.' });

export type ReportCreateBody = Static<typeof ReportCreate>;
export type ReportUpdateBody = Static<typeof ReportUpdate>;
/** A widget as the request gives it; its other keys are kept as sent (StorableJson). */
export type WidgetBody = Static<typeof Widget> & Record<string, unknown>;

const VALIDATORS = {
  create: bodyValidator(ReportCreate, [StorableJson]),
  update: bodyValidator(ReportUpdate, [StorableJson]),
};

/**
 * A report body from a caller without a route, validated with the route's schema by the API's
 * validator, so it is refused with the API's own message; typed from then on.
 */
export function validateReportBody(operation: 'create', value: unknown): ReportCreateBody;
export function validateReportBody(operation: 'update', value: unknown): ReportUpdateBody;
export function validateReportBody(
  operation: 'create' | 'update',
  value: unknown,
): ReportCreateBody | ReportUpdateBody {
  VALIDATORS[operation](value);
  return value as ReportCreateBody | ReportUpdateBody;
}
