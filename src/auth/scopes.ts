/** The scopes an access token can grant; a route asks for any one of a list. */
export const SCOPES = [
  'search',
  'appointment:write',
  'appointment:complete',
  'clinic:write',
  'cases:read',
  'cases:write',
  'documents:read',
  'documents:write',
  'notification:admin',
  'webhook:admin',
  'patient:read',
  'patient:write',
  'audit:read',
  'privacy:export',
  'privacy:erase',
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
