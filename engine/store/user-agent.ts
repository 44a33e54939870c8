/** A readable "OS - Browser" form of a User-Agent header, as the audit trail shows it. */
const OS_RULES: Array<[RegExp, string]> = [
  [/Windows NT/i, 'Windows'],
  [/iPhone|iPad|iPod/i, 'iOS'],
  [/Mac OS X|Macintosh/i, 'Mac OS X'],
  [/Android/i, 'Android'],
  [/CrOS/i, 'Chrome OS'],
  [/Linux/i, 'Linux'],
];

const CLIENT_RULES: Array<[RegExp, string]> = [
  [/Edg\//, 'Edge'],
  [/OPR\//, 'Opera'],
  [/Firefox\//, 'Firefox'],
  [/Chrome\//, 'Chrome'],
  [/Version\/[\d.]+.*Safari\//, 'Safari'],
  [/python-requests\//i, 'Python Requests'],
  [/everysk/i, 'Everysk SDK'],
  [/python-urllib|aiohttp|httpx/i, 'Python'],
  [/curl\//i, 'curl'],
  [/PostmanRuntime/i, 'Postman'],
  [/node-fetch|undici|axios|lightMyRequest/i, 'Node.js'],
];

export function prettyUserAgent(userAgent: string | null | undefined): string {
  const ua = userAgent ?? '';
  const os = OS_RULES.find(([pattern]) => pattern.test(ua))?.[1] ?? 'Unknown OS';
  const client = CLIENT_RULES.find(([pattern]) => pattern.test(ua))?.[1] ?? 'Unknown Browser';
  return `${os} - ${client}`;
}
