import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from '../../support.ts';
import { book, createPractice } from '../appointments/support.ts';
import { bookOne, listReviews, postForm, reviewToken, textOf } from './support.ts';

describe('review page: happy path', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('the page names the clinic (at the top), the doctor and the date, and holds the form', async () => {
    const { token } = await bookOne(t, { clinic: { name: 'Lotus Eye Care' }, doctor: { firstname: 'Meera', lastname: 'Iyer' } });
    const response = await t.app.inject({ url: `/reviews/${token}` });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], 'text/html; charset=utf-8');
    const page = response.body;
    assert.match(page, /<header class="top"><p>Lotus Eye Care<\/p><\/header>/);
    assert.match(page, /<meta name="viewport" content="width=device-width, initial-scale=1">/);
    const text = textOf(page);
    assert.match(text, /Dr\. Meera Iyer/);
    // START (1_900_000_000) in Asia/Kolkata, the default CPS_TIMEZONE.
    assert.match(text, /Sunday, 17 March 2030, 11:16 pm/);
    assert.match(page, /<form method="post"/);
    assert.match(page, /<fieldset[^>]*>\s*<legend>Your rating<\/legend>/);
    for (let rating = 1; rating <= 5; rating++) {
      assert.match(page, new RegExp(`<input type="radio" id="rating-${rating}" name="rating" value="${rating}"`));
    }
    assert.match(page, /<label for="comment">Comment \(optional\)<\/label>/);
    assert.match(page, /<textarea id="comment" name="comment"[^>]* maxlength="1000"/);
    assert.match(page, /<button type="submit">Send review<\/button>/);
  });

  test('the date is shown in CPS_TIMEZONE', async () => {
    const utc = await createTestApp({ env: { CPS_TIMEZONE: 'UTC' } });
    try {
      const { token } = await bookOne(utc);
      assert.match(textOf((await utc.app.inject({ url: `/reviews/${token}` })).body), /Sunday, 17 March 2030, 5:46 pm/);
    } finally {
      await utc.close();
    }
  });

  test('submitting stores the review, answers the thank-you page (201) and the business lists it', async () => {
    const { practice, appointmentId, token } = await bookOne(t);
    const response = await postForm(t, token, { rating: '4', comment: '  Kind and on time.\r\nThank you!  ' });
    assert.equal(response.statusCode, 201);
    assert.equal(response.headers['content-type'], 'text/html; charset=utf-8');
    assert.match(textOf(response.body), /Thank you for your review/);
    assert.match(textOf(response.body), /4 out of 5/);

    const list = await listReviews(t, practice.client.token);
    assert.equal(list.statusCode, 200);
    const { reviews } = list.json();
    assert.equal(reviews.length, 1);
    const patientId = (
      await t.ctx.storage.db.selectFrom('appointments').select('patient_id').where('id', '=', appointmentId).executeTakeFirstOrThrow()
    ).patient_id;
    const review = reviews[0];
    assert.deepEqual(
      { ...review, created_at: undefined },
      {
        appointment_id: appointmentId,
        doctor_id: practice.doctorId,
        clinic_id: practice.clinicId,
        patient_id: patientId,
        rating: 4,
        // Trimmed, and the browser's CRLF line break kept as one character.
        comment: 'Kind and on time.\nThank you!',
        created_at: undefined,
      },
    );
    assert.ok(Number.isInteger(review.created_at));
    assert.ok(Math.abs(review.created_at - Date.now() / 1000) < 60, 'created_at is epoch seconds');
  });

  test('the comment is optional (listed as null), and the page then says the review was received', async () => {
    const { practice, token } = await bookOne(t);
    assert.equal((await postForm(t, token, { rating: '5' })).statusCode, 201);
    const [review] = (await listReviews(t, practice.client.token)).json().reviews;
    assert.equal(review.rating, 5);
    assert.equal(review.comment, null);
    const again = await t.app.inject({ url: `/reviews/${token}/` });
    assert.equal(again.statusCode, 200);
    assert.match(textOf(again.body), /already received/);
    assert.doesNotMatch(again.body, /<form/);
  });

  test('a comment of exactly 1000 characters is accepted, counting an emoji as one', async () => {
    const { practice, token } = await bookOne(t);
    const comment = `${'😀'.repeat(10)}${'a'.repeat(990)}`;
    assert.equal((await postForm(t, token, { rating: '3', comment })).statusCode, 201);
    assert.equal((await listReviews(t, practice.client.token)).json().reviews[0].comment, comment);
  });

  test('the list is newest first, filters by clinic and doctor, and pages by 50', async () => {
    const first = await createPractice(t);
    const second = await createPractice(t, { client: first.client });
    const ids: string[] = [];
    for (let i = 0; i < 52; i++) {
      const practice = i % 2 === 0 ? first : second;
      const appointmentId = await book(t, practice);
      ids.push(appointmentId);
      assert.equal((await postForm(t, await reviewToken(t, appointmentId), { rating: String((i % 5) + 1), comment: `review ${i}` })).statusCode, 201);
    }
    const token = first.client.token;
    const page0 = (await listReviews(t, token)).json().reviews;
    const page1 = (await listReviews(t, token, '?page_no=1')).json().reviews;
    assert.equal(page0.length, 50);
    assert.equal(page1.length, 2);
    // Newest first (by the stored millisecond time; the id breaks ties), and the pages do not overlap.
    const all = [...page0, ...page1].map((r: { appointment_id: string }) => r.appointment_id);
    assert.deepEqual([...all].sort(), [...ids].sort());
    const stored = await t.ctx.storage.db
      .selectFrom('reviews')
      .select(['appointment_id', 'created_at'])
      .where('business_id', '=', first.client.businessId)
      .execute();
    const times = new Map(stored.map((r) => [r.appointment_id, Number(r.created_at)]));
    for (let i = 1; i < all.length; i++) assert.ok(times.get(all[i - 1]!)! >= times.get(all[i]!)!, 'newest first');
    assert.deepEqual((await listReviews(t, token, '?page_no=2')).json(), { reviews: [] });

    const byClinic = (await listReviews(t, token, `?clinic_id=${second.clinicId}`)).json().reviews;
    assert.equal(byClinic.length, 26);
    assert.ok(byClinic.every((r: { clinic_id: string }) => r.clinic_id === second.clinicId));
    const byDoctor = (await listReviews(t, token, `?doctor_id=${first.doctorId}&clinic_id=${first.clinicId}`)).json().reviews;
    assert.equal(byDoctor.length, 26);
    assert.ok(byDoctor.every((r: { doctor_id: string }) => r.doctor_id === first.doctorId));
    assert.deepEqual((await listReviews(t, token, `?doctor_id=${first.doctorId}&clinic_id=${second.clinicId}`)).json(), { reviews: [] });
    // The raw auth header works too, as on every endpoint.
    const raw = await t.app.inject({ url: '/reviews/v1/?page_no=1', headers: { auth: token } });
    assert.equal(raw.statusCode, 200);
    assert.equal(raw.json().reviews.length, 2);
  });
});
