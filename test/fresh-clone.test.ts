/**
 * The README's two commands on a machine as it comes: a clean clone, `npm ci` and `npm start` with the
 * machine's own Node first on PATH (Node 20 on this kind of server), and the service answers /health.
 * Slow (a whole `npm ci`), so it runs in the SQLite pass of the suite only: CI runs it once.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { freePort } from './net.ts';

const REPO = path.resolve(import.meta.dirname, '..');

/** The environment of a person's shell: the machine's bin folders first, nothing of npm's or this suite's. */
function machineEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^(npm_|NODE|CPS_|DATABASE_URL$|REDIS_URL$|PORT$|HOST$|LOG_LEVEL$)/i.test(name)) continue;
    env[name] = value;
  }
  env.PATH = ['/usr/local/bin', '/usr/bin', '/bin', process.env.PATH ?? ''].join(path.delimiter);
  return env;
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

test('a clean clone sets up with npm ci and runs with npm start under the machine Node', {
  timeout: 900_000,
  skip: process.env.CPS_TEST_DATABASE_URL ? 'runs once, in the SQLite pass (it stores nothing in PostgreSQL)' : false,
}, async (t) => {
  const env = machineEnv();
  const machineNode = execFileSync('node', ['--version'], { env, encoding: 'utf8' }).trim();
  t.diagnostic(`machine node ${machineNode}`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cps-fresh-clone-'));
  let server: ChildProcess | undefined;
  t.after(() => {
    // npm start runs in a process group of its own: end the whole group (npm, sh, node).
    if (server?.pid && server.exitCode === null) {
      try {
        process.kill(-server.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });
  execFileSync('git', ['clone', '--quiet', REPO, dir], { env });

  const started = Date.now();
  const install = await run('npm', ['ci'], dir, env);
  assert.equal(install.code, 0, install.output);
  t.diagnostic(`npm ci took ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const version = await run('node', ['bin/cps.js', '--version'], dir, env);
  assert.equal(version.code, 0, version.output);
  assert.match(version.output, /^OpenCPS \d+\.\d+\.\d+/);

  const port = await freePort();
  server = spawn('npm', ['start'], {
    cwd: dir,
    env: { ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  server.stdout!.on('data', (chunk) => (output += chunk));
  server.stderr!.on('data', (chunk) => (output += chunk));
  const deadline = Date.now() + 180_000;
  let health: unknown;
  while (health === undefined) {
    assert.equal(server.exitCode, null, `npm start exited with ${server.exitCode}:\n${output}`);
    assert.ok(Date.now() < deadline, `no /health after 180 s:\n${output}`);
    try {
      const response = await fetch(`http://127.0.0.1:${port}/health`);
      if (response.status === 200) health = await response.json();
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  assert.deepEqual(health, { status: 'ok' });

  // A SIGTERM to the group (as a terminal's Ctrl-C or a supervisor) ends the service cleanly; the output
  // closes when the last process holding it (the service) has exited.
  const closed = new Promise((resolve) => server!.once('close', resolve));
  process.kill(-server.pid!, 'SIGTERM');
  await closed;
  assert.match(output, /shut down cleanly/);
});
