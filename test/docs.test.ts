/**
 * The guide in docs/ runs as written: each page's ```sh runnable blocks, in order, as one bash script in a
 * folder laid out like a clone after `npm ci` (test/fresh-clone.test.ts runs `npm ci` itself). Every other
 * fenced block of the guide is listed below with the reason it cannot run here. Substitutions, so that
 * everything stays on loopback and in a scratch database: the service's port and the webhook receiver's
 * (8080 and 8787 in the text) become free ones; the clinic LAN's receiver address (192.168.1.20) becomes
 * 127.0.0.1, which the operator's allow-list then names explicitly; the trial's PostgreSQL URL becomes the
 * test's scratch database, or is left out (SQLite) without CPS_TEST_DATABASE_URL. The first hour's blocks
 * run against a development service the test starts; the production trial's start their own service.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fencedBlocks } from './markdown.ts';
import { freePort, startServerProcess } from './process.ts';
import { createTestDatabase } from './support.ts';

const REPO = path.resolve(import.meta.dirname, '..');
const DOCS = path.join(REPO, 'docs');

function runScript(script: string, cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    // Its own process group, so a background process the script starts (the receiver) ends with it.
    const child = spawn('bash', ['-c', script], { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('error', reject);
    child.once('exit', (code) => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // the group is gone already
      }
      resolve({ code, output });
    });
  });
}

const pages = readdirSync(DOCS).filter((name) => name.endsWith('.md'));

/** Pages whose blocks start (and stop) their own service. */
const STARTS_ITS_OWN_SERVICE = new Set(['2-production.md']);

/** What the production trial names: the clinic LAN's receiver and the PostgreSQL server it sets up with. */
const LAN_RECEIVER = '192.168.1.20';
const TRIAL_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/cps';

/** Every fenced block that is not run, by page and a line of it, with why. */
const NOT_RUN: { page: string; line: string; why: string }[] = [
  {
    page: '2-production.md',
    line: '# /etc/systemd/system/opencps.service',
    why: 'a systemd unit: installing it needs root and a running systemd; test/systemd-unit.test.ts checks it with systemd-analyze verify',
  },
  { page: '2-production.md', line: 'cps.clinic.example {', why: 'a Caddy site: a TLS reverse proxy with a public name and certificate' },
  {
    page: '3-postgresql.md',
    line: 'DATABASE_URL=postgres://postgres@127.0.0.1:5432/cps npm start',
    why: "runs the service in the foreground, on the shared server's database cps; the production trial (2-production.md) runs the same on a scratch database",
  },
  {
    page: '4-operations.md',
    line: 'CPS_NEW_MASTER_KEY="$new" npx cps --env-file /etc/opencps/cps.env keys rotate',
    why: "needs the stopped production service's /etc/opencps/cps.env; test/stored-secrets.test.ts runs cps keys rotate",
  },
  { page: '5-api.md', line: '"service": "appointment", "event": "appointment.statuschange"', why: 'an example webhook body, not a command' },
  { page: '5-api.md', line: '{"event": "external_review.request"', why: 'example webhook bodies, not a command' },
  { page: '8-source-map.md', line: 'src/app.ts          builds the Fastify app', why: 'a map of the source folders, not a command' },
];

function asWritten(body: string, ports: { service: string; receiver: string }, databaseUrl: string | undefined): string {
  return body
    .replaceAll(/\b8080\b/g, ports.service)
    .replaceAll(/\b8787\b/g, ports.receiver)
    .replaceAll(LAN_RECEIVER, '127.0.0.1')
    .replaceAll(databaseUrl ? TRIAL_DATABASE_URL : ` --database-url ${TRIAL_DATABASE_URL}`, databaseUrl ?? '');
}

describe('docs/', () => {
  it('the first hour is all runnable: every command block of it is marked and run', () => {
    const blocks = fencedBlocks(readFileSync(path.join(DOCS, '1-first-hour.md'), 'utf8'));
    assert.ok(blocks.length >= 6);
    assert.deepEqual(
      blocks.filter((block) => block.info !== 'sh runnable'),
      [],
    );
  });

  it('the guide carries no measured figures: throughput, latencies and timings are in bench/RESULTS.md', () => {
    const figure = /\b\d[\d,.]*\s*(?:req\/s|tps|rows\/s|deliveries\/s|uploads\/s)|\bp(?:50|99)\s+(?:of\s+)?[\d.]+\s*m?s\b|\b\d[\d.]*\s*ms\b/g;
    const found = pages.flatMap((page) =>
      readFileSync(path.join(DOCS, page), 'utf8')
        .split('\n')
        .flatMap((line, index) => (line.match(figure) ?? []).map((match) => `${page}:${index + 1}: ${match}`)),
    );
    assert.deepEqual(found, []);
  });

  it('every other fenced block of the guide is runnable or listed with why it is not run', () => {
    const unlisted: string[] = [];
    const used = new Set<(typeof NOT_RUN)[number]>();
    for (const page of pages) {
      for (const block of fencedBlocks(readFileSync(path.join(DOCS, page), 'utf8'))) {
        if (block.info === 'sh runnable') continue;
        const listed = NOT_RUN.find((entry) => entry.page === page && block.body.includes(entry.line));
        if (listed) used.add(listed);
        else unlisted.push(`${page}: ${block.body.split('\n')[0]}`);
      }
    }
    assert.deepEqual(unlisted, [], 'blocks neither runnable nor listed in NOT_RUN');
    assert.deepEqual(
      NOT_RUN.filter((entry) => !used.has(entry)),
      [],
      'NOT_RUN entries that name no block',
    );
  });

  for (const page of pages) {
    const blocks = fencedBlocks(readFileSync(path.join(DOCS, page), 'utf8')).filter((block) => block.info === 'sh runnable');
    if (blocks.length === 0) continue;
    const ownService = STARTS_ITS_OWN_SERVICE.has(page);
    it(`${page}: its runnable blocks run as written against a service on loopback`, { timeout: 300_000 }, async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'cps-docs-'));
      const database = await createTestDatabase();
      try {
        // A clone's layout: the repository's files, and a data directory of this service's own.
        for (const entry of readdirSync(REPO)) {
          if (entry === 'data' || entry === '.git') continue;
          symlinkSync(path.join(REPO, entry), path.join(dir, entry));
        }
        if (!ownService) symlinkSync(database.dataDir, path.join(dir, 'data'));
        const server = ownService
          ? undefined
          : await startServerProcess(
              { CPS_DATA_DIR: database.dataDir, CPS_ENV: 'development', ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}) },
              120_000,
            );
        const ports = { service: server ? new URL(server.url).port : String(await freePort()), receiver: String(await freePort()) };
        const script = ['set -euo pipefail', ...blocks.map((block) => asWritten(block.body, ports, database.databaseUrl ?? undefined))].join('\n');
        try {
          const result = await runScript(script, dir);
          const serviceLog = server ? server.output() : readIfThere(path.join(dir, 'cps.log'));
          assert.equal(result.code, 0, `${page} failed:\n${result.output}\n--- service:\n${serviceLog}`);
          if (page === '1-first-hour.md') assert.match(result.output, /Z appointment\.created #1 /, result.output); // the receiver's line
          if (page === '2-production.md') {
            assert.match(result.output, /Z case\.created #1 /, `${result.output}\n--- service:\n${serviceLog}`);
            // Production mode, on the database the trial named, with the allow-list naming the receiver's address.
            const settings = readFileSync(path.join(dir, 'cps.env'), 'utf8');
            assert.match(settings, /^CPS_ENV=production$/m);
            assert.match(settings, /^CPS_OUTBOUND_ALLOW=127\.0\.0\.1$/m);
            if (database.databaseUrl) assert.ok(settings.includes(`DATABASE_URL=${database.databaseUrl}`), settings);
          }
        } finally {
          if (server) {
            server.child.kill('SIGTERM');
            await server.exited;
          }
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
        await database.drop();
      }
    });
  }
});

function readIfThere(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '(none)';
  }
}
