// @modelcontextprotocol/inspector-cli in CLI mode against the server.
//
// The package's bin (mcp-inspector-cli → build/cli.js) needs `--cli` to run
// headless; it then re-spawns `node build/index.js <command> --method ...`.
// index.js reads its own package.json through a path that it checks relative
// to the *working directory* ("../package.json"), so it is run with its build
// directory as cwd, where that path is right.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { serverBin, serverEnv } from '../lib/rawpipe.mjs';
import { assertEnvInfoResult } from '../lib/expect.mjs';

const BIN = serverBin();
const here = dirname(fileURLToPath(import.meta.url));

function inspectorBin() {
  const require = createRequire(join(here, '..', 'package.json'));
  const pkgPath = require.resolve('@modelcontextprotocol/inspector-cli/package.json');
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8'));
  const rel = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin?.['mcp-inspector-cli'];
  assert.ok(rel, `inspector-cli declares its bin: ${JSON.stringify(pkg.bin)}`);
  const abs = resolve(dirname(pkgPath), rel);
  // node_modules/.bin/mcp-inspector-cli is the same file (a symlink to it).
  return { abs, dir: dirname(abs), version: pkg.version };
}

/** Run the inspector with args; resolves { code, stdout, stderr }. Kills the whole group on timeout. */
function runInspector(args, timeoutMs = 45000) {
  const { abs, dir } = inspectorBin();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [abs, '--cli', BIN, ...args], {
      cwd: dir,
      env: serverEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // own process group: cli.js → index.js → server all die together
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => {
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
      reject(new Error(`inspector ${args.join(' ')} timed out after ${timeoutMs} ms; stdout: ${stdout.slice(-2000)} stderr: ${stderr.slice(-2000)}`));
    }, timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('close', (code) => {
      clearTimeout(timer);
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* group already gone */ }
      resolvePromise({ code, stdout, stderr });
    });
  });
}

function parseOutput(r) {
  assert.equal(r.code, 0, `inspector exited 0; stderr: ${r.stderr.slice(-3000)}`);
  try {
    return JSON.parse(r.stdout);
  } catch (e) {
    assert.fail(`inspector printed JSON on stdout (${e.message}): ${r.stdout.slice(0, 3000)}`);
  }
}

test('the inspector bin is where the package says', () => {
  const { abs, version } = inspectorBin();
  const viaDotBin = realpathSync(join(here, '..', 'node_modules', '.bin', 'mcp-inspector-cli'));
  assert.equal(viaDotBin, realpathSync(abs));
  assert.match(version, /^\d+\.\d+\.\d+$/);
});

test('--method tools/list lists env_info', { timeout: 60000 }, async () => {
  const out = parseOutput(await runInspector(['--method', 'tools/list']));
  assert.ok(Array.isArray(out.tools), `tools array: ${JSON.stringify(out).slice(0, 1000)}`);
  const tool = out.tools.find((x) => x.name === 'env_info');
  assert.ok(tool, `env_info listed among ${out.tools.map((x) => x.name).join(', ')}`);
  assert.equal(tool.inputSchema?.type, 'object');
  assert.ok(tool.outputSchema, 'env_info has an outputSchema');
});

test('--method tools/call --tool-name env_info returns structuredContent', { timeout: 60000 }, async () => {
  const out = parseOutput(await runInspector(['--method', 'tools/call', '--tool-name', 'env_info']));
  assertEnvInfoResult(out);
});

test('--method logging/setLevel --log-level debug answers', { timeout: 60000 }, async () => {
  const out = parseOutput(await runInspector(['--method', 'logging/setLevel', '--log-level', 'debug']));
  assert.ok(out && typeof out === 'object');
});
