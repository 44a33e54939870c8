import { readFileSync } from 'node:fs';
import http from 'node:http';
import { egressFetch } from '../../engine/integrations/egress-http';
import { parseCidrList } from '../../engine/integrations/egress-policy';

/**
 * A child process for the egress tests that need a process of their own: one started inside a
 * network namespace (test/engine/egress-namespace.test.ts), where it serves on 10.0.0.5 and
 * 169.254.169.254 and calls them, and one started with proxy variables in its environment, which
 * Node reads only at start-up. It takes a ProbeSpec as JSON in argv[2] and prints a ProbeReport.
 */

export interface ProbeCall {
  url: string;
  /** EGRESS_PRIVATE_ALLOW as text. */
  privateAllow?: string;
  /** Answers for host names, in place of the resolver. */
  resolve?: Record<string, string[]>;
  /** `global-agent`: a plain http.get, the control that shows the environment's proxy is live. */
  via?: 'egress' | 'global-agent';
}

export interface ProbeSpec {
  /** Refuse to run unless the only interfaces are `lo` and the test's dummy (a fresh namespace). */
  requireNamespace?: boolean;
  /** Addresses to serve on (port `port`); `/redirect?to=URL` answers 302 to URL, anything else 200. */
  serve?: string[];
  port?: number;
  calls: ProbeCall[];
}

export interface ProbeResult {
  status?: number;
  body?: string;
  address?: string;
  error?: { name: string; status: number | undefined; message: string };
  /** Connections each served address had accepted when the call ended. */
  connections: Record<string, number>;
}

export type ProbeReport = ProbeResult[];

function interfaces(): string[] {
  return readFileSync('/proc/net/dev', 'utf8')
    .split('\n')
    .slice(2)
    .map((line) => line.split(':')[0]?.trim() ?? '')
    .filter((name) => name !== '');
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as ProbeSpec;
  if (spec.requireNamespace) {
    const found = interfaces().filter((name) => name !== 'lo' && name !== 'd0');
    if (found.length > 0) throw new Error(`not in a fresh network namespace: interfaces ${found.join(', ')}`);
  }
  const connections: Record<string, number> = {};
  const servers = await Promise.all(
    (spec.serve ?? []).map(async (address) => {
      connections[address] = 0;
      const server = http.createServer((req, res) => {
        const url = new URL(req.url ?? '/', 'http://probe');
        const to = url.searchParams.get('to');
        if (url.pathname === '/redirect' && to !== null) res.writeHead(302, { location: to }).end();
        else res.end(`served by ${address}`);
      });
      server.on('connection', () => (connections[address] = (connections[address] ?? 0) + 1));
      await new Promise<void>((resolve) => server.listen(spec.port ?? 8080, address, resolve));
      return server;
    }),
  );
  const report: ProbeReport = [];
  for (const call of spec.calls) {
    const result: ProbeResult = { connections: {} };
    try {
      if (call.via === 'global-agent') {
        result.status = await new Promise<number>((resolve, reject) =>
          http.get(call.url, (res) => resolve(res.resume().statusCode ?? 0)).on('error', reject),
        );
      } else {
        const resolve = call.resolve;
        const answer = await egressFetch(
          { method: 'GET', url: new URL(call.url), headers: {}, timeoutMs: 5_000 },
          {
            privateAllow: parseCidrList(call.privateAllow ?? ''),
            maxResponseBytes: 1_000_000,
            extraCa: null,
          },
          resolve === undefined
            ? {}
            : {
                lookup: async (name) =>
                  (resolve[name] ?? []).map((address) => ({
                    address,
                    family: address.includes(':') ? 6 : 4,
                  })),
              },
        );
        Object.assign(result, {
          status: answer.status,
          body: answer.body.toString(),
          address: answer.address,
        });
      }
    } catch (error) {
      const { name, message, status } = error as Error & { status?: number };
      result.error = { name, status, message };
    }
    result.connections = { ...connections };
    report.push(result);
  }
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  // Exit once the report is out: a connection some call left open must not keep the test waiting.
  process.stdout.write(JSON.stringify(report), () => process.exit(0));
}

main().catch((error: unknown) => {
  process.stderr.write(`egress probe: ${(error as Error).message}\n`);
  process.exit(1);
});
