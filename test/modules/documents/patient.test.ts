/** Documents in the patient compartment: a merge moves them, an export includes their files, an erasure removes the files. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { untilSecondIsOver } from '../cases/support.ts';
import { events } from '../appointments/support.ts';
import { exportReady, linkPath } from '../privacy/support.ts';
import { documentsApi, download, sampleFile, documentsTestApp, STORE, storedOf, writeUnrecordedThumbnail } from './support.ts';

describe(`documents: the patient compartment (${DIALECT}, ${STORE} store)`, () => {
  let t: TestApp & { objectsDir: string | null };
  let client: TestClient;

  const newPatient = async (first: string) => {
    const created = await t.app.inject({
      method: 'POST',
      url: '/dr/v1/patient',
      headers: bearer(client.token),
      payload: { first_name: first, last_name: 'Rao', gender: 'F', dob: '1985-01-02' },
    });
    assert.equal(created.statusCode, 201, created.body);
    return created.json().patient_id as string;
  };

  before(async () => {
    t = await documentsTestApp();
    client = await createTestClient(t.ctx);
  });
  after(() => t.close());

  it("a merge moves the duplicate's documents to the survivor, files and a sync included", async () => {
    const survivor = await newPatient('Asha');
    const duplicate = await newPatient('Aasha');
    const pdf = sampleFile('pdf', 400_000);
    const id = await documentsApi(t.app, client.token, duplicate).create([pdf], ['application/pdf']);
    const kept = await documentsApi(t.app, client.token, survivor).create([sampleFile('png')], ['image/png']);
    await untilSecondIsOver();
    const before = await documentsApi(t.app, client.token, survivor).all();
    const since = Math.max(...before.items.map((item) => item.record.updated_at));
    const merged = await t.app.inject({
      method: 'POST',
      url: `/dr/v1/patient/${survivor}/merge`,
      headers: bearer(client.token),
      payload: { duplicate_patient_id: duplicate },
    });
    assert.equal(merged.statusCode, 200, merged.body);
    assert.equal(merged.json().moved.documents, 1, 'the answer counts the moved document');
    const recorded = (await events(t, client.businessId, 'patient.merged')).find((event) => event.payload.data.patient_id === survivor);
    assert.equal(recorded?.payload.data.moved.documents, 1, 'so does the patient.merged event');
    const api = documentsApi(t.app, client.token, survivor);
    const read = await api.get(id);
    assert.equal(read.statusCode, 200, read.body);
    assert.ok((await download(t.app, read.json().files[0].asset_url)).rawPayload.equals(pdf));
    await untilSecondIsOver();
    const synced = await api.all({ u_at__gt: since });
    assert.deepEqual(
      synced.items.map((item) => item.record.item.document_id),
      [id],
      'the moved document reaches a syncing client of the survivor',
    );
    assert.equal((await api.get(kept)).statusCode, 200);
  });

  it("an export includes the patient's documents with their files, read from the store as it is downloaded", async () => {
    const patient = await newPatient('Meera');
    const api = documentsApi(t.app, client.token, patient);
    const png = sampleFile('png', 5000);
    // Over two chunks of the database store, and not a whole number of base64's 3-byte groups.
    const pdf = sampleFile('pdf', 600_001);
    const id = await api.create([png], ['image/png'], { title: 'X-ray' });
    const report = await api.create([pdf], ['application/pdf'], { title: 'Report' });
    const gone = await api.create([sampleFile('png', 3000)], ['image/png'], { title: 'Deleted later' });
    const ready = await exportReady(t, client.token, patient);
    const stored = await t.ctx.storage.db
      .selectFrom('privacy_exports')
      .select('document')
      .where('id', '=', ready.export_id)
      .executeTakeFirstOrThrow();
    assert.ok(stored.document !== null && stored.document.length < 100_000, `the stored export holds no file (${stored.document?.length} chars)`);
    assert.equal((await api.remove(gone)).statusCode, 200);
    const answer = await t.app.inject({ method: 'GET', url: linkPath(ready.download_url), headers: bearer(client.token) });
    assert.equal(answer.statusCode, 200, answer.body);
    assert.match(String(answer.headers['content-type']), /^application\/json/);
    const document = answer.json();
    assert.equal(document.format, 'opencps.patient-export.v1');
    const exported = (documentId: string) => document.documents.find((doc: { document_id: string }) => doc.document_id === documentId);
    assert.ok(exported(id), JSON.stringify(Object.keys(document)));
    assert.equal(exported(id).title, 'X-ray');
    assert.equal(exported(id).files[0].content_type, 'image/png');
    assert.ok(Buffer.from(exported(id).files[0].content_base64, 'base64').equals(png));
    assert.equal(exported(report).files[0].size, pdf.length);
    assert.ok(Buffer.from(exported(report).files[0].content_base64, 'base64').equals(pdf));
    // Deleted after the export was built: the document as it was then, its file's bytes no longer there.
    assert.equal(exported(gone).title, 'Deleted later');
    assert.equal(exported(gone).files[0].content_base64, null);
  });

  it("an erasure removes the patient's documents and their bytes", async () => {
    const patient = await newPatient('Kavya');
    const api = documentsApi(t.app, client.token, patient);
    const id = await api.create([sampleFile('pdf', 300_000)], ['application/pdf']);
    const link = (await api.get(id)).json().files[0].asset_url as string;
    assert.equal((await storedOf(t, id)).length, 1);
    const erased = await t.app.inject({ method: 'POST', url: `/privacy/v1/patients/${patient}/erase`, headers: bearer(client.token) });
    assert.equal(erased.statusCode, 200, erased.body);
    assert.deepEqual(await storedOf(t, id), [], 'the store keeps nothing of the file');
    const { db } = t.ctx.storage;
    assert.equal((await db.selectFrom('documents').select('id').where('id', '=', id).execute()).length, 0);
    assert.equal((await db.selectFrom('document_files').select('idx').where('document_id', '=', id).execute()).length, 0);
    assert.equal((await download(t.app, link)).statusCode, 404);
  });

  it("a link to an erased patient's document never opens another patient's document given its id since", async () => {
    const erasedPatient = await newPatient('Ira');
    const other = await newPatient('Uma');
    const id = 'lab-report-reused';
    const theirs = documentsApi(t.app, client.token, erasedPatient);
    await theirs.create([sampleFile('pdf', 3000)], ['application/pdf'], { document_id: id });
    const link = (await theirs.get(id)).json().files[0].asset_url as string;
    const erased = await t.app.inject({ method: 'POST', url: `/privacy/v1/patients/${erasedPatient}/erase`, headers: bearer(client.token) });
    assert.equal(erased.statusCode, 200, erased.body);
    // The id is free again: another patient's document takes it, within the erased one's link's life.
    const hers = sampleFile('pdf', 5000);
    await documentsApi(t.app, client.token, other).create([hers], ['application/pdf'], { document_id: id });
    const opened = await download(t.app, link);
    assert.equal(opened.statusCode, 404, `the erased patient's link answered ${opened.statusCode} with ${opened.rawPayload.length} bytes`);
  });

  it('an erasure removes a thumbnail that a job wrote and never recorded (its process ended between)', async () => {
    const patient = await newPatient('Meera');
    const id = await documentsApi(t.app, client.token, patient).create([sampleFile('png')], ['image/png']);
    await writeUnrecordedThumbnail(t, id, sampleFile('jpeg'));
    assert.equal((await storedOf(t, id)).length, 2);
    const erased = await t.app.inject({ method: 'POST', url: `/privacy/v1/patients/${patient}/erase`, headers: bearer(client.token) });
    assert.equal(erased.statusCode, 200, erased.body);
    assert.deepEqual(await storedOf(t, id), [], 'the store keeps neither the file nor the thumbnail');
  });
});
