import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DocumentLinks } from '../../../src/modules/documents/links.ts';
import { bearer, createTestClient, type TestApp, type TestClient } from '../../support.ts';
import {
  BASE,
  documentsApi,
  download,
  jpegWithHiddenFrame,
  multipartBody,
  postForm,
  sampleFile,
  type FormJson,
  documentsTestApp,
  STORE,
} from './support.ts';

describe(`documents: security (${STORE} store)`, () => {
  let t: TestApp;
  let owner: TestClient;
  let other: TestClient;
  let ownerApi: ReturnType<typeof documentsApi>;
  let docId: string;

  before(async () => {
    t = await documentsTestApp();
    owner = await createTestClient(t.ctx);
    other = await createTestClient(t.ctx);
    ownerApi = documentsApi(t.app, owner.token, 'pt-1');
    docId = await ownerApi.create([sampleFile('pdf', 3000)], ['application/pdf']);
  });
  after(() => t.close());

  it('needs a bearer token (401) with a documents scope (403) on every operation but the form and the link', async () => {
    const routes: Array<{ method: 'GET' | 'POST' | 'PATCH' | 'DELETE'; url: string; payload?: object }> = [
      { method: 'GET', url: BASE },
      { method: 'POST', url: BASE, payload: { batch_request: [] } },
      { method: 'GET', url: `${BASE}/${docId}` },
      { method: 'PATCH', url: `${BASE}/${docId}`, payload: { title: 'x' } },
      { method: 'DELETE', url: `${BASE}/${docId}` },
      { method: 'GET', url: `${BASE}/${docId}/result` },
      { method: 'POST', url: '/mr/api/v2/docs?task=smart' },
    ];
    const casesOnly = await createTestClient(t.ctx, { businessId: owner.businessId, scopes: ['cases:read', 'cases:write'] });
    const readOnly = await createTestClient(t.ctx, { businessId: owner.businessId, scopes: ['documents:read'] });
    for (const route of routes) {
      const none = await t.app.inject({ ...route, headers: { 'x-pt-id': 'pt-1' } });
      assert.equal(none.statusCode, 401, `${route.method} ${route.url}`);
      const wrong = await t.app.inject({ ...route, headers: { ...bearer(casesOnly.token), 'x-pt-id': 'pt-1' } });
      assert.equal(wrong.statusCode, 403, `${route.method} ${route.url}`);
      assert.deepEqual(Object.keys(wrong.json()).sort(), ['code', 'error']);
      if (route.method !== 'GET') {
        const reader = await t.app.inject({ ...route, headers: { ...bearer(readOnly.token), 'x-pt-id': 'pt-1' } });
        assert.equal(reader.statusCode, 403, `${route.method} ${route.url} with documents:read`);
      }
    }
    assert.equal((await documentsApi(t.app, readOnly.token, 'pt-1').get(docId)).statusCode, 200);
  });

  it("answers another business's document as unknown, and lists none of it", async () => {
    const api = documentsApi(t.app, other.token, 'pt-1');
    for (const response of [await api.get(docId), await api.update(docId, { title: 'x' }), await api.remove(docId), await api.result(docId)]) {
      assert.equal(response.statusCode, 404);
      assert.equal(response.json().code, 'NOT_FOUND');
    }
    const { items } = await api.all();
    assert.equal(items.length, 0);
    assert.equal((await ownerApi.get(docId)).statusCode, 200, 'untouched');
  });

  it("answers another patient's document as unknown", async () => {
    const api = documentsApi(t.app, owner.token, 'pt-2');
    assert.equal((await api.get(docId)).statusCode, 404);
    assert.equal((await api.update(docId, { title: 'x' })).statusCode, 404);
    assert.equal((await api.remove(docId)).statusCode, 404);
    assert.equal((await api.result(docId)).statusCode, 404);
  });

  it("never opens another business's file with a link: a link names its business, document and file", async () => {
    const theirs = documentsApi(t.app, other.token, 'pt-1');
    const theirId = await theirs.create([sampleFile('png', 3000)], ['image/png']);
    const mine = new URL((await ownerApi.get(docId)).json().files[0].asset_url);
    // My link on their document's path.
    const swapped = await t.app.inject({ method: 'GET', url: `${BASE}/${theirId}/files/0${mine.search}` });
    assert.equal(swapped.statusCode, 403);
    // A link sealed for my business naming their document finds nothing: the business scopes the look-up.
    const links = new DocumentLinks(t.ctx.keys.masterKey);
    const forged = links.sealDownload({ ...links.openDownload(mine.searchParams.get('link')!)!, documentId: theirId });
    const crossed = await t.app.inject({ method: 'GET', url: `${BASE}/${theirId}/files/0?pt=pt-1&link=${forged}` });
    assert.equal(crossed.statusCode, 404);
    // The patient the link names cannot be changed (the access log's entry names it).
    const renamed = new URL(mine.toString());
    renamed.searchParams.set('pt', 'pt-2');
    assert.equal((await download(t.app, renamed.toString())).statusCode, 403);
    // The right link works, without a bearer token.
    assert.equal((await download(t.app, mine.toString())).statusCode, 200);
  });

  it("cannot upload into another business's document: a form's policy names it, and fields cannot change it", async () => {
    const answer = await ownerApi.prepare([{ files: [{ contentType: 'application/pdf', file_size: 2048 }] }]);
    const form = answer.json().batch_response[0].forms[0] as FormJson;
    const response = await postForm(t.app, form, sampleFile('pdf', 2048), 'application/pdf', { fields: { key: 'other-business/doc/0' } });
    const rows = await t.ctx.storage.db
      .selectFrom('document_files')
      .select(['business_id', 'state'])
      .where('document_id', '=', answer.json().batch_response[0].document_id)
      .execute();
    if (STORE !== 's3') {
      assert.equal(response.statusCode, 204);
      assert.deepEqual(rows, [{ business_id: owner.businessId, state: 'stored' }]);
    } else {
      // The store keeps a file elsewhere only if it does not check its policy (S3 answers 403; s3rver does
      // not check): the service looks at the form's own key, finds nothing, and keeps nothing.
      assert.notEqual(response.statusCode, 204);
      assert.deepEqual(rows, [{ business_id: owner.businessId, state: 'waiting' }]);
    }
  });

  it('records each read, listing and download in the access log, naming the patient', async () => {
    await ownerApi.get(docId);
    await ownerApi.list();
    const link = (await ownerApi.get(docId)).json().files[0].asset_url as string;
    assert.equal((await download(t.app, link)).statusCode, 200);
    await t.ctx.audit.flush();
    const entries = await t.ctx.storage.db
      .selectFrom('access_log')
      .select(['operation', 'action', 'resource_type', 'resource_id', 'patient_ref', 'client_id', 'status'])
      .where('business_id', '=', owner.businessId)
      .execute();
    const ops = entries.map((e) => `${e.operation} ${e.resource_id ?? ''}`);
    assert.ok(ops.includes(`GET /mr/api/v1/docs/:id ${docId}`), ops.join('\n'));
    assert.ok(entries.some((e) => e.operation === 'GET /mr/api/v1/docs' && e.patient_ref === 'pt-1'));
    const fetched = entries.find((e) => e.operation === 'GET /mr/api/v1/docs/:id/files/:index');
    assert.ok(fetched, 'the download is logged');
    assert.equal(fetched.resource_id, `${docId}/0`);
    assert.equal(fetched.patient_ref, 'pt-1');
    assert.equal(fetched.client_id, owner.clientId);
    // An object store's file: the service answers with a redirect to the store's presigned GET.
    assert.equal(fetched.status, STORE === 's3' ? 302 : 200);
  });

  it('answers a multipart body to a JSON route as 415, not as an upload', async () => {
    const body = multipartBody([{ name: 'file', value: sampleFile('pdf'), fileName: 'a.pdf', contentType: 'application/pdf' }]);
    const response = await t.app.inject({
      method: 'POST',
      url: BASE,
      headers: { ...bearer(owner.token), 'x-pt-id': 'pt-1', ...body.headers },
      payload: body.payload,
    });
    assert.equal(response.statusCode, 415);
  });

  it('refuses a JPEG bomb whose real frame header a 1 × 1 one hidden in an APP segment stands before, by a form and in one request', async () => {
    // 256 megapixels in 1 KB: over CPS_DOCUMENTS_MAX_MEGAPIXELS (100).
    const bomb = jpegWithHiddenFrame(16_000, 16_000);
    const prepared = await ownerApi.prepare([{ files: [{ contentType: 'image/jpeg', file_size: bomb.length }] }]);
    const form = prepared.json().batch_response[0].forms[0] as FormJson;
    const byForm = await postForm(t.app, form, bomb, 'image/jpeg');
    assert.equal(byForm.statusCode, 400, byForm.body);
    assert.match(byForm.json().error, /declares 256000000 pixels/);
    const inOne = await ownerApi.uploadV2(bomb);
    assert.equal(inOne.statusCode, 400, inOne.body);
    assert.deepEqual(Object.keys(inOne.json()).sort(), ['code', 'error']);
  });
});
