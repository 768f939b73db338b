/**
 * The front desk in a real browser, over plain http by a LAN host name: a day's appointments of a clinic
 * and doctor in token order, the free slots, arrived, complete, no-show, cancel, reschedule, a walk-in for
 * a patient found by mobile and for a new one. Each change is checked through the API (bearer token) and
 * in the access log, which names the desk's client as it does for the API call; another business's
 * clinic stays out of sight. WCAG 2.1 AA by axe-core; screenshots at 390 px and desktop widths.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserSkip, LAN_NAME, launchChromium } from '../../browser.ts';
import { bearer, createTestApp, createTestClient, type TestApp, type TestClient } from '../../support.ts';
import { checkAccessibility, checkFits, DESKTOP, openConsole, PHONE, shot, signInThroughPage } from './support.ts';

const DESK_SCOPES = ['appointment:write', 'appointment:complete', 'clinic:write', 'patient:read', 'patient:write'];

async function call(t: TestApp, token: string, method: string, url: string, payload?: unknown) {
  const response = await t.app.inject({
    method: method as 'GET',
    url,
    headers: bearer(token),
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`);
  return response.statusCode === 204 ? null : response.json();
}

/** A clinic with a doctor whose schedule has 15-minute slots, 09:00 to 17:00 every day. */
async function practice(t: TestApp, client: TestClient, clinicName: string, doctor: { firstname: string; lastname: string }) {
  const doc = await call(t, client.token, 'POST', '/cdr/v1/doctor/', doctor);
  const clinic = await call(t, client.token, 'POST', '/cdr/v1/clinic/', { name: clinicName, address: '1 MG Road', doctor_ids: [doc.svcid] });
  await call(t, client.token, 'PUT', `/cdr/v1/doctor/${doc.svcid}/clinic/${clinic.svcid}/schedule`, {
    slot_minutes: 15,
    sessions: [{ days: ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'], start: '09:00', end: '17:00' }],
  });
  return { clinicId: clinic.svcid as string, doctorId: doc.svcid as string };
}

async function freeSlots(t: TestApp, token: string, doctorId: string, clinicId: string, date: string) {
  const answer = await call(t, token, 'GET', `/dr/v1/doctor/${doctorId}/clinic/${clinicId}/appointment/slot?start_date=${date}&end_date=${date}`);
  return (answer.data.schedule[doctorId][date] as Array<{ available: boolean; start_time: number; end_time: number }>).filter(
    (slot) => slot.available,
  );
}

/** A day two days ahead in the service's zone, so that every slot of it is still to come. */
function dayAhead(): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Kolkata' }).format(new Date(Date.now() + 2 * 86_400_000));
}

const PATIENTS = [
  { first_name: 'Ravi', last_name: 'Kumar', mobile: '+919812345601', gender: 'M', age: 41 },
  { first_name: 'Meera', last_name: 'Iyer', mobile: '+919812345602', gender: 'F', age: 35 },
  { first_name: 'Arjun', last_name: 'Shah', mobile: '+919812345603', gender: 'M', age: 8 },
  { first_name: 'Fatima', last_name: 'Khan', mobile: '+919812345604', gender: 'F', age: 62 },
  { first_name: 'Kiran', last_name: 'Patil', mobile: '+919812345605', gender: 'O', age: 27 },
];

describe('front desk in a browser', { skip: browserSkip }, () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let desk: TestClient;
  let clinicId: string;
  let doctorId: string;
  let otherClinicId: string;
  const date = dayAhead();

  before(async () => {
    t = await createTestApp();
    const port = new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port;
    base = `http://${LAN_NAME}:${port}`;
    browser = await launchChromium();
    desk = await createTestClient(t.ctx, { scopes: DESK_SCOPES });
    ({ clinicId, doctorId } = await practice(t, desk, 'Sunrise Family Clinic', { firstname: 'Asha', lastname: 'Rao' }));
    // Booked in reverse slot order, so that token order (the order of booking) is not the order of time.
    const slots = await freeSlots(t, desk.token, doctorId, clinicId, date);
    for (const [index, patient] of PATIENTS.entries()) {
      const slot = slots[PATIENTS.length - 1 - index]!;
      await call(t, desk.token, 'POST', '/dr/v1/appointment', {
        clinic_id: clinicId,
        doctor_id: doctorId,
        appointment_details: { start_time: slot.start_time, end_time: slot.end_time },
        patient_details: patient,
      });
    }
    // Another business with its own clinic and a patient on the same mobile as one of ours.
    const other = await createTestClient(t.ctx, { scopes: DESK_SCOPES });
    const theirs = await practice(t, other, 'Elsewhere Hospital', { firstname: 'Other', lastname: 'Doctor' });
    otherClinicId = theirs.clinicId;
    const [theirSlot] = await freeSlots(t, other.token, theirs.doctorId, theirs.clinicId, date);
    await call(t, other.token, 'POST', '/dr/v1/appointment', {
      clinic_id: theirs.clinicId,
      doctor_id: theirs.doctorId,
      appointment_details: { start_time: theirSlot!.start_time, end_time: theirSlot!.end_time },
      patient_details: { first_name: 'Secret', last_name: 'Elsewhere', mobile: '+919812345601', gender: 'F', age: 50 },
    });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  async function showDay(page: Page, heading: string | RegExp = `Appointments on ${date} (5)`): Promise<void> {
    await page.getByRole('link', { name: 'Front desk' }).click();
    await page.getByRole('heading', { level: 1, name: 'Front desk' }).waitFor();
    await page.getByLabel('Doctor').selectOption({ label: 'Dr. Asha Rao' });
    await page.getByLabel('Date').fill(date);
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByRole('heading', { level: 2, name: heading }).waitFor();
  }

  const row = (page: Page, name: string) => page.locator('#desk-table tbody tr', { hasText: name });
  const statusOf = async (id: string) => (await call(t, desk.token, 'GET', `/dr/v1/appointment/${id}`)).status as string;

  test('desktop: the day in token order; arrived, complete, no-show, cancel, reschedule, two walk-ins', async () => {
    const { page, problems, close } = await openConsole(browser, DESKTOP);
    try {
      await signInThroughPage(page, base, desk);
      await showDay(page);
      // Token order (the order of booking), not the order of the slots: Ravi, booked first, holds the day's last slot.
      const names = await page.locator('#desk-table tbody th').allInnerTexts();
      assert.deepEqual(names, ['Ravi Kumar', 'Meera Iyer', 'Arjun Shah', 'Fatima Khan', 'Kiran Patil']);
      assert.deepEqual(await page.locator('#desk-table tbody td:first-child').allInnerTexts(), ['1', '2', '3', '4', '5']);
      assert.ok((await page.locator('#desk-slots li').count()) >= 20, 'the free slots are listed');
      assert.deepEqual(await page.getByLabel('Clinic').locator('option').allInnerTexts(), ['Sunrise Family Clinic'], "no other business's clinic");
      await checkAccessibility(page, 'front desk (desktop)');
      await shot(page, 'desk-desktop');

      const { appointments } = await call(t, desk.token, 'GET', `/dr/v1/appointment?clinic_id=${clinicId}&date=${date}`);
      const idOf = (first: string) =>
        appointments.find((a: { patient_details: { first_name: string } }) => a.patient_details.first_name === first).appointment_id as string;

      await row(page, 'Kiran Patil').getByRole('button', { name: 'Arrived: Kiran Patil' }).click();
      await row(page, 'Kiran Patil')
        .getByText(/^Arrived \d\d:\d\d$/)
        .waitFor();
      assert.match((await call(t, desk.token, 'GET', `/dr/v1/appointment/${idOf('Kiran')}`)).custom_attributes.arrived_at, /^\d+$/);

      await row(page, 'Kiran Patil').getByRole('button', { name: 'Complete: Kiran Patil' }).click();
      await row(page, 'Kiran Patil').locator('.badge', { hasText: 'Completed' }).waitFor();
      assert.equal(await statusOf(idOf('Kiran')), 'CM');

      await row(page, 'Fatima Khan').getByRole('button', { name: 'No-show: Fatima Khan' }).click();
      await row(page, 'Fatima Khan').locator('.badge', { hasText: 'No-show' }).waitFor();
      assert.equal(await statusOf(idOf('Fatima')), 'NS');

      await row(page, 'Arjun Shah').getByRole('button', { name: 'Cancel: Arjun Shah' }).click();
      await row(page, 'Arjun Shah').locator('.badge', { hasText: 'Cancelled' }).waitFor();
      assert.equal(await statusOf(idOf('Arjun')), 'CN');
      assert.equal(await page.locator('#status').innerText(), 'Arjun Shah: cancelled.');

      // Reschedule Meera to the last free slot of the day.
      await row(page, 'Meera Iyer').getByRole('button', { name: 'Reschedule: Meera Iyer' }).click();
      const dialog = page.getByRole('dialog', { name: 'Reschedule Meera Iyer' });
      await dialog.waitFor();
      await checkAccessibility(page, 'reschedule dialog');
      const lastSlot = (await dialog.getByLabel('Slot').locator('option').allInnerTexts()).at(-1)!;
      await dialog.getByLabel('Slot').selectOption({ label: lastSlot });
      await dialog.getByRole('button', { name: 'Move' }).click();
      await page.locator('#status', { hasText: 'Meera Iyer: rescheduled.' }).waitFor();
      assert.equal(await statusOf(idOf('Meera')), 'RES');
      await row(page, 'Meera Iyer').locator('.badge', { hasText: 'Booked' }).waitFor();

      // A walk-in found by mobile: Ravi (not the other business's patient on the same number).
      await page.getByLabel('Mobile', { exact: true }).fill('+919812345601');
      await page.getByRole('button', { name: 'Find patient' }).click();
      await page.getByLabel('Ravi Kumar · +919812345601').waitFor();
      assert.equal(await page.getByText('Secret Elsewhere').count(), 0, "another business's patient is never shown");
      await page.getByRole('button', { name: 'Book', exact: true }).click();
      await page.locator('#status', { hasText: /^Booked Ravi Kumar: token \d+\.$/ }).waitFor();

      // A walk-in who is new.
      await page.getByLabel('Mobile', { exact: true }).fill('+919800000077');
      await page.getByRole('button', { name: 'Find patient' }).click();
      await page.locator('#status', { hasText: '0 patients found on this mobile.' }).waitFor();
      await page.getByLabel('First name').fill('Nisha');
      await page.getByLabel('Last name').fill('Verma');
      await page.getByLabel('Gender').selectOption('F');
      await page.getByLabel('Age (years)').fill('30');
      await page.getByRole('button', { name: 'Book', exact: true }).click();
      await page.locator('#status', { hasText: /^Booked Nisha Verma: token \d+\.$/ }).waitFor();
      await page.getByRole('heading', { level: 2, name: `Appointments on ${date} (8)` }).waitFor();
      await checkAccessibility(page, 'front desk after the changes');
      await shot(page, 'desk-after-desktop');

      // The access log names the desk's client for each change, as for the API call.
      await t.ctx.audit.flush();
      const entries = await t.ctx.storage.db
        .selectFrom('access_log')
        .select(['operation', 'client_id'])
        .where('business_id', '=', desk.businessId)
        .where('action', 'in', ['create', 'update'])
        .execute();
      const operations = new Set(entries.map((entry) => entry.operation));
      for (const operation of [
        'PUT /dr/v1/appointment/:appointment_id/cancel',
        'POST /dr/v1/appointment/:appointment_id/complete',
        'POST /dr/v1/appointment',
      ]) {
        assert.ok(operations.has(operation), `${operation} has its entry (${[...operations].join(', ')})`);
      }
      assert.ok(entries.every((entry) => entry.client_id === desk.clientId));
      // And the events the API call records.
      const events = await t.ctx.storage.db.selectFrom('events').select('type').where('business_id', '=', desk.businessId).execute();
      assert.ok(events.some((event) => event.type === 'appointment.statuschange'));

      // Another business's clinic by address: nothing of it.
      await page.goto(`${base}/console/desk?clinic=${otherClinicId}&date=${date}`);
      await page.getByRole('heading', { level: 1, name: 'Front desk' }).waitFor();
      assert.equal(await page.getByText('Secret Elsewhere').count(), 0);
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });

  test('phone: the day fits at 390 px and reads row by row', async () => {
    const { page, problems, close } = await openConsole(browser, PHONE);
    try {
      await signInThroughPage(page, base, desk);
      await page.getByRole('link', { name: 'Front desk' }).tap();
      await page.getByRole('heading', { level: 1, name: 'Front desk' }).waitFor();
      await page.getByLabel('Doctor').selectOption({ label: 'Dr. Asha Rao' });
      await page.getByLabel('Date').fill(date);
      await page.getByRole('button', { name: 'Show' }).tap();
      await page.getByRole('heading', { level: 2, name: /^Appointments on / }).waitFor();
      await checkFits(page, 390);
      await checkAccessibility(page, 'front desk (phone)');
      await shot(page, 'desk-phone');
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });

  test('answers arriving late never paint over a later one: a day asked for after the first, a page shown after the desk', async () => {
    const { page, problems, close } = await openConsole(browser, DESKTOP);
    try {
      await signInThroughPage(page, base, desk);
      const isFirstDay = (url: URL | string) => {
        const { pathname, searchParams } = new URL(url);
        return pathname === '/dr/v1/appointment' && searchParams.get('date') !== date;
      };
      let releaseFirstDay!: () => void;
      const firstDayHeld = new Promise<void>((resolve) => {
        releaseFirstDay = resolve;
      });
      await page.route(isFirstDay, async (route) => {
        await firstDayHeld;
        await route.continue();
      });
      // The desk opens on today, whose answer is held until the day asked for after it is drawn (the tests before
      // this one may have changed its count).
      const dayHeading = new RegExp(`^Appointments on ${date} \\(\\d+\\)$`);
      await showDay(page, dayHeading);
      const firstDay = page.waitForResponse((response) => isFirstDay(response.url()));
      releaseFirstDay();
      await (await firstDay).finished();
      await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 200)));
      const titles = await page.locator('#desk-list-title').allInnerTexts();
      assert.equal(titles.length, 1);
      assert.match(titles[0]!, dayHeading);

      // The desk is left for Home while its clinics are still on their way: they draw nothing on Home.
      let releaseEntities!: () => void;
      const entitiesHeld = new Promise<void>((resolve) => {
        releaseEntities = resolve;
      });
      await page.route('**/dr/v1/business/entities', async (route) => {
        await entitiesHeld;
        await route.continue();
      });
      const entitiesAsked = page.waitForRequest((request) => request.url().endsWith('/dr/v1/business/entities'));
      const entities = page.waitForResponse((response) => response.url().endsWith('/dr/v1/business/entities'));
      await page.getByRole('link', { name: 'Front desk' }).click();
      await entitiesAsked;
      await page.getByRole('link', { name: 'Home' }).click();
      await page.locator('#who').waitFor();
      releaseEntities();
      await (await entities).finished();
      await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 200)));
      assert.deepEqual(await page.locator('main h1').allInnerTexts(), ['Welcome']);
      assert.equal(await page.locator('#desk-filter').count(), 0);
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });

  test('desktop: a doctor’s weekly schedule, a session added, leave taken and given back', async () => {
    const { page, problems, close } = await openConsole(browser, DESKTOP);
    try {
      await signInThroughPage(page, base, desk);
      await page.getByRole('link', { name: 'Schedules' }).click();
      await page.getByRole('heading', { level: 1, name: 'Schedules' }).waitFor();
      await page.getByLabel('Doctor and clinic').selectOption({ label: 'Dr. Asha Rao · Sunrise Family Clinic' });
      await page.getByRole('button', { name: 'Show' }).click();
      await page.locator('#schedule-sessions', { hasText: 'Mon, Tue, Wed, Thu, Fri, Sat, Sun' }).waitFor();
      assert.match(await page.getByText(/^Slots of 15 minutes/).innerText(), /Slots of 15 minutes, 1 patients each, times in Asia\/Kolkata\./);

      const form = page.locator('#schedule-add-session');
      await form.getByLabel('Sat').check();
      await form.getByLabel('Start').fill('18:00');
      await form.getByLabel('End').fill('20:00');
      await form.getByRole('button', { name: 'Add' }).click();
      await page.locator('#status', { hasText: 'The session was added.' }).waitFor();
      await page.locator('#schedule-sessions tbody tr', { hasText: '18:00' }).waitFor();
      const path = `/cdr/v1/doctor/${doctorId}/clinic/${clinicId}/schedule`;
      assert.deepEqual((await call(t, desk.token, 'GET', path)).schedule.sessions.at(-1), { days: ['SAT'], start: '18:00', end: '20:00' });

      const leave = page.locator('#schedule-add-leave');
      await leave.getByLabel('From').fill(date);
      await leave.getByLabel('To (inclusive)').fill(date);
      await leave.getByLabel('Note (optional)').fill('Conference');
      await leave.getByRole('button', { name: 'Add' }).click();
      await page.locator('#schedule-leave', { hasText: `Leave: ${date} to ${date} (Conference)` }).waitFor();
      assert.deepEqual(await freeSlots(t, desk.token, doctorId, clinicId, date), [], 'no free slot on a day of leave');
      await checkAccessibility(page, 'schedules');
      await shot(page, 'schedule-desktop');

      await page.getByRole('button', { name: `Remove the leave ${date} to ${date}` }).click();
      await page.getByText('No leave or holiday.').waitFor();
      assert.ok((await freeSlots(t, desk.token, doctorId, clinicId, date)).length > 0, 'the slots are back');
      await page.getByRole('button', { name: 'Remove the session 18:00–20:00' }).click();
      await page.locator('#status', { hasText: 'The session was removed.' }).waitFor();
      assert.equal((await call(t, desk.token, 'GET', path)).schedule.sessions.length, 1);
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });
});
