/**
 * Review rules: one review per appointment, a rating from 1 to 5 and an optional comment of at most
 * 1000 characters. The page outcomes are values, not errors, because every one of them is a page.
 */
import type { Kysely } from 'kysely';
import type { Principal } from '../../auth/principal.ts';
import { isUniqueViolation } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { Database, ReviewsTable } from '../../db/schema.ts';
import * as repo from './repo.ts';

export const COMMENT_MAX = 1000;
export const PAGE_SIZE = 50;

/** Review tokens are base64url; anything else is not one, and needs no database lookup. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{16,128}$/;

/** What the page shows about the visit: names and the time, nothing about the patient. */
export interface Visit {
  clinicName: string;
  doctorName: string;
  /** Epoch milliseconds. */
  startTime: number;
}

export interface FormInput {
  rating: string;
  comment: string;
}

export interface FormErrors {
  rating?: string;
  comment?: string;
}

export type PageState = { kind: 'not_found' } | { kind: 'form'; visit: Visit } | { kind: 'received'; visit: Visit };

export type SubmitOutcome =
  | { kind: 'not_found' }
  | { kind: 'invalid'; visit: Visit; input: FormInput; errors: FormErrors }
  | { kind: 'received'; visit: Visit }
  | { kind: 'created'; visit: Visit; rating: number };

export interface ReviewRecord {
  appointment_id: string;
  doctor_id: string;
  clinic_id: string;
  patient_id: string;
  rating: number;
  comment: string | null;
  created_at: number;
}

function visitOf(target: repo.ReviewTarget): Visit {
  const name = `${target.doctor_firstname} ${target.doctor_lastname}`.trim();
  return {
    clinicName: target.clinic_name,
    // Partners sometimes store the title in the first name already.
    doctorName: /^dr\b/i.test(name) ? name : `Dr. ${name}`,
    startTime: target.start_time,
  };
}

/** A form field as a single string: browsers send strings, a repeated or odd value is not one. */
function fieldOf(body: unknown, name: string): string | null {
  if (body === null || typeof body !== 'object') return '';
  const value = (body as Record<string, unknown>)[name];
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

/** Textareas submit line breaks as CRLF; counting them as one character matches what the box showed. */
function normalizeComment(value: string): string {
  return value.replace(/\r\n?/g, '\n').trim();
}

/** Characters as a person counts them (code points, so an emoji is one). */
export function characterCount(value: string): number {
  return [...value].length;
}

export function validateForm(body: unknown): { input: FormInput; errors: FormErrors; rating: number; comment: string | null } {
  const rawRating = fieldOf(body, 'rating');
  const rawComment = fieldOf(body, 'comment');
  const input: FormInput = { rating: (rawRating ?? '').trim(), comment: rawComment === null ? '' : normalizeComment(rawComment) };
  const errors: FormErrors = {};
  const rating = /^[1-5]$/.test(input.rating) ? Number(input.rating) : 0;
  if (rating === 0)
    errors.rating = rawRating !== null && input.rating === '' ? 'Choose a rating from 1 to 5.' : 'The rating must be a whole number from 1 to 5.';
  if (rawComment === null) {
    errors.comment = 'The comment could not be read; please write it again.';
  } else {
    const length = characterCount(input.comment);
    if (length > COMMENT_MAX) errors.comment = `Your comment has ${length} characters; please shorten it to ${COMMENT_MAX} or fewer.`;
    // The form's page validates here, not in the validation layer (attachValidation), so the NUL rule is repeated.
    else if (input.comment.includes('\u0000')) errors.comment = 'Your comment contains a NUL character (U+0000); please remove it.';
  }
  return { input, errors, rating, comment: input.comment === '' ? null : input.comment };
}

export interface ReviewServiceDeps {
  db: Kysely<Database>;
}

export class ReviewService {
  readonly #deps: ReviewServiceDeps;

  constructor(deps: ReviewServiceDeps) {
    this.#deps = deps;
  }

  private async target(token: string): Promise<repo.ReviewTarget | undefined> {
    if (!TOKEN_SHAPE.test(token)) return undefined;
    return repo.findTargetByToken(this.#deps.db, token);
  }

  async page(token: string): Promise<PageState> {
    const target = await this.target(token);
    if (!target) return { kind: 'not_found' };
    return { kind: target.review_id === null ? 'form' : 'received', visit: visitOf(target) };
  }

  async submit(token: string, body: unknown): Promise<SubmitOutcome> {
    const target = await this.target(token);
    if (!target) return { kind: 'not_found' };
    const visit = visitOf(target);
    if (target.review_id !== null) return { kind: 'received', visit };
    const { input, errors, rating, comment } = validateForm(body);
    if (errors.rating || errors.comment) return { kind: 'invalid', visit, input, errors };
    const review: ReviewsTable = {
      id: newId('rev'),
      business_id: target.business_id,
      appointment_id: target.appointment_id,
      doctor_id: target.doctor_id,
      clinic_id: target.clinic_id,
      patient_id: target.patient_id,
      rating,
      comment,
      created_at: Date.now(),
    };
    try {
      await repo.insertReview(this.#deps.db, review);
    } catch (error) {
      // Two submissions racing: the unique appointment_id lets one in.
      if (isUniqueViolation(error)) return { kind: 'received', visit };
      throw error;
    }
    return { kind: 'created', visit, rating };
  }

  async list(principal: Principal, filter: repo.ReviewFilter, pageNo: number): Promise<ReviewRecord[]> {
    const rows = await repo.listReviews(this.#deps.db, principal.businessId, filter, pageNo * PAGE_SIZE, PAGE_SIZE);
    return rows.map((row) => ({
      appointment_id: row.appointment_id,
      doctor_id: row.doctor_id,
      clinic_id: row.clinic_id,
      patient_id: row.patient_id,
      rating: row.rating,
      comment: row.comment,
      created_at: Math.floor(row.created_at / 1000),
    }));
  }
}
