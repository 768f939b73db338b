/** Shared set-up for review tests: a booked appointment and its review link, and the form post. */
import type { TestApp } from '../../support.ts';
import { book, createPractice, type Practice } from '../appointments/support.ts';

export interface Booked {
  practice: Practice;
  appointmentId: string;
  token: string;
}

export async function reviewToken(t: TestApp, appointmentId: string): Promise<string> {
  const row = await t.ctx.storage.db.selectFrom('appointments').select('review_token').where('id', '=', appointmentId).executeTakeFirstOrThrow();
  return row.review_token;
}

/** A practice (new business unless one is given) with one booked appointment. */
export async function bookOne(t: TestApp, options: Parameters<typeof createPractice>[1] & { practice?: Practice } = {}): Promise<Booked> {
  const practice = options.practice ?? (await createPractice(t, options));
  const appointmentId = await book(t, practice);
  return { practice, appointmentId, token: await reviewToken(t, appointmentId) };
}

export function postForm(t: TestApp, token: string, fields: Record<string, string | string[]>) {
  const form = new URLSearchParams();
  for (const [key, value] of Object.entries(fields)) for (const v of [value].flat()) form.append(key, v);
  return t.app.inject({
    method: 'POST',
    url: `/reviews/${token}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: form.toString(),
  });
}

export function listReviews(t: TestApp, token: string, query = '') {
  return t.app.inject({ method: 'GET', url: `/reviews/v1${query}`, headers: { authorization: `Bearer ${token}` } });
}

/** The text of an HTML page without tags, whitespace collapsed, for assertions on what it says. */
export function textOf(page: string): string {
  return page
    .replace(/<(script|style)[^>]*>[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}
