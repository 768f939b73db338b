/** Documents `/mr/api/v1/docs` and `/mr/api/v2/docs`, in Eka's records API shapes (records.yaml). */
import { Readable } from 'node:stream';
import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { create as attachment } from 'content-disposition';
import { Type } from 'typebox';
import { AppError } from '../../errors.ts';
import type { App } from '../../http/app-type.ts';
import { principalOf } from '../../http/auth.ts';
import { CasesError, MAX_ID_LENGTH, type RouteConfig } from '../../http/schemas.ts';
import { DocumentRequest, DocumentType, UpdateBody } from './schemas.ts';
import type { DocumentsService, IncomingFile, PatientScope } from './service.ts';

const PatientHeader = Type.Object({
  'x-pt-id': Type.String({ maxLength: MAX_ID_LENGTH, description: "The patient's id within the business (the service's or the partner's)." }),
});
const CreateBody = Type.Object({ batch_request: Type.Array(DocumentRequest, { minItems: 1, maxItems: 50 }) });
const Form = Type.Object({ url: Type.String(), fields: Type.Record(Type.String(), Type.String()) });
const CreateAnswer = Type.Object({
  error: Type.Boolean(),
  message: Type.String(),
  batch_response: Type.Array(Type.Object({ document_id: Type.String(), forms: Type.Array(Form) })),
});
const ListQuery = Type.Object({
  offset: Type.Optional(Type.String({ maxLength: 2048, description: 'next_token of the previous page' })),
  u_at__gt: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 253_402_300_799, description: 'only documents with updated_at greater than this epoch' }),
  ),
});
const ListAnswer = Type.Object({
  items: Type.Array(
    Type.Object({
      record: Type.Object({
        item: Type.Record(Type.String(), Type.Unknown()),
        status: Type.String({ description: 'A active, D deleted (the item then names only the document)' }),
        updated_at: Type.Integer(),
      }),
    }),
  ),
  next_token: Type.Union([Type.String(), Type.Null()]),
});
const DocumentAnswer = Type.Record(Type.String(), Type.Unknown());
const IdParams = Type.Object({ id: Type.String({ maxLength: MAX_ID_LENGTH }) });
const ResultParams = Type.Object({ document_id: Type.String({ maxLength: MAX_ID_LENGTH }) });
const FileParams = Type.Object({ id: Type.String({ maxLength: MAX_ID_LENGTH }), index: Type.Integer({ minimum: 0, maximum: 19 }) });
const FileQuery = Type.Object({
  link: Type.String({ minLength: 1, maxLength: 4096, description: 'The sealed link the document answered' }),
  pt: Type.Optional(Type.String({ maxLength: MAX_ID_LENGTH, description: 'The patient, as the link names it' })),
});
const V2Query = Type.Object({
  dt: Type.Optional(DocumentType),
  task: Type.Union([Type.Literal('smart'), Type.Literal('pii'), Type.Literal('classification')], {
    'x-message': 'must be one of smart, pii, classification',
  }),
  batch: Type.Optional(Type.Boolean()),
});

const errors = { 400: CasesError, 401: CasesError, 403: CasesError };
const MULTIPART_FIELDS = 20;

function patientRefOf(request: FastifyRequest): string {
  const raw = request.headers['x-pt-id'];
  const value = typeof raw === 'string' ? raw.trim() : '';
  if (value === '') throw new AppError(400, 'X-Pt-Id header is required', { code: 'INVALID_REQUEST' });
  if ([...value].length > MAX_ID_LENGTH) throw new AppError(400, `X-Pt-Id must be at most ${MAX_ID_LENGTH} characters`, { code: 'INVALID_REQUEST' });
  return value;
}

/** A failure of the multipart parser as the family's 400 or 413; other failures pass. */
function multipartProblem(error: unknown): unknown {
  if (error instanceof AppError) return error;
  const failure = error as { code?: string; statusCode?: number; message?: string };
  if (typeof failure.code === 'string' && failure.code.startsWith('FST_')) {
    const status = failure.statusCode === 413 ? 413 : 400;
    return new AppError(status, `The multipart body is refused: ${failure.message ?? failure.code}`, { code: 'INVALID_REQUEST' });
  }
  if (typeof failure.message === 'string' && /end of form|multipart|boundary|malformed|part terminated|header/i.test(failure.message)) {
    return new AppError(400, `The multipart body is malformed or cut short: ${failure.message}`, { code: 'INVALID_REQUEST' });
  }
  return error;
}

/** The request's file part (fields before it in `fields`, names lower-cased), or a 400/415. */
async function filePart(request: FastifyRequest): Promise<{ file: IncomingFile; fields: Record<string, string> } | null> {
  if (!request.isMultipart()) {
    throw new AppError(415, 'Send the file as multipart/form-data, in a part named file', { code: 'INVALID_REQUEST' });
  }
  const part = await request.file();
  if (!part) return null;
  const fields: Record<string, string> = {};
  for (const [name, value] of Object.entries(part.fields)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first && first.type === 'field' && typeof first.value === 'string') fields[name.toLowerCase()] = first.value;
  }
  return { file: { stream: part.file, fileName: part.filename }, fields };
}

export function documentsRoutes(service: DocumentsService, limits: { maxFileBytes: number }) {
  const scopeOf = (request: FastifyRequest): Promise<PatientScope> => {
    const principal = principalOf(request);
    return service.patientScope(principal.businessId, patientRefOf(request), principal.clientId);
  };
  // Runs after authentication and before parsing, so that a missing X-Pt-Id is the first 400.
  const patientFirst = async (request: FastifyRequest) => {
    patientRefOf(request);
  };
  // Eka's go-sdk posts its JSON with no Content-Type (Go's client sets none for a byte body), as the
  // hosted service takes it: such a body is JSON here. A body of any other type stays 415.
  const jsonWithoutType = async (request: FastifyRequest) => {
    const headers = request.raw.headers;
    const hasBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
    if (headers['content-type'] === undefined && hasBody) headers['content-type'] = 'application/json';
  };
  return async function plugin(app: App): Promise<void> {
    const read: RouteConfig = { family: 'cases', auth: { anyOf: ['documents:read', 'documents:write'] } };
    const write: RouteConfig = { family: 'cases', auth: { anyOf: ['documents:write'] } };
    const open: RouteConfig = { family: 'cases', auth: 'public' };

    app.get(
      '/mr/api/v1/docs',
      {
        config: read,
        preParsing: patientFirst,
        schema: {
          tags: ['documents'],
          summary: "List a patient's documents, oldest update first; u_at__gt for incremental sync (deletions listed as status D)",
          description:
            'A write is listed once the second of its updated_at is over; a client that reads to the last page and then lists with ' +
            'u_at__gt = the largest updated_at it saw misses no create, update or delete.',
          headers: PatientHeader,
          querystring: ListQuery,
          response: { 200: ListAnswer, ...errors },
        },
      },
      async (request) => service.list(await scopeOf(request), { offset: request.query.offset, updatedAfter: request.query.u_at__gt }),
    );

    app.post(
      '/mr/api/v1/docs',
      {
        config: { ...write, idempotent: true },
        onRequest: jsonWithoutType,
        preParsing: patientFirst,
        schema: {
          tags: ['documents'],
          summary: 'Step 1 of an upload: documents and, per file, an upload form (an HTML-form POST, as S3 presigned POST)',
          description:
            'Each form is used once, without a bearer token, until it expires (CPS_DOCUMENTS_FORM_TTL): POST its fields, then the file ' +
            'in a part named file, as multipart/form-data to its url. The file must be of the declared contentType (checked from its ' +
            'bytes) and have exactly file_size bytes; the document is listed once all its files are stored.',
          headers: PatientHeader,
          body: CreateBody,
          response: { 200: CreateAnswer, ...errors, 409: CasesError, 413: CasesError },
        },
      },
      async (request) => service.prepare(await scopeOf(request), request.body.batch_request),
    );

    app.get(
      '/mr/api/v1/docs/:id',
      {
        config: read,
        preParsing: patientFirst,
        schema: {
          tags: ['documents'],
          summary: 'Read one document, with a short-lived download link (asset_url) per file',
          headers: PatientHeader,
          params: IdParams,
          response: { 200: DocumentAnswer, ...errors, 404: CasesError },
        },
      },
      async (request) => service.get(await scopeOf(request), request.params.id),
    );

    app.patch(
      '/mr/api/v1/docs/:id',
      {
        config: write,
        onRequest: jsonWithoutType,
        preParsing: patientFirst,
        schema: {
          tags: ['documents'],
          summary: 'Change the fields sent (dt, dd_e, tg, title, cases); null clears one',
          headers: PatientHeader,
          params: IdParams,
          body: UpdateBody,
          response: { 200: Type.Object({ document_id: Type.String() }), ...errors, 404: CasesError },
        },
      },
      async (request) => {
        await service.update(await scopeOf(request), request.params.id, request.body);
        return { document_id: request.params.id };
      },
    );

    app.delete(
      '/mr/api/v1/docs/:id',
      {
        config: write,
        preParsing: patientFirst,
        schema: {
          tags: ['documents'],
          summary: 'Delete a document: its files are removed and it stays listed as status D',
          headers: PatientHeader,
          params: IdParams,
          response: { 200: Type.Object({ document_id: Type.String() }), ...errors, 404: CasesError },
        },
      },
      async (request) => {
        await service.delete(await scopeOf(request), request.params.id);
        return { document_id: request.params.id };
      },
    );

    app.get(
      '/mr/api/v1/docs/:document_id/result',
      {
        config: read,
        preParsing: patientFirst,
        schema: {
          tags: ['documents'],
          summary: "Eka's parsing result: this service parses nothing, so it answers status error (deleted for a deleted document)",
          headers: PatientHeader,
          params: ResultParams,
          response: { 200: DocumentAnswer, ...errors, 404: CasesError },
        },
      },
      async (request) => service.result(await scopeOf(request), request.params.document_id),
    );

    app.get(
      '/mr/api/v1/docs/:id/files/:index',
      {
        config: open,
        schema: {
          tags: ['documents'],
          summary: "A file's bytes, by the short-lived link GET of its document answered (no bearer token)",
          params: FileParams,
          querystring: FileQuery,
          response: { ...errors, 404: CasesError },
        },
      },
      async (request, reply) => {
        const { file, businessId, clientId } = await service.download(request.query.link, request.params.id, request.params.index, request.query.pt);
        // The access log's entry names the client the link was issued to (src/access-log/audited-routes.ts).
        request.principal = { businessId, clientId, scopes: new Set() };
        // An object store's file: the store serves the bytes, by a presigned GET of a minute.
        if ('redirect' in file) return reply.redirect(file.redirect, 302);
        return reply
          .type(file.contentType)
          .header('content-length', String(file.size))
          .header('content-disposition', attachment(file.fileName))
          .header('x-content-type-options', 'nosniff')
          .send(Readable.from(file.stream) as never);
      },
    );

    app.get(
      '/mr/api/v1/docs/:id/files/:index/thumbnail',
      {
        config: open,
        schema: {
          tags: ['documents'],
          summary:
            "A JPEG, PNG, HEIC/HEIF or PDF file's thumbnail (JPEG, at most 256 px a side), by the link a listing's metadata.thumbnail answered",
          params: FileParams,
          querystring: FileQuery,
          response: { ...errors, 404: CasesError },
        },
      },
      async (request, reply) => {
        const { file, businessId, clientId } = await service.download(
          request.query.link,
          request.params.id,
          request.params.index,
          request.query.pt,
          true,
        );
        request.principal = { businessId, clientId, scopes: new Set() };
        if ('redirect' in file) return reply.redirect(file.redirect, 302);
        return reply
          .type(file.contentType)
          .header('content-length', String(file.size))
          .header('x-content-type-options', 'nosniff')
          .send(Readable.from(file.stream) as never);
      },
    );

    app.get(
      '/mr/api/v1/docs/upload/done',
      {
        config: open,
        schema: {
          tags: ['documents'],
          summary: "Where an object store's upload form redirects once it took the file (no bearer token): the file is checked and kept; 204",
          description:
            'With CPS_DOCUMENTS_STORE=s3 a form of POST /mr/api/v1/docs posts to the store, whose answer (303) leads here. The file ' +
            'is checked as an upload here is (type from its bytes, the declared size) and kept, or removed and the form given back (400, 415).',
          querystring: Type.Object({
            form: Type.String({ minLength: 1, maxLength: 4096, description: 'The sealed form, as the redirect carries it' }),
            bucket: Type.Optional(Type.String({ maxLength: 255 })),
            key: Type.Optional(Type.String({ maxLength: 1024 })),
            etag: Type.Optional(Type.String({ maxLength: 255 })),
          }),
          response: { 204: Type.Null(), ...errors, 404: CasesError, 409: CasesError, 413: CasesError, 415: CasesError },
        },
      },
      async (request, reply) => {
        await service.confirmForm(request.query.form);
        return reply.code(204).send(null);
      },
    );

    // The multipart routes: the parser exists in this scope only, so every other route stays JSON-only.
    await app.register(async (uploads: App) => {
      await uploads.register(multipart, {
        // The name as sent, so that a path in it is refused rather than quietly cut to its last part.
        preservePath: true,
        limits: {
          fileSize: limits.maxFileBytes + 1,
          files: 1,
          fields: MULTIPART_FIELDS,
          fieldSize: 16 * 1024,
          parts: MULTIPART_FIELDS + 1,
          headerPairs: 100,
        },
      });

      uploads.post(
        '/mr/api/v1/docs/upload',
        {
          config: open,
          schema: {
            tags: ['documents'],
            summary: 'An upload form of POST /mr/api/v1/docs: its fields, then the file (multipart/form-data; no bearer token); 204',
            description:
              'Refused: a form used already (409) or expired (403), a file of another type than declared (415) or of another size (400), ' +
              'a cut-short body (400). A refused upload stores nothing and leaves the form usable until it expires.',
            response: { 204: Type.Null(), ...errors, 404: CasesError, 409: CasesError, 413: CasesError, 415: CasesError },
          },
        },
        async (request, reply) => {
          try {
            const part = await filePart(request);
            if (!part) throw new AppError(400, 'The form has no file: send it in a part named file, after the fields', { code: 'INVALID_REQUEST' });
            await service.receiveByForm(part.fields.policy, part.fields, part.file);
          } catch (error) {
            throw multipartProblem(error);
          }
          return reply.code(204).send(null);
        },
      );

      uploads.post(
        '/mr/api/v2/docs',
        {
          config: { ...write, idempotent: true },
          preParsing: patientFirst,
          schema: {
            tags: ['documents'],
            summary: 'Upload a document in one request: its file as multipart/form-data, in a part named file',
            description:
              'No parsing is done here (task is accepted for Eka clients; GET .../result answers so). The type is checked from the bytes: ' +
              'PDF, JPEG, PNG, HEIC/HEIF or DICOM.',
            headers: PatientHeader,
            querystring: V2Query,
            response: { 200: Type.Object({ document_id: Type.String() }), ...errors, 413: CasesError, 415: CasesError },
          },
        },
        async (request) => {
          const scope = await scopeOf(request);
          try {
            const part = await filePart(request);
            if (!part) throw new AppError(400, 'The body has no file: send it in a part named file', { code: 'INVALID_REQUEST' });
            return await service.uploadOne(scope, { dt: request.query.dt, task: request.query.task }, part.file);
          } catch (error) {
            throw multipartProblem(error);
          }
        },
      );
    });
  };
}
