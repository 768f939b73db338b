/** Businesses and their API clients, for the admin API and the CLI alike. */
import type { Kysely } from 'kysely';
import { SCOPES, isScope, type Scope } from '../../auth/scopes.ts';
import { inTransaction, type Db } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import { hashSecret, randomToken } from '../../security/secrets.ts';
import * as repo from './repo.ts';

export interface CreatedClient {
  business_id: string;
  client_id: string;
  client_secret: string;
  scopes: Scope[];
}

/** No list grants every scope; an empty list is refused, since it would otherwise grant everything. */
export function normaliseScopes(scopes: readonly string[] | undefined): Scope[] {
  if (scopes === undefined) return [...SCOPES];
  if (scopes.length === 0) {
    throw AppError.badRequest('scopes: must list at least one scope, or be left out for every scope', {
      scopes: ['must list at least one scope, or be left out for every scope'],
    });
  }
  const unknown = scopes.filter((scope) => !isScope(scope));
  if (unknown.length > 0) {
    throw AppError.badRequest(`Unknown scope: ${unknown.join(', ')}. Known scopes: ${SCOPES.join(', ')}.`, {
      scopes: unknown.map((scope) => `Unknown scope: ${scope}`),
    });
  }
  return [...new Set(scopes as Scope[])];
}

async function newClient(db: Db, businessId: string, scopes: Scope[]): Promise<CreatedClient> {
  const clientId = newId('cl');
  const clientSecret = `cs_${randomToken(32)}`;
  await repo.insertClient(db, {
    id: clientId,
    business_id: businessId,
    secret_hash: await hashSecret(clientSecret),
    scopes: scopes.join(' '),
    created_at: Date.now(),
    disabled_at: null,
  });
  return { business_id: businessId, client_id: clientId, client_secret: clientSecret, scopes };
}

/** A new business with one API client holding every scope. */
export async function createBusiness(db: Kysely<Database>, name: string): Promise<Omit<CreatedClient, 'scopes'>> {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 200) throw AppError.badRequest('name: must be 1 to 200 characters', { name: ['must be 1 to 200 characters'] });
  return inTransaction(db, async (trx) => {
    const businessId = newId('biz');
    await repo.insertBusiness(trx, { id: businessId, name: trimmed, created_at: Date.now() });
    const { scopes: _all, ...client } = await newClient(trx, businessId, [...SCOPES]);
    return client;
  });
}

export async function createClient(db: Db, businessId: string, scopes?: readonly string[]): Promise<CreatedClient> {
  const granted = normaliseScopes(scopes);
  const business = await repo.findBusiness(db, businessId);
  if (!business) throw AppError.notFound(`Business ${businessId} not found`);
  return newClient(db, businessId, granted);
}
