/**
 * bin/cps.js, the command as installed: a server started with or without --env-file restarts itself in
 * place with glibc's malloc settings (Linux) before loading the service; Node's compile cache is kept
 * where its directory can be made, and a command runs without it where it cannot.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { freePort } from './net.ts';

const BIN = path.resolve(import.meta.dirname, '../bin/cps.js');
const scratch = mkdtempSync(path.join(tmpdir(), 'cps-test-bin-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** Starts bin/cps.js with `args` until /ready answers 200; answers the environment its process runs with, then stops it. */
async function environmentOfServer(args: (port: number, dataDir: string) => string[]): Promise<Map<string, string>> {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(scratch, 'data-'));
  const { MALLOC_ARENA_MAX: _arenas, MALLOC_MMAP_THRESHOLD_: _threshold, ...env } = process.env;
  const child = spawn(process.execPath, [BIN, ...args(port, dataDir)], {
    env: { ...env, PORT: String(port), HOST: '127.0.0.1', CPS_DATA_DIR: dataDir },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let errors = '';
  child.stderr!.on('data', (chunk) => (errors += chunk));
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      assert.equal(child.exitCode, null, `the server exited: ${errors}`);
      const ready = await fetch(`http://127.0.0.1:${port}/ready`).then(
        (response) => response.status === 200,
        () => false,
      );
      if (ready) break;
      assert.ok(Date.now() < deadline, `not ready after 30 s: ${errors}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // execve keeps the process id: the process spawned is the one serving.
    const pairs = readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0').filter(Boolean);
    return new Map(pairs.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

describe('bin/cps.js', { skip: process.platform === 'linux' ? false : 'glibc malloc settings: Linux only' }, () => {
  it('cps serve runs with MALLOC_ARENA_MAX=2 and MALLOC_MMAP_THRESHOLD_=131072', async () => {
    const environment = await environmentOfServer(() => ['serve']);
    assert.equal(environment.get('MALLOC_ARENA_MAX'), '2');
    assert.equal(environment.get('MALLOC_MMAP_THRESHOLD_'), '131072');
  });

  it('cps --env-file FILE serve runs with them too', async () => {
    const environment = await environmentOfServer((port, dataDir) => {
      const file = path.join(dataDir, 'cps.env');
      writeFileSync(file, `PORT=${port}\nLOG_LEVEL=warn\n`);
      return ['--env-file', file, 'serve'];
    });
    assert.equal(environment.get('MALLOC_ARENA_MAX'), '2');
    assert.equal(environment.get('MALLOC_MMAP_THRESHOLD_'), '131072');
  });
});

/** Runs bin/cps.js --version with TMPDIR set to `temporary`; answers its exit code and output, or null if it had not ended after 20 s. */
async function versionWithTemporaryDirectory(temporary: string): Promise<{ code: number | null; output: string } | null> {
  const { NODE_COMPILE_CACHE: _cache, ...env } = process.env;
  const child = spawn(process.execPath, [BIN, '--version'], { env: { ...env, TMPDIR: temporary }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const [code, signal] = (await new Promise((resolve) => child.once('exit', (...ended) => resolve(ended)))) as [number | null, string | null];
  clearTimeout(timer);
  return signal === 'SIGKILL' ? null : { code, output };
}

describe("bin/cps.js and Node's compile cache", () => {
  const linuxOnly = { skip: process.platform === 'linux' ? false : '/proc: Linux only' };
  it('runs without the cache where its directory cannot be made (TMPDIR=/proc/none): Node alone never returned', linuxOnly, async () => {
    const ran = await versionWithTemporaryDirectory('/proc/none');
    assert.ok(ran !== null, 'cps --version had not ended after 20 s');
    assert.equal(ran.code, 0, ran.output);
    assert.match(ran.output, /^OpenCPS \d+\.\d+\.\d+/);
  });

  it('makes the directory, with its parents, where they do not exist yet, and keeps the cache there', async () => {
    const temporary = path.join(scratch, 'not-yet', 'tmp');
    const ran = await versionWithTemporaryDirectory(temporary);
    assert.ok(ran !== null, 'cps --version had not ended after 20 s');
    assert.equal(ran.code, 0, ran.output);
    const cached = readdirSync(path.join(temporary, 'node-compile-cache'));
    assert.equal(cached.length, 1, `one directory of this Node's cache: ${cached}`);
    assert.ok(readdirSync(path.join(temporary, 'node-compile-cache', cached[0]!)).length > 0, 'compiled modules are kept');
  });
});
