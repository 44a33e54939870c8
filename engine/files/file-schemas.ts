/**
 * A file's JSON request bodies (POST /files, PUT /files/{id} with application/json), declared once:
 * the routes validate with them (api/routes/files.ts), and so does every caller without a route (an
 * everysk-lib File entity, a worker script's sdk.createFile/updateFile) through `validateFileBody`,
 * so a body is refused with the API's own message whichever way it came. From then on the body is
 * typed, and file-store.ts does not check its shape again.
 */
import { type Static, Type } from '@sinclair/typebox';
import { bodyValidator } from '../platform/schema-validator';
import { DateYmd, LooseBoolean, Name, StorableText, Tags, WorkspaceParam } from '../store/field-schemas';

export type FileOperation = 'create' | 'update';

/** The `content_type` values a file may be created with (the interface's list). */
export const CREATE_CONTENT_TYPES: readonly string[] = [
  'image/svg+xml',
  'image/bmp',
  'image/jpeg',
  'image/png',
  'image/gif',
  'application/xml',
  'text/xml',
  'application/javascript',
  'application/json',
  'text/plain',
  'text/csv',
  'application/csv',
  'text/x-comma-separated-values',
  'text/comma-separated-values',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.ms-excel',
  'application/pdf',
  'application/zip',
  'application/x-zip-compressed',
  'application/octet-stream',
];
/** The update list is the create list less `application/x-zip-compressed`, as the interface says. */
export const UPDATE_CONTENT_TYPES: readonly string[] = CREATE_CONTENT_TYPES.filter(
  (type) => type !== 'application/x-zip-compressed',
);

/**
 * The content-type rule in words (`content_type must be …`): the JSON schema's `x-rule`, and the
 * multipart form's own check (file-uploads.ts), so both say it alike.
 */
export const contentTypeRule = (operation: FileOperation, types: readonly string[]) =>
  `one of the types allowed on ${operation}: ${types.join(', ')}`;

const contentTypeList = (types: readonly string[]) => types.map((type) => `\`${type}\``).join(', ');

// Left to the engine: strict Base64 (canonical padding), which it checks in slices as the body may be
// ~100 MB; `contentEncoding` documents it without a whole-body regex here.
const jsonBody = (operation: FileOperation, types: readonly string[]) =>
  Type.Object({
    name: Name,
    description: StorableText({
      maxLength: 500,
      description: 'REQUIRED (may be empty). Up to 500 characters; #hashtags become tags.',
    }),
    tags: Type.Optional(Tags),
    data: Type.String({
      contentEncoding: 'base64',
      description: 'The content in strict Base64 (standard alphabet, padded).',
    }),
    content_type: Type.Union(
      types.map((type) => Type.Literal(type)),
      {
        'x-rule': contentTypeRule(operation, types),
        description: `Allowed on ${operation}: ${contentTypeList(types)}.`,
      },
    ),
    date: Type.Optional(
      Type.Union([DateYmd, Type.Null()], {
        description: operation === 'create' ? 'YYYYMMDD, default today.' : 'YYYYMMDD; absent keeps it.',
      }),
    ),
    with_data: Type.Optional(LooseBoolean),
    workspace: WorkspaceParam,
    link_uid: Type.Optional(
      Type.Union([StorableText({ maxLength: 200 }), Type.Null()], {
        'x-rule': 'a string of at most 200 characters',
        description: 'Default null.',
      }),
    ),
  });

export const FileCreateBody = jsonBody('create', CREATE_CONTENT_TYPES);
export const FileUpdateBody = jsonBody('update', UPDATE_CONTENT_TYPES);
export type FileCreateBody = Static<typeof FileCreateBody>;
export type FileUpdateBody = Static<typeof FileUpdateBody>;

/** Each operation's body schema: the routes' `application/json` body, and `validateFileBody`'s. */
export const FILE_BODIES = { create: FileCreateBody, update: FileUpdateBody } as const;
export type FileBodyOf<K extends FileOperation> = Static<(typeof FILE_BODIES)[K]>;

// The bodies refer to no named schema (their text fields are StorableText, not StorableJson).
const VALIDATORS = {
  create: bodyValidator(FileCreateBody),
  update: bodyValidator(FileUpdateBody),
} satisfies Record<FileOperation, (value: unknown) => void>;

/**
 * A file body from a caller without a route, validated with the route's schema by the API's
 * validator (compiled once, on first use): refused with the API's own message, and typed from then
 * on, as the route's body is.
 */
export function validateFileBody<K extends FileOperation>(operation: K, value: unknown): FileBodyOf<K> {
  VALIDATORS[operation](value);
  return value as FileBodyOf<K>;
}
