/** Push notifications, contract 7: credentials, devices, send and its per-device report. */
import { Type } from 'typebox';
import type { App } from '../../http/app-type.ts';
import { principalOf, type RouteAuth } from '../../http/auth.ts';
import { MAX_ID_LENGTH, NotificationError } from '../../http/schemas.ts';
import { DevicePayload, SendBody } from './schemas.ts';
import { SA_KEY_MEMBERS, type PushService } from './service.ts';
import type { PatientService } from '../patients/service.ts';

const config: { family: 'notifications'; auth: RouteAuth } = { family: 'notifications', auth: { anyOf: ['notification:admin'] } };
const tags = ['notifications'];
const errors = { 400: NotificationError, 401: NotificationError, 403: NotificationError, 404: NotificationError };

const SaKeySchema = Type.Object(
  Object.fromEntries(
    [...SA_KEY_MEMBERS, 'universe_domain'].map((member) => [
      member,
      Type.Optional(
        Type.String({
          description:
            member === 'universe_domain'
              ? 'Accepted in place of universal_domain (the name in Google key files).'
              : member === 'private_key'
                ? 'PEM RSA private key. Required; stored encrypted, never returned.'
                : 'Required, non-empty.',
        }),
      ),
    ]),
  ),
  { description: 'The Firebase service-account key (the JSON file from the Google Cloud console).' },
);

const DeliveryStatus = Type.Union([Type.Literal('pending'), Type.Literal('sent'), Type.Literal('failed'), Type.Literal('dropped')]);

export function pushRoutes(push: PushService, patients: PatientService) {
  return async function plugin(app: App): Promise<void> {
    app.post(
      '/notification/push-creds',
      {
        config: { ...config, idempotent: true },
        schema: {
          tags,
          summary: 'Store the FCM service-account credentials of the business (replacing earlier ones)',
          body: Type.Object({ sa_key: SaKeySchema }),
          response: { 200: Type.Object({ message: Type.String() }), ...errors },
        },
      },
      async (request) => {
        await push.saveCredentials(principalOf(request).businessId, request.body.sa_key);
        return { message: 'Push credentials saved' };
      },
    );

    app.get(
      '/notification/push-creds',
      {
        config,
        schema: {
          tags,
          summary: 'Metadata of the stored credentials (the key itself is never returned)',
          response: {
            200: Type.Object({
              project_id: Type.String(),
              client_email: Type.String(),
              private_key_id: Type.String(),
              updated_at: Type.Integer({ description: 'epoch seconds' }),
            }),
            ...errors,
          },
        },
      },
      async (request) => push.credentialsInfo(principalOf(request).businessId),
    );

    app.delete(
      '/notification/push-creds',
      {
        config,
        schema: { tags, summary: 'Remove the stored credentials', response: { 200: Type.Object({ message: Type.String() }), ...errors } },
      },
      async (request) => {
        await push.removeCredentials(principalOf(request).businessId);
        return { message: 'Push credentials deleted' };
      },
    );

    app.post(
      '/notification/add-device',
      {
        config: { ...config, idempotent: true },
        schema: {
          tags,
          summary: 'Register a device (upsert by did), optionally tied to a patient with X-Pt-Id',
          headers: Type.Object({
            'x-pt-id': Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The patient's reference within the business." })),
          }),
          body: Type.Object({ devicePayload: DevicePayload }),
          response: { 200: Type.Object({ success: Type.Boolean() }), ...errors },
        },
      },
      async (request) => {
        const businessId = principalOf(request).businessId;
        const patient = request.headers['x-pt-id']?.trim();
        const patientRef = patient ? await patients.canonicalRef(businessId, patient) : null;
        await push.addDevice(businessId, request.body.devicePayload, patientRef);
        return { success: true };
      },
    );

    app.delete(
      '/notification/delete-device',
      {
        config,
        schema: {
          tags,
          summary: 'Remove a device',
          headers: Type.Object({ 'device-id': Type.String({ minLength: 1, maxLength: 200 }) }),
          response: { 200: Type.Object({ success: Type.Boolean() }), ...errors },
        },
      },
      async (request) => {
        await push.removeDevice(principalOf(request).businessId, request.headers['device-id']);
        return { success: true };
      },
    );

    app.post(
      '/notification/send',
      {
        config: { ...config, idempotent: true },
        schema: {
          tags,
          summary: "Send a notification to a patient's devices or to listed devices (delivered in the background)",
          body: SendBody,
          response: { 202: Type.Object({ notification_id: Type.String() }), ...errors },
        },
      },
      async (request, reply) => {
        const principal = principalOf(request);
        const patientId = request.body.patient_id;
        const input =
          patientId === undefined
            ? request.body
            : { ...request.body, patient_id: await patients.canonicalRef(principal.businessId, patientId.trim()) };
        const id = await push.sendNotification(principal.businessId, principal.clientId, input);
        return reply.code(202).send({ notification_id: id });
      },
    );

    app.get(
      '/notification/send/:notification_id',
      {
        config,
        schema: {
          tags,
          summary: "A notification's outcome on each device",
          params: Type.Object({ notification_id: Type.String({ maxLength: MAX_ID_LENGTH }) }),
          response: {
            200: Type.Object({
              notification_id: Type.String(),
              status: Type.Union([Type.Literal('pending'), Type.Literal('sent'), Type.Literal('partial'), Type.Literal('failed')]),
              devices: Type.Array(Type.Object({ did: Type.String(), status: DeliveryStatus, error: Type.Union([Type.String(), Type.Null()]) })),
            }),
            ...errors,
          },
        },
      },
      async (request) => push.notificationReport(principalOf(request).businessId, request.params.notification_id),
    );
  };
}
