/**
 * Patient search (issue 22): 1,000,000 generated patients in one business, on SQLite and on
 * PostgreSQL; the time of a search by name, by its variants and initials, by mobile prefix and by
 * partner id, at p50 and p99, in process (PatientNameIndex.search, the database round trips
 * included, no HTTP; the goal: p99 under 5 ms on both), and the same queries over HTTP
 * (GET /profiles/v1/patient/search on one server), as a rate and a ratio to the hello-world loaded in
 * turns with it.
 *
 * Run alone: `node bench/patients.ts` (PostgreSQL from CPS_BENCH_DATABASE_URL, else
 * CPS_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test; skipped if unreachable).
 * PATIENTS_BENCH_ROWS overrides the patient count.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { openStorage, type Storage } from '../src/db/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { randomBytes } from 'node:crypto';
import { ChainSeal } from '../src/access-log/seal.ts';
import { BusinessService } from '../src/modules/businesses/index.ts';
import { PatientNameIndex, type IndexedPatient } from '../src/modules/patients/name-index.ts';
import { loadAgainstHello, round, scratchPgDatabase, spawnServer, type ComparedLoad, type Figure } from './lib.ts';

const ROWS = Number(process.env.PATIENTS_BENCH_ROWS ?? 1_000_000);
const BATCH = 10_000;
const SAMPLES = 2_000;

/** First names (men, women) and surnames of one community, most common first. */
interface Community {
  weight: number;
  men: string[];
  women: string[];
  surnames: string[];
  middles?: string[];
}

const COMMUNITIES: Community[] = [
  {
    weight: 40,
    men: 'Rajesh Ramesh Suresh Mahesh Rakesh Sanjay Vijay Ajay Amit Sunil Anil Manoj Deepak Ashok Rahul Rohit Vikas Vivek Alok Arun Pankaj Sandeep Pradeep Dinesh Naresh Mukesh Santosh Raju Ravi Gaurav Abhishek Ankit Nitin Sachin Sumit Vinod Pramod Sudhir Krishna Gopal Shyam Mohan Sohan Raghvendra Ram Lakhan Bharat Arjun Aditya Harsh'.split(
      ' ',
    ),
    women:
      'Sunita Anita Kavita Savita Geeta Seema Rekha Neha Pooja Priya Priyanka Shanti Kamla Laxmi Sarita Usha Asha Meena Suman Poonam Rani Radha Sita Jyoti Nisha Anjali Sapna Mamta Manju Sangeeta Kiran Pushpa Shobha Renu Sushma Madhu Ritu Sonia Preeti Swati Aarti Shalini Vandana Archana Babita Kusum Urmila Pinki Reena Komal'.split(
        ' ',
      ),
    surnames:
      'Sharma Verma Gupta Singh Kumar Yadav Mishra Tiwari Pandey Dubey Shukla Srivastava Chaudhary Agarwal Jain Saxena Tripathi Chauhan Rathore Thakur Rajput Joshi Mehta Bansal Goel Mittal Kushwaha Maurya Prajapati Pal Sahu Rawat Negi Bisht Tyagi Tomar Bhardwaj Dwivedi Upadhyay Awasthi'.split(
        ' ',
      ),
    middles: 'Kumar Prasad Kumari Devi Lal Chand Nath Singh Narayan Prakash'.split(' '),
  },
  {
    weight: 12,
    men: 'Murugan Senthil Karthik Saravanan Kumar Ganesh Ramesh Suresh Rajendran Subramanian Lakshmanan Selvam Arumugam Palani Mani Velu Balaji Prakash Arun Vignesh Dinesh Gopal Krishnan Muthu Sundaram Ramasamy Pandian Ravi Anand Vijay'.split(
      ' ',
    ),
    women:
      'Lakshmi Meenakshi Kavitha Selvi Revathi Priya Deepa Geetha Malathi Saranya Divya Anitha Sumathi Vasanthi Kalaivani Padma Shanthi Indira Jayanthi Bhuvana Gayathri Nandhini Sangeetha Uma Vidya'.split(
        ' ',
      ),
    surnames: 'Kumar R S K M P V A N T G B Iyer Iyengar Pillai Mudaliar Chettiar Nadar Gounder Thevar Pandian Raja Sundaram Natarajan'.split(' '),
  },
  {
    weight: 10,
    men: 'Srinivas Venkatesh Ramesh Suresh Venkata Nagaraju Ravi Krishna Prasad Rao Satyanarayana Raju Chandra Mohan Sekhar Kiran Naresh Anil Srikanth Ramana Madhu Rajesh Sai Teja Harish'.split(
      ' ',
    ),
    women:
      'Lakshmi Padma Sujatha Lalitha Swapna Sravani Bhavani Anuradha Jyothi Vijaya Radha Sirisha Madhavi Sunitha Aruna Durga Kalyani Rani Haritha Ramya'.split(
        ' ',
      ),
    surnames: 'Reddy Rao Naidu Chowdary Goud Varma Raju Sharma Setty Yadav Kumar Murthy Prasad Babu Sastry'.split(' '),
    middles: 'Venkata Sai Naga Srinivasa Rama Lakshmi Surya'.split(' '),
  },
  {
    weight: 9,
    men: 'Debashish Subhas Biswajit Arindam Soumya Partha Sourav Abhijit Amitava Tapas Sanjib Bijoy Prasenjit Dipankar Anirban Subrata Sudip Ranjan Kaushik Indranil'.split(
      ' ',
    ),
    women: 'Mousumi Rina Mitali Sumita Rupa Sutapa Moumita Tanushree Piyali Swapna Shampa Debjani Sanchita Ananya Rituparna'.split(' '),
    surnames:
      'Mukherjee Chatterjee Banerjee Ghosh Bose Das Dutta Sen Roy Chakraborty Bhattacharya Sarkar Biswas Mondal Saha Pal Dey Choudhury Majumdar Ganguly'.split(
        ' ',
      ),
  },
  {
    weight: 9,
    men: 'Dnyaneshwar Sachin Sandeep Mahesh Ganesh Prashant Santosh Vishal Nilesh Amol Rahul Sunil Vijay Ajit Dattatray Balasaheb Shrikant Tushar Yogesh Swapnil'.split(
      ' ',
    ),
    women: 'Vaishali Ashwini Sunita Manisha Pallavi Swati Snehal Priyanka Shubhangi Sujata Madhuri Rupali Jyoti Anjali Vidya'.split(' '),
    surnames:
      'Patil Jadhav Deshpande Kulkarni Pawar Shinde More Chavan Gaikwad Deshmukh Joshi Kale Bhosale Sawant Salunkhe Kadam Mane Shirke Kamble Wagh'.split(
        ' ',
      ),
  },
  {
    weight: 6,
    men: 'Gurpreet Harpreet Manjeet Jaspal Harjinder Kulwinder Sukhwinder Balwinder Jaswinder Paramjit Amrinder Gurdeep Ranjit Satnam Harbhajan'.split(
      ' ',
    ),
    women: 'Gurpreet Harpreet Manpreet Jaspreet Simran Kulwinder Paramjit Navneet Rajwinder Sukhjit'.split(' '),
    surnames: 'Singh Kaur Sandhu Sidhu Dhillon Gill Brar Grewal Bajwa Randhawa Virk Cheema Aulakh'.split(' '),
  },
  {
    weight: 11,
    men: 'Mohammed Mohd Md Abdul Syed Farooq Imran Salman Irfan Rafiq Iqbal Zakir Aslam Javed Shahid Arif Naseem Rashid Tariq Wasim Asif Sajid Faisal Anwar Akbar'.split(
      ' ',
    ),
    women: 'Ayesha Fatima Zainab Shabana Nasreen Rukhsana Salma Farzana Reshma Shaheen Naziya Sana Heena Parveen Yasmin'.split(' '),
    surnames: 'Khan Shaikh Ansari Qureshi Hussain Siddiqui Syed Pathan Sayyed Rehman Ali Ahmed Malik Mirza Baig Shah Sheikh Akhtar'.split(' '),
  },
  {
    weight: 3,
    men: 'Joseph Thomas George Mathew John Jacob Varghese Abraham Antony Sebastian Paul Peter Francis Xavier Joy'.split(' '),
    women: 'Mary Elizabeth Annie Susan Rosamma Leela Sheela Jessy Molly Lissy Teresa Beena Daisy Reena Shiny'.split(' '),
    surnames: "Kurian Varghese Mathew Thomas Joseph George D'Souza Fernandes Pereira Rodrigues D'Cruz Abraham Chacko Philip Jacob".split(' '),
  },
];

/** Other spellings a front desk writes (the seeded directory has them, as real ones do). */
const SPELLINGS: Array<[RegExp, string]> = [
  [/ee/, 'i'],
  [/oo/, 'u'],
  [/sh/, 's'],
  [/w/, 'v'],
  [/v/, 'w'],
  [/a$/, ''],
  [/i$/, 'ee'],
  [/au/, 'ou'],
  [/th/, 't'],
];

/** A small deterministic generator, so every run seeds the same directory. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Common names more often: index i drawn with weight about 1/(i+2). */
function zipf(rand: () => number, list: string[]): string {
  const n = list.length;
  const u = rand();
  const i = Math.floor(Math.exp(u * Math.log(n + 2)) - 2 + 1e-9);
  return list[Math.max(0, Math.min(n - 1, i))]!;
}

function variant(rand: () => number, name: string): string {
  if (rand() > 0.15) return name;
  const [pattern, replacement] = SPELLINGS[Math.floor(rand() * SPELLINGS.length)]!;
  const lower = name.toLowerCase().replace(pattern, replacement);
  return lower.length > 1 ? lower[0]!.toUpperCase() + lower.slice(1) : name;
}

export interface GeneratedPatient extends IndexedPatient {
  gender: 'M' | 'F';
}

/** `count` patients in families of 1 to 5 sharing a surname and a mobile number. */
export function generatePatients(businessId: string, count: number): GeneratedPatient[] {
  const rand = random(22);
  const totalWeight = COMMUNITIES.reduce((sum, c) => sum + c.weight, 0);
  const patients: GeneratedPatient[] = [];
  let family = 0;
  while (patients.length < count) {
    let pick = rand() * totalWeight;
    const community = COMMUNITIES.find((c) => (pick -= c.weight) < 0) ?? COMMUNITIES[0]!;
    const surname = zipf(rand, community.surnames);
    const mobile = `+91${String(6_000_000_000 + ((family * 7_919) % 3_999_999_999))}`;
    family++;
    const members = 1 + Math.floor(rand() * rand() * 5);
    for (let m = 0; m < members && patients.length < count; m++) {
      const woman = rand() < 0.5;
      const first = variant(rand, zipf(rand, woman ? community.women : community.men));
      const middle = community.middles && rand() < 0.3 ? zipf(rand, community.middles) : null;
      const n = patients.length;
      patients.push({
        id: `pt_bench${String(n).padStart(8, '0')}`,
        business_id: businessId,
        first_name: first,
        middle_name: middle,
        last_name: variant(rand, surname),
        mobile,
        partner_patient_id: rand() < 0.5 ? `UHID${String(n).padStart(8, '0')}` : null,
        gender: woman ? 'F' : 'M',
      });
    }
  }
  return patients;
}

async function insertPatients(storage: Storage, patients: GeneratedPatient[]): Promise<void> {
  const now = Date.now();
  const { db } = storage;
  if (storage.dialect === 'postgres') {
    const column = <K extends keyof GeneratedPatient>(key: K) => patients.map((p) => p[key] ?? null);
    await sql`insert into patients (id, business_id, partner_patient_id, first_name, middle_name, last_name, gender, mobile, created_at, updated_at)
      select *, ${now}::bigint, ${now}::bigint from unnest(${column('id')}::text[], ${column('business_id')}::text[], ${column('partner_patient_id')}::text[],
        ${column('first_name')}::text[], ${column('middle_name')}::text[], ${column('last_name')}::text[], ${column('gender')}::text[],
        ${column('mobile')}::text[])`.execute(db);
    return;
  }
  const rows = patients.map((p) => ({
    id: p.id,
    business_id: p.business_id,
    partner_patient_id: p.partner_patient_id ?? null,
    first_name: p.first_name ?? null,
    middle_name: p.middle_name ?? null,
    last_name: p.last_name ?? null,
    gender: p.gender,
    mobile: p.mobile ?? null,
    created_at: now,
    updated_at: now,
  }));
  for (const from of range(0, rows.length, 3000))
    await db
      .insertInto('patients')
      .values(rows.slice(from, from + 3000))
      .execute();
}

function* range(from: number, to: number, step: number): Generator<number> {
  for (let i = from; i < to; i += step) yield i;
}

/** Queries as a front desk types them, drawn from the seeded patients. */
function queries(patients: GeneratedPatient[]): Array<{ kind: string; text: string }> {
  const rand = random(7);
  const out: Array<{ kind: string; text: string }> = [];
  const pick = () => patients[Math.floor(rand() * patients.length)]!;
  for (let i = 0; out.length < SAMPLES; i++) {
    const p = pick();
    const first = p.first_name!;
    const last = p.last_name!;
    switch (i % 8) {
      case 0:
        out.push({ kind: 'full name', text: `${first} ${last}` });
        break;
      case 1:
        out.push({
          kind: 'variant',
          text: `${variant(() => 0, first.replace(/ee/, 'i').replace(/sh/, 's').replace(/a$/, ''))} ${last.replace(/u/, 'oo')}`,
        });
        break;
      case 2:
        out.push({ kind: 'surname first', text: `${last} ${first}` });
        break;
      case 3:
        out.push({ kind: 'initial and surname', text: `${first[0]}. ${last}` });
        break;
      case 4:
        out.push({ kind: 'typing', text: `${first} ${last.slice(0, 3)}` });
        break;
      case 5:
        out.push({ kind: 'one name', text: rand() < 0.5 ? first : last });
        break;
      case 6:
        out.push({ kind: 'mobile prefix', text: p.mobile!.slice(3, 3 + 5 + Math.floor(rand() * 6)) });
        break;
      default:
        out.push({ kind: 'partner id', text: p.partner_patient_id ?? `UHID${String(Math.floor(rand() * patients.length)).padStart(8, '0')}` });
    }
  }
  return out;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

async function benchDialect(databaseUrl: string | null): Promise<Figure[]> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-patients-'));
  const storage = openStorage({ databaseUrl, dataDir, poolSize: 4 });
  const dialect = storage.dialect;
  try {
    await migrateToLatest(storage.db);
    const client = await new BusinessService({ db: storage.db, chainSeal: new ChainSeal(randomBytes(32)) }).createBusiness('Bench');
    const businessId = client.business_id;
    const patients = generatePatients(businessId, ROWS);
    const index = new PatientNameIndex({ db: storage.db });
    let seedMs = 0;
    let indexMs = 0;
    for (let from = 0; from < patients.length; from += BATCH) {
      const batch = patients.slice(from, from + BATCH);
      let started = performance.now();
      await storage.db.transaction().execute((trx) => insertPatients({ ...storage, db: trx }, batch));
      seedMs += performance.now() - started;
      started = performance.now();
      await storage.db.transaction().execute((trx) => index.indexMany(batch, trx));
      indexMs += performance.now() - started;
    }
    await sql`analyze`.execute(storage.db);
    const keyRows = Number(
      (
        await storage.db
          .selectFrom('patient_search_keys')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    let size: string;
    if (dialect === 'postgres') {
      const result = await sql<{ keys: string; names: string }>`select pg_total_relation_size('patient_search_keys') as keys,
        pg_total_relation_size('patient_search_names') as names`.execute(storage.db);
      const row = result.rows[0]!;
      size = `keys ${mb(Number(row.keys))} MB, names ${mb(Number(row.names))} MB`;
    } else {
      await sql`pragma wal_checkpoint(truncate)`.execute(storage.db);
      size = `database file ${mb(statSync(path.join(dataDir, 'cps.sqlite')).size)} MB (patients, names and keys)`;
    }

    const mix = queries(patients);
    const timings = new Map<string, number[]>();
    let empty = 0;
    for (let round = 0; round < 2; round++) {
      for (const q of mix) {
        const started = performance.now();
        const page = await index.search(businessId, q.text, { limit: 20 });
        const elapsed = performance.now() - started;
        if (round === 0) continue; // warm-up
        if (page.hits.length === 0) {
          empty++;
          if (process.env.PATIENTS_BENCH_SHOW_EMPTY) process.stdout.write(`empty: ${q.kind}: ${q.text}\n`);
        }
        for (const kind of ['all', q.kind]) {
          if (!timings.has(kind)) timings.set(kind, []);
          timings.get(kind)!.push(elapsed);
        }
      }
    }
    const all = timings.get('all')!.sort((a, b) => a - b);
    const perKind = [...timings.entries()]
      .filter(([kind]) => kind !== 'all')
      .map(
        ([kind, values]) =>
          `${kind} ${round(
            percentile(
              values.sort((a, b) => a - b),
              0.99,
            ),
          )}`,
      )
      .join(', ');
    const count = ROWS.toLocaleString('en');
    const overHttp = await searchOverHttp(databaseUrl, dataDir, client, mix);
    return [
      {
        name: `GET /profiles/v1/patient/search (${dialect})`,
        value: Math.round(overHttp.rps),
        unit: 'req/s',
        ratio: round(overHttp.ratio),
        note: `p50 ${overHttp.p50} ms, p99 ${overHttp.p99} ms, ${overHttp.errors + overHttp.non2xx} errors; ${HTTP_CONNECTIONS} connections over the same ${SAMPLES} queries, one server, in turns with the hello-world`,
      },
      {
        name: `patient search p50 (${dialect})`,
        value: round(percentile(all, 0.5)),
        unit: 'ms',
        note: `${count} patients in one business; ${SAMPLES} queries of 8 kinds, in process, limit 20`,
      },
      {
        name: `patient search p99 (${dialect})`,
        value: round(percentile(all, 0.99)),
        unit: 'ms',
        note: `goal < 5 ms; p99 by kind: ${perKind}; ${empty} answered empty`,
      },
      { name: `patients seeded (${dialect})`, value: round(seedMs / 1000), unit: 's', note: `${count} rows, ${BATCH} per transaction` },
      { name: `name index built (${dialect})`, value: round(indexMs / 1000), unit: 's', note: `${keyRows.toLocaleString('en')} keys; ${size}` },
    ];
  } finally {
    await storage.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function mb(bytes: number): number {
  return Math.round(bytes / 1e6);
}

const HTTP_CONNECTIONS = 10;

/** The search over HTTP: a server on the seeded database, loaded in turns with the hello-world (loadAgainstHello). */
async function searchOverHttp(
  databaseUrl: string | null,
  dataDir: string,
  client: { client_id: string; client_secret: string },
  mix: Array<{ text: string }>,
): Promise<ComparedLoad> {
  const hello = await spawnServer('bench/hello-world.ts', [], {});
  const server = await spawnServer('bin/cps.js', ['serve'], {
    CPS_DATA_DIR: dataDir,
    CPS_WORKERS: '0',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  });
  try {
    const login = await fetch(`${server.url}/connect-auth/v1/account/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret }),
    });
    const { access_token: token } = (await login.json()) as { access_token: string };
    const paths = mix.map((q) => `/profiles/v1/patient/search?limit=20&prefix=${encodeURIComponent(q.text)}`);
    return await loadAgainstHello(hello.url, `${server.url}${paths[0]}`, { headers: { auth: token }, paths, connections: HTTP_CONNECTIONS });
  } finally {
    await server.stop();
    await hello.stop();
  }
}

export async function runPatientsBench(): Promise<Figure[]> {
  const figures = process.env.PATIENTS_BENCH_DIALECT === 'postgres' ? [] : await benchDialect(null);
  if (process.env.PATIENTS_BENCH_DIALECT === 'sqlite') return figures;
  const pgDatabase = await scratchPgDatabase();
  if (!pgDatabase) return [...figures, { name: 'patient search (postgres)', value: 0, unit: 'ms', note: 'skipped: PostgreSQL unreachable' }];
  try {
    figures.push(...(await benchDialect(pgDatabase.url)));
  } finally {
    await pgDatabase.drop();
  }
  return figures;
}

if (import.meta.main) {
  for (const f of await runPatientsBench()) {
    process.stdout.write(
      `${f.name}: ${f.value} ${f.unit}${f.ratio === undefined ? '' : ` (${f.ratio} of hello-world)`}${f.note ? `  (${f.note})` : ''}\n`,
    );
  }
}
