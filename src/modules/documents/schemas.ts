/**
 * What a client sends to describe documents, as TypeBox schemas: the routes validate and document the
 * requests with them, and the service's input types are derived from them (NewDocument,
 * DocumentChangesInput), so the two cannot drift.
 */
import { type Static, type TSchema, Type } from 'typebox';
import { MAX_ID_LENGTH } from '../../http/schemas.ts';

const NullableEpoch = Type.Unsafe<number | null>({
  type: ['integer', 'null'],
  minimum: 0,
  maximum: 253_402_300_799,
  description: 'epoch seconds',
  'x-message': 'must be an integer epoch in seconds, or null',
});
/** Empty as none: go-sdk's BatchRequest sends `"dt": ""` for a document given no type, and documents show none so. */
export const DocumentType = Type.String({
  maxLength: 20,
  'x-message': 'must be a string of at most 20 characters (lr, ps, dc, ...; empty for none)',
});
const Tag = Type.String({ minLength: 2, maxLength: 20, 'x-message': 'must be a string of 2 to 20 characters' });
const Tags = Type.Array(Tag, { maxItems: 50, description: 'A set; the first 10 are kept' });
const Title = Type.String({ maxLength: 256, 'x-message': 'must be a string of at most 256 characters' });
const CaseIds = Type.Array(Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH }), { maxItems: 50 });
const DocumentIdPattern = '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$';
const DocumentId = Type.String({
  pattern: DocumentIdPattern,
  'x-message': 'must be 1 to 100 letters, digits, dots, dashes or underscores, starting with a letter or digit',
});
/** The schema, or null (typed so: the service's input types are derived from these schemas). */
const nullable = <T extends TSchema>(schema: T, message: string) =>
  Type.Unsafe<Static<T> | null>({ anyOf: [schema, { type: 'null' }], 'x-message': message });

const FileRequest = Type.Object({
  contentType: Type.String({
    minLength: 1,
    maxLength: 100,
    description: 'application/pdf, image/jpeg, image/png, image/heic, image/heif or application/dicom',
  }),
  file_size: Type.Integer({ minimum: 1, maximum: 5 * 1024 ** 3, description: 'bytes; the file must have exactly this many' }),
});
export const DocumentRequest = Type.Object({
  document_id: Type.Optional(DocumentId),
  dt: Type.Optional(DocumentType),
  // null as no date: ekapython-sdk's upload_document sends `"dd_e": null` when given none.
  dd_e: Type.Optional(NullableEpoch),
  tg: Type.Optional(Tags),
  title: Type.Optional(nullable(Title, 'must be a string of at most 256 characters, or null')),
  cases: Type.Optional(nullable(CaseIds, 'must be a list of case ids, or null')),
  metadata: Type.Optional(Type.String({ maxLength: 65_536, description: 'Accepted and not kept' })),
  files: Type.Array(FileRequest, { minItems: 1, maxItems: 20 }),
});
/** PATCH: Eka's ndhm (ABDM linking), oid and metadata (a FHIR bundle) are accepted and not kept: no linking here. */
export const UpdateBody = Type.Object({
  dt: Type.Optional(nullable(DocumentType, 'must be a string of at most 20 characters, or null')),
  dd_e: Type.Optional(NullableEpoch),
  tg: Type.Optional(nullable(Tags, 'must be a list of tags of 2 to 20 characters, or null')),
  title: Type.Optional(nullable(Title, 'must be a string of at most 256 characters, or null')),
  cases: Type.Optional(nullable(CaseIds, 'must be a list of case ids, or null')),
  ndhm: Type.Optional(nullable(Type.Boolean(), 'must be true, false or null')),
  oid: Type.Optional(nullable(Type.String({ maxLength: 256 }), 'must be a string of at most 256 characters, or null')),
  metadata: Type.Optional(Type.String({ maxLength: 65_536, 'x-message': 'must be a string of at most 65536 characters' })),
});
