import { type TSchema, Type } from '@sinclair/typebox';

export const ErrorBody = Type.Object(
  {
    code: Type.Integer({ description: 'HTTP status code.' }),
    message: Type.String({ description: 'What went wrong, safe to show.' }),
  },
  { $id: 'Error', title: 'Error' },
);

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Bad Request: a missing or invalid parameter.',
  401: 'Unauthorized: missing or invalid credentials.',
  403: 'Forbidden: the credentials lack permission.',
  404: 'Not Found.',
  409: 'Conflict: the object already exists.',
  413: 'Payload Too Large.',
  429: 'Too Many Requests: retry with truncated exponential backoff.',
};

/** The error responses a route can give, each `{code, message}`, for validation-free OpenAPI docs. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  // Every route validates its parameters, so every route can answer 400.
  for (const status of [400, 401, 429, ...statuses]) {
    out[status] = Type.Ref('Error', { description: ERROR_DESCRIPTIONS[status] ?? 'Error' });
  }
  return out;
}

export const PageSize = Type.Integer({
  minimum: 1,
  maximum: 100,
  'x-rule': 'an integer from 1 to 100',
  description: '1 to 100, default 10.',
});
export const PageToken = Type.String({ description: 'The next_page_token of the previous response.' });
export const NextPageToken = Type.Union([Type.String(), Type.Null()], {
  description: 'Cursor of the next page; null on the last page.',
});
export const Timestamp = Type.Integer({ description: 'Seconds since the Unix epoch.' });
