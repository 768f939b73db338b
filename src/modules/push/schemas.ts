/**
 * What a client sends to register a device and send a notification, as TypeBox schemas: the routes validate
 * and document the requests with them, and the service's input types are derived from them (DevicePayload,
 * SendInput), so the two cannot drift. The sa_key's schema stays beside its route: it is built from the
 * service's list of members (SA_KEY_MEMBERS), which SaKeyInput is typed from too.
 */
import { Type } from 'typebox';

export const DevicePayload = Type.Object({
  did: Type.String({ minLength: 1, maxLength: 200 }),
  'fcm-id': Type.String({ minLength: 1, maxLength: 4096, description: 'The FCM registration token.' }),
  'app-version': Type.String({ minLength: 1, maxLength: 100 }),
  'app-id': Type.Optional(Type.String({ maxLength: 200 })),
  'app-platform': Type.Optional(Type.String({ maxLength: 50 })),
  lang: Type.Optional(Type.String({ maxLength: 35 })),
  'os-version': Type.Optional(Type.String({ maxLength: 100 })),
  'user-hash': Type.Optional(Type.String({ maxLength: 200 })),
});

export const SendBody = Type.Object(
  {
    patient_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    device_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { minItems: 1, maxItems: 500 })),
    title: Type.String({ minLength: 1, maxLength: 1000 }),
    body: Type.String({ minLength: 1, maxLength: 4000 }),
    data: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'String values only (FCM data payload).' })),
  },
  { description: 'Exactly one of patient_id or device_ids.' },
);
