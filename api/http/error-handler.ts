import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type AuditOperation, recordAudit } from '../../engine/store/audit-trail';
import type { Database } from '../../engine/platform/database';
import { isDatabaseUnavailable } from '../../engine/platform/database-faults';
import { DomainError, ServiceUnavailable } from '../../engine/platform/errors';
import { isStorableText } from '../../engine/store/storable-text';
import { type ValidationIssue, validationMessage } from '../../engine/platform/validation-message';

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
};

/** Maps any thrown error to the status and client-safe message of `{code, message}`. */
export function describeError(
  error: FastifyError | Error,
  maxPayloadBytes: number,
  request?: FastifyRequest,
): { status: number; message: string } {
  if (error instanceof DomainError) return { status: error.status, message: error.message };
  // A known fault, not a bug: 503 (api/http/database-breaker.ts adds Retry-After).
  if (isDatabaseUnavailable(error)) return { status: 503, message: new ServiceUnavailable().message };
  const fastifyError = error as FastifyError;
  if (fastifyError.validationContext === 'body' && request && request.body === undefined) {
    // No body at all (or an empty one): name what the route needs rather than "body must be object".
    const schema = request.routeOptions.schema?.body as { required?: string[] } | undefined;
    const required = schema?.required ?? [];
    return {
      status: 400,
      message:
        required.length > 0
          ? `Request body is required: a JSON object with ${required.join(', ')}.`
          : 'Request body is required: a JSON object.',
    };
  }
  if (fastifyError.validation) {
    return {
      status: 400,
      message: validationMessage(
        fastifyError.validationContext,
        fastifyError.validation as unknown as ValidationIssue[],
      ),
    };
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        status: 413,
        message: `Request body exceeds the maximum payload size of ${maxPayloadBytes} bytes.`,
      };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, message: 'Unsupported Content-Type: send application/json.' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, message: 'Request body is empty but Content-Type is application/json.' };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { status: 400, message: 'Request body is not valid JSON.' };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, message: 'Request body length does not match Content-Length.' };
  }
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (error instanceof SyntaxError) return { status: 400, message: 'Request body is not valid JSON.' };
    return { status, message: fastifyError.message || STATUS_TEXT[status] || 'Bad Request' };
  }
  return { status: 500, message: 'Internal Server Error' };
}

/** Headers that describe a response's body, set by a route whose body never went out. */
const CONTENT_HEADERS = ['content-encoding', 'content-disposition', 'content-range'];

function forgetContentHeaders(reply: FastifyReply): void {
  for (const name of CONTENT_HEADERS) {
    reply.removeHeader(name);
    // A stream response copies its headers onto the raw response before its first byte.
    if (!reply.raw.headersSent) reply.raw.removeHeader(name);
  }
}

const OPERATION_BY_METHOD: Record<string, AuditOperation> = {
  GET: 'VIEW',
  POST: 'CREATE',
  PUT: 'UPDATE',
  PATCH: 'UPDATE',
  DELETE: 'DELETE',
};

/**
 * One error model: every failure, validation and unknown routes included, is `{code, message}`.
 * 5xx bodies never carry internals; the log keeps the details under the request id.
 */
export default fp(
  async function errorHandler(app: FastifyInstance, options: { db: Database; maxPayloadBytes: number }) {
    app.setErrorHandler(async (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const { status, message } = describeError(error, options.maxPayloadBytes, request);
      if (status >= 500) request.log.error({ err: error }, 'request failed');
      else request.log.info({ status, message }, 'request refused');
      // An error can replace a response whose stream failed before its first byte: the headers of
      // that response (its Content-Encoding above all, which the compressor then takes as "already
      // encoded") must not label the plain JSON error.
      forgetContentHeaders(reply);
      return reply.code(status).type('application/json; charset=utf-8').send({ code: status, message });
    });

    app.setNotFoundHandler(async (request, reply) => {
      const path = request.url.split('?')[0];
      return reply.code(404).send({ code: 404, message: `Not Found: ${request.method} ${path}` });
    });

    // Failed actions of an authenticated user are part of the audit trail (ERROR; DENIED for 401/403).
    // Written before the reply leaves, so a client that reads the trail next always finds it.
    app.addHook('onSend', async (request, reply, payload) => {
      if (reply.statusCode < 400 || !request.principal) return payload;
      const config = request.routeOptions.config;
      const entityType = config.auditEntity ?? null;
      const params = (request.params ?? {}) as Record<string, unknown>;
      const entityId =
        typeof params.id === 'string' && isStorableText(params.id) ? params.id.slice(0, 200) : null;
      const operation = config.auditOperation ?? OPERATION_BY_METHOD[request.method] ?? 'VIEW';
      const denied = reply.statusCode === 401 || reply.statusCode === 403;
      try {
        await recordAudit(options.db, request.actor, {
          operation,
          activity: `${denied ? 'Denied' : 'Failed'} ${request.method} ${request.url.split('?')[0]} (${reply.statusCode})`,
          entityId,
          entityType,
          status: denied ? 'DENIED' : 'ERROR',
        });
      } catch (error) {
        request.log.error({ err: error }, 'could not record the failed action in the audit trail');
      }
      return payload;
    });
  },
  { name: 'error-handler' },
);
