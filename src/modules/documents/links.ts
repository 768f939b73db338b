/**
 * The two kinds of links a document hands out, sealed (security/sealed-tokens.ts) so that nothing in
 * them can be altered or forged: the upload form's `policy` (POST /mr/api/v1/docs) and a file's
 * download link (GET of a document). Each names its business, so a link of one business never opens
 * another's file, and its expiry. A download link also names its file row (the row's form_id, new for
 * each document's file), so that it never opens a file that took the same document id and index later
 * (an erasure deletes a patient's documents, and a client may give their ids to new ones).
 */
import { SealedTokens } from '../../security/sealed-tokens.ts';

export interface UploadForm {
  businessId: string;
  clientId: string;
  patientRef: string;
  documentId: string;
  idx: number;
  formId: string;
  contentType: string;
  size: number;
  /** Epoch ms. */
  expiresAt: number;
}

export interface DownloadLink {
  businessId: string;
  clientId: string;
  patientRef: string;
  documentId: string;
  idx: number;
  /** The file row's form_id: the file the link was issued for, not one given its document id and index since. */
  fileId: string;
  /** Epoch ms. */
  expiresAt: number;
}

const FORM = 'document-upload-form:1';
const DOWNLOAD = 'document-download:2';

export class DocumentLinks {
  readonly #forms: SealedTokens;
  readonly #downloads: SealedTokens;

  constructor(masterKey: Buffer) {
    this.#forms = new SealedTokens(masterKey, 'document-upload-form');
    this.#downloads = new SealedTokens(masterKey, 'document-download');
  }

  sealForm(form: UploadForm): string {
    return this.#forms.seal(
      [form.businessId, form.clientId, form.patientRef, form.documentId, form.idx, form.formId, form.contentType, form.size, form.expiresAt],
      FORM,
    );
  }

  openForm(token: string): UploadForm | null {
    const values = this.#forms.open(token, FORM);
    if (values === null || values.length !== 9) return null;
    const [businessId, clientId, patientRef, documentId, idx, formId, contentType, size, expiresAt] = values;
    if (![businessId, clientId, patientRef, documentId, formId, contentType].every((v) => typeof v === 'string')) return null;
    if (![idx, size, expiresAt].every((v) => Number.isSafeInteger(v))) return null;
    return { businessId, clientId, patientRef, documentId, idx, formId, contentType, size, expiresAt } as UploadForm;
  }

  sealDownload(link: DownloadLink): string {
    return this.#downloads.seal([link.businessId, link.clientId, link.patientRef, link.documentId, link.idx, link.fileId, link.expiresAt], DOWNLOAD);
  }

  openDownload(token: string): DownloadLink | null {
    const values = this.#downloads.open(token, DOWNLOAD);
    if (values === null || values.length !== 7) return null;
    const [businessId, clientId, patientRef, documentId, idx, fileId, expiresAt] = values;
    if (![businessId, clientId, patientRef, documentId, fileId].every((v) => typeof v === 'string')) return null;
    if (![idx, expiresAt].every((v) => Number.isSafeInteger(v))) return null;
    return { businessId, clientId, patientRef, documentId, idx, fileId, expiresAt } as DownloadLink;
  }
}
