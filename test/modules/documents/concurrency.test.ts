import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { businessBytes } from '../../../src/modules/documents/repo.ts';
import { createTestApp, createTestClient, DIALECT, type TestApp } from '../../support.ts';
import { untilSecondIsOver } from '../cases/support.ts';
import { documentsApi, download, postForm, sampleFile, type FormJson, documentsTestApp, STORE, storedOf } from './support.ts';

describe(`documents: concurrency (${STORE} store)`, () => {
  let t: TestApp & { objectsDir: string | null };
  let api: ReturnType<typeof documentsApi>;

  before(async () => {
    t = await documentsTestApp();
    api = documentsApi(t.app, (await createTestClient(t.ctx)).token, 'pt-race');
  });
  after(() => t.close());

  it('lets one of two concurrent uploads with one form store its file; the other is refused', async () => {
    const file = sampleFile('pdf', 800_000);
    const answer = await api.prepare([{ files: [{ contentType: 'application/pdf', file_size: file.length }] }]);
    const doc = answer.json().batch_response[0] as { document_id: string; forms: FormJson[] };
    const results = await Promise.all([
      postForm(t.app, doc.forms[0]!, file, 'application/pdf'),
      postForm(t.app, doc.forms[0]!, file, 'application/pdf'),
    ]);
    assert.deepEqual(results.map((r) => r.statusCode).sort(), [204, 409]);
    const keys = (await storedOf(t, doc.document_id)).filter((file) => !file.key.split(path.sep).includes('uploads'));
    assert.equal(keys.length, 1, 'one copy of the file is stored');
  });

  it('a syncing client misses no document uploaded, changed or deleted while it lists', async () => {
    const seen = new Map<string, string>();
    let since: number | undefined;
    const sync = async () => {
      const { items } = await api.all(since === undefined ? {} : { u_at__gt: since });
      for (const item of items) {
        seen.set(item.record.item.document_id as string, item.record.status);
        since = Math.max(since ?? 0, item.record.updated_at);
      }
    };
    const ids: string[] = [];
    const writes = (async () => {
      for (let round = 0; round < 4; round += 1) {
        const made = await Promise.all(Array.from({ length: 5 }, () => api.uploadV2(sampleFile('png', 2000))));
        for (const response of made) ids.push(response.json().document_id);
        await api.update(ids[0]!, { title: `round ${round}` });
      }
      await api.remove(ids[1]!);
    })();
    const reads = (async () => {
      for (let i = 0; i < 6; i += 1) await sync();
    })();
    await Promise.all([writes, reads]);
    await untilSecondIsOver();
    await sync();
    assert.equal(ids.length, 20);
    for (const id of ids) assert.ok(seen.has(id), `${id} was synced`);
    assert.equal(seen.get(ids[1]!), 'D', 'the delete reached the client');
  });
});

describe(`documents: the business's limit under concurrent uploads (${STORE} store)`, () => {
  let t: TestApp & { objectsDir: string | null };

  before(async () => {
    t = await documentsTestApp({ env: { CPS_DOCUMENTS_MAX_BUSINESS_MB: '1' } });
  });
  after(() => t.close());

  /** Bytes the business keeps or was promised, as the limit counts them. */
  const keptBytes = (businessId: string) => businessBytes(t.ctx.storage.db, businessId);

  it('uploads in one request at once cannot each take the same room: one of three of 900 KB is kept under 1 MB', async () => {
    const { token, businessId } = await createTestClient(t.ctx);
    const answers = await Promise.all(
      ['pt-v2-a', 'pt-v2-b', 'pt-v2-c'].map((patient) =>
        documentsApi(t.app, token, patient).uploadV2(sampleFile('pdf', 900 * 1024), { contentType: 'application/pdf' }),
      ),
    );
    assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [200, 413, 413]);
    assert.equal(await keptBytes(businessId), 900 * 1024);
  });

  it('forms asked for at once cannot each promise the same room: one of three of 900 KB is given under 1 MB', async () => {
    const { token, businessId } = await createTestClient(t.ctx);
    const answers = await Promise.all(
      ['pt-form-a', 'pt-form-b', 'pt-form-c'].map((patient) =>
        documentsApi(t.app, token, patient).prepare([{ files: [{ contentType: 'application/pdf', file_size: 900 * 1024 }] }]),
      ),
    );
    assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [200, 413, 413]);
    assert.equal(await keptBytes(businessId), 900 * 1024);
  });
});

describe('documents: two processes on one PostgreSQL, no shared disk (database store)', {
  skip: (DIALECT !== 'postgres' || STORE !== 'database') && 'the database store on PostgreSQL is what several processes share',
}, () => {
  let first: TestApp;
  let second: TestApp;
  let token: string;

  before(async () => {
    first = await documentsTestApp();
    const otherDisk = mkdtempSync(path.join(tmpdir(), 'cps-test-second-'));
    second = await createTestApp({
      database: first.database,
      keys: first.ctx.keys,
      env: { CPS_DATA_DIR: otherDisk, CPS_DOCUMENTS_STORE: 'database' },
    });
    const close = second.close;
    second.close = async () => {
      await close();
      rmSync(otherDisk, { recursive: true, force: true });
    };
    token = (await createTestClient(first.ctx)).token;
  });
  after(async () => {
    await second.close();
    await first.close();
  });

  it('a form one process gave takes its file at the other, and each serves what the other stored', async () => {
    const onFirst = documentsApi(first.app, token, 'pt-two');
    const onSecond = documentsApi(second.app, token, 'pt-two');
    const pdf = sampleFile('pdf', 300_000);
    const prepared = await onFirst.prepare([{ files: [{ contentType: 'application/pdf', file_size: pdf.length }] }]);
    const doc = prepared.json().batch_response[0] as { document_id: string; forms: FormJson[] };
    assert.equal((await postForm(second.app, doc.forms[0]!, pdf, 'application/pdf')).statusCode, 204);
    assert.ok((await download(first.app, (await onFirst.get(doc.document_id)).json().files[0].asset_url)).rawPayload.equals(pdf));
    const png = sampleFile('png', 50_000);
    const uploaded = await onSecond.uploadV2(png, { contentType: 'image/png' });
    assert.equal(uploaded.statusCode, 200, uploaded.body);
    const link = (await onFirst.get(uploaded.json().document_id)).json().files[0].asset_url;
    assert.ok((await download(first.app, link)).rawPayload.equals(png));
    assert.ok((await download(second.app, link)).rawPayload.equals(png));
  });
});
