/** Shared set-up for patient tests: requests with the `auth` header, and patient builders in both families. */
import assert from 'node:assert/strict';
import type { TestApp } from '../../support.ts';

export async function request(t: TestApp, token: string, method: string, url: string, payload?: unknown) {
  return t.app.inject({ method: method as 'GET', url, headers: { auth: token }, ...(payload === undefined ? {} : { payload: payload as object }) });
}

let counter = 0;

/** A unique partner patient id. */
export function partnerId(prefix = 'uh'): string {
  return `${prefix}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;
}

export function drBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { first_name: 'Ravi', last_name: 'Kumar', gender: 'M', dob: '1990-04-01', mobile: '+919812345678', ...overrides };
}

/** Creates a patient through `POST /dr/v1/patient` and returns its id. */
export async function createDr(t: TestApp, token: string, overrides: Record<string, unknown> = {}): Promise<string> {
  const response = await request(t, token, 'POST', '/dr/v1/patient', drBody(overrides));
  assert.equal(response.statusCode, 201, response.body);
  return response.json().patient_id;
}

/** Creates a patient through `POST /profiles/v1/patient/` and returns its oid. */
export async function createProfile(t: TestApp, token: string, body: Record<string, unknown> = {}): Promise<string> {
  const response = await request(t, token, 'POST', '/profiles/v1/patient/', { fn: 'Anita', ln: 'Desai', gen: 'F', dob: '1985-02-03', ...body });
  assert.equal(response.statusCode, 201, response.body);
  return response.json().oid;
}
