/**
 * The access log's write-ahead file: a write that fails part-way (a full disk) leaves a torn line, and
 * the records after it go to a new segment, so replay reads every record the file accepted.
 */
import assert from 'node:assert/strict';
import fs, { mkdtempSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it, mock } from 'node:test';
import { WriteAheadFile } from '../../src/access-log/wal.ts';

describe('access log: write-ahead file', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'cps-wal-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a write that fails part-way is not followed in its segment: every record accepted after it is replayed', () => {
    const durable: string[] = [];
    const file = new WriteAheadFile<{ n: string }>(dir, false, (records) => durable.push(...records.map((record) => record.n)));
    const outcomes: Array<Error | null> = [];
    file.append({ n: 'first' }, (error) => outcomes.push(error));
    // The disk fills after a few bytes of the second record.
    const realWrite = fs.writeSync;
    let torn = false;
    mock.method(fs, 'writeSync', (fd: number, data: Buffer, offset: number, length: number) => {
      if (torn) throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
      torn = true;
      return realWrite(fd, data, offset, Math.min(length, 5));
    });
    syncBuiltinESMExports();
    try {
      file.append({ n: 'second' }, (error) => outcomes.push(error));
    } finally {
      mock.restoreAll();
      syncBuiltinESMExports();
    }
    file.append({ n: 'third' }, (error) => outcomes.push(error));
    assert.deepEqual(
      outcomes.map((error) => (error as NodeJS.ErrnoException | null)?.code ?? null),
      [null, 'ENOSPC', null],
    );
    assert.deepEqual(durable, ['first', 'third']);
    const replayed = fs
      .readdirSync(dir)
      .sort()
      .flatMap((name) => WriteAheadFile.read<{ n: string }>(path.join(dir, name)).map((record) => record.n));
    assert.deepEqual(replayed, ['first', 'third'], 'the torn line is skipped, the record after it kept');
  });
});
