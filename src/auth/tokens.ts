/**
 * Access tokens: JWTs signed with the service's asymmetric key (EdDSA or ES256), `kid` in the header
 * so keys can rotate; verification picks the key by `kid` and accepts no other algorithm.
 */
import { randomUUID, type KeyObject } from 'node:crypto';
import { SignJWT, errors, jwtVerify, type JWTHeaderParameters } from 'jose';
import type { SigningKey, VerificationKey } from '../security/keys.ts';

export interface AccessClaims {
  clientId: string;
  businessId: string;
  scopes: string[];
  tokenId: string;
}

/** Verified tokens kept in memory until they expire; bounded, oldest evicted first. */
const VERIFIED_CACHE_SIZE = 10_000;

/**
 * The cache key: the token's last characters, which are signature. Hashing a whole token (400 to 650
 * characters) was a microsecond of every authenticated request; the entry keeps the whole token, and
 * only an exact match is a hit.
 */
const KEY_CHARS = 32;
const cacheKey = (token: string) => token.slice(-KEY_CHARS);

interface Verified {
  token: string;
  claims: AccessClaims;
  expiresAt: number;
}

export class AccessTokens {
  readonly #verified = new Map<string, Verified>();
  readonly #keys: Map<string, { key: KeyObject; alg: string }>;
  readonly #signing: SigningKey;
  readonly #verifyOnly: VerificationKey[];
  readonly #issuer: string;
  readonly #onForeignIssuer: (issuer: string) => void;
  readonly #foreignIssuers = new Set<string>();
  readonly ttlSeconds: number;

  /**
   * `verifyOnly` holds earlier keys still accepted during a rotation. `onForeignIssuer` hears, once per
   * issuer, of a token signed with one of our keys but issued under another CPS_PUBLIC_URL: processes
   * sharing the keys but not the public URL refuse each other's tokens.
   */
  constructor(
    signing: SigningKey,
    issuer: string,
    ttlSeconds: number,
    verifyOnly: VerificationKey[] = [],
    onForeignIssuer: (issuer: string) => void = () => {},
  ) {
    this.#onForeignIssuer = onForeignIssuer;
    this.#signing = signing;
    this.#verifyOnly = verifyOnly;
    this.#issuer = issuer;
    this.ttlSeconds = ttlSeconds;
    this.#keys = new Map([signing, ...verifyOnly].map((k) => [k.kid, { key: k.publicKey, alg: k.alg }]));
  }

  async issue(clientId: string, businessId: string, scopes: string[]): Promise<string> {
    return new SignJWT({ client_id: clientId, b_id: businessId, scope: scopes.join(' ') })
      .setProtectedHeader({ alg: this.#signing.alg, kid: this.#signing.kid, typ: 'JWT' })
      .setIssuer(this.#issuer)
      .setSubject(clientId)
      .setIssuedAt()
      .setExpirationTime(`${this.ttlSeconds}s`)
      .setJti(randomUUID())
      .sign(this.#signing.privateKey);
  }

  /**
   * The claims of a valid token, or null for anything else (expired, tampered, unknown key, alg none).
   * A signature check costs far more than the rest of most requests (jose verifies through WebCrypto),
   * so a token that verified once is trusted, by its exact text, until its expiry.
   */
  async verify(token: string): Promise<AccessClaims | null> {
    const cached = this.verifyCached(token);
    if (cached !== undefined) return cached;
    const verified = await this.#verifySignature(token);
    if (!verified) return null;
    const key = cacheKey(token);
    // Another token with the same last characters (a forgery's, which fails above) never evicts.
    this.#verified.delete(key);
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.delete(this.#verified.keys().next().value!);
    this.#verified.set(key, { token, ...verified });
    return verified.claims;
  }

  /**
   * The claims of a token verified before and not expired, without waiting: undefined when the
   * token has to be verified (`verify`), so the common case costs no promise.
   */
  verifyCached(token: string): AccessClaims | undefined {
    const key = cacheKey(token);
    const cached = this.#verified.get(key);
    if (cached === undefined || cached.token !== token) return undefined;
    if (cached.expiresAt > Date.now()) return cached.claims;
    this.#verified.delete(key);
    return undefined;
  }

  async #verifySignature(token: string): Promise<{ claims: AccessClaims; expiresAt: number } | null> {
    try {
      const { payload } = await jwtVerify(
        token,
        (header: JWTHeaderParameters) => {
          const entry = header.kid ? this.#keys.get(header.kid) : undefined;
          if (!entry || entry.alg !== header.alg) throw new Error('unknown signing key');
          return entry.key;
        },
        { issuer: this.#issuer, algorithms: ['EdDSA', 'ES256'], requiredClaims: ['sub', 'exp', 'iat', 'jti'] },
      );
      const { client_id: clientId, b_id: businessId, scope, jti } = payload as Record<string, unknown>;
      if (typeof clientId !== 'string' || typeof businessId !== 'string' || typeof scope !== 'string' || typeof jti !== 'string') return null;
      if (payload.sub !== clientId) return null;
      return { claims: { clientId, businessId, scopes: scope.split(' ').filter(Boolean), tokenId: jti }, expiresAt: payload.exp! * 1000 };
    } catch (error) {
      // jose checks the claims after the signature: a refused issuer means the token is one of ours.
      if (error instanceof errors.JWTClaimValidationFailed && error.claim === 'iss') this.#foreignIssuer(error.payload.iss);
      return null;
    }
  }

  #foreignIssuer(issuer: unknown): void {
    const name = typeof issuer === 'string' ? issuer.slice(0, 200) : String(issuer);
    if (this.#foreignIssuers.has(name) || this.#foreignIssuers.size >= 16) return;
    this.#foreignIssuers.add(name);
    this.#onForeignIssuer(name);
  }

  /** The signing key and any verify-only keys of a rotation, so outside verifiers accept both. */
  jwks(): { keys: unknown[] } {
    return { keys: [this.#signing.publicJwk, ...this.#verifyOnly.map((k) => k.publicJwk)] };
  }
}
