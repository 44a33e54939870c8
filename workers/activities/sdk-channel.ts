import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Actor } from '../../engine/platform/principal';
import type { SdkDependencies } from '../../engine/sdk/sdk-function';
import { answerSdkWire, sdkErrorBody } from '../../engine/sdk/sdk-http';
import { type ChannelRoute, SDK_PORT } from '../../plugins/sandbox/python-sandbox';

/**
 * everysk-lib's own SDK layer (`everysk.sdk`) inside a Python step: its `POST /v1/sdk_function`
 * reaches the step's SDK channel, read as the HTTP route reads it (engine/sdk/sdk-http.ts) and
 * answered in-process for the run's account, audited as source WORKER with the run named. The
 * script finds the service where everysk-lib looks (EVERYSK_SDK_URL, EVERYSK_API_URL) and
 * credentials made for this step alone: an SID naming the step and a random token, good on this
 * step's socket only and for as long as it runs. No secret of the account enters the sandbox.
 */

export interface StepSdkChannel {
  /** Extra routes of the step's channel. */
  routes: Record<string, ChannelRoute>;
  /** The variables everysk-lib reads for its address and credentials. */
  environment: Record<string, string>;
}

export function everyskSdkChannel(
  deps: SdkDependencies,
  actor: Actor,
  stepId: string,
  maxBytes: number,
): StepSdkChannel {
  const token = randomBytes(24).toString('hex');
  const expected = Buffer.from(`Bearer ${stepId}:${token}`);
  const url = `http://127.0.0.1:${SDK_PORT}`;
  const authorised = (headers: IncomingHttpHeaders) => {
    const given = Buffer.from(headers.authorization ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  const sdkFunction: ChannelRoute = async (body, headers) => {
    if (!authorised(headers)) {
      return {
        status: 401,
        body: sdkErrorBody(401, "Unauthorized: use this step's EVERYSK_API_SID and EVERYSK_API_TOKEN."),
      };
    }
    const encoding = headers['content-encoding'];
    const answer = await answerSdkWire(
      deps,
      actor.principal,
      { body, contentEncoding: Array.isArray(encoding) ? encoding.join(',') : encoding, maxBytes },
      'WORKER',
      { workflow: actor.workflow },
    );
    return { status: answer.status, body: answer.json };
  };
  return {
    routes: { '/v1/sdk_function': sdkFunction },
    environment: {
      EVERYSK_SDK_URL: url,
      EVERYSK_API_URL: url,
      EVERYSK_API_URL_SCHEME: 'http',
      EVERYSK_API_URL_DOMAIN: `127.0.0.1:${SDK_PORT}`,
      EVERYSK_API_SID: stepId,
      EVERYSK_API_TOKEN: token,
    },
  };
}
