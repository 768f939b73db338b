/**
 * The guide in docs/ runs as written: each page's ```sh runnable blocks, in order, as one bash script in a
 * folder laid out like a clone (its data directory that of a development service started for the page), with
 * two substitutions: the service's port and the webhook receiver's port (8080 and 8787 in the text) become
 * free ones, since other servers may hold those on a test machine. Everything stays on loopback. The service
 * stores in SQLite, or in PostgreSQL under CPS_TEST_DATABASE_URL.
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

describe('docs/', () => {
  it('the first hour is all runnable: every command block of it is marked and run', () => {
    const blocks = fencedBlocks(readFileSync(path.join(DOCS, '1-first-hour.md'), 'utf8'));
    assert.ok(blocks.length >= 6);
    assert.deepEqual(
      blocks.filter((block) => block.info !== 'sh runnable'),
      [],
    );
  });

  for (const page of pages) {
    const blocks = fencedBlocks(readFileSync(path.join(DOCS, page), 'utf8')).filter((block) => block.info === 'sh runnable');
    if (blocks.length === 0) continue;
    it(`${page}: its runnable blocks run as written against a service on loopback`, { timeout: 300_000 }, async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'cps-docs-'));
      const database = await createTestDatabase();
      try {
        // A clone's layout: the repository's files, and a data directory of this service's own.
        for (const entry of readdirSync(REPO)) {
          if (entry === 'data' || entry === '.git') continue;
          symlinkSync(path.join(REPO, entry), path.join(dir, entry));
        }
        symlinkSync(database.dataDir, path.join(dir, 'data'));
        const server = await startServerProcess(
          { CPS_DATA_DIR: database.dataDir, CPS_ENV: 'development', ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}) },
          120_000,
        );
        const port = new URL(server.url).port;
        const receiverPort = String(await freePort());
        const script = [
          'set -euo pipefail',
          ...blocks.map((block) => block.body.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`).replaceAll('8787', receiverPort)),
        ].join('\n');
        try {
          const result = await runScript(script, dir);
          assert.equal(result.code, 0, `${page} failed:\n${result.output}\n--- service:\n${server.output()}`);
          if (page === '1-first-hour.md') assert.match(result.output, /Z appointment\.created #1 /, result.output); // the receiver's line
        } finally {
          server.child.kill('SIGTERM');
          await server.exited;
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
        await database.drop();
      }
    });
  }
});
