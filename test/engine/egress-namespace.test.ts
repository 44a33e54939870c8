import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ProbeCall, ProbeReport, ProbeSpec } from '../support/egress-probe';

/**
 * The egress policy against addresses that are not loopback: 10.0.0.5 (RFC 1918), 169.254.169.254
 * (cloud metadata) and 100.64.0.1 (CGNAT). No test may send a packet off this machine, so servers
 * on those addresses run inside a network namespace this test creates (`unshare --net`), which has
 * no interface but its own `lo` and a dummy: whatever the client does, nothing can leave. The probe
 * (test/support/egress-probe.ts) also refuses to start if it finds any other interface.
 *
 * A refusal is shown to be the policy's by the same call succeeding once EGRESS_PRIVATE_ALLOW
 * includes the address, and to come before sending by the server's connection count.
 */

const ROOT = path.resolve(__dirname, '../..');
const PORT = 8080;
const SERVED = ['10.0.0.5', '169.254.169.254', '100.64.0.1'];

/**
 * Inside the namespace: loopback up, then the addresses on a dummy interface (or on `lo` where the
 * kernel has no dummy driver, as in some VMs; either way they exist only in this namespace).
 */
const SETUP = `set -e
ip link set lo up
if ip link add d0 type dummy 2>/dev/null; then ip link set d0 up; dev=d0; else dev=lo; fi
for address in ${SERVED.join(' ')}; do ip addr add "$address/32" dev "$dev"; done
exec "$1" --import tsx "$2" "$3"`;

/** One line that says what is missing, rather than a skip nobody notices. */
function requireNamespaces(): void {
  const unshare = spawnSync('unshare', ['--net', 'true'], { encoding: 'utf8' });
  if (unshare.error) {
    throw new Error(
      `egress namespace test: \`unshare\` (util-linux) is not available (${unshare.error.message})`,
    );
  }
  if (unshare.status !== 0) {
    throw new Error(
      `egress namespace test: \`unshare --net\` failed (${unshare.stderr.trim()}); it needs root`,
    );
  }
  const ip = spawnSync('ip', ['-V'], { encoding: 'utf8' });
  if (ip.error)
    throw new Error(`egress namespace test: \`ip\` (iproute2) is not available (${ip.error.message})`);
}

async function inNamespace(calls: ProbeCall[]): Promise<ProbeReport> {
  requireNamespaces();
  const spec: ProbeSpec = { requireNamespace: true, serve: SERVED, port: PORT, calls };
  const { stdout } = await promisify(execFile)(
    'unshare',
    [
      '--net',
      'sh',
      '-c',
      SETUP,
      'sh',
      path.join(ROOT, 'node_modules/.bin/node'),
      path.join(ROOT, 'test/support/egress-probe.ts'),
      JSON.stringify(spec),
    ],
    { cwd: ROOT, timeout: 30_000 },
  );
  return JSON.parse(stdout) as ProbeReport;
}

const NOT_ALLOWED = 'EGRESS_PRIVATE_ALLOW does not include it';
const none = { '10.0.0.5': 0, '169.254.169.254': 0, '100.64.0.1': 0 };

describe('egress to non-loopback addresses, inside a network namespace', () => {
  test('refused by default, naming the rule, with no connection; allowed once EGRESS_PRIVATE_ALLOW includes them', async () => {
    const report = await inNamespace([
      { url: `http://10.0.0.5:${PORT}/` },
      { url: `http://169.254.169.254:${PORT}/latest/meta-data/` },
      { url: `http://100.64.0.1:${PORT}/` },
      { url: `http://metadata.test:${PORT}/`, resolve: { 'metadata.test': ['169.254.169.254'] } },
      { url: `http://[::ffff:10.0.0.5]:${PORT}/` },
      { url: `http://10.0.0.5:${PORT}/`, privateAllow: '192.168.0.0/16, 10.0.0.4/32' },
      { url: `http://10.0.0.5:${PORT}/`, privateAllow: '10.0.0.0/8' },
      { url: `http://169.254.169.254:${PORT}/latest/meta-data/`, privateAllow: '169.254.169.254' },
      { url: `http://100.64.0.1:${PORT}/`, privateAllow: '100.64.0.0/10' },
      { url: `http://[::ffff:10.0.0.5]:${PORT}/`, privateAllow: '10.0.0.0/8' },
      {
        url: `http://10.0.0.5:${PORT}/redirect?to=${encodeURIComponent(`http://169.254.169.254:${PORT}/`)}`,
        privateAllow: '10.0.0.0/8',
      },
    ]);
    const refused = (message: string) => ({ error: { name: 'EgressRefused', status: 403, message } });
    expect(report).toEqual([
      { ...refused(`10.0.0.5 is a private address (RFC 1918); ${NOT_ALLOWED}`), connections: none },
      {
        ...refused(
          `169.254.169.254 is a link-local address (the cloud instance metadata service); ${NOT_ALLOWED}`,
        ),
        connections: none,
      },
      {
        ...refused(`100.64.0.1 is a shared address (carrier-grade NAT, 100.64.0.0/10); ${NOT_ALLOWED}`),
        connections: none,
      },
      {
        ...refused(
          'the host metadata.test resolves to a refused address: ' +
            `169.254.169.254 is a link-local address (the cloud instance metadata service); ${NOT_ALLOWED}`,
        ),
        connections: none,
      },
      {
        ...refused(`::ffff:a00:5 (10.0.0.5) is a private address (RFC 1918); ${NOT_ALLOWED}`),
        connections: none,
      },
      { ...refused(`10.0.0.5 is a private address (RFC 1918); ${NOT_ALLOWED}`), connections: none },
      {
        status: 200,
        body: 'served by 10.0.0.5',
        address: '10.0.0.5',
        connections: { ...none, '10.0.0.5': 1 },
      },
      {
        status: 200,
        body: 'served by 169.254.169.254',
        address: '169.254.169.254',
        connections: { ...none, '10.0.0.5': 1, '169.254.169.254': 1 },
      },
      {
        status: 200,
        body: 'served by 100.64.0.1',
        address: '100.64.0.1',
        connections: { '10.0.0.5': 1, '169.254.169.254': 1, '100.64.0.1': 1 },
      },
      {
        status: 200,
        body: 'served by 10.0.0.5',
        address: '::ffff:a00:5',
        connections: { '10.0.0.5': 2, '169.254.169.254': 1, '100.64.0.1': 1 },
      },
      // The redirect's first hop is allowed and served; the second, to the metadata address, is not.
      {
        ...refused(
          `169.254.169.254 is a link-local address (the cloud instance metadata service); ${NOT_ALLOWED}`,
        ),
        connections: { '10.0.0.5': 3, '169.254.169.254': 1, '100.64.0.1': 1 },
      },
    ]);
  });

  test('IPv6 addresses that carry a restricted IPv4 address, and IPv6 private ranges, are refused', async () => {
    const cases: Array<[string, string]> = [
      ['64:ff9b::a00:5', '64:ff9b::a00:5 (10.0.0.5) is a private address (RFC 1918)'],
      ['64:ff9b::127.0.0.1', '64:ff9b::7f00:1 (127.0.0.1) is a loopback address'],
      [
        '64:ff9b:1::a9fe:a9fe',
        '64:ff9b:1::a9fe:a9fe (169.254.169.254) is a link-local address (the cloud instance metadata service)',
      ],
      ['::a00:5', '::a00:5 (10.0.0.5) is a private address (RFC 1918)'],
      ['::ffff:0:a00:5', '::ffff:0:a00:5 (10.0.0.5) is a private address (RFC 1918)'],
      [
        '2002:a9fe:a9fe::1',
        '2002:a9fe:a9fe::1 (169.254.169.254) is a link-local address (the cloud instance metadata service)',
      ],
      [
        '2001:0:4136:e378:8000:63bf:f5ff:fffa',
        '2001:0:4136:e378:8000:63bf:f5ff:fffa (10.0.0.5) is a private address (RFC 1918)',
      ],
      ['fd00::1', 'fd00::1 is a unique-local address (fc00::/7)'],
      ['fe80::1', 'fe80::1 is a link-local address (fe80::/10)'],
      ['fec0::1', 'fec0::1 is a site-local address (fec0::/10, deprecated)'],
      ['2001:db8::1', '2001:db8::1 is a documentation address (2001:db8::/32)'],
    ];
    const report = await inNamespace([
      ...cases.map(([host]) => ({ url: `http://[${host}]:${PORT}/` })),
      // Allowed, the NAT64 address is tried and fails as unreachable (the namespace has no route):
      // the refusal above was the policy's, not the network's.
      { url: `http://[64:ff9b::a00:5]:${PORT}/`, privateAllow: '10.0.0.0/8' },
    ]);
    expect(report.slice(0, cases.length).map((result) => result.error?.message)).toEqual(
      cases.map(([, reason]) => `${reason}; ${NOT_ALLOWED}`),
    );
    expect(report.at(-1)).toEqual({
      error: {
        name: 'EgressFailed',
        status: 502,
        message: 'http://[64:ff9b::a00:5]:8080 could not be reached (ENETUNREACH)',
      },
      connections: none,
    });
  });
});
