/**
 * The object-store backend (CPS_DOCUMENTS_STORE=s3): files in an S3-compatible bucket, for
 * deployments whose files outgrow the database. Clients upload to the store and download from it
 * directly: an upload form is the store's presigned POST (its policy pins the key, the content type,
 * the exact size and the redirect back to this service, which then checks the bytes and keeps the
 * file: DocumentsService.confirmForm), and a download link of this service redirects to a presigned
 * GET of a minute. The server writes here itself only for POST /mr/api/v2/docs.
 *
 * Keys are the service's storage keys under CPS_S3_PREFIX; a form's object waits under
 * `uploads/` until its check passes and it is copied to its own key, so that a form posted again
 * never changes a file already kept. Files at rest are encrypted by the store (server-side
 * encryption, CPS_S3_SSE), not by this service: a presigned POST and GET hand the bytes to the
 * store and the client as they are (docs/2-production.md "Document storage").
 *
 * The store's address is the operator's, like DATABASE_URL: the outbound address policy, which
 * guards addresses tenants give (webhook URLs), does not apply to it.
 *
 * The AWS SDK is loaded on the store's first use (about 0.3 s and 37 MB on a start that never uses it).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { create as attachment } from 'content-disposition';
import type { S3Config } from '../../config.ts';
import type { DirectStore, FileStore } from './file-store.ts';

/** Bytes of one part of a multipart upload (S3's least, but for the last): what a v2 upload holds in memory. */
const PART_BYTES = 5 * 1024 * 1024;
/** Seconds a presigned GET lasts: the service's own link has its longer lifetime, and redirects afresh. */
const DOWNLOAD_SECONDS = 60;

interface Sdk {
  s3: typeof import('@aws-sdk/client-s3');
  client: S3Client;
  createPresignedPost: typeof import('@aws-sdk/s3-presigned-post').createPresignedPost;
  getSignedUrl: typeof import('@aws-sdk/s3-request-presigner').getSignedUrl;
}

export class ObjectFileStore implements FileStore, DirectStore {
  readonly name = 's3';
  readonly direct = this;
  readonly #config: S3Config;
  #sdk: Promise<Sdk> | undefined;

  constructor(config: S3Config) {
    this.#config = config;
  }

  #load(): Promise<Sdk> {
    this.#sdk ??= (async () => {
      const [s3, post, presigner] = await Promise.all([
        import('@aws-sdk/client-s3'),
        import('@aws-sdk/s3-presigned-post'),
        import('@aws-sdk/s3-request-presigner'),
      ]);
      const config = this.#config;
      const client = new s3.S3Client({
        region: config.region,
        ...(config.endpoint && { endpoint: config.endpoint }),
        forcePathStyle: config.pathStyle,
        credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
        maxAttempts: 3,
        requestHandler: { connectionTimeout: 5000, requestTimeout: 60_000 },
      });
      return { s3, client, createPresignedPost: post.createPresignedPost, getSignedUrl: presigner.getSignedUrl };
    })();
    return this.#sdk;
  }

  #key(key: string): string {
    return `${this.#config.prefix}${key}`;
  }

  get #encryption() {
    return this.#config.serverSideEncryption ? { ServerSideEncryption: this.#config.serverSideEncryption } : {};
  }

  async write(key: string, source: AsyncIterable<Buffer>): Promise<number> {
    const { s3, client } = await this.#load();
    const Bucket = this.#config.bucket;
    const Key = this.#key(key);
    const part = Buffer.allocUnsafe(PART_BYTES);
    let filled = 0;
    let size = 0;
    let uploadId: string | undefined;
    const parts: Array<{ ETag: string | undefined; PartNumber: number }> = [];
    const sendPart = async (body: Buffer) => {
      uploadId ??= (await client.send(new s3.CreateMultipartUploadCommand({ Bucket, Key, ...this.#encryption }))).UploadId;
      const PartNumber = parts.length + 1;
      const { ETag } = await client.send(
        new s3.UploadPartCommand({ Bucket, Key, UploadId: uploadId, PartNumber, Body: body, ContentLength: body.length }),
      );
      parts.push({ ETag, PartNumber });
    };
    try {
      for await (const piece of source) {
        size += piece.length;
        let at = 0;
        while (at < piece.length) {
          const copied = piece.copy(part, filled, at);
          filled += copied;
          at += copied;
          if (filled === PART_BYTES) {
            await sendPart(part);
            filled = 0;
          }
        }
      }
      if (uploadId === undefined) {
        const body = part.subarray(0, filled);
        await client.send(new s3.PutObjectCommand({ Bucket, Key, Body: body, ContentLength: body.length, ...this.#encryption }));
      } else {
        if (filled > 0) await sendPart(part.subarray(0, filled));
        await client.send(new s3.CompleteMultipartUploadCommand({ Bucket, Key, UploadId: uploadId, MultipartUpload: { Parts: parts } }));
      }
      return size;
    } catch (error) {
      if (uploadId !== undefined) await client.send(new s3.AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId })).catch(() => {});
      await this.remove([key]).catch(() => {});
      throw error;
    }
  }

  async *read(key: string): AsyncIterable<Buffer> {
    const { s3, client } = await this.#load();
    const answer = await client.send(new s3.GetObjectCommand({ Bucket: this.#config.bucket, Key: this.#key(key) }));
    for await (const piece of answer.Body as AsyncIterable<Buffer>) yield piece;
  }

  async remove(keys: readonly string[]): Promise<void> {
    const { s3, client } = await this.#load();
    for (let i = 0; i < keys.length; i += 1000) {
      const Objects = keys.slice(i, i + 1000).map((key) => ({ Key: this.#key(key) }));
      const answer = await client.send(new s3.DeleteObjectsCommand({ Bucket: this.#config.bucket, Delete: { Objects, Quiet: true } }));
      const failed = (answer.Errors ?? []).filter((error) => error.Code !== 'NoSuchKey');
      if (failed.length > 0) throw new Error(`object store: ${failed.length} objects not deleted (${failed[0]!.Code}: ${failed[0]!.Message})`);
    }
  }

  async uploadForm(
    key: string,
    form: { contentType: string; size: number; expiresInSeconds: number; redirect: string },
  ): Promise<{ url: string; fields: Record<string, string> }> {
    const { client, createPresignedPost } = await this.#load();
    const sse = this.#config.serverSideEncryption;
    const fields: Record<string, string> = {
      'Content-Type': form.contentType,
      success_action_redirect: form.redirect,
      ...(sse && { 'x-amz-server-side-encryption': sse }),
    };
    const { url, fields: signed } = await createPresignedPost(client, {
      Bucket: this.#config.bucket,
      Key: this.#key(key),
      Conditions: [['content-length-range', form.size, form.size], ...Object.entries(fields).map(([name, value]) => ({ [name]: value }))],
      Fields: fields,
      Expires: form.expiresInSeconds,
    });
    return { url, fields: signed };
  }

  async downloadUrl(key: string, file: { contentType: string; fileName: string }): Promise<string> {
    const { s3, client, getSignedUrl } = await this.#load();
    const command = new s3.GetObjectCommand({
      Bucket: this.#config.bucket,
      Key: this.#key(key),
      ResponseContentType: file.contentType,
      ResponseContentDisposition: attachment(file.fileName),
    });
    return getSignedUrl(client, command, { expiresIn: DOWNLOAD_SECONDS });
  }

  async size(key: string): Promise<number | null> {
    const { s3, client } = await this.#load();
    try {
      const answer = await client.send(new s3.HeadObjectCommand({ Bucket: this.#config.bucket, Key: this.#key(key) }));
      return Number(answer.ContentLength ?? 0);
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 404) return null;
      throw error;
    }
  }

  async range(key: string, start: number, bytes: number): Promise<Buffer> {
    const { s3, client } = await this.#load();
    const Range = `bytes=${start}-${start + bytes - 1}`;
    const answer = await client.send(new s3.GetObjectCommand({ Bucket: this.#config.bucket, Key: this.#key(key), Range }));
    // A store that ignored Range would answer the object from its start: not the bytes asked for.
    const body = answer.Body as AsyncIterable<Buffer> & { destroy?: () => void };
    if (start > 0 && !answer.ContentRange?.startsWith(`bytes ${start}-`)) {
      // Its connection goes back to the pool only once the body is read or destroyed.
      body.destroy?.();
      throw new Error(`object store: a read from byte ${start} answered ${answer.ContentRange ?? 'the whole object'}`);
    }
    const pieces: Buffer[] = [];
    let held = 0;
    // No more than asked is read, whatever the store sends: leaving the loop destroys the body.
    for await (const piece of body) {
      pieces.push(piece);
      held += piece.length;
      if (held >= bytes) break;
    }
    return Buffer.concat(pieces).subarray(0, bytes);
  }

  async copy(from: string, to: string): Promise<void> {
    const { s3, client } = await this.#load();
    await client.send(
      new s3.CopyObjectCommand({
        Bucket: this.#config.bucket,
        Key: this.#key(to),
        CopySource: `${this.#config.bucket}/${this.#key(from).split('/').map(encodeURIComponent).join('/')}`,
        ...this.#encryption,
      }),
    );
  }

  close(): void {
    void this.#sdk?.then(({ client }) => client.destroy());
  }
}
