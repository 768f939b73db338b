/** Files in CPS_DATA_DIR: created 0600 in a 0700 directory whatever the umask; wider ones are warned about. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { openSqlite } from '../../src/db/index.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/logger.ts';
import { writeSnapshotFile } from '../../src/modules/search/index/snapshot.ts';
import { FileSystemStore } from '../../src/modules/documents/file-system-store.ts';
import { warnAboutWideModes } from '../../src/security/data-dir.ts';
import { loadKeys } from '../../src/security/keys.ts';
import { createTestDatabase, DIALECT } from '../support.ts';
import { startServerProcess } from '../process.ts';

const modeOf = (file: string) => statSync(file).mode & 0o777;
/** Starting loads the built-in catalogue: on a loaded 2-core machine, more than the helper's default 30 s. */
const START_TIMEOUT_MS = 90_000;

describe(`data directory modes (${DIALECT})`, () => {
  let root: string;
  let umask: number;
  before(() => {
    root = mkdtempSync(path.join(tmpdir(), 'cps-modes-'));
    // A umask that narrows nothing: the modes below come from the service, not from the umask.
    umask = process.umask(0);
  });
  after(() => {
    process.umask(umask);
    rmSync(root, { recursive: true, force: true });
  });

  it('creates the SQLite database, its WAL and shared-memory files 0600 in a 0700 directory', async () => {
    const dataDir = path.join(root, 'sqlite', 'data');
    const storage = openSqlite(path.join(dataDir, 'cps.sqlite'));
    try {
      await migrateToLatest(storage.db);
      await storage.db.insertInto('businesses').values({ id: 'biz_modes', name: 'Modes', created_at: Date.now() }).execute();
      const names = readdirSync(dataDir).sort();
      assert.deepEqual(names, ['cps.sqlite', 'cps.sqlite-shm', 'cps.sqlite-wal']);
      // Files 0600; directories (the access log's write-ahead files) 0700.
      for (const name of names)
        assert.equal(modeOf(path.join(dataDir, name)), statSync(path.join(dataDir, name)).isDirectory() ? 0o700 : 0o600, name);
      assert.equal(modeOf(dataDir), 0o700);
    } finally {
      await storage.destroy();
    }
  });

  it('creates the development keys 0600 in a 0700 directory', async () => {
    const dataDir = path.join(root, 'keys');
    await loadKeys(loadConfig({ CPS_DATA_DIR: dataDir }));
    assert.equal(modeOf(dataDir), 0o700);
    assert.equal(modeOf(path.join(dataDir, 'jwt-signing-key.pem')), 0o600);
    assert.equal(modeOf(path.join(dataDir, 'master.key')), 0o600);
  });

  it('writes search index snapshots 0600', async () => {
    const dataDir = path.join(root, 'snapshots');
    mkdirSync(dataDir, { mode: 0o700 });
    const file = path.join(dataDir, 'search-index-0123456789abcdef.bin');
    await writeSnapshotFile(file, [Buffer.from('CPSSNAP1')]);
    assert.equal(modeOf(file), 0o600);
  });

  it("the documents' files store makes its folders 0700 and its files 0600", async () => {
    const storage = openSqlite(path.join(root, 'files', 'cps.sqlite'));
    try {
      await migrateToLatest(storage.db);
      const dataDir = path.join(root, 'files');
      const store = new FileSystemStore(storage.db, randomBytes(32), dataDir);
      const key = 'biz/doc/0/modes';
      await store.write(
        key,
        (async function* () {
          yield Buffer.from('a file');
        })(),
      );
      const file = store.pathOf(key);
      assert.equal(modeOf(file), 0o600);
      for (const dir of [path.dirname(file), path.join(dataDir, 'documents'), path.join(dataDir, 'documents', 'incoming')])
        assert.equal(modeOf(dir), 0o700, dir);
    } finally {
      await storage.destroy();
    }
  });

  it('warns, naming the path and its mode, about a wide directory and wide service files, changing nothing', () => {
    const dataDir = path.join(root, 'wide');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    for (const [name, mode] of [
      ['cps.sqlite', 0o644],
      ['cps.sqlite-wal', 0o640],
      ['master.key', 0o600],
      ['search-index-00ff.bin', 0o604],
      ['notes.txt', 0o644],
      ['erasures.log', 0o644],
    ] as const) {
      writeFileSync(path.join(dataDir, name), '');
      chmodSync(path.join(dataDir, name), mode);
    }
    // The documents' files store: its folder and each folder in it.
    for (const [name, mode] of [
      ['documents', 0o755],
      ['documents/incoming', 0o700],
      ['documents/ab', 0o750],
      ['documents.before-restore-2026-11-29T12-00-00-000Z', 0o711],
      ['audit', 0o755],
    ] as const) {
      mkdirSync(path.join(dataDir, name));
      chmodSync(path.join(dataDir, name), mode);
    }
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)));
          done();
        },
      }),
    );
    warnAboutWideModes(dataDir, logger);
    const warned = lines
      .filter((line) => line.level === 40)
      .map((line) => [line.path, line.mode, line.expected])
      .sort();
    assert.deepEqual(
      warned,
      [
        [dataDir, '0755', '0700'],
        [path.join(dataDir, 'cps.sqlite'), '0644', '0600'],
        [path.join(dataDir, 'cps.sqlite-wal'), '0640', '0600'],
        [path.join(dataDir, 'search-index-00ff.bin'), '0604', '0600'],
        [path.join(dataDir, 'documents'), '0755', '0700'],
        [path.join(dataDir, 'documents', 'ab'), '0750', '0700'],
        [path.join(dataDir, 'documents.before-restore-2026-11-29T12-00-00-000Z'), '0711', '0700'],
        [path.join(dataDir, 'erasures.log'), '0644', '0600'],
        [path.join(dataDir, 'audit'), '0755', '0700'],
      ].sort(),
    );
    assert.match(String(lines[0]!.msg), /has mode 0\d{3}: other users on this machine can reach it; expected 0\d{3}/);
    assert.equal(modeOf(path.join(dataDir, 'cps.sqlite')), 0o644, "the operator's modes are left alone");
    assert.equal(modeOf(dataDir), 0o755);
  });

  it('says nothing about a private data directory, or one that does not exist yet', () => {
    const lines: string[] = [];
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    warnAboutWideModes(path.join(root, 'keys'), logger);
    warnAboutWideModes(path.join(root, 'absent'), logger);
    assert.deepEqual(lines, []);
  });

  it('a real start (umask 000) creates its directory 0700 and every file 0600, and the next start warns about wider ones', async () => {
    const fresh = await createTestDatabase();
    try {
      const dataDir = path.join(fresh.dataDir, 'data');
      const env = { CPS_DATA_DIR: dataDir, CPS_WORKERS: '0', ...(fresh.databaseUrl ? { DATABASE_URL: fresh.databaseUrl } : {}) };
      const first = await startServerProcess(env, START_TIMEOUT_MS);
      first.child.kill('SIGTERM');
      assert.equal(await first.exited, 0);
      const names = readdirSync(dataDir);
      assert.ok(names.includes('master.key') && names.includes('jwt-signing-key.pem') && names.includes('demo-credentials.json'), names.join(', '));
      if (DIALECT === 'sqlite') assert.ok(names.includes('cps.sqlite'));
      // Files 0600; directories (the access log's write-ahead files) 0700.
      for (const name of names)
        assert.equal(modeOf(path.join(dataDir, name)), statSync(path.join(dataDir, name)).isDirectory() ? 0o700 : 0o600, name);
      assert.equal(modeOf(dataDir), 0o700);
      assert.doesNotMatch(first.output(), /has mode/);

      chmodSync(dataDir, 0o750);
      chmodSync(path.join(dataDir, 'master.key'), 0o644);
      const second = await startServerProcess(env, START_TIMEOUT_MS);
      second.child.kill('SIGTERM');
      assert.equal(await second.exited, 0);
      const warnings = second
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line))
        .filter((line) => line.level === 40 && /has mode/.test(line.msg))
        .map((line) => [line.path, line.mode])
        .sort();
      assert.deepEqual(
        warnings,
        [
          [dataDir, '0750'],
          [path.join(dataDir, 'master.key'), '0644'],
        ].sort(),
      );
    } finally {
      await fresh.drop();
    }
  });
});
