/**
 * The systemd unit of docs/2-production.md is one systemd accepts: `systemd-analyze verify` on it, with
 * /opt/opencps (where the guide installs) read as this checkout so the ExecStart binary exists. Needs
 * systemd-analyze (Debian's systemd package); a machine without it skips, saying so.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fencedBlocks } from './markdown.ts';

const REPO = path.resolve(import.meta.dirname, '..');

function hasSystemdAnalyze(): boolean {
  try {
    execFileSync('systemd-analyze', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test('the systemd unit in docs/2-production.md passes systemd-analyze verify', {
  skip: hasSystemdAnalyze() ? false : 'no systemd-analyze on this machine',
}, () => {
  const units = fencedBlocks(readFileSync(path.join(REPO, 'docs/2-production.md'), 'utf8')).filter((block) =>
    block.body.includes('# /etc/systemd/system/opencps.service'),
  );
  assert.equal(units.length, 1, 'one unit in the guide');
  const unit = units[0]!.body.replace(/^ {3}/gm, '').replaceAll('/opt/opencps', REPO);
  assert.match(unit, /^ExecStart=\S+\/node_modules\/\.bin\/node .*bin\/cps\.js serve$/m);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cps-unit-'));
  try {
    const file = path.join(dir, 'opencps.service');
    writeFileSync(file, unit);
    const result = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8', timeout: 60_000 });
    // systemd-analyze exits 0 on an unknown key or a misspelt section, with a warning naming the file.
    const complaints = `${result.stdout}${result.stderr}`.split('\n').filter((line) => line.includes('opencps.service'));
    assert.deepEqual([result.status, complaints], [0, []], `${result.stdout}${result.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
