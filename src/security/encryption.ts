/** AES-256-GCM for stored credentials: a fresh 96-bit nonce per write, caller-chosen associated data. */
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';

const VERSION = 'v1';

/**
 * Each key's KeyObject, made once: a raw key makes a new one on every cipher, which took about as
 * long as sealing a document file's key (each upload seals one).
 */
const keyObjects = new WeakMap<Buffer, KeyObject>();

function keyObjectOf(key: Buffer): KeyObject {
  let object = keyObjects.get(key);
  if (!object) {
    object = createSecretKey(key);
    keyObjects.set(key, object);
  }
  return object;
}

export function encrypt(masterKey: Buffer, plaintext: string, associatedData: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyObjectOf(masterKey), nonce);
  cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, nonce.toString('base64'), ciphertext.toString('base64'), cipher.getAuthTag().toString('base64')].join('.');
}

/** Throws when the key, the associated data or the ciphertext does not match. */
export function decrypt(masterKey: Buffer, sealed: string, associatedData: string): string {
  const [version, nonce, ciphertext, tag] = sealed.split('.');
  if (version !== VERSION || !nonce || ciphertext === undefined || !tag) throw new Error('unknown ciphertext format');
  const decipher = createDecipheriv('aes-256-gcm', keyObjectOf(masterKey), Buffer.from(nonce, 'base64'));
  decipher.setAAD(Buffer.from(associatedData, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]).toString('utf8');
}
