import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, rm, truncate } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  BackupFileInvalid,
  paddingOf,
  readTarEntries,
  TAR_BLOCK,
  tarHeader,
  TarWriter,
} from '../../ops/backup/backup-tar';

/** The backup file is a tar that the system's own `tar` reads, parts of any size included. */
describe('backup tar', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'pas-tar-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('a streamed part and a buffer part read back the same with our reader and with tar', async () => {
    const file = path.join(dir, 'two.tar');
    const streamed = [randomBytes(1000), randomBytes(70_000), randomBytes(3)];
    const small = Buffer.from('{"ok":true}\n');
    const handle = await open(file, 'w');
    const tar = new TarWriter(handle, new Date('2026-11-26T00:00:00Z'));
    expect(
      await tar.addStream(
        'database.pgdump',
        (async function* () {
          yield* streamed;
        })(),
      ),
    ).toBe(71_003);
    await tar.addBuffer('manifest.json', small);
    await tar.finish();
    await handle.close();

    const read = await open(file, 'r');
    try {
      expect(await readTarEntries(read, file)).toEqual([
        { name: 'database.pgdump', size: 71_003, offset: TAR_BLOCK },
        {
          name: 'manifest.json',
          size: small.length,
          offset: TAR_BLOCK + 71_003 + paddingOf(71_003) + TAR_BLOCK,
        },
      ]);
    } finally {
      await read.close();
    }
    const listed = spawnSync('tar', ['-tvf', file], { encoding: 'utf8' });
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(/-rw------- .* 71003 2026-11-26 .*database\.pgdump/);
    const extracted = spawnSync('tar', ['-xOf', file, 'database.pgdump']);
    expect(Buffer.compare(extracted.stdout, Buffer.concat(streamed))).toBe(0);
  });

  test('a part of 8 GiB or more gets a base-256 size that tar and our reader both read', async () => {
    const size = 2 ** 33 + 5;
    const file = path.join(dir, 'huge.tar');
    const handle = await open(file, 'w');
    await handle.write(tarHeader('database.pgdump', size, new Date()), 0, TAR_BLOCK, 0);
    await handle.close();
    // Sparse: the part and the end-of-archive blocks are zeros that take no disk.
    await truncate(file, TAR_BLOCK + size + paddingOf(size) + 2 * TAR_BLOCK);
    const read = await open(file, 'r');
    try {
      expect(await readTarEntries(read, file)).toEqual([
        { name: 'database.pgdump', size, offset: TAR_BLOCK },
      ]);
    } finally {
      await read.close();
    }
    const listed = spawnSync('tar', ['-tvf', file], { encoding: 'utf8' });
    expect(listed.stdout).toContain(` ${size} `);
  });

  test('a file that is not a tar is refused with what is wrong', async () => {
    const file = path.join(dir, 'text.tar');
    const handle = await open(file, 'w');
    await handle.write(Buffer.alloc(4 * TAR_BLOCK, 'not a tar '));
    await handle.close();
    const read = await open(file, 'r');
    try {
      await expect(readTarEntries(read, file)).rejects.toThrow(BackupFileInvalid);
      await expect(readTarEntries(read, file)).rejects.toThrow(/the header at byte 0 is damaged/);
    } finally {
      await read.close();
    }
  });
});
