import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';

/**
 * A Temporal call still backing off (Temporal unreachable) when its connection is closed, as when an
 * API stops, or a test closes an app whose run start is still retrying: the SDK's retry interceptor
 * asks the closed channel for a new call from a timer, which throws "Channel has been shut down" as
 * an uncaught exception. The service's connections (engine/workflows/temporal-workflow-runner.ts)
 * answer that late attempt with CANCELLED instead. Each case runs in a process of its own, so an
 * uncaught exception shows as its exit status.
 */

const ROOT = path.resolve(__dirname, '..', '..');

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function run(connect: string, env: Record<string, string> = {}) {
  const script = `
    const { Connection } = require('@temporalio/client');
    const runner = require(${JSON.stringify(path.join(ROOT, 'engine/workflows/temporal-workflow-runner.ts'))});
    (async () => {
      const connection = ${connect};
      if (process.env.CLOSE_FIRST) {
        await connection.close();
        const late = await connection.workflowService.getSystemInfo({}).then(
          () => 'answered',
          (error) => 'rejected: ' + String(error.message).slice(0, 80),
        );
        console.log(late);
        await new Promise((resolve) => setTimeout(resolve, 500));
        console.log('still running');
        return;
      }
      const call = connection.workflowService.getSystemInfo({}).then(
        () => 'answered',
        (error) => 'rejected: ' + String(error.message).slice(0, 80),
      );
      // The first attempt fails at once (nothing listens); its retry waits on a timer.
      await new Promise((resolve) => setTimeout(resolve, 40));
      await connection.close();
      console.log(await call);
      // Past the retries' back-off, where the SDK's timer fires.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      console.log('still running');
    })();
  `;
  return spawnSync(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

test('a retry that outlives its closed connection ends the call as CANCELLED instead of throwing', async () => {
  const port = await closedPort();
  const guarded = run(`runner.lazyTemporalConnection('127.0.0.1:${port}')`);
  expect({ status: guarded.status, stderr: guarded.stderr.slice(-800) }).toEqual({ status: 0, stderr: '' });
  expect(guarded.stdout).toMatch(/rejected: .*(closed|CANCELLED|Cancelled)/i);
  expect(guarded.stdout).toMatch(/still running/);
});

test('the SDK’s own connection, for comparison, throws from the retry timer (what the guard is for)', async () => {
  const port = await closedPort();
  const bare = run(`Connection.lazy({ address: '127.0.0.1:${port}' })`);
  expect(bare.status).not.toBe(0);
  expect(bare.stderr).toMatch(/Channel has been shut down/);
});

test('a call made after the connection closed is refused at once, as without the guard', async () => {
  const port = await closedPort();
  const late = run(`runner.lazyTemporalConnection('127.0.0.1:${port}')`, { CLOSE_FIRST: '1' });
  expect({ status: late.status, stderr: late.stderr.slice(-800) }).toEqual({ status: 0, stderr: '' });
  expect(late.stdout).toMatch(/rejected: Channel has been shut down/);
  expect(late.stdout).toMatch(/still running/);
});
