import { decodeBody, RequestBodyError } from '../platform/body-encoding';
import { DomainError, InvalidInput } from '../platform/errors';
import type { AuditSource, Principal } from '../platform/principal';
import { callSdkFunction, type SdkCallContext, type SdkDependencies } from './sdk-function';

/**
 * everysk-lib's SDK wire as bytes: how a `/v1/sdk_function` body is read and how its errors are
 * written, shared by the HTTP route (api/routes/sdk-function.ts) and a worker step's SDK channel
 * (the script's own everysk-lib posting to the step's socket), so both read a call the same way.
 */

/** The client's exception classes (everysk.core.exceptions) for each status. */
export function sdkErrorModule(status: number): string {
  if (status === 404) return 'everysk.core.exceptions.EntityNotFound';
  if (status === 400 || status === 413) return 'everysk.core.exceptions.SDKValueError';
  return 'everysk.core.exceptions.SDKError';
}

export interface SdkErrorBody {
  error_message: string;
  error_module: string;
}

export function sdkErrorBody(status: number, message: string): SdkErrorBody {
  return { error_message: message, error_module: sdkErrorModule(status) };
}

/**
 * The call's JSON, whatever its Content-Type (the client labels it text/html). A key `__proto__`,
 * or `constructor` holding a `prototype`, is refused, as Fastify's own JSON parser does.
 */
export function parseSdkJson(text: string): unknown {
  if (text.trim() === '') throw new InvalidInput('Request body is empty: send the SDK call as JSON.');
  try {
    return JSON.parse(text, (key, value: unknown) => {
      if (key === '__proto__') throw new InvalidInput('Object contains forbidden prototype property');
      if (key === 'constructor' && value !== null && typeof value === 'object' && 'prototype' in value) {
        throw new InvalidInput('Object contains forbidden prototype property');
      }
      return value;
    });
  } catch (error) {
    if (error instanceof DomainError) throw error;
    throw new InvalidInput('Request body is not valid JSON.');
  }
}

/**
 * One call as it came over the wire (the body as sent, its Content-Encoding), answered: the status
 * and the JSON text of the reply, the SDK's `{error_message, error_module}` when it failed. A fault
 * of the service (not the caller's) is rethrown for the caller to log and answer as a 500.
 */
export async function answerSdkWire(
  deps: SdkDependencies,
  principal: Principal,
  wire: { body: Buffer; contentEncoding: string | undefined; maxBytes: number },
  source: AuditSource,
  context: SdkCallContext = {},
): Promise<{ status: number; json: string }> {
  try {
    const body = await decodeBody(wire.body, wire.contentEncoding, wire.maxBytes);
    const result = await callSdkFunction(
      deps,
      principal,
      parseSdkJson(body.toString('utf8')),
      source,
      context,
    );
    return { status: 200, json: JSON.stringify(result) ?? 'null' };
  } catch (error) {
    const known =
      error instanceof DomainError
        ? { status: error.status, message: error.message }
        : error instanceof RequestBodyError
          ? { status: error.statusCode, message: error.message }
          : null;
    if (known === null) throw error;
    return { status: known.status, json: JSON.stringify(sdkErrorBody(known.status, known.message)) };
  }
}
