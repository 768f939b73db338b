/** The `cps` command as a newcomer meets it: help, version, unknown commands, settings, init, a busy port. */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { parseEnv } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { signingKeyFromPem } from '../src/security/keys.ts';
import { VERSION } from '../src/version.ts';
import { runCli } from './process.ts';

const scratch = mkdtempSync(path.join(tmpdir(), 'cps-cli-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

describe('cps: help, version and unknown commands', () => {
  it('--help goes to stdout with status 0; --version names the version', async () => {
    const help = await runCli(['--help'], {});
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: cps/);
    assert.match(help.stdout, /init \[--file FILE\]/);
    assert.equal(help.stderr, '');
    const version = await runCli(['--version'], {});
    assert.deepEqual([version.code, version.stdout], [0, `OpenCPS ${VERSION}\n`]);
  });

  it('an unknown command is named, with the usage, status 2', async () => {
    const result = await runCli(['frobnicate', 'now'], {});
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^cps: unknown command "frobnicate now"\n\nUsage: cps/);
  });
});

describe('cps: production settings', () => {
  it('a production start with nothing set lists every missing setting at once, a line each, no stack', async () => {
    const result = await runCli(['serve'], { CPS_ENV: 'production', CPS_DATA_DIR: path.join(scratch, 'unset') });
    assert.equal(result.code, 1);
    const lines = result.stderr.trim().split('\n');
    assert.deepEqual(
      lines.map((line) => line.match(/^cps: configuration error: (\w+):/)?.[1]),
      ['CPS_JWT_PRIVATE_KEY', 'CPS_MASTER_KEY', 'CPS_ADMIN_TOKEN', 'CPS_PUBLIC_URL'],
      result.stderr,
    );
  });

  it('init writes a complete production environment file, 0600, with fresh keys, and says what to keep safe', async () => {
    const file = path.join(scratch, 'cps.env');
    const result = await runCli(['init', '--file', file, '--public-url', 'https://cps.clinic.test'], { CPS_DATA_DIR: path.join(scratch, 'data') });
    assert.equal(result.code, 0, result.stderr);
    const report = JSON.parse(result.stdout);
    assert.equal(report.file, file);
    assert.deepEqual(Object.keys(report.keep_safe), ['CPS_MASTER_KEY', 'CPS_JWT_PRIVATE_KEY', 'CPS_ADMIN_TOKEN']);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const text = readFileSync(file, 'utf8');
    assert.match(text, /KEEP THIS FILE SAFE/);
    const config = loadConfig(parseEnv(text));
    assert.equal(config.env, 'production');
    assert.equal(config.publicUrl, 'https://cps.clinic.test');
    assert.equal(config.dataDir, path.join(scratch, 'data'));
    assert.equal(config.masterKey?.length, 32);
    assert.ok((config.adminToken ?? '').length >= 32);
    assert.equal((await signingKeyFromPem(config.jwtPrivateKey!)).alg, 'EdDSA');

    const again = await runCli(['init', '--file', file], {});
    assert.equal(again.code, 1);
    assert.match(again.stderr, /exists: .* pass --force to replace it/);
    assert.equal(readFileSync(file, 'utf8'), text, 'the keys are kept');
    const forced = await runCli(['init', '--file', file, '--force'], {});
    assert.equal(forced.code, 0, forced.stderr);
    assert.notEqual(parseEnv(readFileSync(file, 'utf8')).CPS_MASTER_KEY, parseEnv(text).CPS_MASTER_KEY, 'fresh keys');
  });

  it('--env-file reads the settings init wrote', async () => {
    const file = path.join(scratch, 'read.env');
    assert.equal(
      (await runCli(['init', '--file', file, '--public-url', 'https://cps.clinic.test'], { CPS_DATA_DIR: path.join(scratch, 'data2') })).code,
      0,
    );
    const result = await runCli(['--env-file', file, 'retention', 'run'], {});
    assert.equal(result.code, 0, result.stderr);
  });
});

describe('cps serve on a port already in use', () => {
  it('says so in one line suggesting PORT=, before the start-up work', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as AddressInfo).port;
    try {
      const result = await runCli(['serve'], { PORT: String(port), HOST: '127.0.0.1', CPS_DATA_DIR: path.join(scratch, 'busy') });
      assert.equal(result.code, 1);
      assert.equal(
        result.stderr,
        `cps: port ${port} on 127.0.0.1 is already in use by another process: stop it, or choose another port, e.g. PORT=8080\n`,
      );
    } finally {
      await new Promise<void>((resolve) => busy.close(() => resolve()));
    }
  });
});
