// The curl examples of the README's "## HTTP" section and of docs/http.md's
// "## Signed download links" section, run as printed against a live server:
// each ```sh block is taken from the file, only the port 8080 is swapped
// for a free one, and it must exit 0 with the output the text promises.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serverBin, serverEnv, sleep } from '../lib/rawpipe.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The ```sh blocks of the section of file that starts with heading (up to the next heading of its level). */
export function shBlocks(file, heading) {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const start = text.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `${file} has a "${heading}" section`);
  const level = heading.split(' ')[0];
  const rest = text.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`^${level} `, 'm'));
  const section = end < 0 ? rest : rest.slice(0, end);
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

let child;
let port;
let dir;

before(async () => {
  port = await freePort();
  dir = mkdtempSync(join(tmpdir(), 'sandbox-mcp-http-docs-'));
  child = spawn(serverBin(), ['serve', '--http', `127.0.0.1:${port}`], { env: serverEnv(), stdio: ['ignore', 'ignore', 'inherit'] });
  const deadline = Date.now() + 20000;
  for (;;) {
    try { if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break; } catch { /* not yet */ }
    assert.ok(Date.now() < deadline, 'the server answers /health within 20 s');
    await sleep(100);
  }
});

after(async () => {
  if (child) {
    child.kill('SIGTERM');
    await new Promise((r) => child.on('exit', r));
  }
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a block with bash -euo pipefail in a scratch directory; returns its stdout. */
function run(block) {
  const script = block.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);
  assert.notEqual(script, block, 'the example talks to the server');
  const r = spawnSync('bash', ['-euo', 'pipefail', '-c', script], { cwd: dir, encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, `exit ${r.status}:\n${script}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r.stdout;
}

test('README ## HTTP: the curl examples work as printed', { timeout: 150000 }, () => {
  const blocks = shBlocks('README.md', '## HTTP');
  assert.equal(blocks.length, 1);
  const out = run(blocks[0]);
  assert.match(out, /"status":"ok"/, 'the health answer');
  assert.match(out, /"result":.*hi\\n/, 'run_command ran');
});

test('docs/http.md ## Signed download links: the example fetches a figure through its link', { timeout: 150000 }, () => {
  const blocks = shBlocks('docs/http.md', '## Signed download links');
  assert.equal(blocks.length, 1);
  const out = run(blocks[0]);
  assert.match(out, /^200 image\/png$/m, out);
  assert.equal(readFileSync(join(dir, 'figure.png')).subarray(1, 4).toString(), 'PNG');
});
