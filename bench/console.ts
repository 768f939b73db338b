/**
 * The console (issue 35), against the real server in a child process, on SQLite and on PostgreSQL (a fresh
 * database; skipped with a note when none answers):
 * - a front desk's day of 500 appointments drawn in Chromium (playwright-core driving Debian's chromium): from
 *   the navigation's start to the day's table holding its 500 rows, read in the page (performance.now());
 *   each load in a fresh browser context (nothing cached), signed in by the session cookie;
 * - each console page's server time: the API calls the page makes, every one of 20 connections (20 users at once)
 *   requesting them in turn with the session's cookie, loaded with autocannon; p99 per page.
 * Run alone: `node bench/console.ts` (Chromium as the tests find it, test/browser.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { launchChromium } from '../test/browser.ts';
import { load, scratchPgDatabase, spawnServer, type Figure } from './lib.ts';

const APPOINTMENTS = 500;
const USERS = 20;
const DRAWS = 7;
const ADMIN_TOKEN = 'bench-admin-token-Jq8vN3xK7pW2mR9tL4sZ6yB1cH5f';
const ZONE = 'Asia/Kolkata';
/** An OPD's tokens: 16 patients a 15-minute slot, 09:00 to 17:00, room for 512. */
const PER_SLOT = 16;

async function call(base: string, method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<any> {
  const response = await fetch(`${base}${url}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** A console session's cookie (name=value). */
async function sessionCookie(base: string, how: { clientId: string; clientSecret: string } | 'operator'): Promise<string> {
  const response = await fetch(`${base}/console/session/${how === 'operator' ? 'operator' : 'client'}`, {
    method: 'POST',
    headers: how === 'operator' ? { authorization: `Bearer ${ADMIN_TOKEN}` } : { 'content-type': 'application/json' },
    ...(how === 'operator' ? {} : { body: JSON.stringify({ client_id: how.clientId, client_secret: how.clientSecret }) }),
  });
  if (!response.ok) throw new Error(`console sign-in: ${response.status} ${await response.text()}`);
  return String(response.headers.get('set-cookie')).split(';')[0]!;
}

interface Practice {
  clinicId: string;
  doctorId: string;
  subscriptionId: string;
  eventId: string;
  businessId: string;
  date: string;
}

/**
 * The demo business: a doctor at a clinic with a weekly schedule, a webhook subscription (its deliveries fail:
 * nothing listens at its endpoint), and 500 appointments on one day, 16 to a slot, each a patient of its own.
 */
async function seed(base: string, dataDir: string): Promise<{ practice: Practice; client: { clientId: string; clientSecret: string } }> {
  const demo = JSON.parse(readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8')) as {
    business_id: string;
    client_id: string;
    client_secret: string;
  };
  const login = await call(base, 'POST', '/connect-auth/v1/account/login', {}, { client_id: demo.client_id, client_secret: demo.client_secret });
  const auth = { auth: String(login.access_token) };
  const doctor = await call(base, 'POST', '/cdr/v1/doctor/', auth, { firstname: 'Asha', lastname: 'Rao' });
  const clinic = await call(base, 'POST', '/cdr/v1/clinic/', auth, {
    name: 'Sunrise Family Clinic',
    address: '1 MG Road',
    doctor_ids: [doctor.svcid],
  });
  await call(base, 'PUT', `/cdr/v1/doctor/${doctor.svcid}/clinic/${clinic.svcid}/schedule`, auth, {
    slot_minutes: 15,
    capacity: PER_SLOT,
    sessions: [{ days: ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'], start: '09:00', end: '17:00' }],
  });
  const subscription = await call(base, 'POST', '/notification/v1/connect/webhook/subscriptions', auth, {
    endpoint: 'http://127.0.0.1:9/hooks',
    event_names: ['appointment.created'],
  });
  const date = new Intl.DateTimeFormat('en-CA', { timeZone: ZONE }).format(new Date(Date.now() + 2 * 86_400_000));
  const first = Date.parse(`${date}T09:00:00+05:30`) / 1000;
  for (let i = 0; i < APPOINTMENTS; i++) {
    const start = first + Math.floor(i / PER_SLOT) * 900;
    await call(base, 'POST', '/dr/v1/appointment', auth, {
      clinic_id: clinic.svcid,
      doctor_id: doctor.svcid,
      appointment_details: { start_time: start, end_time: start + 900 },
      patient_details: {
        first_name: `Patient${i}`,
        last_name: 'Kumar',
        mobile: `+9198${String(10_000_000 + i)}`,
        gender: i % 2 ? 'F' : 'M',
        age: 20 + (i % 60),
      },
    });
  }
  // The outbox hands the events to the subscription; their deliveries fail (nothing listens on port 9).
  let deliveries: { data: Array<{ event_id: string }> };
  for (;;) {
    deliveries = await call(base, 'GET', `/notification/v1/connect/webhook/subscriptions/${subscription.id}/deliveries`, auth);
    if (deliveries.data.length > 0) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    practice: {
      clinicId: String(clinic.svcid),
      doctorId: String(doctor.svcid),
      subscriptionId: String(subscription.id),
      eventId: deliveries.data[0]!.event_id,
      businessId: demo.business_id,
      date,
    },
    client: { clientId: demo.client_id, clientSecret: demo.client_secret },
  };
}

/** Milliseconds from the navigation's start to the desk's table holding every appointment of the day, in fresh contexts. */
async function drawDay(base: string, cookie: string, practice: Practice): Promise<number[]> {
  const browser = await launchChromium();
  const [name, value] = [cookie.slice(0, cookie.indexOf('=')), cookie.slice(cookie.indexOf('=') + 1)];
  const url = `${base}/console/desk?clinic=${practice.clinicId}&doctor=${practice.doctorId}&date=${practice.date}`;
  const times: number[] = [];
  try {
    for (let run = 0; run <= DRAWS; run++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      await context.addCookies([{ name, value, url: base }]);
      const page = await context.newPage();
      await page.goto(url, { waitUntil: 'commit' });
      const drawn = await page.waitForFunction(
        (count) => (document.querySelectorAll('#desk-table tbody tr').length >= count ? performance.now() : false),
        APPOINTMENTS,
        { polling: 'raf', timeout: 60_000 },
      );
      const ms = (await drawn.jsonValue()) as number;
      await context.close();
      if (run > 0) times.push(ms); // the first warms the server and the browser
    }
  } finally {
    await browser.close();
  }
  return times.sort((a, b) => a - b);
}

/** The API calls of each console page, as its script makes them. */
function pages(practice: Practice): Array<{ page: string; cookie: 'client' | 'operator'; paths: string[] }> {
  const { clinicId, doctorId, date, subscriptionId, eventId, businessId } = practice;
  // desk.js asks for the first page of 50, then 4 at once while they come back full.
  const day = Array.from(
    { length: 1 + 4 * Math.ceil(Math.floor(APPOINTMENTS / 50) / 4) },
    (_, page) => `/dr/v1/appointment?clinic_id=${clinicId}&date=${date}&page_no=${page}&doctor_id=${doctorId}`,
  );
  const hooks = '/notification/v1/connect/webhook/subscriptions';
  return [
    { page: 'for comparison, GET /health (no session, no database)', cookie: 'client', paths: ['/health'] },
    { page: 'every page: the session', cookie: 'client', paths: ['/console/session'] },
    {
      page: `front desk (a day of ${APPOINTMENTS}: ${day.length} pages of 50 asked, the entities, the slots)`,
      cookie: 'client',
      paths: [
        '/dr/v1/business/entities',
        ...day,
        `/dr/v1/doctor/${doctorId}/clinic/${clinicId}/appointment/slot?start_date=${date}&end_date=${date}`,
      ],
    },
    { page: 'schedules', cookie: 'client', paths: ['/dr/v1/business/entities', `/cdr/v1/doctor/${doctorId}/clinic/${clinicId}/schedule`] },
    {
      page: `webhooks (subscriptions, ${APPOINTMENTS} deliveries' first page, an event)`,
      cookie: 'client',
      paths: [hooks, `${hooks}/${subscriptionId}/deliveries`, `/notification/v1/connect/webhook/events/${eventId}`],
    },
    { page: 'API clients', cookie: 'client', paths: ['/connect-auth/v1/account/clients'] },
    {
      page: 'search',
      cookie: 'client',
      paths: ['/medical-db/v1/drugs-and-labs?q=paracetamol&s_type=drug&limit=20', '/medical-db/v1/drugs-and-labs?q=cbc&s_type=lab&limit=20'],
    },
    {
      page: "operator: businesses (the list, a business's clients and week of usage)",
      cookie: 'operator',
      paths: ['/admin/v1/businesses', `/admin/v1/businesses/${businessId}/clients`, `/admin/v1/businesses/${businessId}/usage?days=7`],
    },
    { page: 'operator: access log (50 entries)', cookie: 'operator', paths: ['/admin/v1/audit/events?limit=50'] },
    {
      page: 'operator: health (readiness, operations; the chains verified when asked, below)',
      cookie: 'operator',
      paths: ['/ready', '/admin/v1/operations'],
    },
  ];
}

async function runOn(label: string, databaseUrl: string | null): Promise<Figure[]> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-console-'));
  const service = await spawnServer('bin/cps.js', ['serve'], {
    CPS_DATA_DIR: dataDir,
    CPS_ADMIN_TOKEN: ADMIN_TOKEN,
    CPS_TIMEZONE: ZONE,
    CPS_SEARCH_RATE_LIMIT: '1000000',
    CPS_SEARCH_RATE_BURST: '1000000',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  });
  try {
    const { practice, client } = await seed(service.url, dataDir);
    const cookies = { client: await sessionCookie(service.url, client), operator: await sessionCookie(service.url, 'operator') };
    const draws = await drawDay(service.url, cookies.client, practice);
    const figures: Figure[] = [
      {
        name: `${label}: a day of ${APPOINTMENTS} appointments drawn in Chromium (navigation to the table's last row), median of ${draws.length}`,
        value: Math.round(draws[Math.floor(draws.length / 2)]!),
        unit: 'ms',
        note: `goal under 1,000 ms; fastest ${Math.round(draws[0]!)}, slowest ${Math.round(draws.at(-1)!)} ms; each in a fresh context`,
      },
    ];
    const seconds = Number(process.env.BENCH_SECONDS ?? 10);
    for (const { page, cookie, paths } of pages(practice)) {
      const options = { headers: { cookie: cookies[cookie] }, connections: USERS, paths };
      await load(`${service.url}${paths[0]}`, { ...options, seconds: 1 }); // warm-up
      const result = await load(`${service.url}${paths[0]}`, { ...options, seconds });
      if (result.errors > 0 || result.non2xx > 0) throw new Error(`${page}: ${result.errors} errors, ${result.non2xx} answers outside 2xx`);
      // A page that misses: each of its calls alone, to say which.
      const alone: string[] = [];
      if (result.p99 > 50 && paths.length > 1) {
        for (const single of [...new Set(paths.map((p) => p.replace(/page_no=\d+/, 'page_no=0')))]) {
          const each = await load(`${service.url}${single}`, {
            headers: { cookie: cookies[cookie] },
            connections: USERS,
            seconds: Math.min(seconds, 5),
          });
          alone.push(`${single.split('?')[0]!.replace(/\/[a-z]+_[0-9a-z]{16,}/g, '/{id}')} p99 ${each.p99} ms`);
        }
      }
      figures.push({
        name: `${label}: ${page}, ${USERS} users at once, p99`,
        value: result.p99,
        unit: 'ms',
        note: `goal under 50 ms; p50 ${result.p50} ms, ${Math.round(result.rps)} req/s${alone.length ? `; each call alone: ${alone.join(', ')}` : ''}`,
      });
    }
    // cps audit verify over HTTP, as the health page's button asks for it: one operator, five times in turn.
    const verifyMs: number[] = [];
    let entries = 0;
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      const verdict = await call(service.url, 'GET', '/admin/v1/audit/verify', { cookie: cookies.operator });
      verifyMs.push(performance.now() - started);
      entries = verdict.chains.reduce((sum: number, chain: { entries: number }) => sum + chain.entries, 0);
    }
    verifyMs.sort((a, b) => a - b);
    figures.push({
      name: `${label}: operator: every chain verified (the health page's button), one at a time, median of 5`,
      value: Math.round(verifyMs[2]!),
      unit: 'ms',
      note: `${entries} access log entries, most from this bench's requests; on demand, not part of the page's load`,
    });
    return figures;
  } finally {
    await service.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function runConsoleBench(): Promise<Figure[]> {
  const figures = await runOn('SQLite', null);
  const scratch = await scratchPgDatabase();
  if (scratch === null) return [...figures, { name: 'PostgreSQL: not measured (no server answered)', value: 0, unit: '' }];
  try {
    return [...figures, ...(await runOn('PostgreSQL', scratch.url))];
  } finally {
    await scratch.drop();
  }
}

if (import.meta.main) {
  for (const figure of await runConsoleBench()) {
    process.stdout.write(`${figure.name}: ${figure.value} ${figure.unit}${figure.note ? `  (${figure.note})` : ''}\n`);
  }
}
