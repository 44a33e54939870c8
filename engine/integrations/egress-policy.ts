import { isIP } from 'node:net';
import { DomainError } from '../platform/errors';

/**
 * The egress policy of workflow scripts' outbound calls: which addresses a call may reach. A script
 * names a host; what is judged is every address that host means, so a name that resolves to the
 * cloud metadata address, or a URL written as `http://0x7f.1/`, is refused like the address itself.
 */

/** The policy refused the call before anything was sent. */
export class EgressRefused extends DomainError {
  constructor(message: string) {
    super(403, message);
  }
}

/**
 * The remote side failed: timeout, connection refused, TLS verification, a response too large, too
 * many redirects. `cause` keeps Node's error for the logs; the message is what a script's author sees.
 */
export class EgressFailed extends DomainError {
  constructor(message: string, cause?: unknown) {
    super(502, message);
    if (cause !== undefined) this.cause = cause;
  }
}

export interface EgressPolicy {
  /** Restricted addresses that calls may reach all the same (EGRESS_PRIVATE_ALLOW). */
  privateAllow: Cidr[];
  maxResponseBytes: number;
  /** PEM text of an installation CA bundle, trusted on top of Node's default roots. */
  extraCa: string | null;
  /** Redirects followed before the call fails; 5 when absent. */
  maxRedirects?: number;
}

export interface Cidr {
  readonly family: 4 | 6;
  readonly prefix: number;
  /** The network's address, host bits zero (4 or 16 bytes). */
  readonly bytes: Uint8Array;
  /** As written in the list, for messages. */
  readonly text: string;
}

interface Address {
  family: 4 | 6;
  bytes: Uint8Array;
}

/** `isIP` has already accepted the text, so only well-formed addresses reach the byte parsers. */
function parseAddress(text: string): Address | null {
  const family = isIP(text);
  if (family === 4) return { family, bytes: Uint8Array.from(text.split('.'), Number) };
  if (family === 6) return { family, bytes: ipv6Bytes(text) };
  return null;
}

function ipv6Bytes(written: string): Uint8Array {
  // A zone (`fe80::1%eth0`) picks an interface; it does not change which address is meant.
  let text = written.split('%')[0] ?? '';
  if (text.includes('.')) {
    const cut = text.lastIndexOf(':') + 1;
    const [a = 0, b = 0, c = 0, d = 0] = text.slice(cut).split('.').map(Number);
    text = `${text.slice(0, cut)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  let groups: string[];
  if (text.includes('::')) {
    const [head = '', tail = ''] = text.split('::');
    const before = head === '' ? [] : head.split(':');
    const after = tail === '' ? [] : tail.split(':');
    groups = [...before, ...Array<string>(8 - before.length - after.length).fill('0'), ...after];
  } else {
    groups = text.split(':');
  }
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[2 * i] = value >> 8;
    bytes[2 * i + 1] = value & 0xff;
  });
  return bytes;
}

function formatIpv4(bytes: Uint8Array): string {
  return Array.from(bytes).join('.');
}

/** RFC 5952: the first longest run of two or more zero groups becomes `::`. */
function formatIpv6(bytes: Uint8Array): string {
  const groups = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i] ?? 0) << 8) | (bytes[2 * i + 1] ?? 0));
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = (part: number[]) => part.map((g) => g.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

function prefixMatches(network: Uint8Array, bytes: Uint8Array, prefix: number): boolean {
  const whole = prefix >> 3;
  for (let i = 0; i < whole; i++) if (network[i] !== bytes[i]) return false;
  const rest = prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((network[whole] ?? 0) & mask) === ((bytes[whole] ?? 0) & mask);
}

function hasHostBits(bytes: Uint8Array, prefix: number): boolean {
  return bytes.some((byte, i) => {
    const kept = Math.max(0, Math.min(8, prefix - 8 * i));
    return (byte & (0xff >> kept)) !== 0;
  });
}

function parseCidr(entry: string): Cidr {
  if (entry.includes('%')) throw new Error(`"${entry}" has a zone index (%), which a CIDR cannot hold`);
  const parts = entry.split('/');
  const address = parts.length <= 2 ? parseAddress(parts[0] ?? '') : null;
  if (address === null) throw new Error(`"${entry}" is not an IPv4 or IPv6 address or CIDR`);
  const max = address.family === 4 ? 32 : 128;
  const prefixText = parts[1];
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) {
    throw new Error(`"${entry}" has a prefix length that is not a number from 0 to ${max}`);
  }
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (prefix > max) throw new Error(`"${entry}" has a prefix length over ${max}`);
  // 10.0.0.5/8 is more likely a slip for /32 than a wish for all of 10/8: refuse rather than guess.
  if (hasHostBits(address.bytes, prefix)) {
    const network = address.bytes.map(
      (byte, i) => byte & (0xff << (8 - Math.max(0, Math.min(8, prefix - 8 * i)))),
    );
    const shown = address.family === 4 ? formatIpv4(network) : formatIpv6(network);
    throw new Error(`"${entry}" has bits set after the prefix; the network is ${shown}/${prefix}`);
  }
  return { family: address.family, prefix, bytes: address.bytes, text: entry };
}

/**
 * A comma-separated list of IPv4/IPv6 CIDRs (`127.0.0.1/32, 10.0.0.0/8, ::1/128, fd00::/8`); a bare
 * address is one host. Blank text is the empty list; an empty entry (`a,,b`, a trailing comma) is an
 * error, as a setting that guards the network should not be read loosely.
 */
export function parseCidrList(text: string): Cidr[] {
  if (text.trim() === '') return [];
  return text.split(',').map((raw) => {
    const entry = raw.trim();
    if (entry === '') throw new Error('an entry is empty (two commas in a row, or one at an end)');
    return parseCidr(entry);
  });
}

/**
 * An IPv4-mapped address (`::ffff:10.0.0.5`) is its IPv4 address to the socket that uses it, so it
 * matches IPv4 CIDRs, and an IPv4 address matches IPv6 CIDRs as its mapped form (as `net.BlockList`).
 */
export function cidrContains(cidr: Cidr, ip: string): boolean {
  const address = parseAddress(ip);
  if (address === null) throw new Error(`"${ip}" is not an IP address`);
  let bytes = address.bytes;
  if (cidr.family === 4 && address.family === 6) {
    if (!prefixMatches(MAPPED.bytes, bytes, MAPPED.prefix)) return false;
    bytes = bytes.subarray(12);
  } else if (cidr.family === 6 && address.family === 4) {
    bytes = Uint8Array.from([...MAPPED.bytes.subarray(0, 12), ...bytes]);
  }
  return prefixMatches(cidr.bytes, bytes, cidr.prefix);
}

const MAPPED = parseCidr('::ffff:0:0/96');

interface Range {
  cidr: Cidr;
  name: string;
}

const ranges = (table: Array<[string, string]>): Range[] =>
  table.map(([cidr, name]) => ({ cidr: parseCidr(cidr), name }));

/** IANA's special-purpose IPv4 registry, narrower entries first. */
const IPV4_RANGES = ranges([
  ['0.0.0.0/32', 'unspecified address'],
  ['0.0.0.0/8', '"this network" address (0.0.0.0/8)'],
  ['10.0.0.0/8', 'private address (RFC 1918)'],
  ['100.64.0.0/10', 'shared address (carrier-grade NAT, 100.64.0.0/10)'],
  ['127.0.0.0/8', 'loopback address'],
  ['169.254.169.254/32', 'link-local address (the cloud instance metadata service)'],
  ['169.254.0.0/16', 'link-local address (169.254.0.0/16)'],
  ['172.16.0.0/12', 'private address (RFC 1918)'],
  ['192.0.0.0/24', 'IETF protocol assignment (192.0.0.0/24)'],
  ['192.0.2.0/24', 'documentation address (TEST-NET-1, 192.0.2.0/24)'],
  ['192.88.99.0/24', '6to4 relay anycast address (192.88.99.0/24, deprecated)'],
  ['192.168.0.0/16', 'private address (RFC 1918)'],
  ['198.18.0.0/15', 'benchmarking address (198.18.0.0/15)'],
  ['198.51.100.0/24', 'documentation address (TEST-NET-2, 198.51.100.0/24)'],
  ['203.0.113.0/24', 'documentation address (TEST-NET-3, 203.0.113.0/24)'],
  ['224.0.0.0/4', 'multicast address'],
  ['255.255.255.255/32', 'broadcast address'],
  ['240.0.0.0/4', 'reserved address (240.0.0.0/4)'],
]);

/** :: and ::1 lie inside ::/96 but are their own addresses, not IPv4-compatible ones. */
const IPV6_OWN_ADDRESSES = ranges([
  ['::/128', 'unspecified address'],
  ['::1/128', 'loopback address'],
]);

const IPV6_RANGES = ranges([
  ['100::/64', 'discard-only address (100::/64)'],
  ['2001:2::/48', 'benchmarking address (2001:2::/48)'],
  ['2001:db8::/32', 'documentation address (2001:db8::/32)'],
  ['3fff::/20', 'documentation address (3fff::/20)'],
  ['5f00::/16', 'SRv6 segment identifier (5f00::/16)'],
  ['fc00::/7', 'unique-local address (fc00::/7)'],
  ['fe80::/10', 'link-local address (fe80::/10)'],
  ['fec0::/10', 'site-local address (fec0::/10, deprecated)'],
  ['ff00::/8', 'multicast address'],
]);

/** Only 2000::/3 is allocated for global unicast; whatever else no rule names is refused too. */
const GLOBAL_UNICAST = parseCidr('2000::/3');

/** Where an IPv4 address sits in an IPv6 one; `zero`: bytes the format leaves zero (RFC 6052). */
interface Position {
  at: number[];
  zero?: number[];
  /** Teredo stores its client's address inverted. */
  inverted?: boolean;
}

const LAST_FOUR: Position = { at: [12, 13, 14, 15] };

/**
 * IPv6 forms that carry an IPv4 address. Traffic to them ends at (or is translated to) that IPv4
 * address, so they are judged by it. The local-use NAT64 prefix may be cut at /48, /56, /64 or /96
 * (RFC 6052), and the address does not say which: every cut whose zero bytes are zero is judged,
 * and any restricted reading refuses. Teredo's server address is judged as well as its client's.
 */
const EMBEDDINGS: Array<{ cidr: Cidr; positions: Position[] }> = [
  { cidr: parseCidr('::ffff:0:0/96'), positions: [LAST_FOUR] },
  { cidr: parseCidr('::ffff:0:0:0/96'), positions: [LAST_FOUR] },
  { cidr: parseCidr('::/96'), positions: [LAST_FOUR] },
  { cidr: parseCidr('64:ff9b::/96'), positions: [LAST_FOUR] },
  {
    cidr: parseCidr('64:ff9b:1::/48'),
    positions: [
      { at: [6, 7, 9, 10], zero: [8, 11, 12, 13, 14, 15] },
      { at: [7, 9, 10, 11], zero: [8, 12, 13, 14, 15] },
      { at: [9, 10, 11, 12], zero: [8, 13, 14, 15] },
      LAST_FOUR,
    ],
  },
  { cidr: parseCidr('2002::/16'), positions: [{ at: [2, 3, 4, 5] }] },
  { cidr: parseCidr('2001::/32'), positions: [{ ...LAST_FOUR, inverted: true }, { at: [4, 5, 6, 7] }] },
];

interface Judgement {
  range: string;
  /** The IPv4 address an IPv6 address was judged by. */
  embedded: string | null;
}

function findRange(table: Range[], bytes: Uint8Array): string | null {
  return table.find((r) => prefixMatches(r.cidr.bytes, bytes, r.cidr.prefix))?.name ?? null;
}

function judge(address: Address): Judgement | null {
  const { bytes } = address;
  if (address.family === 4) {
    const range = findRange(IPV4_RANGES, bytes);
    return range === null ? null : { range, embedded: null };
  }
  const exact = findRange(IPV6_OWN_ADDRESSES, bytes);
  if (exact !== null) return { range: exact, embedded: null };
  const embedding = EMBEDDINGS.find((e) => prefixMatches(e.cidr.bytes, bytes, e.cidr.prefix));
  if (embedding !== undefined) {
    for (const { at, zero = [], inverted = false } of embedding.positions) {
      if (zero.some((i) => bytes[i] !== 0)) continue;
      const ipv4 = Uint8Array.from(at, (i) => (inverted ? ~(bytes[i] ?? 0) & 0xff : (bytes[i] ?? 0)));
      const range = findRange(IPV4_RANGES, ipv4);
      if (range !== null) return { range, embedded: formatIpv4(ipv4) };
    }
    return null;
  }
  const range = findRange(IPV6_RANGES, bytes);
  if (range !== null) return { range, embedded: null };
  if (!prefixMatches(GLOBAL_UNICAST.bytes, bytes, GLOBAL_UNICAST.prefix)) {
    return { range: 'unallocated address (outside 2000::/3, the global unicast space)', embedded: null };
  }
  return null;
}

function addressOf(ip: string): Address {
  const address = parseAddress(ip);
  if (address === null) throw new Error(`"${ip}" is not an IP address`);
  return address;
}

/**
 * Null for an ordinary public unicast address, else a short name of the range it lies in. An IPv6
 * address that embeds an IPv4 address is named by the embedded address's range.
 */
export function restrictedRange(ip: string): string | null {
  return judge(addressOf(ip))?.range ?? null;
}

/** "an unspecified", "an IETF", but "a unique-local": a vowel that sounds like one. */
const article = (name: string) => (/^(?!uni)[aeiou]/i.test(name) ? 'an' : 'a');

/**
 * Throws EgressRefused when `ip` lies in a restricted range that no CIDR of `privateAllow` holds.
 * For an IPv4-embedding address the allow list may hold either address: the operator who allows
 * 10.0.0.0/8 means the hosts there, however the address reaching them is spelled.
 */
export function checkAddress(ip: string, policy: Pick<EgressPolicy, 'privateAllow'>): void {
  const address = parseAddress(ip);
  if (address === null) throw new EgressRefused(`"${ip}" is not an IP address`);
  const judgement = judge(address);
  if (judgement === null) return;
  const { range, embedded } = judgement;
  const allowed = policy.privateAllow.some(
    (cidr) => cidrContains(cidr, ip) || (embedded !== null && cidrContains(cidr, embedded)),
  );
  if (allowed) return;
  const shown = embedded === null ? ip : `${ip} (${embedded})`;
  throw new EgressRefused(`${shown} is ${article(range)} ${range}; EGRESS_PRIVATE_ALLOW does not include it`);
}
