import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/db/database';
import { listEntities, viewEntity } from '../../engine/entities/entity-store';
import {
  createPrivateSecurity,
  deletePrivateSecurity,
  PRIVATE_SECURITY,
  SYMBOL_MAX,
  updatePrivateSecurity,
} from '../../engine/private-securities/private-security-store';
import { errorResponses, Timestamp } from '../schemas/common';
import { CurrencyCode, Description, Name, Tags } from '../schemas/fields';
import { listQuerystring, listReply, listRequest, Nullable } from '../schemas/entity-lists';

const PrivateSecurity = Type.Object(
  {
    symbol: Type.String({ description: 'The identifier. Matches ^PRIVATE:[A-Z0-9_]*$.' }),
    name: Type.String(),
    description: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    instrument_type: Type.String({ description: 'Kind of instrument, for example EQUITY or FIXED_INCOME.' }),
    currency: Type.String({ description: '3-letter ISO 4217 code.' }),
    data: Type.Object({}, { additionalProperties: true, description: 'Custom data. Omitted in lists.' }),
    created: Timestamp,
    updated: Timestamp,
    version: Type.String(),
  },
  { $id: 'PrivateSecurity', title: 'PrivateSecurity' },
);

const InstrumentType = Type.String({
  pattern: '^[A-Z][A-Z0-9_]{0,49}$',
  'x-rule': 'an upper-case instrument type of up to 50 letters, digits or _, such as EQUITY or FIXED_INCOME',
  description: 'Upper-case instrument type (EQUITY, FIXED_INCOME, …), shown as instrument_type.',
});
const fields = {
  name: Name,
  description: Type.Optional(Type.Union([Description, Type.Null()])),
  tags: Type.Optional(Tags),
  type: Type.Optional(Type.Union([InstrumentType, Type.Null()], { 'x-rule': InstrumentType['x-rule'] })),
  instrument_type: Type.Optional(
    Type.Union([InstrumentType, Type.Null()], {
      'x-rule': InstrumentType['x-rule'],
      description: 'Accepted in place of type (as a retrieved object carries it); type wins.',
    }),
  ),
  currency: Type.Optional(Type.Union([CurrencyCode, Type.Null()], { description: 'Default USD.' })),
  data: Type.Record(Type.String(), Type.Unknown(), {
    description: 'A JSON object; replaced whole on update.',
  }),
};
const SymbolPattern = Type.String({
  pattern: `^PRIVATE:[A-Z0-9_]{0,${SYMBOL_MAX - 8}}$`,
  'x-rule': `PRIVATE: followed by upper-case letters, digits or _ (no spaces), at most ${SYMBOL_MAX} characters in all`,
});
// The instrument type is required on create, as `type` or (as a retrieved object carries it) `instrument_type`.
const CreateBody = Type.Object(
  { symbol: SymbolPattern, ...fields },
  {
    'x-message':
      'type is required: an upper-case instrument type of up to 50 letters, digits or _, such as EQUITY or FIXED_INCOME.',
    anyOf: [
      { required: ['type'], properties: { type: { type: 'string' } } },
      { required: ['instrument_type'], properties: { instrument_type: { type: 'string' } } },
    ],
  },
);
// Python clients send None for every argument left unset: on update, null keeps the stored value.
const UpdateBody = Type.Partial(
  Type.Object({
    ...fields,
    name: Type.Union([Name, Type.Null()]),
    data: Type.Union([fields.data, Type.Null()]),
  }),
  {
    description:
      'Every field optional; fields left out (or null) keep their values. The symbol comes from the path.',
  },
);

const IgnoredWorkspace = Type.Optional(
  Type.String({
    description:
      'Accepted and ignored: private securities belong to the account, alike from every workspace.',
  }),
);
const SymbolParam = Type.Object({ id: SymbolPattern });
const WorkspaceQuery = Type.Object({ workspace: IgnoredWorkspace });
const ListQuery = Type.Object({ ...listQuerystring(false).properties, workspace: IgnoredWorkspace });
const PrivateSecurityReply = Type.Object({ private_security: Type.Ref('PrivateSecurity') });
const tags = ['Private securities'];
const config = { auditEntity: 'CustomSecurity' } as const;

const privateSecurityRoutes: FastifyPluginAsyncTypebox<{ db: Database }> = async (app, { db }) => {
  app.addSchema(PrivateSecurity);

  app.post(
    '/private_securities',
    {
      config,
      schema: {
        tags,
        summary: 'Create a private security',
        body: CreateBody,
        response: { 200: PrivateSecurityReply, ...errorResponses(400, 409) },
      },
    },
    async (request) => ({
      private_security: PRIVATE_SECURITY.view(await createPrivateSecurity(db, request.actor, request.body)),
    }),
  );

  app.get(
    '/private_securities',
    {
      config,
      schema: {
        tags,
        summary: 'List private securities (without data), most recent first',
        querystring: ListQuery,
        response: { 200: listReply('private_securities', PrivateSecurity), ...errorResponses(400) },
      },
    },
    async (request) => {
      const { items, next_page_token } = await listEntities(
        db,
        request.actor,
        PRIVATE_SECURITY,
        listRequest(request.query),
      );
      return { private_securities: items, next_page_token };
    },
  );

  app.get(
    '/private_securities/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Retrieve a private security',
        params: SymbolParam,
        querystring: WorkspaceQuery,
        response: { 200: PrivateSecurityReply, ...errorResponses(404) },
      },
    },
    async (request) => ({
      private_security: PRIVATE_SECURITY.view(
        await viewEntity(db, request.actor, PRIVATE_SECURITY, request.params.id),
      ),
    }),
  );

  app.put(
    '/private_securities/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Update a private security',
        params: SymbolParam,
        body: UpdateBody,
        response: { 200: PrivateSecurityReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => ({
      private_security: PRIVATE_SECURITY.view(
        await updatePrivateSecurity(db, request.actor, request.params.id, request.body),
      ),
    }),
  );

  app.delete(
    '/private_securities/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a private security',
        params: SymbolParam,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({
            private_security: Type.Object({
              deleted: Type.Boolean(),
              symbol: Type.String(),
              name: Type.String(),
            }),
          }),
          ...errorResponses(404),
        },
      },
    },
    async (request) => ({
      private_security: await deletePrivateSecurity(db, request.actor, request.params.id),
    }),
  );
};

export default privateSecurityRoutes;
