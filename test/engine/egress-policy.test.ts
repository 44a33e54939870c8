import { BlockList } from 'node:net';
import fc from 'fast-check';
import {
  checkAddress,
  cidrContains,
  EgressFailed,
  EgressRefused,
  parseCidrList,
  restrictedRange,
} from '../../engine/integrations/egress-policy';
import { DomainError } from '../../engine/platform/errors';

/**
 * The egress policy's address rules: the allow list's parser, CIDR matching, and which addresses
 * are restricted, with the IPv6 spellings of IPv4 addresses judged by the address they carry.
 */

const NO_ALLOW = { privateAllow: [] };

/** Any IPv4 address, drawn often from the edges of the special ranges, where off-by-ones live. */
const EDGES = [
  [0, 0, 0, 0],
  [0, 255, 255, 255],
  [1, 0, 0, 0],
  [9, 255, 255, 255],
  [10, 0, 0, 0],
  [10, 255, 255, 255],
  [11, 0, 0, 0],
  [100, 63, 255, 255],
  [100, 64, 0, 0],
  [100, 127, 255, 255],
  [100, 128, 0, 0],
  [126, 255, 255, 255],
  [127, 0, 0, 0],
  [128, 0, 0, 0],
  [169, 253, 255, 255],
  [169, 254, 0, 0],
  [169, 255, 0, 0],
  [172, 15, 255, 255],
  [172, 16, 0, 0],
  [172, 31, 255, 255],
  [172, 32, 0, 0],
  [191, 255, 255, 255],
  [192, 0, 0, 0],
  [192, 0, 1, 0],
  [192, 0, 2, 255],
  [192, 0, 3, 0],
  [192, 88, 98, 255],
  [192, 88, 99, 0],
  [192, 88, 100, 0],
  [192, 167, 255, 255],
  [192, 168, 0, 0],
  [192, 169, 0, 0],
  [198, 17, 255, 255],
  [198, 18, 0, 0],
  [198, 19, 255, 255],
  [198, 20, 0, 0],
  [198, 51, 99, 255],
  [198, 51, 100, 0],
  [198, 51, 101, 0],
  [203, 0, 112, 255],
  [203, 0, 113, 0],
  [203, 0, 114, 0],
  [223, 255, 255, 255],
  [224, 0, 0, 0],
  [239, 255, 255, 255],
  [240, 0, 0, 0],
  [255, 255, 255, 254],
  [255, 255, 255, 255],
];
const byte = fc.integer({ min: 0, max: 255 });
const ipv4 = fc
  .oneof(
    fc.tuple(byte, byte, byte, byte),
    fc.constantFrom(...EDGES),
    fc.constantFrom(...EDGES).chain(([a = 0, b = 0]) => fc.tuple(fc.constant(a), fc.constant(b), byte, byte)),
  )
  .map((parts) => parts.join('.'));

const hex = (a: number, b: number) => ((a << 8) | b).toString(16);
const parts = (ip: string) => ip.split('.').map(Number) as [number, number, number, number];

describe('parseCidrList', () => {
  test('reads IPv4 and IPv6 CIDRs and bare addresses; blank text is the empty list', () => {
    const list = parseCidrList(' 127.0.0.1/32, 10.0.0.0/8,::1/128 , fd00::/8, 192.168.1.7, 2001:db8::1 ');
    expect(list.map(({ family, prefix, text }) => ({ family, prefix, text }))).toEqual([
      { family: 4, prefix: 32, text: '127.0.0.1/32' },
      { family: 4, prefix: 8, text: '10.0.0.0/8' },
      { family: 6, prefix: 128, text: '::1/128' },
      { family: 6, prefix: 8, text: 'fd00::/8' },
      { family: 4, prefix: 32, text: '192.168.1.7' },
      { family: 6, prefix: 128, text: '2001:db8::1' },
    ]);
    expect(parseCidrList('')).toEqual([]);
    expect(parseCidrList('   ')).toEqual([]);
    expect(parseCidrList('0.0.0.0/0, ::/0').map((c) => c.prefix)).toEqual([0, 0]);
  });

  test.each([
    ['10.0.0.0/8, banana', '"banana" is not an IPv4 or IPv6 address or CIDR'],
    ['10.0.0.0/33', '"10.0.0.0/33" has a prefix length over 32'],
    ['::/129', '"::/129" has a prefix length over 128'],
    ['10.0.0.0/', '"10.0.0.0/" has a prefix length that is not a number from 0 to 32'],
    ['10.0.0.0/-1', '"10.0.0.0/-1" has a prefix length that is not a number from 0 to 32'],
    ['10.0.0.0/ 8', '"10.0.0.0/ 8" has a prefix length that is not a number from 0 to 32'],
    ['10.0.0.0/8/8', '"10.0.0.0/8/8" is not an IPv4 or IPv6 address or CIDR'],
    ['/8', '"/8" is not an IPv4 or IPv6 address or CIDR'],
    ['127.1', '"127.1" is not an IPv4 or IPv6 address or CIDR'],
    ['010.0.0.1', '"010.0.0.1" is not an IPv4 or IPv6 address or CIDR'],
    ['10.0.0.5/8', '"10.0.0.5/8" has bits set after the prefix; the network is 10.0.0.0/8'],
    ['fd00::1/8', '"fd00::1/8" has bits set after the prefix; the network is fd00::/8'],
    [
      '2001:db8:0:0:1::/48',
      '"2001:db8:0:0:1::/48" has bits set after the prefix; the network is 2001:db8::/48',
    ],
    ['fe80::1%eth0/128', '"fe80::1%eth0/128" has a zone index (%), which a CIDR cannot hold'],
    ['10.0.0.0/8,', 'an entry is empty (two commas in a row, or one at an end)'],
    ['10.0.0.0/8,,::1', 'an entry is empty (two commas in a row, or one at an end)'],
  ])('%j is refused with a message that names the entry', (text, message) => {
    expect(() => parseCidrList(text)).toThrow(new Error(message));
  });
});

describe('cidrContains', () => {
  test('matches by prefix, and IPv4-mapped addresses match IPv4 CIDRs', () => {
    const [ten, loop6, ula, all4] = parseCidrList('10.0.0.0/8, ::1/128, fc00::/7, 0.0.0.0/0') as [
      ReturnType<typeof parseCidrList>[number],
      ReturnType<typeof parseCidrList>[number],
      ReturnType<typeof parseCidrList>[number],
      ReturnType<typeof parseCidrList>[number],
    ];
    expect(cidrContains(ten, '10.255.0.1')).toBe(true);
    expect(cidrContains(ten, '11.0.0.0')).toBe(false);
    expect(cidrContains(ten, '::ffff:10.1.2.3')).toBe(true);
    expect(cidrContains(ten, '::ffff:a01:203')).toBe(true);
    expect(cidrContains(ten, '64:ff9b::a01:203')).toBe(false);
    expect(cidrContains(loop6, '::1')).toBe(true);
    expect(cidrContains(loop6, '0:0:0:0:0:0:0:1')).toBe(true);
    expect(cidrContains(loop6, '127.0.0.1')).toBe(false);
    expect(cidrContains(ula, 'fdff:ffff::1')).toBe(true);
    expect(cidrContains(ula, 'fe00::1')).toBe(false);
    expect(cidrContains(all4, '203.0.113.9')).toBe(true);
    expect(() => cidrContains(ten, 'localhost')).toThrow('"localhost" is not an IP address');
  });

  test('agrees with net.BlockList on random CIDRs and addresses of both families', () => {
    const v6Group = fc.integer({ min: 0, max: 0xffff }).map((g) => g.toString(16));
    const ipv6 = fc.array(v6Group, { minLength: 8, maxLength: 8 }).map((groups) => groups.join(':'));
    // An IPv6 address written the way the URL parser writes it (compressed), or with a dotted tail.
    const spelled = fc.oneof(
      ipv6,
      ipv6.map((ip) => new URL(`http://[${ip}]/`).hostname.slice(1, -1)),
      fc.tuple(ipv6, ipv4).map(([ip, v4]) => `${ip.split(':').slice(0, 6).join(':')}:${v4}`),
      ipv4.map((v4) => `::ffff:${v4}`),
    );
    const cidr = fc.oneof(
      fc
        .tuple(ipv4, fc.integer({ min: 0, max: 32 }))
        .map(([ip, prefix]) => ({ ip, prefix, family: 4 as const })),
      fc
        .tuple(spelled, fc.integer({ min: 0, max: 128 }))
        .map(([ip, prefix]) => ({ ip, prefix, family: 6 as const })),
    );
    fc.assert(
      fc.property(cidr, fc.array(fc.oneof(ipv4, spelled), { maxLength: 8 }), (rule, probes) => {
        const blockList = new BlockList();
        blockList.addSubnet(rule.ip, rule.prefix, rule.family === 4 ? 'ipv4' : 'ipv6');
        // BlockList masks host bits; the parser refuses them, so it is given the network.
        const [parsed] = parseCidrList(`${maskedNetwork(rule.ip, rule.prefix, rule.family)}/${rule.prefix}`);
        // Probes near the network matter most: the rule's own address is one of them.
        for (const probe of [rule.ip, ...probes]) {
          const family = probe.includes(':') ? 'ipv6' : 'ipv4';
          expect(cidrContains(parsed!, probe)).toBe(blockList.check(probe, family));
        }
      }),
      { numRuns: 2000 },
    );
  });
});

/** The network of `ip`/`prefix`, computed apart from the module under test (BigInt arithmetic). */
function maskedNetwork(ip: string, prefix: number, family: 4 | 6): string {
  const bits = family === 4 ? 32 : 128;
  let value: bigint;
  if (family === 4) {
    value = parts(ip).reduce((acc, p) => (acc << 8n) | BigInt(p), 0n);
  } else {
    const full = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
    const [head = '', tail = ''] = full.includes('::') ? full.split('::') : [full, ''];
    const h = head === '' ? [] : head.split(':');
    const t = tail === '' ? [] : tail.split(':');
    const groups = full.includes('::')
      ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t]
      : h;
    value = groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
  }
  const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix);
  const network = value & mask;
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => Number((network >> s) & 0xffn)).join('.');
  return Array.from({ length: 8 }, (_, i) => ((network >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(
    ':',
  );
}

describe('restrictedRange', () => {
  test.each([
    ['0.0.0.0', 'unspecified address'],
    ['0.1.2.3', '"this network" address (0.0.0.0/8)'],
    ['10.0.0.5', 'private address (RFC 1918)'],
    ['172.16.0.1', 'private address (RFC 1918)'],
    ['172.31.255.255', 'private address (RFC 1918)'],
    ['192.168.1.1', 'private address (RFC 1918)'],
    ['100.64.0.1', 'shared address (carrier-grade NAT, 100.64.0.0/10)'],
    ['127.0.0.1', 'loopback address'],
    ['127.255.255.254', 'loopback address'],
    ['169.254.169.254', 'link-local address (the cloud instance metadata service)'],
    ['169.254.0.1', 'link-local address (169.254.0.0/16)'],
    ['192.0.0.8', 'IETF protocol assignment (192.0.0.0/24)'],
    ['192.0.2.1', 'documentation address (TEST-NET-1, 192.0.2.0/24)'],
    ['198.51.100.7', 'documentation address (TEST-NET-2, 198.51.100.0/24)'],
    ['203.0.113.200', 'documentation address (TEST-NET-3, 203.0.113.0/24)'],
    ['192.88.99.1', '6to4 relay anycast address (192.88.99.0/24, deprecated)'],
    ['198.18.0.1', 'benchmarking address (198.18.0.0/15)'],
    ['198.19.255.255', 'benchmarking address (198.18.0.0/15)'],
    ['224.0.0.251', 'multicast address'],
    ['239.255.255.250', 'multicast address'],
    ['240.0.0.1', 'reserved address (240.0.0.0/4)'],
    ['255.255.255.255', 'broadcast address'],
    ['::', 'unspecified address'],
    ['::1', 'loopback address'],
    ['0:0:0:0:0:0:0:1', 'loopback address'],
    ['fc00::1', 'unique-local address (fc00::/7)'],
    ['fd12:3456::1', 'unique-local address (fc00::/7)'],
    ['fe80::1', 'link-local address (fe80::/10)'],
    ['fe80::1%eth0', 'link-local address (fe80::/10)'],
    ['febf::1', 'link-local address (fe80::/10)'],
    ['fec0::1', 'site-local address (fec0::/10, deprecated)'],
    ['ff02::1', 'multicast address'],
    ['2001:db8::1', 'documentation address (2001:db8::/32)'],
    ['3fff::1', 'documentation address (3fff::/20)'],
    ['2001:2::1', 'benchmarking address (2001:2::/48)'],
    ['100::1', 'discard-only address (100::/64)'],
    ['5f00::1', 'SRv6 segment identifier (5f00::/16)'],
    ['4000::1', 'unallocated address (outside 2000::/3, the global unicast space)'],
    ['::2:0:0:1', 'unallocated address (outside 2000::/3, the global unicast space)'],
    // IPv4 inside IPv6: judged by the IPv4 address.
    ['::ffff:127.0.0.1', 'loopback address'],
    ['::ffff:7f00:1', 'loopback address'],
    ['::ffff:a00:5', 'private address (RFC 1918)'],
    ['::ffff:169.254.169.254', 'link-local address (the cloud instance metadata service)'],
    ['::127.0.0.1', 'loopback address'],
    ['::a00:5', 'private address (RFC 1918)'],
    ['::ffff:0:127.0.0.1', 'loopback address'],
    ['::ffff:0:a9fe:a9fe', 'link-local address (the cloud instance metadata service)'],
    ['64:ff9b::7f00:1', 'loopback address'],
    ['64:ff9b::10.0.0.5', 'private address (RFC 1918)'],
    ['64:ff9b:1::a9fe:a9fe', 'link-local address (the cloud instance metadata service)'],
    // 64:ff9b:1::/48 cut at /48: 10.0.0.5 sits in bytes 6-7 and 9-10, around the "u" octet.
    ['64:ff9b:1:a00:0:500::', 'private address (RFC 1918)'],
    // ... at /64: bytes 9-12.
    ['64:ff9b:1:0:a:0:500:0', 'private address (RFC 1918)'],
    ['2002:7f00:1::', 'loopback address'],
    ['2002:a9fe:a9fe::1', 'link-local address (the cloud instance metadata service)'],
    // Teredo, client 10.0.0.5 stored inverted (f5ff:fffa).
    ['2001:0:4136:e378:8000:63bf:f5ff:fffa', 'private address (RFC 1918)'],
  ])('%s is a %s', (ip, range) => {
    expect(restrictedRange(ip)).toBe(range);
  });

  test.each([
    '8.8.8.8',
    '1.1.1.1',
    '9.255.255.255',
    '11.0.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '169.253.255.255',
    '169.255.0.0',
    '192.167.255.255',
    '192.169.0.0',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('%s is an ordinary public address', (ip) => {
    expect(restrictedRange(ip)).toBeNull();
  });

  test('refuses to judge what is not an address', () => {
    for (const text of ['localhost', '127.1', '[::1]', '', '1.2.3.4/32']) {
      expect(() => restrictedRange(text)).toThrow(`"${text}" is not an IP address`);
    }
  });

  // An independent table (IANA's special-purpose registry, written as CIDRs) checked by BlockList.
  test('restricts exactly the IPv4 special-purpose ranges (BlockList as the model)', () => {
    const model = new BlockList();
    for (const cidr of [
      '0.0.0.0/8',
      '10.0.0.0/8',
      '100.64.0.0/10',
      '127.0.0.0/8',
      '169.254.0.0/16',
      '172.16.0.0/12',
      '192.0.0.0/24',
      '192.0.2.0/24',
      '192.88.99.0/24',
      '192.168.0.0/16',
      '198.18.0.0/15',
      '198.51.100.0/24',
      '203.0.113.0/24',
      '224.0.0.0/3',
    ]) {
      const [network = '', prefix] = cidr.split('/');
      model.addSubnet(network, Number(prefix), 'ipv4');
    }
    fc.assert(
      fc.property(ipv4, (ip) => {
        expect(restrictedRange(ip) !== null).toBe(model.check(ip, 'ipv4'));
      }),
      { numRuns: 10000 },
    );
  });

  test('every IPv6 spelling of an IPv4 address is judged as that address', () => {
    fc.assert(
      fc.property(ipv4, (ip) => {
        const [a, b, c, d] = parts(ip);
        const expected = restrictedRange(ip);
        for (const spelling of [
          `::ffff:${ip}`,
          `::ffff:${hex(a, b)}:${hex(c, d)}`,
          `::ffff:0:${ip}`,
          `64:ff9b::${ip}`,
          `2002:${hex(a, b)}:${hex(c, d)}::1`,
        ]) {
          expect([spelling, restrictedRange(spelling)]).toEqual([spelling, expected]);
        }
        // In the local-use NAT64 prefix, a.0.0.0 also reads as 0.0.0.a cut at /64: refused either way.
        const localUse = restrictedRange(`64:ff9b:1::${ip}`);
        if (b !== 0 || c !== 0 || d !== 0) expect(localUse).toBe(expected);
        else expect(localUse).not.toBeNull();
        // ::/96 holds :: and ::1 as themselves; every other IPv4-compatible address is its IPv4 one.
        if (a !== 0) expect(restrictedRange(`::${ip}`)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('checkAddress', () => {
  test.each([
    ['10.0.0.5', '10.0.0.5 is a private address (RFC 1918); EGRESS_PRIVATE_ALLOW does not include it'],
    [
      '169.254.169.254',
      '169.254.169.254 is a link-local address (the cloud instance metadata service); EGRESS_PRIVATE_ALLOW does not include it',
    ],
    [
      '100.64.0.1',
      '100.64.0.1 is a shared address (carrier-grade NAT, 100.64.0.0/10); EGRESS_PRIVATE_ALLOW does not include it',
    ],
    ['0.0.0.0', '0.0.0.0 is an unspecified address; EGRESS_PRIVATE_ALLOW does not include it'],
    [
      '192.0.0.1',
      '192.0.0.1 is an IETF protocol assignment (192.0.0.0/24); EGRESS_PRIVATE_ALLOW does not include it',
    ],
    ['::1', '::1 is a loopback address; EGRESS_PRIVATE_ALLOW does not include it'],
    [
      '::ffff:7f00:1',
      '::ffff:7f00:1 (127.0.0.1) is a loopback address; EGRESS_PRIVATE_ALLOW does not include it',
    ],
    [
      '64:ff9b::a9fe:a9fe',
      '64:ff9b::a9fe:a9fe (169.254.169.254) is a link-local address (the cloud instance metadata service); EGRESS_PRIVATE_ALLOW does not include it',
    ],
  ])('%s is refused, naming the rule', (ip, message) => {
    let caught: unknown;
    try {
      checkAddress(ip, NO_ALLOW);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(EgressRefused);
    expect(caught).toBeInstanceOf(DomainError);
    expect(caught).toMatchObject({ name: 'EgressRefused', status: 403, message });
  });

  test('a CIDR of EGRESS_PRIVATE_ALLOW lets its addresses through, however they are spelled', () => {
    const policy = { privateAllow: parseCidrList('127.0.0.1/32, 10.0.0.0/8, fd00::/8') };
    for (const ip of [
      '127.0.0.1',
      '10.200.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.5',
      '64:ff9b::a00:5',
      'fd00::5',
    ]) {
      expect(() => checkAddress(ip, policy)).not.toThrow();
    }
    for (const ip of ['127.0.0.2', '::1', '192.168.0.1', '169.254.169.254', '::ffff:7f00:2', 'fc00::1']) {
      expect(() => checkAddress(ip, policy)).toThrow(EgressRefused);
    }
    expect(() => checkAddress('8.8.8.8', NO_ALLOW)).not.toThrow();
    expect(() => checkAddress('2606:4700:4700::1111', NO_ALLOW)).not.toThrow();
  });

  test('what is not an address is refused, not judged public', () => {
    expect(() => checkAddress('vendor.test', NO_ALLOW)).toThrow(
      new EgressRefused('"vendor.test" is not an IP address'),
    );
  });

  test('EgressFailed is a 502 that keeps the cause for the logs', () => {
    const cause = new Error('ECONNRESET');
    const failed = new EgressFailed('https://vendor.test closed the connection', cause);
    expect(failed).toBeInstanceOf(DomainError);
    expect(failed).toMatchObject({ name: 'EgressFailed', status: 502, cause });
  });
});
