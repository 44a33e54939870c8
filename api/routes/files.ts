import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import multipart, { type Multipart } from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Database } from '../../engine/platform/database';
import type { LagTolerantReads } from '../../engine/platform/read-replica';
import { type EntityRecord, viewEntity } from '../../engine/store/entity-store';
import { listRoute } from '../http/entity-routes';
import { DomainError, InvalidInput, PayloadTooLarge } from '../../engine/platform/errors';
import {
  createFile,
  deleteFile,
  DOWNLOAD_PART_SIZE_DEFAULT,
  DOWNLOAD_PART_SIZE_MAX,
  DOWNLOAD_PART_SIZE_MIN,
  FILE,
  fileBase64,
  totalPartsOf,
  updateFile,
  viewFilePart,
} from '../../engine/files/file-store';
import { FileCreateBody, FileUpdateBody } from '../../engine/files/file-schemas';
import {
  type FormItem,
  type PartOutcome,
  receivePart,
  type UploadTarget,
} from '../../engine/files/file-uploads';
import { IdParams, NAME_MAX, WorkspaceParam } from '../../engine/store/field-schemas';
import { isPlainObject } from '../../engine/platform/plain-object';
import { errorResponses, Timestamp } from '../schemas/common';
import { listQuerystring, looseBoolean, Nullable } from '../schemas/entity-lists';

const fileProperties = {
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  content_type: Type.String(),
  date: Nullable(Type.String({ description: 'YYYYMMDD.' })),
  data: Nullable(
    Type.String({
      description:
        'The content in Base64. Null when a multipart upload returns the file (unless with_data), when ' +
        'with_data is false, and when the file is too large to return inline (see data_omitted).',
    }),
  ),
  data_omitted: Type.Optional(
    Type.String({
      description:
        'Extension. Present when data is null because the file is larger than a response the service ' +
        'returns inline (3/4 of the maximum payload size): it says how to download the file in parts.',
    }),
  ),
  url: Type.String({ description: 'Relative address /file/<uid>: the raw bytes, with credentials.' }),
  workspace: Type.String(),
  link_uid: Nullable(Type.String()),
  size: Type.Integer({ description: 'Extension. Size of the content in bytes.' }),
  created: Timestamp,
  updated: Timestamp,
  version: Type.String(),
};
const File = Type.Object(fileProperties, { $id: 'File', title: 'File' });
// Lists never carry the content.
const FileListItem = Type.Object(
  (({ data: _data, data_omitted: _omitted, ...rest }) => rest)(fileProperties),
  { title: 'FileListItem' },
);

const workspaceField = WorkspaceParam;

/**
 * The form of one part of a multipart upload, for the OpenAPI document. The engine reads the fields
 * as they stream in (the chunk is never buffered) and checks them with messages naming the field;
 * request validation sees an empty body here, so every property is optional to it, and the fields
 * every part needs are required in the document only (`x-document-required`, api/http/openapi.ts).
 */
const UploadForm = Type.Object(
  {
    upload_id: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_-]{1,128}$',
        description: 'REQUIRED. Letters, digits, _ and -; up to 128 characters.',
      }),
    ),
    part_number: Type.Optional(
      Type.String({
        pattern: '^[1-9][0-9]{0,2}$',
        description: 'REQUIRED. 1 to total_parts; parts go in order.',
      }),
    ),
    total_parts: Type.Optional(
      Type.String({
        pattern: '^([1-9][0-9]?|[12][0-9]{2}|300)$',
        description: 'REQUIRED. At most 300; the same on every part.',
      }),
    ),
    chunk: Type.Optional(
      Type.String({
        format: 'binary',
        description:
          'REQUIRED. Raw bytes of the part: at least 1048576 except on the last part, at most the maximum ' +
          'payload size. Send the other fields before it: order and upload state are then checked before ' +
          'the bytes are read.',
      }),
    ),
    name: Type.Optional(Type.String({ description: 'REQUIRED on part 1 of a POST.' })),
    description: Type.Optional(Type.String({ description: 'Default empty. Read from part 1.' })),
    tags: Type.Optional(Type.String({ description: 'Repeat the field for several tags. Read from part 1.' })),
    content_type: Type.Optional(
      Type.String({
        description:
          'Default application/octet-stream on a POST; a PUT keeps the current type unless given. Read from part 1.',
      }),
    ),
    date: Type.Optional(Type.String({ description: 'YYYYMMDD, default today. Read from part 1.' })),
    workspace: Type.Optional(Type.String({ description: 'Default main. Read from part 1.' })),
    link_uid: Type.Optional(Type.String({ description: 'Default null. Read from part 1.' })),
    with_data: Type.Optional(
      Type.String({
        description: 'Default false. Read from the last part: true returns the content in data.',
      }),
    ),
  },
  { title: 'FileUploadPart', 'x-document-required': ['upload_id', 'part_number', 'total_parts', 'chunk'] },
);

const StagedReply = Type.Object(
  {
    status: Type.Literal('staged'),
    parts_received: Type.Integer(),
    total_parts: Type.Integer(),
    upload_id: Type.String(),
  },
  { title: 'FileUploadStaged', description: 'A part before the last was received.' },
);
const DoneReply = Type.Object(
  { status: Type.Literal('done'), file: Type.Object({ id: Type.String() }) },
  { title: 'FileUploadDone', description: 'The upload had already made its file: nothing changed.' },
);
const FileReply = Type.Object({ file: Type.Ref('File') });
const PartialReply = Type.Object(
  {
    status: Type.Literal('partial'),
    id: Type.String(),
    part_number: Type.Integer(),
    total_parts: Type.Integer(),
    part_size: Type.Integer(),
    size: Type.Integer({ description: 'Size of the whole file in bytes.' }),
    chunk: Type.String({ description: 'This part of the content, in Base64.' }),
  },
  { title: 'FilePart' },
);

const IdParam = IdParams('file');
const WorkspaceQuery = Type.Object({ workspace: workspaceField });
const RetrieveQuery = Type.Object({
  workspace: workspaceField,
  part_number: Type.Optional(
    Type.Integer({ description: 'Download in parts: 1 to total_parts. Without it, the whole file.' }),
  ),
  part_size: Type.Optional(
    Type.Integer({
      minimum: DOWNLOAD_PART_SIZE_MIN,
      maximum: DOWNLOAD_PART_SIZE_MAX,
      default: DOWNLOAD_PART_SIZE_DEFAULT,
      description: `Bytes per part: ${DOWNLOAD_PART_SIZE_MIN} to ${DOWNLOAD_PART_SIZE_MAX}, default ${DOWNLOAD_PART_SIZE_DEFAULT}.`,
    }),
  ),
});
const tags = ['Files'];
const config = { auditEntity: 'File' } as const;
/** Routes that take a file's bytes draw on the bounded upload budget (api/http/load-shedding.ts). */
const uploadConfig = { ...config, upload: true } as const;
/** One form field per name the upload reads, with room for repeated tags; anything beyond is refused. */
const FORM_FIELDS_MAX = 48;

// ---------------------------------------------------------------------------------------------
// Responses that carry content: JSON written as the bytes stream out of the database.

/**
 * Sends JSON whose last property, `field`, holds `bytes` in Base64, without ever holding the
 * content (up to 300 MB, 400 MB as Base64) in memory: the JSON text around the Base64 is fixed, so
 * it is written around the stream, and the exact Content-Length is known up front. `head` is a
 * view the engine built field by field, so nothing undeclared leaks; `wrapper` names the key the
 * object sits under, if any (`file`).
 */
function sendJsonWithBase64(
  reply: FastifyReply,
  wrapper: string | null,
  head: Record<string, unknown>,
  field: string,
  base64: AsyncIterable<string>,
  byteLength: number,
): FastifyReply {
  const rest = Object.fromEntries(Object.entries(head).filter(([key]) => key !== field));
  const headJson = JSON.stringify({ ...rest, [field]: '' });
  // The object ends with `"<field>":""}`: the Base64 goes between the two quotes.
  const before = (wrapper === null ? '' : `{${JSON.stringify(wrapper)}:`) + headJson.slice(0, -2);
  const after = '"}' + (wrapper === null ? '' : '}');
  const length = Buffer.byteLength(before) + 4 * Math.ceil(byteLength / 3) + Buffer.byteLength(after);
  async function* body() {
    yield before;
    yield* base64;
    yield after;
  }
  // Text pieces go to the socket as they are (no Buffer copy of each megabyte of Base64).
  return reply
    .type('application/json; charset=utf-8')
    .header('content-length', length)
    .send(Readable.from(body()));
}

function omittedNote(id: string, size: number): string {
  const parts = totalPartsOf(size, DOWNLOAD_PART_SIZE_DEFAULT);
  return (
    `The file has ${size} bytes, more than is returned inline: download it in parts with ` +
    `GET /files/${id}?part_number=1 to ${parts} (part_size ${DOWNLOAD_PART_SIZE_DEFAULT}), or its raw bytes from its url.`
  );
}

// ---------------------------------------------------------------------------------------------
// Multipart forms, read as they stream.

type FileStream = Extract<Multipart, { type: 'file' }>['file'];

/** Reads what is left of a part's bytes and throws them away. */
async function discard(file: FileStream): Promise<void> {
  if (file.readableEnded || file.destroyed) return;
  file.resume();
  await finished(file).catch(() => undefined);
}

/**
 * The bytes of the `chunk` field. The stream is not destroyed when the reader stops early (a
 * refused part): the rest of the body must still be read, so the client, which sends the whole
 * request before it reads the answer, receives the answer instead of a broken connection.
 */
async function* partBytes(file: FileStream, maxPayloadBytes: number): AsyncGenerator<Buffer> {
  for await (const piece of file.iterator({ destroyOnReturn: false })) yield piece as Buffer;
  if (file.truncated) {
    throw new PayloadTooLarge(`A part must fit the maximum payload size of ${maxPayloadBytes} bytes.`);
  }
}

/** @fastify/multipart and busboy errors as the `{code, message}` a client can act on. */
function formError(error: unknown, maxPayloadBytes: number): Error {
  if (error instanceof DomainError) return error;
  const { code, statusCode, message } = error as { code?: string; statusCode?: number; message?: string };
  switch (code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return new PayloadTooLarge(`A part must fit the maximum payload size of ${maxPayloadBytes} bytes.`);
    case 'FST_FILES_LIMIT':
      return new InvalidInput('A part carries one file field, chunk.');
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return new InvalidInput(`A part carries at most ${FORM_FIELDS_MAX} form fields.`);
    case 'FST_PROTO_VIOLATION':
      return new InvalidInput('A form field has a reserved name.');
    case 'FST_MP_PREMATURE_CLOSE':
      return new InvalidInput('The request ended before the form did.');
  }
  // Request-level errors (an invalid gzip body, say) already carry their status and message.
  if (typeof statusCode === 'number' && statusCode < 500) return error as Error;
  // Everything else comes from busboy parsing the body: "Unexpected end of form", and so on.
  return new InvalidInput(`Malformed multipart/form-data body: ${message ?? 'unreadable'}.`);
}

/** Inflated bodies of gzip-encoded requests, seen in preParsing (see `formOf`). */
const inflatedBodies = new WeakMap<FastifyRequest, NodeJS.ReadableStream>();

/**
 * The form of a multipart request as engine `FormItem`s, in arrival order. Whatever the engine
 * leaves unread (a refused part, an error half-way) is read and discarded when it stops, so the
 * reply always reaches the client.
 */
async function* formOf(request: FastifyRequest, maxPayloadBytes: number): AsyncGenerator<FormItem> {
  // @fastify/multipart reads `request.raw`; a gzip body must be read inflated, so it is handed
  // the inflated stream of the request-encoding hook in place of `raw` (with the same headers).
  const inflated = inflatedBodies.get(request);
  const source = inflated
    ? Object.create(request, { raw: { value: Object.assign(inflated, { headers: request.raw.headers }) } })
    : request;
  const parts = (source as FastifyRequest).parts();
  let current: FileStream | null = null;
  let ended = false;
  const next = async () => {
    try {
      return await parts.next();
    } catch (error) {
      throw formError(error, maxPayloadBytes);
    }
  };
  try {
    for (let step = await next(); !step.done; step = await next()) {
      const part = step.value;
      if (part.type === 'field') {
        yield { kind: 'field', name: part.fieldname, value: String(part.value) };
        continue;
      }
      current = part.file;
      yield { kind: 'file', name: part.fieldname, bytes: partBytes(part.file, maxPayloadBytes) };
      await discard(part.file);
      current = null;
    }
    ended = true;
  } finally {
    if (!ended) {
      if (current) await discard(current);
      for (;;) {
        const step = await parts.next().catch(() => ({ done: true as const, value: undefined }));
        if (step.done) break;
        if (step.value.type === 'file') await discard(step.value.file);
      }
    }
  }
}

/**
 * The JSON body, which the route's schema (FileCreateBody, FileUpdateBody) has validated: typed from
 * here on. Fastify validates a body by its media type, and only application/json has a schema besides
 * the form, so a request without a JSON body (none at all, or text/plain) reaches the handler
 * unvalidated: it has no name, and is refused with the words it has always had.
 */
function validatedBody<T>(body: unknown): T {
  if (!isPlainObject(body)) {
    throw new InvalidInput(`name is required: a string of 1 to ${NAME_MAX} characters.`);
  }
  return body as T;
}

// ---------------------------------------------------------------------------------------------

const fileRoutes: FastifyPluginAsyncTypebox<{
  db: Database;
  reads?: LagTolerantReads;
  maxPayloadBytes: number;
  publicUrl: string;
}> = async (app, { db, reads, maxPayloadBytes }) => {
  // Scoped to these routes: no other resource takes forms. One part per request: one file (the
  // chunk, up to the maximum payload size, streamed), and a few small text fields.
  await app.register(multipart, {
    limits: { fileSize: maxPayloadBytes, files: 1, fields: FORM_FIELDS_MAX, fieldSize: 64 * 1024 },
  });
  app.addSchema(File);

  app.addHook('preParsing', async (request, _reply, payload) => {
    if (request.headers['content-encoding'] !== undefined) inflatedBodies.set(request, payload);
    return payload;
  });
  // A form is read by the handler as it streams; validation sees it as an empty body.
  app.addHook('preValidation', async (request) => {
    if (request.isMultipart()) request.body = {};
  });

  /** A file's content is returned inline up to a size whose Base64 fits the maximum payload size. */
  const inlineMaxBytes = Math.floor(maxPayloadBytes / 4) * 3;

  function sendFile(reply: FastifyReply, record: EntityRecord, withData: boolean) {
    const view = FILE.view(record);
    const size = view.size as number;
    if (!withData) return reply.send({ file: { ...view, data: null } });
    if (size > inlineMaxBytes) {
      return reply.send({ file: { ...view, data: null, data_omitted: omittedNote(record.id, size) } });
    }
    return sendJsonWithBase64(reply, 'file', view, 'data', fileBase64(db, record), size);
  }

  async function receive(
    request: FastifyRequest,
    reply: FastifyReply,
    target: UploadTarget,
    workspace?: string,
  ) {
    const outcome: PartOutcome = await receivePart(db, request.actor, {
      target,
      queryWorkspace: workspace,
      form: formOf(request, maxPayloadBytes),
    });
    switch (outcome.status) {
      case 'staged': {
        const { status, parts_received, total_parts, upload_id } = outcome;
        return reply.send({ status, parts_received, total_parts, upload_id });
      }
      case 'done':
        return reply.send({ status: 'done', file: { id: outcome.fileId } });
      case 'completed':
        return sendFile(reply, outcome.record, outcome.withData);
    }
  }

  const uploadBody = (json: typeof FileCreateBody) => ({
    content: {
      'application/json': { schema: json },
      'multipart/form-data': { schema: UploadForm },
    },
  });

  app.post(
    '/files',
    {
      config: uploadConfig,
      schema: {
        tags,
        summary: 'Create a file (JSON with Base64 data, or a multipart upload of up to 300 MB in parts)',
        body: uploadBody(FileCreateBody),
        querystring: WorkspaceQuery,
        response: {
          200: Type.Union([FileReply, StagedReply, DoneReply]),
          ...errorResponses(400, 413),
        },
      },
    },
    async (request, reply) => {
      if (request.isMultipart()) return receive(request, reply, { kind: 'create' }, request.query.workspace);
      const body = validatedBody<FileCreateBody>(request.body);
      const record = await createFile(db, request.actor, {
        ...body,
        workspace: body.workspace ?? request.query.workspace,
      });
      return sendFile(reply, record, looseBoolean(body.with_data, true));
    },
  );

  listRoute(app, db, {
    tags,
    summary: 'List files (without data), most recent first',
    config,
    errors: errorResponses(400),
    kind: FILE,
    path: '/files',
    plural: 'files',
    item: FileListItem,
    querystring: listQuerystring(true, FILE.hasDate),
    reads,
  });

  app.get(
    '/files/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Retrieve a file, or one part of it in Base64 (with part_number)',
        params: IdParam,
        querystring: RetrieveQuery,
        response: { 200: Type.Union([FileReply, PartialReply]), ...errorResponses(400, 404) },
      },
    },
    async (request, reply) => {
      const { workspace, part_number, part_size } = request.query;
      if (part_number === undefined) {
        const record = await viewEntity(db, request.actor, FILE, request.params.id, workspace);
        return sendFile(reply, record, true);
      }
      const part = await viewFilePart(
        db,
        request.actor,
        request.params.id,
        workspace,
        part_number,
        part_size,
      );
      return sendJsonWithBase64(
        reply,
        null,
        {
          status: 'partial',
          id: part.record.id,
          part_number: part.partNumber,
          total_parts: part.totalParts,
          part_size: part.partSize,
          size: part.size,
        },
        'chunk',
        fileBase64(db, part.record, part.start, part.end),
        part.end - part.start,
      );
    },
  );

  app.put(
    '/files/:id',
    {
      config: uploadConfig,
      schema: {
        tags,
        summary: 'Update a file (JSON), or replace its content with a multipart upload',
        params: IdParam,
        body: uploadBody(FileUpdateBody),
        querystring: WorkspaceQuery,
        response: {
          200: Type.Union([FileReply, StagedReply, DoneReply]),
          ...errorResponses(400, 404, 413),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      if (request.isMultipart()) {
        return receive(request, reply, { kind: 'replace', fileId: id }, request.query.workspace);
      }
      const body = validatedBody<FileUpdateBody>(request.body);
      const record = await updateFile(db, request.actor, id, {
        ...body,
        workspace: body.workspace ?? request.query.workspace,
      });
      return sendFile(reply, record, looseBoolean(body.with_data, true));
    },
  );

  app.delete(
    '/files/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a file (its content is freed)',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({
            file: Type.Object({ id: Type.String(), name: Type.String(), deleted: Type.Boolean() }),
          }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => ({
      file: await deleteFile(db, request.actor, request.params.id, request.query.workspace),
    }),
  );
};

export default fileRoutes;
