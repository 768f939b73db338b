/** Our patient answers validate against Eka's own published schemas (doc-tool.yaml, patient_directory.yml). */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';
import { createTestApp, createTestClient, DIALECT, EKA_REFERENCE, type TestApp, type TestClient } from '../../support.ts';
import { createPractice, book } from '../appointments/support.ts';
import { drBody, partnerId, request } from './support.ts';

const REFERENCE = EKA_REFERENCE;
const available = existsSync(`${REFERENCE}/doc-tool.yaml`) && existsSync(`${REFERENCE}/patient_directory.yml`);

type Json = Record<string, any>;

/** The schema with every `$ref` to `#/components/...` replaced by what it names. */
function resolve(schema: unknown, document: Json): unknown {
  if (Array.isArray(schema)) return schema.map((item) => resolve(item, document));
  if (schema === null || typeof schema !== 'object') return schema;
  const ref = (schema as Json).$ref;
  if (typeof ref === 'string') {
    const target = ref
      .slice(2)
      .split('/')
      .reduce((node: Json, key) => node[key], document);
    return resolve(target, document);
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, resolve(value, document)]));
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

describe(`patients: Eka's schemas (${DIALECT})`, { skip: !available && 'the Eka reference files are not here' }, () => {
  let t: TestApp;
  let client: TestClient;
  let docTool: Json;
  let directory: Json;
  const ajv = addFormats(new Ajv({ strict: false, allErrors: true }));
  const call = (method: string, url: string, payload?: unknown) => request(t, client.token, method, url, payload);

  function check(document: Json, path: string, method: string, status: string, body: unknown, component?: string): void {
    const schema = component
      ? document.components.schemas[component]
      : document.paths[path][method].responses[status].content['application/json'].schema;
    const validate = ajv.compile(resolve(schema, document) as object);
    assert.ok(validate(body), `${method.toUpperCase()} ${path} ${status}: ${JSON.stringify(validate.errors)}\n${JSON.stringify(body)}`);
  }

  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
    docTool = parse(readFileSync(`${REFERENCE}/doc-tool.yaml`, 'utf8'));
    directory = parse(readFileSync(`${REFERENCE}/patient_directory.yml`, 'utf8'));
  });
  after(async () => t.close());

  it('the doctor tool family', async () => {
    const partner = partnerId();
    const created = await call(
      'POST',
      '/dr/v1/patient',
      drBody({ partner_patient_id: partner, email: 'r@k.in', address: { line1: 'A', city: 'Pune', pincode: 411001 } }),
    );
    check(docTool, '/dr/v1/patient', 'post', '201', created.json());
    const id = created.json().patient_id;
    check(docTool, '/dr/v1/patient/{patient_id}', 'get', '200', (await call('GET', `/dr/v1/patient/${id}`)).json());
    // Eka documents 201 for this PATCH; we answer 200 with the same body.
    check(docTool, '/dr/v1/patient/{patient_id}', 'patch', '201', (await call('PATCH', `/dr/v1/patient/${id}`, { last_name: 'S' })).json());
    check(docTool, '/dr/v1/patient', 'post', '409', (await call('POST', '/dr/v1/patient', drBody({ partner_patient_id: partner }))).json());
    check(docTool, '/dr/v1/patient/{patient_id}', 'get', '404', (await call('GET', '/dr/v1/patient/pt_none')).json());
    check(docTool, '/dr/v1/business/patients/search', 'get', '200', (await call('GET', '/dr/v1/business/patients/search?mobile=9812345678')).json());
    // Eka documents the patient's appointments only by example: success and data.
    const practice = await createPractice(t, { client });
    await book(t, practice, { patient_details: { first_name: 'Ravi', partner_patient_id: partner } });
    const appointments = (await call('GET', `/dr/v1/appointment/patient/${id}`)).json();
    assert.equal(appointments.success, true);
    assert.equal(appointments.data[0].patient_id, id);
  });

  it('the patient directory family', async () => {
    const username = partnerId();
    const created = await call('POST', '/profiles/v1/patient/', {
      fn: 'Eka',
      ln: 'User',
      gen: 'M',
      dob: '2000-01-02',
      mobile: '+916000000000',
      email: 'testuser@eka.care',
      username,
      abha: 'ekauser1@abdm',
      bloodgroup: 'A+',
      s: 'Dr',
      extras: { dummyKey: 'Dummy Value' },
    });
    check(directory, '/profiles/v1/patient/', 'post', '201', created.json());
    const oid = created.json().oid;
    check(directory, '/profiles/v1/patient/{oid}', 'get', '200', (await call('GET', `/profiles/v1/patient/${oid}`)).json());
    check(
      directory,
      '/profiles/v1/patient/{oid}',
      'patch',
      '200',
      (await call('PATCH', `/profiles/v1/patient/${oid}`, { fln: 'Eka New User' })).json(),
    );
    const list = (await call('GET', '/profiles/v1/patient/minified/?pageNo=1&select=abha,c_ate,dob,gen,u_ate&arc=true')).json();
    check(directory, '/profiles/v1/patient/minified/', 'get', '200', list);
    const byMobile = (await call('GET', '/profiles/v1/patient/by-mobile/?mob=%2B916000000000')).json();
    assert.equal(byMobile.length, 1);
    for (const match of byMobile) check(directory, '', '', '', match, 'FetchByMobilePatientProfile');
    for (const match of (await call('GET', '/profiles/v1/patient/by-abha/?abha=ekauser1@abdm')).json()) {
      check(directory, '', '', '', match, 'FetchByMobilePatientProfile');
    }
    check(
      directory,
      '/profiles/v1/patient/{username}/username/?flatten=true',
      'get',
      '200',
      (await call('GET', `/profiles/v1/patient/${username}/username/`)).json(),
    );
    const found = await call('GET', `/profiles/v1/patient/search?prefix=${oid}`);
    check(directory, '/profiles/v1/patient/search', 'get', '200', found.json());
    check(directory, '/profiles/v1/patient/{oid}', 'delete', '200', (await call('DELETE', `/profiles/v1/patient/${oid}`)).json());
    check(directory, '', '', '', (await call('PATCH', `/profiles/v1/patient/${oid}`, { gen: 'Q' })).json(), '400Error');
  });
});
