/**
 * The two kinds of links a document hands out, sealed (security/sealed-tokens.ts) so that nothing in
 * them can be altered or forged: the upload form's `policy` (POST /mr/api/v1/docs) and a file's
 * download link (GET of a document). Each names its business, so a link of one business never opens
 * another's file, and its expiry.
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
  /** Epoch ms. */
  expiresAt: number;
}

const FORM = 'document-upload-form:1';
const DOWNLOAD = 'document-download:1';

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
    return this.#downloads.seal([link.businessId, link.clientId, link.patientRef, link.documentId, link.idx, link.expiresAt], DOWNLOAD);
  }

  openDownload(token: string): DownloadLink | null {
    const values = this.#downloads.open(token, DOWNLOAD);
    if (values === null || values.length !== 6) return null;
    const [businessId, clientId, patientRef, documentId, idx, expiresAt] = values;
    if (![businessId, clientId, patientRef, documentId].every((v) => typeof v === 'string')) return null;
    if (![idx, expiresAt].every((v) => Number.isSafeInteger(v))) return null;
    return { businessId, clientId, patientRef, documentId, idx, expiresAt } as DownloadLink;
  }
}
