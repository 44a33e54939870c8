import net from 'node:net';
import { ephemeralRange, freePorts } from '../support/free-ports';

/**
 * The ports the suites give the servers they start. A fresh-clone run once lost the Temporal dev
 * server's UI port to another jest worker's outgoing connection between the pick and the bind.
 */
describe('freePorts', () => {
  const [low, high] = ephemeralRange();

  function outgoingLocalPort(port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: '127.0.0.1', port }, () => {
        const local = socket.localPort!;
        socket.destroy();
        resolve(local);
      });
      socket.once('error', reject);
    });
  }

  test('the kernel range is read, and no port picked lies in it, so no outgoing connection can take one', async () => {
    expect(low).toBeGreaterThan(1024);
    expect(high).toBeGreaterThanOrEqual(low);
    const ports = await freePorts(40);
    expect(new Set(ports).size).toBe(40);
    for (const port of ports) {
      expect(port >= low && port <= high).toBe(false);
      expect(port).toBeGreaterThanOrEqual(10_000);
    }
    // What the old pick (listen on port 0) gave: a port an outgoing connection could take next.
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const local = await outgoingLocalPort((server.address() as net.AddressInfo).port);
    await new Promise((resolve) => server.close(resolve));
    expect(local >= low && local <= high).toBe(true);
  });

  test('each port is free to bind, a span is consecutive free ports, and blocks do not overlap', async () => {
    const firsts = await freePorts(5, { span: 2 });
    const all = firsts.flatMap((port) => [port, port + 1]);
    expect(new Set(all).size).toBe(10);
    const servers = await Promise.all(
      all.map(
        (port) =>
          new Promise<net.Server>((resolve, reject) => {
            const server = net.createServer();
            server.once('error', reject);
            server.listen(port, '127.0.0.1', () => resolve(server));
          }),
      ),
    );
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  });

  test('a ceiling is kept (Temporal stores its members ports as SMALLINT)', async () => {
    const ports = await freePorts(20, { highest: 32_767 });
    for (const port of ports) expect(port).toBeLessThanOrEqual(32_767);
  });
});
