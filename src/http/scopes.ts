export const SCOPES = [
  'search',
  'appointment:write',
  'appointment:complete',
  'clinic:write',
  'cases:read',
  'cases:write',
  'notification:admin',
  'webhook:admin',
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
