import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createCanvas } from '@napi-rs/canvas';
import SQLite from 'better-sqlite3';
import { openStorage } from '../src/db/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { storedFilePath } from '../src/modules/documents/index.ts';
import { encrypt } from '../src/security/encryption.ts';
import { runCli, startServerProcess, type CliResult } from './process.ts';
import { documentsApi, download, filesOnDisk, sampleFile } from './modules/documents/support.ts';
import { untilSecondIsOver } from './modules/cases/support.ts';
import { createDr } from './modules/patients/support.ts';
import { bearer, createTestApp, createTestClient, createTestDatabase, DIALECT, PG_URL, testKeys } from './support.ts';

const WRITER = path.resolve(import.meta.dirname, 'backup-writer.ts');
/** A loaded machine starts a server slowly; the start is not what these tests check. */
const SERVER_START_MS = 100_000;
const ADMIN = { CPS_ADMIN_TOKEN: 'test-admin-token-0123456789', LOG_LEVEL: 'silent', CPS_WORKERS: '0' };

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'cps-backup-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function env(dataDir: string): Record<string, string> {
  return { ...ADMIN, CPS_DATA_DIR: dataDir, DATABASE_URL: '' };
}

function json(result: CliResult): any {
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout);
}

/** The runs recorded in a database's backup_runs (the admin API's operations), oldest first, without their times. */
function runs(file: string): any[] {
  return rows(file, 'select command, outcome, bytes, file, error, finished_at >= started_at as timed from backup_runs order by started_at, id');
}

function rows(file: string, query: string): any[] {
  const db = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(query).all();
  } finally {
    db.close();
  }
}

/** Starts the writer on dataDir; resolves once its database is filled, with the ids it committed so far (growing). */
async function startWriter(dataDir: string): Promise<{ child: ChildProcess; committed: string[]; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [WRITER], { env: { ...process.env, CPS_DATA_DIR: dataDir }, stdio: ['ignore', 'pipe', 'pipe'] });
  const committed: string[] = [];
  let buffered = '';
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const ready = new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`writer exited with ${code}: ${stderr}`)));
    child.stdout!.on('data', (chunk) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        if (line === 'ready') resolve();
        else committed.push(line);
      }
    });
  });
  await ready;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    child,
    committed,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('cps backup and cps restore (sqlite)', { skip: DIALECT !== 'sqlite' && 'the SQLite database only' }, () => {
  let dataDir: string;
  let backupDir: string;
  let backupFile: string;
  let server: Awaited<ReturnType<typeof startServerProcess>>;
  let writer: Awaited<ReturnType<typeof startWriter>>;
  let committedBefore: string[];

  before(async () => {
    dataDir = tempDir();
    backupDir = tempDir();
    backupFile = path.join(backupDir, 'cps-backup.sqlite');
    server = await startServerProcess(env(dataDir), SERVER_START_MS);
    writer = await startWriter(dataDir);
  });
  after(async () => {
    await writer?.stop();
    if (server?.child.exitCode === null) server.child.kill('SIGKILL');
  });

  it('copies the database while a server runs and a process writes without pause: whole, and holding every row committed before it began', async () => {
    await until(() => writer.committed.length >= 200);
    committedBefore = [...writer.committed];
    const result = json(await runCli(['backup', backupFile], env(dataDir)));
    const afterwards = writer.committed.length;
    assert.ok(afterwards > committedBefore.length, 'the writer kept committing while the backup ran');
    assert.equal(result.file, backupFile);
    assert.equal(result.bytes, statSync(backupFile).size);
    assert.ok(result.bytes > 4_000_000, `${result.bytes} bytes`);
    assert.equal(statSync(backupFile).mode & 0o777, 0o600);
    assert.match(result.master_key, /master\.key: not in the backup/);

    assert.deepEqual(rows(backupFile, 'pragma integrity_check'), [{ integrity_check: 'ok' }]);
    assert.deepEqual(rows(backupFile, 'pragma journal_mode'), [{ journal_mode: 'delete' }], 'one self-contained file');
    const copied = new Set(rows(backupFile, "select id from businesses where id like 'w-%'").map((row) => row.id));
    const missing = committedBefore.filter((id) => !copied.has(id));
    assert.deepEqual(missing, [], 'every row committed before the backup began is in the copy');
    assert.equal(rows(backupFile, "select count(*) as n from businesses where id like 'fill-%'")[0].n, 10_000);
    assert.deepEqual(
      readdirSync(backupDir).filter((name) => name !== 'cps-backup.sqlite'),
      [],
      'no temporary or journal file left beside the copy',
    );
    assert.deepEqual(runs(path.join(dataDir, 'cps.sqlite')), [
      { command: 'backup', outcome: 'succeeded', bytes: result.bytes, file: 'cps-backup.sqlite', error: null, timed: 1 },
    ]);
  });

  it('refuses to replace an existing file unless --force', async () => {
    const existing = path.join(backupDir, 'existing.sqlite');
    writeFileSync(existing, 'keep me');
    const refused = await runCli(['backup', existing], env(dataDir));
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /exists; pass --force to replace it/);
    assert.equal(readFileSync(existing, 'utf8'), 'keep me');

    const forced = json(await runCli(['backup', existing, '--force'], env(dataDir)));
    assert.equal(forced.file, existing);
    assert.deepEqual(rows(existing, 'pragma integrity_check'), [{ integrity_check: 'ok' }]);
    assert.equal(statSync(existing).mode & 0o777, 0o600);
    // Recorded with the file's name only: no directory, in the name or in the reason.
    assert.deepEqual(runs(path.join(dataDir, 'cps.sqlite')).slice(1), [
      {
        command: 'backup',
        outcome: 'failed',
        bytes: null,
        file: 'existing.sqlite',
        error: 'existing.sqlite exists; pass --force to replace it',
        timed: 1,
      },
      { command: 'backup', outcome: 'succeeded', bytes: forced.bytes, file: 'existing.sqlite', error: null, timed: 1 },
    ]);
  });

  it('restore refuses while the server (or any process) has the database open, and leaves it as it was', async () => {
    const refused = await runCli(['restore', backupFile], env(dataDir));
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /is in use: stop the server/);
    assert.ok(writer.committed.length > 0);
    assert.equal(readdirSync(dataDir).filter((name) => name.includes('restore') || name.includes('before-restore')).length, 0);
    // Still served, still written.
    assert.equal((await fetch(`${server.url}/ready`)).status, 200);
    const [run] = runs(path.join(dataDir, 'cps.sqlite')).slice(3);
    assert.deepEqual(
      { ...run, error: null },
      { command: 'restore', outcome: 'failed', bytes: null, file: 'cps-backup.sqlite', error: null, timed: 1 },
    );
    assert.match(run.error, /^the database in cps-backup-\w+ is in use: stop the server/);
  });

  it('restores into the stopped data directory: the previous database kept aside, the copy in place, a server starts on it', async () => {
    await writer.stop();
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
    const liveRows = rows(path.join(dataDir, 'cps.sqlite'), 'select count(*) as n from businesses')[0].n;

    const result = json(await runCli(['restore', backupFile], env(dataDir)));
    assert.equal(result.restored, path.join(dataDir, 'cps.sqlite'));
    assert.match(path.basename(result.previous), /^cps\.sqlite\.before-restore-/);
    assert.deepEqual(result.pending_migrations, []);
    assert.equal(result.audit_segments_left, 0);
    assert.equal(rows(result.previous, 'select count(*) as n from businesses')[0].n, liveRows, 'the previous database is whole, its WAL folded in');
    assert.equal(statSync(result.restored).mode & 0o777, 0o600);
    assert.ok(!existsSync(path.join(dataDir, 'cps.sqlite-wal')));
    const restoredIds = new Set(rows(result.restored, "select id from businesses where id like 'w-%'").map((row) => row.id));
    assert.ok(committedBefore.every((id) => restoredIds.has(id)));
    assert.ok(restoredIds.size < writer.committed.length, 'the writes after the backup are not there');
    assert.deepEqual(
      readdirSync(dataDir).filter((name) => name.endsWith('.tmp')),
      [],
    );
    // The restored database has the runs the copy held (none: the backup records itself once the copy is made), and the restore.
    assert.deepEqual(runs(result.restored), [
      { command: 'restore', outcome: 'succeeded', bytes: statSync(backupFile).size, file: 'cps-backup.sqlite', error: null, timed: 1 },
    ]);

    server = await startServerProcess(env(dataDir), SERVER_START_MS);
    assert.equal((await fetch(`${server.url}/ready`)).status, 200);
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
  });
});

describe('cps restore checks the file (sqlite)', { skip: DIALECT !== 'sqlite' && 'the SQLite database only' }, () => {
  const masterKey = randomBytes(32);
  let source: string;
  let backupFile: string;

  before(async () => {
    source = tempDir();
    writeFileSync(path.join(source, 'master.key'), masterKey.toString('base64'), { mode: 0o600 });
    const storage = openStorage({ databaseUrl: null, dataDir: source });
    await migrateToLatest(storage.db);
    const now = Date.now();
    await storage.db.insertInto('businesses').values({ id: 'b1', name: 'Clinic', created_at: now }).execute();
    await storage.db
      .insertInto('webhook_subscriptions')
      .values({
        id: 'sub1',
        business_id: 'b1',
        endpoint: 'https://partner.example/hook',
        protocol: 'https',
        event_names: '[]',
        status: 'active',
        signing_key: encrypt(masterKey, 'whsec_secret', 'webhook:sub1'),
        created_at: now,
        updated_at: now,
      } as never)
      .execute();
    await storage.destroy();
    backupFile = path.join(tempDir(), 'copy.sqlite');
    json(await runCli(['backup', backupFile], env(source)));
  });

  function target(key: Buffer | null): string {
    const dir = tempDir();
    if (key) writeFileSync(path.join(dir, 'master.key'), key.toString('base64'), { mode: 0o600 });
    return dir;
  }

  it('restores into an empty data directory that has the master key the backup was made with', async () => {
    const dir = target(masterKey);
    const result = json(await runCli(['restore', backupFile], env(dir)));
    assert.equal(result.previous, null);
    assert.deepEqual(rows(result.restored, 'select id from webhook_subscriptions'), [{ id: 'sub1' }]);
  });

  it('refuses a master key that does not open the backup’s secrets, or none, unless --force', async () => {
    for (const key of [randomBytes(32), null]) {
      const dir = target(key);
      const refused = await runCli(['restore', backupFile], env(dir));
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, key ? /does not open the backup's encrypted secrets/ : /no master key is set/);
      assert.ok(!existsSync(path.join(dir, 'cps.sqlite')));
      assert.deepEqual(
        readdirSync(dir).filter((name) => name.endsWith('.tmp')),
        [],
      );
    }
    const forced = json(await runCli(['restore', backupFile, '--force'], env(target(randomBytes(32)))));
    assert.deepEqual(rows(forced.restored, 'select id from businesses'), [{ id: 'b1' }]);
  });

  it('refuses a file that is not a SQLite database, not ours, damaged, or from a newer release', async () => {
    const dir = tempDir();
    const garbage = path.join(dir, 'garbage');
    writeFileSync(garbage, randomBytes(8192));
    const foreign = path.join(dir, 'foreign.sqlite');
    const other = new SQLite(foreign);
    other.exec('create table notes (body text)');
    other.close();
    const newer = path.join(dir, 'newer.sqlite');
    copyFileSync(backupFile, newer);
    const db = new SQLite(newer);
    db.prepare('insert into cps_migrations (name, timestamp) values (?, ?)').run('9999_from_the_future', new Date().toISOString());
    db.close();
    const damaged = path.join(dir, 'damaged.sqlite');
    const bytes = readFileSync(backupFile);
    const pageSize = bytes.readUInt16BE(16);
    randomBytes(pageSize).copy(bytes, pageSize * 3);
    writeFileSync(damaged, bytes);

    const cases: Array<[string, RegExp]> = [
      [garbage, /cannot be read as a SQLite database|is not a SQLite database/],
      [foreign, /is not an OpenCPS database \(no cps_migrations, businesses, api_clients, refresh_tokens table\)/],
      [newer, /made by a newer release \(migrations 9999_from_the_future are unknown to this one\)/],
      [damaged, /integrity_check|malformed/],
      [path.join(dir, 'absent.sqlite'), /does not exist/],
    ];
    for (const [file, message] of cases) {
      const into = target(masterKey);
      const refused = await runCli(['restore', file], env(into));
      assert.equal(refused.code, 1, `${file}: ${refused.stderr}`);
      assert.match(refused.stderr, message);
      assert.deepEqual(readdirSync(into), ['master.key'], 'nothing written');
    }
  });

  it('needs one FILE (usage, exit code 2)', async () => {
    for (const command of ['backup', 'restore']) {
      const result = await runCli([command], env(tempDir()));
      assert.equal(result.code, 2);
      assert.match(result.stderr, new RegExp(`${command} needs one FILE`));
    }
  });
});

describe('cps backup and cps restore on PostgreSQL', () => {
  it('refuse with the PostgreSQL tools to use instead (exit code 1)', async () => {
    const databaseUrl = PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const file = path.join(tempDir(), 'copy.sqlite');
    const backup = await runCli(['backup', file], { ...ADMIN, CPS_DATA_DIR: tempDir(), DATABASE_URL: databaseUrl });
    assert.equal(backup.code, 1);
    assert.match(backup.stderr, /with DATABASE_URL \(PostgreSQL\) use pg_dump -Fc/);
    assert.ok(!existsSync(file));
    const restore = await runCli(['restore', file], { ...ADMIN, CPS_DATA_DIR: tempDir(), DATABASE_URL: databaseUrl });
    assert.equal(restore.code, 1);
    assert.match(restore.stderr, /use pg_restore/);
  });
});

describe('cps restore re-applies the erasures made after the backup (sqlite)', { skip: DIALECT !== 'sqlite' && 'the SQLite database only' }, () => {
  it('a patient erased after the backup is erased again by the restore, which says so; the others are as the copy has them', async () => {
    const database = await createTestDatabase();
    const t = await createTestApp({ database });
    const masterKey = (await testKeys()).masterKey.toString('base64');
    const cliEnv = { ...env(database.dataDir), CPS_MASTER_KEY: masterKey };
    let closed = false;
    try {
      const client = await createTestClient(t.ctx);
      const erase = async (id: string) => {
        const response = await t.app.inject({ method: 'POST', url: `/privacy/v1/patients/${id}/erase`, headers: bearer(client.token) });
        assert.equal(response.statusCode, 200, response.body);
      };
      const before = await createDr(t, client.token, { first_name: 'Erasedbefore', partner_patient_id: 'bk-before' });
      const later = await createDr(t, client.token, { first_name: 'Erasedlater', mobile: '+919811122233', partner_patient_id: 'bk-later' });
      const kept = await createDr(t, client.token, { first_name: 'Keptalive' });
      await erase(before);
      const backupFile = path.join(tempDir(), 'copy.sqlite');
      json(await runCli(['backup', backupFile], cliEnv));
      await erase(later);
      await t.close();
      closed = true;

      const result = json(await runCli(['restore', backupFile], cliEnv));
      assert.equal(result.erasures.records, 2);
      assert.deepEqual(
        result.erasures.re_erased.map((entry: any) => [entry.business_id, entry.patient_id]),
        [[client.businessId, later]],
      );
      const patients = rows(result.restored, 'select id, first_name, mobile, erased_at from patients order by id');
      const byId = new Map(patients.map((row) => [row.id, row]));
      assert.equal(byId.get(later).first_name, null);
      assert.equal(byId.get(later).mobile, null);
      assert.notEqual(byId.get(later).erased_at, null);
      assert.notEqual(byId.get(before).erased_at, null);
      assert.equal(byId.get(kept).first_name, 'Keptalive');
      const restoredBytes = readFileSync(result.restored, 'latin1');
      assert.ok(!restoredBytes.includes('Erasedlater') && !restoredBytes.includes('9811122233'), 'no byte of the erased patient is left in the file');
    } finally {
      if (!closed) await t.close();
      await database.drop();
    }
  });
});

describe(`cps backup of documents in the files store (${DIALECT})`, { skip: DIALECT !== 'sqlite' && 'the SQLite database only' }, () => {
  const PNG_64 = (() => {
    const canvas = createCanvas(64, 48);
    const context = canvas.getContext('2d');
    context.fillStyle = '#3a7';
    context.fillRect(0, 0, 64, 48);
    return canvas.toBuffer('image/png');
  })();

  it('puts every stored file and thumbnail into the copy, which a restore serves with nothing else; a file gone meanwhile breaks nothing', async () => {
    const database = await createTestDatabase();
    const t = await createTestApp({ database });
    const masterKey = (await testKeys()).masterKey.toString('base64');
    const cliEnv = { ...env(database.dataDir), CPS_MASTER_KEY: masterKey };
    const restoreDir = tempDir();
    let closed = false;
    try {
      assert.equal(t.ctx.config.documents.store, 'files');
      const client = await createTestClient(t.ctx);
      const api = documentsApi(t.app, client.token, 'pt-backup');
      const pdf = sampleFile('pdf', 700_000);
      const kept = await api.create([pdf, PNG_64], ['application/pdf', 'image/png']);
      await t.ctx.jobs.runDue();
      const gone = await api.create([sampleFile('pdf', 3000)], ['application/pdf']);
      await untilSecondIsOver();
      const listed = await api.all();
      const thumbnail = (listed.items.find((entry) => entry.record.item.document_id === kept)!.record.item.metadata as { thumbnail: string | null })
        .thumbnail!;
      assert.ok(thumbnail, 'the PNG has its thumbnail');
      const thumbnailBytes = (await download(t.app, thumbnail)).rawPayload;
      // As if its erasure had removed it after the copy began: the copy keeps its row without bytes.
      const goneFile = await t.ctx.storage.db
        .selectFrom('document_files')
        .select('storage_key')
        .where('document_id', '=', gone)
        .executeTakeFirstOrThrow();
      rmSync(storedFilePath(database.dataDir, goneFile.storage_key!));
      const backupFile = path.join(tempDir(), 'copy.sqlite');
      const result = json(await runCli(['backup', backupFile], cliEnv));
      assert.deepEqual(result.document_files, { copied: 3, gone: 1 });
      assert.deepEqual(rows(backupFile, "select count(*) as n from document_files where store = 'files' or thumbnail_store = 'files'"), [{ n: 0 }]);
      // The gone file's row promises no bytes: removed as a delete leaves it, its key gone.
      assert.deepEqual(rows(backupFile, `select state from document_files where document_id = '${gone}'`), [{ state: 'removing' }]);
      assert.deepEqual(rows(backupFile, `select count(*) as n from document_file_keys where storage_key = '${goneFile.storage_key}'`), [{ n: 0 }]);
      await t.close();
      closed = true;

      // Restored where no file of the files store is: the copy alone serves them.
      const restored = json(await runCli(['restore', backupFile], { ...env(restoreDir), CPS_MASTER_KEY: masterKey }));
      assert.equal(restored.previous_documents, null);
      const again = await createTestApp({ database: { databaseUrl: null, dataDir: restoreDir, drop: async () => undefined } });
      try {
        const back = documentsApi(again.app, client.token, 'pt-backup');
        const files = (await back.get(kept)).json().files;
        assert.ok((await download(again.app, files[0].asset_url)).rawPayload.equals(pdf));
        assert.ok((await download(again.app, files[1].asset_url)).rawPayload.equals(PNG_64));
        const relisted = await back.all();
        const link = (relisted.items.find((entry) => entry.record.item.document_id === kept)!.record.item.metadata as { thumbnail: string })
          .thumbnail;
        assert.ok((await download(again.app, link)).rawPayload.equals(thumbnailBytes));
        assert.deepEqual(filesOnDisk(restoreDir), []);
        // The file gone before the copy read it: not found, rather than a failed read.
        const goneLink = (await back.get(gone)).json().files[0].asset_url;
        assert.equal((await download(again.app, goneLink)).statusCode, 404);
      } finally {
        await again.close();
      }

      // Restored over the data directory it was made from: its files store's folder is kept aside with its database.
      const over = json(await runCli(['restore', backupFile], cliEnv));
      assert.equal(
        over.previous_documents,
        path.join(database.dataDir, 'documents.before-restore-') + path.basename(over.previous).slice('cps.sqlite.before-restore-'.length),
      );
      assert.deepEqual(filesOnDisk(database.dataDir), []);
    } finally {
      if (!closed) await t.close();
      await database.drop();
    }
  });

  it('restore refuses a copy of the database file whose documents are in the files store, leaving the data directory as it was', async () => {
    const database = await createTestDatabase();
    const t = await createTestApp({ database });
    const cliEnv = { ...env(database.dataDir), CPS_MASTER_KEY: (await testKeys()).masterKey.toString('base64') };
    try {
      const client = await createTestClient(t.ctx);
      await documentsApi(t.app, client.token, 'pt-raw-copy').create([sampleFile('pdf', 3000)], ['application/pdf']);
      // A copy made without cps backup: its rows name files it does not hold.
      const raw = path.join(tempDir(), 'raw.sqlite');
      const live = new SQLite(path.join(database.dataDir, 'cps.sqlite'), { readonly: true });
      await live.backup(raw);
      live.close();
      await t.close();
      const before = [readdirSync(database.dataDir).sort(), filesOnDisk(database.dataDir)];
      const refused = await runCli(['restore', raw], cliEnv);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /names 1 document files kept in the files store .* it was not made by cps backup/);
      assert.deepEqual([readdirSync(database.dataDir).sort(), filesOnDisk(database.dataDir)], before);
      assert.ok(existsSync(path.join(database.dataDir, 'documents')), "the files store's folder stays in place");
    } finally {
      await database.drop();
    }
  });
});
