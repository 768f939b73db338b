/**
 * The JWT signing key and the master key. Production takes both from the environment (config.ts
 * refuses to start without them); development generates them on first start under CPS_DATA_DIR
 * (mode 0600) and reuses them, so tokens survive restarts.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import { ConfigError, parseMasterKey, type Config } from '../config.ts';
import { makePrivateDir } from './data-dir.ts';

/** A key that verifies access tokens: the signing key's public half, or a previous signing key's during a rotation. */
export interface VerificationKey {
  kid: string;
  alg: 'EdDSA' | 'ES256';
  publicKey: KeyObject;
  publicJwk: JWK;
}

export interface SigningKey extends VerificationKey {
  privateKey: KeyObject;
}

export interface Keys {
  signing: SigningKey;
  /** The key replaced in a rotation (CPS_JWT_PREVIOUS_PUBLIC_KEY): its tokens are accepted until they expire. */
  previous?: VerificationKey;
  masterKey: Buffer;
}

const JWT_KEY_FILE = 'jwt-signing-key.pem';
const MASTER_KEY_FILE = 'master.key';

export async function loadKeys(config: Config): Promise<Keys> {
  const pem =
    config.jwtPrivateKey ??
    readOrCreate(config, JWT_KEY_FILE, () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString());
  const masterKey =
    config.masterKey ??
    parseMasterKey(
      readOrCreate(config, MASTER_KEY_FILE, () => randomBytes(32).toString('base64')).trim(),
      `CPS_MASTER_KEY (from ${path.join(config.dataDir, MASTER_KEY_FILE)})`,
    );
  const signing = await signingKeyFromPem(pem);
  if (config.jwtPreviousPublicKey === null) return { signing, masterKey };
  const previous = await verificationKeyFromPem(config.jwtPreviousPublicKey);
  return previous.kid === signing.kid ? { signing, masterKey } : { signing, previous, masterKey };
}

/** A previous signing key, from its public PEM or its private one (only the public half is kept). */
export async function verificationKeyFromPem(pem: string): Promise<VerificationKey> {
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: pem, format: 'pem' });
  } catch (error) {
    throw new ConfigError('CPS_JWT_PREVIOUS_PUBLIC_KEY', `cannot be parsed: ${(error as Error).message}`);
  }
  return verificationKey(publicKey, 'CPS_JWT_PREVIOUS_PUBLIC_KEY');
}

export async function signingKeyFromPem(pem: string): Promise<SigningKey> {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem' });
  } catch (error) {
    throw new ConfigError('CPS_JWT_PRIVATE_KEY', `cannot be parsed: ${(error as Error).message}`);
  }
  return { ...(await verificationKey(createPublicKey(privateKey), 'CPS_JWT_PRIVATE_KEY')), privateKey };
}

async function verificationKey(publicKey: KeyObject, variable: string): Promise<VerificationKey> {
  let alg: SigningKey['alg'];
  if (publicKey.asymmetricKeyType === 'ed25519') alg = 'EdDSA';
  else if (publicKey.asymmetricKeyType === 'ec' && publicKey.asymmetricKeyDetails?.namedCurve === 'prime256v1') alg = 'ES256';
  else throw new ConfigError(variable, 'must be an Ed25519 or P-256 key');
  const jwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(jwk);
  return { kid, alg, publicKey, publicJwk: { ...jwk, kid, alg, use: 'sig' } };
}

function readOrCreate(config: Config, fileName: string, create: () => string): string {
  if (config.env === 'production') {
    throw new ConfigError(fileName === JWT_KEY_FILE ? 'CPS_JWT_PRIVATE_KEY' : 'CPS_MASTER_KEY', 'is required in production');
  }
  const file = path.join(config.dataDir, fileName);
  if (existsSync(file)) return readFileSync(file, 'utf8');
  makePrivateDir(config.dataDir);
  const value = create();
  // Written whole under a name of its own, then linked into place: another process starting at the
  // same moment sees no file or the whole key, never an empty one. The link fails if another process
  // linked its key first; then that key is the one to use.
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temporary, value, { mode: 0o600, flag: 'wx' });
  try {
    chmodSync(temporary, 0o600);
    linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readFileSync(file, 'utf8');
    throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
  return value;
}
