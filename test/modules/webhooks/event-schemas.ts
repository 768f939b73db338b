/**
 * The schemas every event body is checked against: its own (src/events.ts) and, where Eka sends the
 * same event, the body post_webhook.yaml documents; and a subscription through the API.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';
import { EVENTS, EVENT_NAMES, type EventName } from '../../../src/events.ts';
import { bearer, EKA_REFERENCE, type TestApp } from '../../support.ts';
import { assertValid } from '../clinics/eka-schemas.ts';

const SUBSCRIPTIONS = '/notification/v1/connect/webhook/subscriptions';

type Json = Record<string, any>;

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const ajv = addFormats(new Ajv({ strict: false, allErrors: true }));

/** The body of each event Eka also sends, from its webhook reference. */
function ekaEventSchemas(): Map<string, Json> {
  const doc = parse(readFileSync(`${EKA_REFERENCE}/post_webhook.yaml`, 'utf8')) as Json;
  const schemas = new Map<string, Json>();
  for (const operation of Object.values(doc.paths as Json)) {
    const schema = operation.post?.requestBody?.content?.['application/json']?.schema as Json | undefined;
    const name = schema?.properties?.event?.example as string | undefined;
    if (schema && name) schemas.set(name, schema);
  }
  return schemas;
}

const EKA = ekaEventSchemas();

/** Asserts the body against its declared schema and, where Eka has the event, Eka's. */
export function assertEventBody(body: Json): void {
  const name = body.event as EventName;
  assert.ok(EVENT_NAMES.includes(name), `unknown event ${name}`);
  const validate = ajv.compile(EVENTS[name] as object);
  assert.ok(validate(body), `${name}: ${JSON.stringify(validate.errors)}\n${JSON.stringify(body)}`);
  const eka = EKA.get(name);
  if (eka) assertValid(eka, body, name);
}

export async function subscribe(
  t: TestApp,
  token: string,
  endpoint: string,
  eventNames: string[] = EVENT_NAMES,
): Promise<{ id: string; key: string }> {
  const response = await t.app.inject({ method: 'POST', url: SUBSCRIPTIONS, headers: bearer(token), payload: { endpoint, event_names: eventNames } });
  assert.equal(response.statusCode, 201, response.body);
  return { id: response.json().id, key: response.json().signing_key };
}
