import type { FileHandle } from 'node:fs/promises';

/**
 * The backup file is a POSIX tar (ustar) of a few named parts, so `tar tf` lists it and `tar xf`
 * unpacks it for a restore by hand. Only what backups need: regular files, written in order to a
 * seekable file. A part's size is unknown until its stream ends (pg_dump's output), so its header
 * is written with size 0 first and rewritten in place once the part is complete.
 */
export const TAR_BLOCK = 512;

/** ustar's 11 octal digits hold sizes below 8 GiB; larger ones use GNU's base-256 form (tar and bsdtar read it). */
const OCTAL_SIZE_LIMIT = 8 ** 11;

function writeOctal(block: Buffer, offset: number, length: number, value: number): void {
  block.write(value.toString(8).padStart(length - 1, '0') + '\0', offset, length, 'ascii');
}

function writeSize(block: Buffer, size: number): void {
  if (size < OCTAL_SIZE_LIMIT) {
    writeOctal(block, 124, 12, size);
    return;
  }
  block.fill(0, 124, 136);
  block[124] = 0x80;
  let rest = BigInt(size);
  for (let i = 135; i > 124; i--) {
    block[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
}

function readSize(block: Buffer): number {
  if ((block[124]! & 0x80) !== 0) {
    let size = 0n;
    for (let i = 125; i < 136; i++) size = (size << 8n) | BigInt(block[i]!);
    return Number(size);
  }
  return parseOctal(block, 124, 12);
}

function parseOctal(block: Buffer, offset: number, length: number): number {
  const text = block.toString('ascii', offset, offset + length).replace(/[\0 ]+$/, '');
  if (!/^[0-7]*$/.test(text)) return Number.NaN;
  return text === '' ? 0 : Number.parseInt(text, 8);
}

function checksumOf(block: Buffer): number {
  let sum = 0;
  for (let i = 0; i < TAR_BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
  return sum;
}

/** One ustar header block for a regular file (mode 0600: a backup holds every account's data). */
export function tarHeader(name: string, size: number, mtime: Date): Buffer {
  if (Buffer.byteLength(name) > 100) throw new Error(`tar entry name too long: ${name}`);
  const block = Buffer.alloc(TAR_BLOCK);
  block.write(name, 0, 100, 'utf8');
  writeOctal(block, 100, 8, 0o600);
  writeOctal(block, 108, 8, 0);
  writeOctal(block, 116, 8, 0);
  writeSize(block, size);
  writeOctal(block, 136, 12, Math.floor(mtime.getTime() / 1000));
  block.write('0', 156, 1, 'ascii');
  block.write('ustar\0', 257, 6, 'ascii');
  block.write('00', 263, 2, 'ascii');
  block.write(checksumOf(block).toString(8).padStart(6, '0') + '\0 ', 148, 8, 'ascii');
  return block;
}

export const paddingOf = (size: number) => (TAR_BLOCK - (size % TAR_BLOCK)) % TAR_BLOCK;

/** Appends parts to a tar file through a file handle, tracking the write position. */
export class TarWriter {
  private position = 0;

  constructor(
    private readonly handle: FileHandle,
    private readonly mtime: Date,
  ) {}

  get bytesWritten(): number {
    return this.position;
  }

  private async write(bytes: Buffer): Promise<void> {
    let done = 0;
    while (done < bytes.length) {
      const { bytesWritten } = await this.handle.write(bytes, done, bytes.length - done, this.position);
      done += bytesWritten;
      this.position += bytesWritten;
    }
  }

  async addBuffer(name: string, bytes: Buffer): Promise<void> {
    await this.write(tarHeader(name, bytes.length, this.mtime));
    await this.write(bytes);
    await this.write(Buffer.alloc(paddingOf(bytes.length)));
  }

  /** Streams a part whose size is known only at its end; answers the size. */
  async addStream(name: string, source: AsyncIterable<Buffer>): Promise<number> {
    const headerAt = this.position;
    await this.write(tarHeader(name, 0, this.mtime));
    let size = 0;
    for await (const chunk of source) {
      await this.write(chunk);
      size += chunk.length;
    }
    await this.write(Buffer.alloc(paddingOf(size)));
    const header = tarHeader(name, size, this.mtime);
    await this.handle.write(header, 0, TAR_BLOCK, headerAt);
    return size;
  }

  /** Two zero blocks end a tar archive. */
  async finish(): Promise<void> {
    await this.write(Buffer.alloc(2 * TAR_BLOCK));
  }
}

export interface TarEntry {
  name: string;
  size: number;
  /** Where the entry's bytes start in the file. */
  offset: number;
}

export class BackupFileInvalid extends Error {
  constructor(file: string, detail: string) {
    super(`${file} is not a usable backup: ${detail}`);
    this.name = 'BackupFileInvalid';
  }
}

/**
 * The entries of a tar file, read header by header (a seek per part, no data read). Refuses a
 * header whose checksum fails, a part running past the end of the file, and a file without the
 * end-of-archive blocks: a truncated copy is caught here, before any byte is restored.
 */
export async function readTarEntries(handle: FileHandle, file: string): Promise<TarEntry[]> {
  const { size: fileSize } = await handle.stat();
  const entries: TarEntry[] = [];
  const block = Buffer.alloc(TAR_BLOCK);
  for (let at = 0; ;) {
    if (at + TAR_BLOCK > fileSize)
      throw new BackupFileInvalid(file, 'it ends before its last part (truncated?).');
    const { bytesRead } = await handle.read(block, 0, TAR_BLOCK, at);
    if (bytesRead !== TAR_BLOCK) throw new BackupFileInvalid(file, 'it ends inside a header (truncated?).');
    if (block.every((byte) => byte === 0)) {
      if (at + 2 * TAR_BLOCK > fileSize) {
        throw new BackupFileInvalid(file, 'its end-of-archive marker is cut short (truncated?).');
      }
      return entries;
    }
    const recorded = parseOctal(block, 148, 8);
    if (recorded !== checksumOf(block) || block.toString('ascii', 257, 262) !== 'ustar') {
      throw new BackupFileInvalid(file, `the header at byte ${at} is damaged (not a backup, or corrupted).`);
    }
    const name = block.toString('utf8', 0, 100).replace(/\0.*$/s, '');
    const size = readSize(block);
    if (!Number.isSafeInteger(size) || size < 0) {
      throw new BackupFileInvalid(file, `the header of ${name} has no valid size.`);
    }
    const offset = at + TAR_BLOCK;
    if (offset + size + paddingOf(size) > fileSize) {
      throw new BackupFileInvalid(file, `${name} runs past the end of the file (truncated?).`);
    }
    entries.push({ name, size, offset });
    at = offset + size + paddingOf(size);
  }
}
