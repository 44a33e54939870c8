import { type ChildProcess, fork } from 'node:child_process';
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Fastify from 'fastify';
import { buildApp } from '../api/app';
import { createAccount, createApiKey } from '../engine/identity/account-store';
import { connectDatabase, migrateLatest } from '../engine/platform/database';
import { startEmbeddedPostgres } from '../ops/embedded/embedded-postgres';
import type { WorkflowRunner } from '../engine/workflows/workflow-runner';
import { noWorkflowSchedules } from '../engine/workflows/workflow-schedules';

const MiB = 1024 * 1024;
/** The largest file: 300 MB. */
const FILE_BYTES = 314_572_800;
const PART_BYTES = 32 * MiB;
const RSS_SAMPLE_MS = 5;
const MAX_PAYLOAD_BYTES = 104_857_600;

/**
 * The file's bytes, made on the fly and the same on every call: an AES-256-CTR keystream (fast,
 * incompressible), so 300 MB never sit in the benchmark's memory either.
 */
function contentStream(key: Buffer, iv: Buffer): (length: number) => Generator<Buffer> {
  const cipher = createCipheriv('aes-256-ctr', key, iv);
  const zeros = Buffer.alloc(MiB);
  return function* next(length: number) {
    for (let left = length; left > 0; left -= MiB) {
      yield cipher.update(left >= MiB ? zeros : zeros.subarray(0, left));
    }
  };
}

/** One part as multipart/form-data: the fields, then the `chunk` file field (as clients send it). */
function partBody(
  fields: Record<string, string>,
  bytes: Generator<Buffer>,
  byteLength: number,
  onBytes: (piece: Buffer) => void,
): { body: ReadableStream<Uint8Array>; headers: Record<string, string> } {
  const boundary = `----pas-bench-${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    Object.entries(fields)
      .map(
        ([name, value]) =>
          `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
      )
      .join('') +
      `--${boundary}\r\nContent-Disposition: form-data; name="chunk"; filename="part"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  let stage: 'head' | 'bytes' | 'tail' | 'done' = 'head';
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (stage === 'head') {
        controller.enqueue(head);
        stage = 'bytes';
        return;
      }
      if (stage === 'bytes') {
        const next = bytes.next();
        if (!next.done) {
          onBytes(next.value);
          controller.enqueue(next.value);
          return;
        }
        stage = 'tail';
      }
      if (stage === 'tail') {
        controller.enqueue(tail);
        stage = 'done';
        return;
      }
      controller.close();
    },
  });
  return {
    body,
    headers: {
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(head.length + byteLength + tail.length),
    },
  };
}

/**
 * Reads a download-in-parts answer as it arrives: the small fields before `"chunk":"` are parsed
 * as JSON, the Base64 after it is decoded piece by piece into `onBytes`. The benchmark runs in the
 * server's process, so it must not hold a 43 MB answer either.
 */
async function readPart(
  response: Response,
  onBytes: (piece: Buffer) => void,
): Promise<{ fields: Record<string, unknown>; bytes: number }> {
  const marker = '"chunk":"';
  let head = '';
  let inChunk = false;
  let carry = '';
  let bytes = 0;
  const decoder = new TextDecoder();
  for await (const piece of response.body as unknown as AsyncIterable<Uint8Array>) {
    let text = decoder.decode(piece, { stream: true });
    if (!inChunk) {
      head += text;
      const at = head.indexOf(marker);
      if (at < 0) continue;
      text = head.slice(at + marker.length);
      head = head.slice(0, at);
      inChunk = true;
    }
    text = carry + text;
    const end = text.indexOf('"');
    const base64 = end >= 0 ? text.slice(0, end) : text;
    const whole = base64.length - (base64.length % 4);
    const decoded = Buffer.from(base64.slice(0, whole), 'base64');
    bytes += decoded.length;
    onBytes(decoded);
    carry = base64.slice(whole);
    if (end >= 0) break;
  }
  if (carry) throw new Error('Base64 of a part did not end on a quantum');
  // `{…,"chunk":"` closed without the chunk is the JSON of the other fields.
  return { fields: JSON.parse(head.replace(/,$/, '') + '}') as Record<string, unknown>, bytes };
}

// ---------------------------------------------------------------------------------------------
// The HTTP client runs in a child process, so the RSS sampled in this process is the server's own.

const CLIENT_FLAG = '--file-upload-bench-client';

type ClientTask =
  | {
      kind: 'upload';
      url: string;
      authorization: string;
      uploadId: string;
      fileBytes: number;
      /** Key and IV (hex) of the keystream that makes the file's bytes. */
      seed: { key: string; iv: string };
    }
  | { kind: 'download'; urls: string[]; authorization: string; encoding: string };

interface ClientResult {
  sha256: string;
  bytes: number;
  fileId: string | null;
}

/** Sends a file in parts of PART_BYTES as multipart uploads, streaming each part's bytes. */
async function uploadFile(task: Extract<ClientTask, { kind: 'upload' }>): Promise<ClientResult> {
  const next = contentStream(Buffer.from(task.seed.key, 'hex'), Buffer.from(task.seed.iv, 'hex'));
  const parts = Math.ceil(task.fileBytes / PART_BYTES);
  const hash = createHash('sha256');
  let fileId: string | null = null;
  for (let part = 1; part <= parts; part++) {
    const length = Math.min(PART_BYTES, task.fileBytes - (part - 1) * PART_BYTES);
    const fields: Record<string, string> = {
      upload_id: task.uploadId,
      part_number: String(part),
      total_parts: String(parts),
      ...(part === 1 ? { name: 'bench.bin' } : {}),
    };
    const { body, headers } = partBody(fields, next(length), length, (piece) => hash.update(piece));
    const res = await fetch(task.url, {
      method: 'POST',
      headers: { ...headers, authorization: task.authorization },
      body,
      duplex: 'half',
    } as RequestInit);
    const answer = (await res.json()) as { status?: string; file?: { id: string; size: number } };
    if (res.status !== 200) throw new Error(`part ${part} answered ${res.status}: ${JSON.stringify(answer)}`);
    if (part === parts && answer.file) {
      if (answer.file.size !== task.fileBytes) throw new Error(`the file has ${answer.file.size} bytes`);
      fileId = answer.file.id;
    }
  }
  return { fileId, bytes: task.fileBytes, sha256: hash.digest('hex') };
}

/** Downloads the parts at `urls` in order, decoding their Base64 as it streams. */
async function downloadFile(task: Extract<ClientTask, { kind: 'download' }>): Promise<ClientResult> {
  const hash = createHash('sha256');
  let bytes = 0;
  for (const url of task.urls) {
    const res = await fetch(url, {
      headers: { authorization: task.authorization, 'accept-encoding': task.encoding },
    });
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    bytes += (await readPart(res, (piece) => hash.update(piece))).bytes;
  }
  return { fileId: null, bytes, sha256: hash.digest('hex') };
}

if (process.argv.includes(CLIENT_FLAG)) {
  process.on('message', (task: ClientTask) => {
    (task.kind === 'upload' ? uploadFile(task) : downloadFile(task)).then(
      (result) => process.send!({ result }),
      (error: unknown) => process.send!({ error: error instanceof Error ? error.message : String(error) }),
    );
  });
}

function startClient(): ChildProcess {
  return fork(__filename, [CLIENT_FLAG], { execArgv: process.execArgv });
}

function inClient(client: ChildProcess, task: ClientTask): Promise<ClientResult> {
  return new Promise((resolve, reject) => {
    client.once('message', (message: { result?: ClientResult; error?: string }) =>
      message.result ? resolve(message.result) : reject(new Error(message.error)),
    );
    client.send(task);
  });
}

/** Peak resident set size above `baseline` while `work` runs, sampled every few milliseconds. */
async function peakRssGrowth<T>(
  work: () => Promise<T>,
): Promise<{ result: T; peakMb: number; baselineMb: number; seconds: number }> {
  const baseline = process.memoryUsage.rss();
  let peak = baseline;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, RSS_SAMPLE_MS);
  const started = performance.now();
  try {
    const result = await work();
    peak = Math.max(peak, process.memoryUsage.rss());
    return {
      result,
      peakMb: (peak - baseline) / 1e6,
      baselineMb: baseline / 1e6,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    clearInterval(timer);
  }
}

const mbPerSecond = (bytes: number, seconds: number) => (bytes / 1e6 / seconds).toFixed(1);

/**
 * A 300 MB file through real HTTP to the real app on embedded PostgreSQL: up in parts of 32 MiB,
 * down in parts of 32 MiB, the same SHA-256; the server's peak RSS growth (target: under 100 MB)
 * and the throughput beside a bare Fastify route that discards (or serves from memory) the same
 * bytes in the same run.
 */
export async function runFileUploadBench(): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pas-bench-files-'));
  const postgres = await startEmbeddedPostgres({
    dataDir,
    port: 54000 + Math.floor(Math.random() * 900),
    database: 'bench',
  });
  const db = connectDatabase(postgres.url, 10);
  const noWorkflows: WorkflowRunner = {
    start: () => Promise.reject(new Error('workflows are not part of this benchmark')),
    startedDefinition: () => Promise.reject(new Error('workflows are not part of this benchmark')),
    schedules: noWorkflowSchedules('workflows are not part of this benchmark'),
  };
  const bare = Fastify({ logger: false, bodyLimit: MAX_PAYLOAD_BYTES });
  bare.addContentTypeParser('multipart/form-data', (_request, payload, done) => {
    payload.on('data', () => undefined);
    payload.on('end', () => done(null, {}));
    payload.on('error', done);
  });
  bare.post('/discard', async () => ({ status: 'staged' }));
  const servedPart = randomBytes(PART_BYTES).toString('base64');
  const client = startClient();
  bare.get('/part', async (_request, reply) =>
    reply.type('application/json').send(`{"status":"partial","chunk":"${servedPart}"}`),
  );
  try {
    await migrateLatest(db);
    const { accountId, owner } = await createAccount(db, { name: 'bench', ownerEmail: 'bench@example.com' });
    const key = await createApiKey(db, { accountId, userId: owner.id });
    const app = await buildApp({
      config: {
        rateLimitPerMinute: 1_000_000,
        maxPayloadBytes: MAX_PAYLOAD_BYTES,
        logLevel: 'silent',
        trustProxy: false,
        publicUrl: 'http://127.0.0.1',
      },
      db,
      workflows: noWorkflows,
    });
    const ours = await app.listen({ port: 0, host: '127.0.0.1' });
    const bareUrl = await bare.listen({ port: 0, host: '127.0.0.1' });
    const authorization = `Bearer ${key.account_sid}:${key.auth_token}`;
    const totalParts = Math.ceil(FILE_BYTES / PART_BYTES);
    const seed = { key: randomBytes(32).toString('hex'), iv: randomBytes(16).toString('hex') };
    const upload = (url: string, uploadId: string, fileBytes: number) =>
      inClient(client, { kind: 'upload', url, authorization, uploadId, fileBytes, seed });
    const download = (urls: string[], encoding: string) =>
      inClient(client, { kind: 'download', urls, authorization, encoding });
    const partNumbers = Array.from({ length: totalParts }, (_, i) => i + 1);

    // Warm-up (JIT, pools, the first INSERT plans) on a small file; then the 300 MB upload first,
    // while this process's RSS is still that of a server at rest.
    await upload(`${ours}/v2/files`, 'bench-warm-up', 2 * MiB);
    const ourUp = await peakRssGrowth(() => upload(`${ours}/v2/files`, 'bench-upload', FILE_BYTES));
    const fileId = ourUp.result.fileId!;
    const baselineUp = await peakRssGrowth(() => upload(`${bareUrl}/discard`, 'bench-baseline', FILE_BYTES));

    const partUrl = (part: number) =>
      `${ours}/v2/files/${fileId}?part_number=${part}&part_size=${PART_BYTES}`;
    const ourDown = await peakRssGrowth(() => download(partNumbers.map(partUrl), 'identity'));
    if (ourDown.result.bytes !== FILE_BYTES || ourDown.result.sha256 !== ourUp.result.sha256) {
      throw new Error('the downloaded file differs from the uploaded one');
    }
    const baselineDown = await peakRssGrowth(() =>
      download(
        partNumbers.map(() => `${bareUrl}/part`),
        'identity',
      ),
    );
    // Clients that send Accept-Encoding: gzip (fetch, Python requests) get the Base64 gzipped, as
    // the interface requires; three parts are enough to see what that costs.
    const gzipParts = 3;
    const gzipDown = await peakRssGrowth(() =>
      download(partNumbers.slice(0, gzipParts).map(partUrl), 'gzip'),
    );

    const cpu = os.cpus();
    console.log(
      `\nFile upload/download, 300 MB (${FILE_BYTES} bytes) in ${totalParts} parts of 32 MiB, on ${cpu.length} cores ` +
        `(${cpu[0]?.model ?? 'unknown CPU'}), Node ${process.version}, embedded PostgreSQL; SHA-256 equal: ` +
        `${ourUp.result.sha256.slice(0, 16)}…`,
    );
    console.log('| case | seconds | MB/s | RSS before MB | peak RSS growth MB |');
    console.log('|---|---|---|---|---|');
    const row = (
      label: string,
      run: { seconds: number; peakMb: number; baselineMb: number },
      bytes: number,
    ) =>
      console.log(
        `| ${label} | ${run.seconds.toFixed(2)} | ${mbPerSecond(bytes, run.seconds)} | ` +
          `${run.baselineMb.toFixed(0)} | ${run.peakMb.toFixed(1)} |`,
      );
    row('upload: POST /v2/files multipart → PostgreSQL chunks (measured first)', ourUp, FILE_BYTES);
    row('upload: bare Fastify route discarding the parts (baseline)', baselineUp, FILE_BYTES);
    row('download: GET /v2/files/:id?part_number=… (Base64 streamed from chunks)', ourDown, FILE_BYTES);
    row('download: bare route serving a 32 MiB Base64 part from memory (baseline)', baselineDown, FILE_BYTES);
    row(`download with Accept-Encoding: gzip (first ${gzipParts} parts)`, gzipDown, gzipDown.result.bytes);
    console.log(
      'RSS is the server process alone (the client runs in a child process); target for the upload: under 100 MB.',
    );
    await app.close();
  } finally {
    client.kill();
    await bare.close();
    await db.destroy();
    await postgres.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
