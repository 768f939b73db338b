/**
 * The worst schedule the limits allow (issue 38): MAX_SESSIONS_PER_DATE sessions and extra sessions on every
 * date (24 hourly weekly sessions and 26 whole-day extra sessions, all on one 5-minute grid: MAX_SLOTS_PER_DATE
 * slots a day), and the rest of the 500 exceptions as one-minute leaves, all on every date and overlapping (each
 * date sorts and merges them all). Figures, on SQLite and on PostgreSQL, against the real server in a child
 * process: the latency of a 31-day `GET .../appointment/slot` (the goal: under 50 ms) with one booking in each
 * slot of the first BOOKED_DAYS days, next to a `GET /health` of the same server measured in turns (the
 * machine's speed drifts), and the server's CPU time per GET; and of a booking into the schedule (a bounded
 * cost per booking).
 *
 * Run alone: `BENCH_ONLY=slots node bench/run.ts`, or `node bench/schedule-slots.ts` (prints the figures).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MAX_SESSIONS_PER_DATE, MAX_SLOTS_PER_DATE } from '../src/modules/schedules/slots.ts';
import { cpuMeter, demoToken, machine, scratchPgDatabase, spawnServer, type Figure } from './lib.ts';

const ROUNDS = Number(process.env.BENCH_SLOTS_ROUNDS ?? 40);
const BOOKINGS = Number(process.env.BENCH_SLOTS_BOOKINGS ?? 60);
const BOOKED_DAYS = 1;
const EVERY_DAY = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];
const FIRST = '2031-03-01';
const LAST = '2031-03-31';

const clock = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

/** The worst schedule the limits allow, as its PUT body. */
export function worstSchedule(): Record<string, unknown> {
  const sessions = Array.from({ length: 24 }, (_, hour) => ({ days: EVERY_DAY, start: clock(hour * 60), end: clock(hour * 60 + 60) }));
  const extras = Array.from({ length: MAX_SESSIONS_PER_DATE - sessions.length }, () => ({
    type: 'extra',
    start_date: '2031-01-01',
    end_date: '2031-12-31',
    start_time: '00:00',
    end_time: '24:00',
  }));
  const leaves = Array.from({ length: 500 - extras.length }, () => ({
    type: 'leave',
    start_date: '2031-01-01',
    end_date: '2031-12-31',
    start_time: '23:59',
    end_time: '24:00',
  }));
  return { timezone: 'Asia/Kolkata', slot_minutes: 5, capacity: 1000, sessions, exceptions: [...extras, ...leaves] };
}

const serviceEnv = (dataDir: string) => ({
  CPS_DATA_DIR: dataDir,
  CPS_WORKERS: '0',
  CPS_PUBLIC_URL: 'http://cps.bench',
  CPS_MASTER_KEY: randomBytes(32).toString('base64'),
  CPS_JWT_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
});

async function call(url: string, method: string, token: string, body?: unknown): Promise<{ status: number; ms: number; text: string }> {
  const started = performance.now();
  const response = await fetch(url, {
    method,
    headers: { auth: token, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, ms: performance.now() - started, text };
}

async function expectOk(url: string, method: string, token: string, body?: unknown): Promise<Record<string, unknown>> {
  const answer = await call(url, method, token, body);
  if (answer.status >= 300) throw new Error(`${method} ${url}: ${answer.status} ${answer.text.slice(0, 500)}`);
  return JSON.parse(answer.text) as Record<string, unknown>;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
};
const ms = (value: number) => Math.round(value * 10) / 10;

async function measure(label: string, env: Record<string, string>, dataDir: string): Promise<Figure[]> {
  const server = await spawnServer('bin/cps.js', ['serve'], env);
  try {
    const base = server.url;
    const token = await demoToken(base, dataDir);
    const doctor = await expectOk(`${base}/cdr/v1/doctor/`, 'POST', token, { firstname: 'Asha', lastname: 'Rao' });
    const clinic = await expectOk(`${base}/cdr/v1/clinic/`, 'POST', token, { name: 'Bench', address: '1 Road', doctor_ids: [doctor.svcid] });
    const schedule = worstSchedule();
    await expectOk(`${base}/cdr/v1/doctor/${doctor.svcid}/clinic/${clinic.svcid}/schedule`, 'PUT', token, schedule);
    const slotsUrl = `${base}/dr/v1/doctor/${doctor.svcid}/clinic/${clinic.svcid}/appointment/slot?start_date=${FIRST}&end_date=${LAST}`;
    const offered = (await expectOk(slotsUrl, 'GET', token)) as { data: { schedule: Record<string, Record<string, Array<{ start_time: number }>>> } };
    const days = offered.data.schedule[doctor.svcid as string]!;
    const slotCount = Object.values(days).reduce((sum, day) => sum + day.length, 0);
    const booking = (start: number, i: number) => ({
      clinic_id: clinic.svcid,
      doctor_id: doctor.svcid,
      appointment_details: { start_time: start, end_time: start + 300 },
      patient_details: { first_name: `B${i}`, mobile: `+9198${String(i).padStart(8, '0')}`, partner_patient_id: `b-${i}` },
    });
    // One booking in each slot of the first days, so the GET counts places against stored appointments.
    const toBook = Object.values(days)
      .slice(0, BOOKED_DAYS)
      .flat()
      .map((slot) => slot.start_time);
    for (let i = 0; i < toBook.length; i += 8) {
      await Promise.all(toBook.slice(i, i + 8).map((start, j) => expectOk(`${base}/dr/v1/appointment`, 'POST', token, booking(start, i + j))));
    }
    const gets: number[] = [];
    const healthTurns: number[] = [];
    let bytes = 0;
    for (let round = 0; round < ROUNDS + 3; round++) {
      const answer = await call(slotsUrl, 'GET', token);
      if (answer.status !== 200) throw new Error(`slots: ${answer.status}`);
      bytes = answer.text.length;
      const health = await call(`${base}/health`, 'GET', token);
      if (round < 3) continue; // warm-up
      gets.push(answer.ms);
      healthTurns.push(health.ms);
    }
    // The server's own CPU per GET: the machine's other load lengthens the wall time, not this.
    const meter = cpuMeter([server.child.pid], { postgres: false });
    for (let round = 0; round < ROUNDS; round++) await call(slotsUrl, 'GET', token);
    const cpu = meter.per(ROUNDS).servers;
    const lastDay = Object.values(days).at(-1)!;
    const bookings: number[] = [];
    for (let i = 0; i < BOOKINGS; i++) {
      const answer = await call(`${base}/dr/v1/appointment`, 'POST', token, booking(lastDay[i % lastDay.length]!.start_time, 100_000 + i));
      if (answer.status !== 201) throw new Error(`booking: ${answer.status} ${answer.text}`);
      bookings.push(answer.ms);
    }
    return [
      {
        name: `${label}: GET slots, 31 days of the worst schedule allowed`,
        value: ms(percentile(gets, 50)),
        unit: 'ms',
        note: `p50 (goal under 50 ms); p99 ${ms(percentile(gets, 99))} ms over ${ROUNDS}; server CPU per GET ${cpu === null ? 'n/a' : `${ms(cpu)} ms`}; ${slotCount} slots, ${Math.round(bytes / 1024)} KiB; GET /health in turns p50 ${ms(percentile(healthTurns, 50))} ms; ${toBook.length} slots booked`,
      },
      {
        name: `${label}: a booking into the worst schedule allowed`,
        value: ms(percentile(bookings, 50)),
        unit: 'ms',
        note: `p50; p99 ${ms(percentile(bookings, 99))} ms over ${BOOKINGS}, one at a time`,
      },
    ];
  } finally {
    await server.stop();
  }
}

export async function runScheduleSlotsBench(_ctx: { helloWorldRps: number }): Promise<Figure[]> {
  const figures: Figure[] = [
    {
      name: 'worst schedule allowed',
      value: MAX_SLOTS_PER_DATE,
      unit: 'slots a date',
      note: `${MAX_SESSIONS_PER_DATE} sessions and extra sessions a date, 500 exceptions; ${machine()}`,
    },
  ];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-slots-'));
  try {
    figures.push(...(await measure('SQLite', serviceEnv(dataDir), dataDir)));
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  const scratch = await scratchPgDatabase();
  if (!scratch) return [...figures, { name: 'PostgreSQL', value: 0, unit: 'ms', note: 'skipped: PostgreSQL unreachable' }];
  const pgDataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-slots-'));
  try {
    figures.push(...(await measure('PostgreSQL', { ...serviceEnv(pgDataDir), DATABASE_URL: scratch.url }, pgDataDir)));
  } finally {
    rmSync(pgDataDir, { recursive: true, force: true });
    await scratch.drop();
  }
  return figures;
}

if (import.meta.main) {
  for (const figure of await runScheduleSlotsBench({ helloWorldRps: 0 }))
    console.log(`${figure.name}: ${figure.value} ${figure.unit} (${figure.note ?? ''})`);
}
