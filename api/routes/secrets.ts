import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/platform/database';
import type { SecretsKeyring } from '../../engine/secrets/master-key';
import {
  createSecret,
  deleteSecret,
  getSecret,
  listSecrets,
  SECRET_ID_PREFIX,
  SECRET_NAME_PATTERN,
  SECRET_VALUE_MAX_BYTES,
  SECRETS_ENTITY_TYPE,
  updateSecret,
} from '../../engine/secrets/secret-store';
import { errorResponses, NextPageToken, PageSize, PageToken, Timestamp } from '../schemas/common';
import { Description, EntityId, StorableText, WorkspaceParam } from '../../engine/store/field-schemas';

const EXTENSION =
  'Extension: secrets hold the tokens and passwords that HTTP and SMTP integrations (`{{secret:NAME}}` in ' +
  'their headers, `password_secret`) and scripts (`sdk.secret(name)`) use. A value is encrypted at rest ' +
  '(AES-256-GCM under a data key per secret, wrapped by the installation master key) and is never ' +
  'answered by any endpoint, not even masked.';

const Secret = Type.Object(
  {
    id: Type.String({ description: `Prefix \`${SECRET_ID_PREFIX}\`.` }),
    name: Type.String({
      description: 'Unique per account and workspace; what integrations and scripts name.',
    }),
    workspace: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    version: Type.String({ description: 'Raised by each new value (1 for the first).' }),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'Secret', title: 'Secret', description: 'A stored secret, without its value.' },
);

const SecretName = Type.String({
  pattern: SECRET_NAME_PATTERN,
  'x-rule': 'a letter or _ followed by at most 63 letters, digits or _',
  description: 'A letter or `_`, then at most 63 letters, digits or `_`.',
});

const SecretValue = Type.String({
  minLength: 1,
  maxLength: SECRET_VALUE_MAX_BYTES,
  pattern: '^[^\\u0000]*$',
  'x-rule': `a non-empty string of at most ${SECRET_VALUE_MAX_BYTES} bytes without NUL`,
  description: `The secret itself (at most ${SECRET_VALUE_MAX_BYTES} bytes). Write-only: never answered.`,
});

const Ignored = Type.Optional(Type.Unknown({ description: 'Accepted and ignored.' }));

const CreateBody = Type.Object(
  {
    name: SecretName,
    value: SecretValue,
    description: Type.Optional(Type.Union([Description, Type.Null()])),
    workspace: WorkspaceParam,
  },
  { description: 'name and value required.' },
);

const UpdateBody = Type.Object(
  {
    value: Type.Optional(SecretValue),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
    name: Type.Optional(
      Type.Union([SecretName, Type.Null()], {
        description: 'Accepted when it is the current name (a secret cannot be renamed).',
      }),
    ),
    workspace: WorkspaceParam,
    id: Ignored,
  },
  { description: 'Every field optional: a new value raises version; a description alone does not.' },
);

const IdParams = Type.Object({ id: EntityId(SECRET_ID_PREFIX) });
const WorkspaceQuery = Type.Object({ workspace: WorkspaceParam });
const SecretReply = Type.Object({ secret: Type.Ref('Secret') });
const tags = ['Secrets'];

const secretRoutes: FastifyPluginAsyncTypebox<{ db: Database; keyring: SecretsKeyring }> = async (
  app,
  { db, keyring },
) => {
  app.addSchema(Secret);
  const config = { auditEntity: SECRETS_ENTITY_TYPE };

  app.post(
    '/secrets',
    {
      config,
      schema: {
        tags,
        summary: 'Store a secret (extension)',
        description: EXTENSION,
        body: CreateBody,
        response: { 200: SecretReply, ...errorResponses(400, 409, 503) },
      },
    },
    async (request) => ({ secret: await createSecret(db, keyring, request.actor, request.body) }),
  );

  app.get(
    '/secrets',
    {
      config,
      schema: {
        tags,
        summary: 'List secrets of a workspace, most recent first (extension)',
        description: EXTENSION,
        querystring: Type.Object({
          query: Type.Optional(
            StorableText({
              maxLength: 200,
              description: 'A secret id, or the start of secret names.',
            }),
          ),
          page_size: Type.Optional(PageSize),
          page_token: Type.Optional(PageToken),
          workspace: WorkspaceParam,
        }),
        response: {
          200: Type.Object({ secrets: Type.Array(Type.Ref('Secret')), next_page_token: NextPageToken }),
          ...errorResponses(400),
        },
      },
    },
    async (request) =>
      listSecrets(db, request.actor, {
        workspace: request.query.workspace,
        query: request.query.query ?? null,
        pageSize: request.query.page_size,
        pageToken: request.query.page_token ?? null,
      }),
  );

  app.get(
    '/secrets/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Retrieve a secret, without its value (extension)',
        params: IdParams,
        querystring: WorkspaceQuery,
        response: { 200: SecretReply, ...errorResponses(404) },
      },
    },
    async (request) => ({
      secret: await getSecret(db, request.actor, request.params.id, request.query.workspace),
    }),
  );

  app.put(
    '/secrets/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Give a secret a new value or description (extension)',
        description: `${EXTENSION} A new value is sealed afresh and raises \`version\`; steps that start after the reply use it.`,
        params: IdParams,
        body: UpdateBody,
        response: { 200: SecretReply, ...errorResponses(404, 503) },
      },
    },
    async (request) => ({
      secret: await updateSecret(db, keyring, request.actor, request.params.id, request.body),
    }),
  );

  app.delete(
    '/secrets/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a secret (extension)',
        params: IdParams,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({
            secret: Type.Object({ deleted: Type.Boolean(), id: Type.String(), name: Type.String() }),
          }),
          ...errorResponses(404),
        },
      },
    },
    async (request) => ({
      secret: await deleteSecret(db, request.actor, request.params.id, request.query.workspace),
    }),
  );
};

export default secretRoutes;
