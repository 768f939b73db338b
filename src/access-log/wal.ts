/**
 * The access log's write-ahead file: records appended by the requests of this process and written
 * (and, with fsync, synced to disk) before their answers are sent, so an entry survives the process
 * being killed right after. Without fsync a record is written as it is appended, on the request's
 * own turn: one small write into the kernel costs microseconds, while a write through the thread
 * pool ends in a callback that waits behind every socket the event loop has to read (under a burst
 * of 1,000 requests, hundreds of milliseconds before the answer could go). With fsync, appends
 * made while a write is in flight go together in the next (group commit): one write and one
 * fdatasync serve every answer waiting. The file is split in segments; a segment is deleted once the
 * database holds all its records (release). At start, segments left by a process that is gone are
 * read back (replay).
 */
import { closeSync, fdatasync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, write, writeSync } from 'node:fs';
import path from 'node:path';
import { makePrivateDir } from '../security/data-dir.ts';

export interface Segment {
  readonly file: string;
  readonly fd: number;
  readonly openedAt: number;
  bytes: number;
  /** Records written to it and not yet in the database. */
  pending: number;
  sealed: boolean;
}

type Done = (error: Error | null) => void;

/** A segment is sealed (a new one begun) when it grows past this or is older than SEGMENT_MS. */
const SEGMENT_BYTES = 4 * 1024 * 1024;
const SEGMENT_MS = 5000;

const SEGMENT_NAME = /^(\d+)-[0-9a-z]+-[0-9a-z]+\.wal$/;

export class WriteAheadFile<R> {
  readonly #dir: string;
  readonly #durable: (records: R[], segment: Segment) => void;
  readonly #fsync: boolean;
  #segment: Segment | null = null;
  #lines: string[] = [];
  #records: R[] = [];
  #waiters: Done[] = [];
  #writing = false;
  #idle: Array<() => void> = [];
  #counter = 0;

  /**
   * `fsync`: each group is fdatasynced before its appends are done; otherwise they are done once
   * written (the kernel holds them: a killed process loses nothing) and sync() flushes them to disk.
   * `durable` receives each group of records once done.
   */
  constructor(dir: string, fsync: boolean, durable: (records: R[], segment: Segment) => void) {
    this.#dir = dir;
    this.#fsync = fsync;
    this.#durable = durable;
  }

  /** Flushes what was written to the segment in use to disk, in the background. */
  sync(): void {
    const segment = this.#segment;
    if (segment && segment.bytes > 0) fdatasync(segment.fd, () => {});
  }

  /** Segments in the directory left by processes that are gone (or by an earlier life of this pid). */
  orphans(): string[] {
    makePrivateDir(this.#dir);
    const files: string[] = [];
    for (const name of readdirSync(this.#dir)) {
      const match = SEGMENT_NAME.exec(name);
      if (!match) continue;
      const pid = Number(match[1]);
      if (pid !== process.pid && alive(pid)) continue;
      files.push(path.join(this.#dir, name));
    }
    return files.sort();
  }

  /**
   * Takes an orphan for this process to replay, by renaming it to a name of this process: of several
   * processes starting together, one wins each file (null: another took it). Should this process die
   * while replaying, the file is an orphan again.
   */
  claim(file: string): string | null {
    const mine = path.join(this.#dir, `${process.pid}-${Date.now().toString(36)}-r${(this.#counter++).toString(36)}.wal`);
    try {
      renameSync(file, mine);
      return mine;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  /** The records of a segment; a last line cut short by the crash is left out. */
  static read<R>(file: string): R[] {
    const records: R[] = [];
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line === '') continue;
      try {
        records.push(JSON.parse(line) as R);
      } catch {
        // A torn write: its answer was never sent.
      }
    }
    return records;
  }

  static remove(file: string): void {
    try {
      unlinkSync(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }

  /**
   * Appends a record; `done` runs once it is written (with fsync: on disk), or with the error that
   * kept it off. Without fsync, before append returns.
   */
  append(record: R, done: Done): void {
    if (!this.#fsync) {
      done(this.#writeNow(record));
      return;
    }
    this.#lines.push(`${JSON.stringify(record)}\n`);
    this.#records.push(record);
    this.#waiters.push(done);
    if (!this.#writing) this.#write();
  }

  /** Deletes a sealed segment whose records are all in the database. */
  release(segment: Segment, count: number): void {
    segment.pending -= count;
    if (segment.sealed && segment.pending === 0) this.#discard(segment);
  }

  /** Resolves once no write is in flight. */
  idle(): Promise<void> {
    return this.#writing ? new Promise((resolve) => this.#idle.push(resolve)) : Promise.resolve();
  }

  /** Closes the segment in use; deletes it when the database holds its records. */
  close(): void {
    const segment = this.#segment;
    this.#segment = null;
    if (!segment) return;
    segment.sealed = true;
    if (segment.pending === 0) this.#discard(segment);
    else closeSync(segment.fd);
  }

  #current(): Segment {
    const now = Date.now();
    let segment = this.#segment;
    if (segment && (segment.bytes > SEGMENT_BYTES || now - segment.openedAt > SEGMENT_MS)) {
      segment.sealed = true;
      if (segment.pending === 0) this.#discard(segment);
      segment = null;
    }
    if (!segment) {
      makePrivateDir(this.#dir);
      const file = path.join(this.#dir, `${process.pid}-${now.toString(36)}-${(this.#counter++).toString(36)}.wal`);
      segment = { file, fd: openSync(file, 'a', 0o600), openedAt: now, bytes: 0, pending: 0, sealed: false };
      this.#segment = segment;
    }
    return segment;
  }

  /**
   * Appends no more to `segment` after a write to it failed, maybe part-way: a torn line would join
   * the next record's into one that replay cannot read, so that record goes to a new file.
   */
  #retire(segment: Segment): void {
    if (this.#segment !== segment) return;
    this.#segment = null;
    segment.sealed = true;
    if (segment.pending === 0) this.#discard(segment);
  }

  #discard(segment: Segment): void {
    try {
      closeSync(segment.fd);
    } catch {
      // closed already by close()
    }
    WriteAheadFile.remove(segment.file);
  }

  #writeNow(record: R): Error | null {
    const data = Buffer.from(`${JSON.stringify(record)}\n`, 'utf8');
    let segment: Segment | null = null;
    try {
      segment = this.#current();
      for (let offset = 0; offset < data.length; ) offset += writeSync(segment.fd, data, offset, data.length - offset);
    } catch (error) {
      if (segment) this.#retire(segment);
      return error as Error;
    }
    segment.bytes += data.length;
    segment.pending += 1;
    this.#durable([record], segment);
    return null;
  }

  #write(): void {
    this.#writing = true;
    let segment: Segment;
    try {
      segment = this.#current();
    } catch (error) {
      this.#settle(error as Error);
      return;
    }
    const data = Buffer.from(this.#lines.join(''), 'utf8');
    const records = this.#records;
    const waiters = this.#waiters;
    this.#lines = [];
    this.#records = [];
    this.#waiters = [];
    segment.pending += records.length;
    const finish = (error: Error | null) => {
      if (error) {
        segment.pending -= records.length;
        this.#retire(segment);
      } else this.#durable(records, segment);
      for (const done of waiters) done(error);
      this.#settle(null);
    };
    const writeFrom = (offset: number) => {
      write(segment.fd, data, offset, data.length - offset, null, (error, written) => {
        if (error) return finish(error);
        if (offset + written < data.length) return writeFrom(offset + written);
        segment.bytes += data.length;
        if (this.#fsync) fdatasync(segment.fd, (syncError) => finish(syncError));
        else finish(null);
      });
    };
    writeFrom(0);
  }

  /** After a write: the next group, or idle. A failure to open a segment fails the records waiting. */
  #settle(openError: Error | null): void {
    if (openError) {
      const waiters = this.#waiters;
      this.#lines = [];
      this.#records = [];
      this.#waiters = [];
      for (const done of waiters) done(openError);
    }
    if (this.#lines.length > 0) {
      this.#write();
      return;
    }
    this.#writing = false;
    const idle = this.#idle;
    this.#idle = [];
    for (const resolve of idle) resolve();
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
