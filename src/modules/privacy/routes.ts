/**
 * A patient's rights (docs/4-operations.md "Export and erasure"), in the standard error family:
 * `POST /privacy/v1/patients/{patient_id}/export` (scope privacy:export) asks for a copy of the
 * patient's data, built in the background; `GET /privacy/v1/exports/{export_id}` says whether it is
 * ready and gives its link; `GET /privacy/v1/exports/{export_id}/download?token=` answers the document
 * until it expires; `POST /privacy/v1/patients/{patient_id}/erase` (scope privacy:erase) erases the
 * patient. A patient id is the service's or the partner's; `?partner_id=1` makes it the partner's only.
 */
import { Readable } from 'node:stream';
import { Type } from 'typebox';
import type { App } from '../../http/app-type.ts';
import { principalOf, type RouteAuth } from '../../http/auth.ts';
import type { ErrorFamily } from '../../http/errors.ts';
import { byPartner, Id, StandardError } from '../../http/schemas.ts';
import type { PrivacyService } from './service.ts';

const PatientParams = Type.Object({ patient_id: Id });
const ExportParams = Type.Object({ export_id: Id });
const ByPartner = Type.Object({
  partner_id: Type.Optional(Type.String({ maxLength: 10, description: "1: the path id is the partner's id" })),
});

const Epoch = (description: string) => Type.Integer({ description: `Epoch seconds: ${description}` });
const ExportStatus = Type.Object({
  export_id: Type.String(),
  patient_id: Type.String({ description: "The patient's service id (the survivor's, for a merged patient)" }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('ready'), Type.Literal('failed'), Type.Literal('expired')]),
  created_at: Epoch('when it was asked for'),
  ready_at: Type.Union([Epoch('when the document was ready'), Type.Null()]),
  expires_at: Epoch('when the document and its link expire (a pending export is given up then)'),
  download_url: Type.Union([Type.String(), Type.Null()], {
    description: "While ready: the document's link, for this business's API clients (scope privacy:export), until expires_at",
  }),
});
const Erasure = Type.Object({
  patient_id: Type.String({ description: "The erased patient's service id" }),
  status: Type.Literal('erased'),
  erased_at: Epoch('when it was erased (the first erasure, for a repeated request)'),
});
const Document = Type.Record(Type.String(), Type.Unknown(), {
  description:
    'Everything the business holds about the patient: format, patient, merged_patients, appointments, reviews, cases, documents (with their files), push_devices, push_notifications, events, access_log',
});
const errors = { 400: StandardError, 401: StandardError, 403: StandardError, 404: StandardError };

const family: ErrorFamily = 'standard';
const exporting: RouteAuth = { anyOf: ['privacy:export'] };
const tags = ['privacy'];

export function privacyRoutes(service: PrivacyService) {
  return async function plugin(app: App): Promise<void> {
    app.post(
      '/privacy/v1/patients/:patient_id/export',
      {
        config: { family, auth: exporting, idempotent: true },
        schema: {
          tags,
          summary:
            "Ask for a copy of everything the business holds about a patient (built in the background; the patient's pending or ready export if there is one)",
          params: PatientParams,
          querystring: ByPartner,
          response: { 202: ExportStatus, ...errors },
        },
      },
      async (request, reply) =>
        reply.code(202).send(await service.requestExport(principalOf(request), request.params.patient_id, byPartner(request.query))),
    );

    app.get(
      '/privacy/v1/exports/:export_id',
      {
        config: { family, auth: exporting },
        schema: {
          tags,
          summary: "An export's status, and its link once ready",
          params: ExportParams,
          response: { 200: ExportStatus, ...errors },
        },
      },
      async (request) => service.exportStatus(principalOf(request).businessId, request.params.export_id),
    );

    app.get(
      '/privacy/v1/exports/:export_id/download',
      {
        config: { family, auth: exporting },
        schema: {
          tags,
          summary: "A ready export's document (JSON), by its link, until it expires",
          params: ExportParams,
          querystring: Type.Object({ token: Type.String({ minLength: 1, maxLength: 100, description: "The link's token" }) }),
          response: { 200: Document, ...errors, 409: StandardError, 410: StandardError },
        },
      },
      async (request, reply) => {
        const text = await service.download(principalOf(request).businessId, request.params.export_id, request.query.token);
        return reply
          .type('application/json; charset=utf-8')
          .header('content-disposition', `attachment; filename="patient-export-${request.params.export_id}.json"`)
          .send(Readable.from(text) as never);
      },
    );

    app.post(
      '/privacy/v1/patients/:patient_id/erase',
      {
        config: { family, auth: { anyOf: ['privacy:erase'] }, idempotent: true },
        schema: {
          tags,
          summary:
            "Erase a patient's data within the business: appointments keep their times and statuses without the person; records patient.erased. Erasing an erased patient answers the same",
          params: PatientParams,
          querystring: ByPartner,
          response: { 200: Erasure, ...errors },
        },
      },
      async (request) => service.erase(principalOf(request), request.params.patient_id, byPartner(request.query)),
    );
  };
}
