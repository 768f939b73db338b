// The console's calls: the service's own JSON API, authorised by the session cookie (sent by the
// browser, HttpOnly), plus the CSRF token on every change. The token lives in this module's memory only.

let csrf = null;
let whenSignedOut = () => {};

export function setCsrf(token) {
  csrf = token;
}

/** Called when a call answers 401: the session ended (idle, signed out elsewhere, client revoked). */
export function onSignedOut(handler) {
  whenSignedOut = handler;
}

export class ApiError extends Error {
  constructor(status, body) {
    super(messageOf(body) ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

function messageOf(body) {
  if (!body || typeof body !== 'object') return null;
  const problem = body.error ?? body.message ?? body.detail ?? body.title;
  if (typeof problem === 'string') return problem;
  if (problem && typeof problem === 'object') return problem.message ?? problem.msg ?? null;
  // The clinics family's field problems: { field: [message, ...], ... }.
  const fields = Object.entries(body).filter(([, value]) => Array.isArray(value) && value.every((item) => typeof item === 'string'));
  if (fields.length > 0) return fields.map(([name, messages]) => `${name}: ${messages.join(' ')}`).join('; ');
  return null;
}

export async function api(method, url, body, headers = {}) {
  const init = { method, credentials: 'same-origin', headers: { accept: 'application/json', ...headers } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  if (method !== 'GET' && method !== 'HEAD' && csrf) init.headers['x-csrf-token'] = csrf;
  const response = await fetch(url, init);
  const text = await response.text();
  let data = null;
  if (text !== '') {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!response.ok) {
    if (response.status === 401 && !url.startsWith('/console/session')) whenSignedOut();
    throw new ApiError(response.status, data);
  }
  return data;
}
