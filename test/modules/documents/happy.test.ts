import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestClient, type TestApp } from '../../support.ts';
import { casesApi, newCase, untilSecondIsOver } from '../cases/support.ts';
import { assertEventBody } from '../webhooks/event-schemas.ts';
import {
  BASE,
  CONTENT_TYPES,
  documentsApi,
  download,
  heicOf,
  postForm,
  sampleFile,
  type FormJson,
  documentsTestApp,
  STORE,
  storedOf,
} from './support.ts';

describe(`documents: happy paths (${STORE} store)`, () => {
  let t: TestApp;
  let api: ReturnType<typeof documentsApi>;
  /** The same patient's cases. */
  let patientCases: ReturnType<typeof casesApi>;

  before(async () => {
    t = await documentsTestApp();
    const client = await createTestClient(t.ctx);
    api = documentsApi(t.app, client.token, 'pt-happy');
    patientCases = casesApi(t.app, client.token, 'pt-happy');
  });
  after(() => t.close());

  it('uploads through a form, lists the document once its second is over, and serves the file back', async () => {
    const pdf = sampleFile('pdf', 700_000);
    const prepared = await api.prepare([
      { dt: 'lr', dd_e: 1_614_556_800, tg: ['covid', 'test'], title: 'CBC', files: [{ contentType: 'application/pdf', file_size: pdf.length }] },
    ]);
    assert.equal(prepared.statusCode, 200, prepared.body);
    const body = prepared.json();
    assert.equal(body.error, false);
    const doc = body.batch_response[0] as { document_id: string; forms: FormJson[] };
    assert.match(doc.document_id, /^[0-9a-f-]{36}$/);
    assert.equal(doc.forms.length, 1);
    assert.equal(doc.forms[0]!.fields['Content-Type'], 'application/pdf');
    // The service's sealed form, or the object store's presigned POST policy.
    assert.ok(doc.forms[0]!.fields.policy ?? doc.forms[0]!.fields.Policy);

    // Not listed nor readable while its file has not arrived.
    assert.equal((await api.get(doc.document_id)).statusCode, 404);

    const sent = await postForm(t.app, doc.forms[0]!, pdf, 'application/pdf', { fileName: 'cbc.pdf' });
    assert.equal(sent.statusCode, 204, sent.body);

    const read = await api.get(doc.document_id);
    assert.equal(read.statusCode, 200, read.body);
    const json = read.json();
    assert.equal(json.dt, 'lr');
    assert.equal(json.document_date_epoch, 1_614_556_800);
    assert.deepEqual(json.tags, ['covid', 'test']);
    assert.equal(json.title, 'CBC');
    assert.equal(json.files.length, 1);
    assert.equal(json.files[0].file_type, 'PDF');
    assert.equal(json.files[0].size, pdf.length);

    const file = await download(t.app, json.files[0].asset_url);
    assert.equal(file.statusCode, 200, file.body);
    assert.equal(file.headers['content-type'], 'application/pdf');
    // A form of an object store does not pass the file's name on: the file is named after the document.
    assert.match(String(file.headers['content-disposition']), STORE !== 's3' ? /cbc\.pdf/ : new RegExp(`${doc.document_id}-0\\.pdf`));
    assert.ok(file.rawPayload.equals(pdf), 'the bytes come back as sent');

    await untilSecondIsOver();
    const { items } = await api.all();
    const listed = items.find((item) => item.record.item.document_id === doc.document_id);
    assert.ok(listed);
    assert.equal(listed.record.status, 'A');
    assert.equal(listed.record.item.document_type, 'lr');
    assert.deepEqual((listed.record.item.metadata as { tags: string[] }).tags, ['covid', 'test']);
  });

  it("takes the batch ekapython-sdk's upload_document sends without a date (dd_e: null) as a document without one", async () => {
    const pdf = sampleFile('pdf', 4096);
    const prepared = await api.prepare([
      { dt: 'lr', dd_e: null, tg: [], files: [{ contentType: 'application/pdf', file_size: pdf.length }], title: 'Lab report' },
    ]);
    assert.equal(prepared.statusCode, 200, prepared.body);
    const doc = prepared.json().batch_response[0] as { document_id: string; forms: FormJson[] };
    assert.equal((await postForm(t.app, doc.forms[0]!, pdf, 'application/pdf')).statusCode, 204);
    const read = await api.get(doc.document_id);
    assert.equal(read.statusCode, 200, read.body);
    assert.equal(read.json().document_date_epoch, null);
    assert.equal(read.json().title, 'Lab report');
  });

  it('accepts every type from its bytes: PDF, JPEG, PNG, HEIC and DICOM', async () => {
    for (const type of ['pdf', 'jpeg', 'png', 'heic', 'dicom'] as const) {
      const file = sampleFile(type, 4096);
      const id = await api.create([file], [CONTENT_TYPES[type]]);
      const read = (await api.get(id)).json();
      assert.equal(read.files[0].content_type, CONTENT_TYPES[type], type);
      assert.equal(read.files[0].file_type, type === 'pdf' ? 'PDF' : 'IMG');
    }
  });

  it('accepts a HEIC whose image data comes before its meta, past the head held for dimensions, through v2 and a form', async () => {
    const imageBytes = 1536 * 1024;
    const files = [
      heicOf([[4032, 3024]], imageBytes, { imageDataFirst: true }),
      heicOf([[4032, 3024]], imageBytes, { imageDataFirst: true, largeSize: true }),
      // The meta first, as before.
      heicOf([[4032, 3024]], imageBytes),
    ];
    for (const [i, heic] of files.entries()) {
      const answer = await api.uploadV2(heic, { fileName: `IMG_000${i}.heic` });
      assert.equal(answer.statusCode, 200, answer.body);
      for (const id of [answer.json().document_id as string, await api.create([heic], ['image/heic'])]) {
        const file = (await api.get(id)).json().files[0];
        assert.equal(file.content_type, 'image/heic');
        assert.equal(file.file_type, 'IMG');
        assert.equal(file.size, heic.length);
        assert.ok((await download(t.app, file.asset_url)).rawPayload.equals(heic), `file ${i} comes back as sent`);
      }
    }
  });

  it('keeps a document of several files pending until the last one is stored', async () => {
    const files = [sampleFile('png', 3000), sampleFile('jpeg', 5000)];
    const prepared = (
      await api.prepare([
        {
          dt: 'ps',
          files: [
            { contentType: 'image/png', file_size: 3000 },
            { contentType: 'image/jpg', file_size: 5000 },
          ],
        },
      ])
    ).json();
    const doc = prepared.batch_response[0] as { document_id: string; forms: FormJson[] };
    assert.equal((await postForm(t.app, doc.forms[0]!, files[0]!, 'image/png')).statusCode, 204);
    assert.equal((await api.get(doc.document_id)).statusCode, 404);
    assert.equal((await postForm(t.app, doc.forms[1]!, files[1]!, 'image/jpeg')).statusCode, 204);
    const read = (await api.get(doc.document_id)).json();
    assert.deepEqual(
      read.files.map((f: { content_type: string }) => f.content_type),
      ['image/png', 'image/jpeg'],
    );
    for (const [i, f] of read.files.entries()) assert.ok((await download(t.app, f.asset_url)).rawPayload.equals(files[i]!));
  });

  it('uploads in one request through v2 and answers the document id; result says nothing was parsed', async () => {
    const png = sampleFile('png', 1_000_000);
    const answer = await api.uploadV2(png, { fileName: 'x.png' });
    assert.equal(answer.statusCode, 200, answer.body);
    const id = answer.json().document_id as string;
    const read = (await api.get(id)).json();
    assert.equal(read.dt, 'lr');
    assert.equal(read.files[0].size, png.length);
    assert.ok((await download(t.app, read.files[0].asset_url)).rawPayload.equals(png));
    const result = await api.result(id);
    assert.equal(result.statusCode, 200);
    assert.equal(result.json().status, 'error');
  });

  it("downloads under the uploader's name in any script, with the extension of the type its bytes are", async () => {
    for (const [name, expected] of [
      ['रिपोर्ट 文件.pdf', /^attachment; filename="\?+ \?+\.pdf"; filename\*=UTF-8''%E0%A4%B0%E0%A4%BF.*%E6%96%87%E4%BB%B6\.pdf$/],
      ['invoice.html', /^attachment; filename="?invoice\.html\.pdf"?$/],
      ['scan.PDF', /^attachment; filename="?scan\.PDF"?$/],
    ] as const) {
      const answer = await api.uploadV2(sampleFile('pdf', 2000), { fileName: name, contentType: 'application/pdf' });
      assert.equal(answer.statusCode, 200, answer.body);
      const file = await download(t.app, (await api.get(answer.json().document_id)).json().files[0].asset_url);
      assert.equal(file.statusCode, 200, file.body);
      assert.match(String(file.headers['content-disposition']), expected);
    }
  });

  it("takes step 1's JSON without a Content-Type, as go-sdk sends it; any other type stays 415", async () => {
    const body = JSON.stringify({ batch_request: [{ dt: '', files: [{ contentType: 'application/pdf', file_size: 100 }] }] });
    const bare = await t.app.inject({ method: 'POST', url: `${BASE}?task=smart&task=pii&batch=true`, headers: api.headers, payload: body });
    assert.equal(bare.statusCode, 200, bare.body);
    assert.equal(bare.json().batch_response.length, 1);
    const typed = await t.app.inject({ method: 'POST', url: BASE, headers: { ...api.headers, 'content-type': 'text/plain' }, payload: body });
    assert.equal(typed.statusCode, 415, typed.body);
    assert.deepEqual(Object.keys(typed.json()).sort(), ['code', 'error']);
  });

  it('takes an empty dt as none, as go-sdk sends it for a document given no type', async () => {
    const prepared = await api.prepare([{ dt: '', files: [{ contentType: 'application/pdf', file_size: 100 }] }]);
    assert.equal(prepared.statusCode, 200, prepared.body);
    const uploaded = await api.uploadV2(sampleFile('pdf'), { query: 'task=smart&dt=' });
    assert.equal(uploaded.statusCode, 200, uploaded.body);
    const read = (await api.get(uploaded.json().document_id)).json();
    assert.deepEqual([read.dt, read.document_type], ['', '']);
    assert.equal((await api.update(uploaded.json().document_id, { dt: 'ps' })).statusCode, 200);
    assert.equal((await api.update(uploaded.json().document_id, { dt: '' })).statusCode, 200);
    assert.equal((await api.get(uploaded.json().document_id)).json().dt, '');
  });

  it("updates dt, dd_e, tg, title and cases; links to the patient's cases", async () => {
    assert.equal((await patientCases.create(newCase('case-1', { display_name: 'Fever' }))).statusCode, 201);
    const id = await api.create([sampleFile('pdf')], ['application/pdf'], { cases: ['case-1'] });
    assert.deepEqual((await api.get(id)).json().cases, ['case-1']);
    const patched = await api.update(id, { dt: 'ps', dd_e: 1_700_000_000, tg: ['aa', 'bb', 'aa'], title: 'Rx', cases: null });
    assert.equal(patched.statusCode, 200, patched.body);
    const read = (await api.get(id)).json();
    assert.equal(read.dt, 'ps');
    assert.equal(read.document_date_epoch, 1_700_000_000);
    assert.deepEqual(read.tags, ['aa', 'bb']);
    assert.equal(read.title, 'Rx');
    assert.deepEqual(read.cases, []);
  });

  it("keeps a link to a case deleted since, and takes it back as the document's cases were read", async () => {
    const created = await patientCases.create(newCase('case-gone', { display_name: 'Cough' }));
    assert.equal(created.statusCode, 201, created.body);
    const id = await api.create([sampleFile('pdf')], ['application/pdf'], { cases: ['case-gone'] });
    const deleted = await patientCases.remove('case-gone');
    assert.ok(deleted.statusCode < 300, deleted.body);
    const read = (await api.get(id)).json();
    assert.deepEqual(read.cases, ['case-gone']);
    assert.equal((await api.update(id, { title: 'Cough', cases: read.cases })).statusCode, 200);
    const unknown = await api.update(id, { cases: ['case-gone', 'case-never'] });
    assert.equal(unknown.statusCode, 400);
    assert.match(unknown.json().error, /case-never/);
    assert.doesNotMatch(unknown.json().error, /case-gone/);
  });

  it('deletes: the document answers 404, its file is gone from the store, and a sync lists its tombstone', async () => {
    const id = await api.create([sampleFile('pdf', 600_000)], ['application/pdf']);
    const link = (await api.get(id)).json().files[0].asset_url as string;
    await untilSecondIsOver();
    const before = await api.all();
    const since = Math.max(...before.items.map((item) => item.record.updated_at));
    assert.equal((await api.remove(id)).statusCode, 200);
    assert.equal((await api.get(id)).statusCode, 404);
    assert.equal((await download(t.app, link)).statusCode, 404);
    assert.deepEqual(await storedOf(t, id), [], 'the bytes are removed');
    await untilSecondIsOver();
    const synced = await api.all({ u_at__gt: since });
    const tombstone = synced.items.find((item) => item.record.item.document_id === id);
    assert.ok(tombstone, 'the delete is listed to a syncing client');
    assert.equal(tombstone.record.status, 'D');
    assert.equal(tombstone.record.item.metadata, undefined);
    assert.equal((await api.result(id)).json().status, 'deleted');
  });

  it('records document.created, document.updated and document.deleted in order for the patient', async () => {
    const patient = documentsApi(t.app, (await createTestClient(t.ctx)).token, 'pt-events');
    const id = await patient.create([sampleFile('pdf')], ['application/pdf']);
    // Eka's linking fields change nothing here: no event, no new updated_at; unknown fields are not changes.
    const stamp = async () =>
      (await t.ctx.storage.db.selectFrom('documents').select('updated_at').where('id', '=', id).executeTakeFirstOrThrow()).updated_at;
    const before = await stamp();
    assert.equal((await patient.update(id, { ndhm: true, oid: '161847797963700' })).statusCode, 200);
    assert.equal(await stamp(), before);
    assert.equal((await patient.update(id, { title: 'New', ndhm: false, nonsense: 1 })).statusCode, 200);
    await patient.remove(id);
    const events = await t.ctx.storage.db
      .selectFrom('events')
      .select(['type', 'sequence', 'payload'])
      .where('ordering_key', '=', 'patient:pt-events')
      .orderBy('sequence')
      .execute();
    assert.deepEqual(
      events.map((e) => e.type),
      ['document.created', 'document.updated', 'document.deleted'],
    );
    assert.deepEqual(
      events.map((e) => Number(e.sequence)),
      [1, 2, 3],
    );
    const created = JSON.parse(events[0]!.payload as string);
    assert.equal(created.data.document_id, id);
    assert.equal(created.service, 'document');
    assert.deepEqual(JSON.parse(events[1]!.payload as string).data.changed, ['title']);
    for (const event of events) assertEventBody(JSON.parse(event.payload as string));
  });

  it('stores files encrypted: nothing stored holds the plaintext', {
    skip: STORE === 's3' && 'the object store encrypts them (next test)',
  }, async () => {
    const marker = Buffer.from('%PDF-1.4\nPLAINTEXT-MARKER-0123456789\n');
    const file = Buffer.concat([marker, Buffer.alloc(1000, 0x41)]);
    const id = await api.create([file], ['application/pdf']);
    const stored = (await storedOf(t, id)).flatMap((file) => file.data);
    assert.ok(stored.length > 0);
    for (const data of stored) assert.equal(data.includes(Buffer.from('PLAINTEXT-MARKER')), false);
  });

  it('asks the object store to encrypt each file it takes (server-side encryption)', { skip: STORE !== 's3' && 'an object store only' }, async () => {
    const answer = await api.prepare([{ files: [{ contentType: 'application/pdf', file_size: 100 }] }]);
    const form = answer.json().batch_response[0].forms[0] as FormJson;
    assert.equal(form.fields['x-amz-server-side-encryption'], 'AES256');
    const policy = JSON.parse(Buffer.from(form.fields.Policy!, 'base64').toString('utf8')) as { conditions: unknown[] };
    assert.ok(
      policy.conditions.some((c) => JSON.stringify(c) === '{"x-amz-server-side-encryption":"AES256"}'),
      JSON.stringify(policy),
    );
    assert.ok(
      policy.conditions.some((c) => JSON.stringify(c) === '["content-length-range",100,100]'),
      JSON.stringify(policy),
    );
  });

  it('takes a v2 file larger than one part of an object store multipart upload (5 MiB)', async () => {
    const pdf = sampleFile('pdf', 6 * 1024 * 1024 + 123);
    const uploaded = await api.uploadV2(pdf, { contentType: 'application/pdf' });
    assert.equal(uploaded.statusCode, 200, uploaded.body);
    const read = await api.get(uploaded.json().document_id);
    assert.ok((await download(t.app, read.json().files[0].asset_url)).rawPayload.equals(pdf));
  });

  it('replays a creating POST with the same Idempotency-Key', async () => {
    const batch = [{ dt: 'lr', files: [{ contentType: 'application/pdf', file_size: 100 }] }];
    const first = await api.prepare(batch, { 'idempotency-key': 'docs-key-1' });
    const second = await api.prepare(batch, { 'idempotency-key': 'docs-key-1' });
    assert.equal(first.statusCode, 200);
    assert.equal(second.statusCode, 200);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(second.json().batch_response[0].document_id, first.json().batch_response[0].document_id);
  });

  it('replays a v2 upload with the same Idempotency-Key: one document, stored once', async () => {
    const patient = documentsApi(t.app, (await createTestClient(t.ctx)).token, 'pt-v2-replay');
    const pdf = sampleFile('pdf', 5000);
    const first = await patient.uploadV2(pdf, { contentType: 'application/pdf', extra: { 'idempotency-key': 'v2-key-1' } });
    const second = await patient.uploadV2(pdf, { contentType: 'application/pdf', extra: { 'idempotency-key': 'v2-key-1' } });
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(second.statusCode, 200, second.body);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(second.json().document_id, first.json().document_id);
    await untilSecondIsOver();
    assert.equal((await patient.all()).items.length, 1);
    assert.equal((await storedOf(t, first.json().document_id)).length, 1);
  });
});
