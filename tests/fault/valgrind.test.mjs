// The server under valgrind, in two short scenarios:
// - against the real engine: initialize, tools/list, env_info, a run_command
//   (which creates the default session), session_list, an unknown session,
//   then EOF (the server removes its container and exits);
// - against the faulty fake engine: the error paths (a reset, a truncated
//   chunked body, an oversized head, a malformed exec stream, an error status
//   on session_close, a stall), then EOF.
// Zero definite leaks and zero invalid accesses: valgrind's own exit code
// (99) fails the test, and its report is checked and printed.
//
// Not registered in a sanitizer build (valgrind cannot run ASan binaries).
// Skips without valgrind (or, for the first scenario, without an engine),
// unless SANDBOX_TEST_MUST_WORK=1.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serverBin, serverEnv } from '../lib/rawpipe.mjs';
import {
  suite, requireEngine, cleanup, containerExists, trackContainer, MUST_WORK,
} from '../lib/harness.mjs';
import { FakeEngine, ENGINE_TIMEOUT_S } from '../lib/fake.mjs';

function findValgrind() {
  try {
    return execFileSync('valgrind', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}

const VALGRIND = findValgrind();
const NO_VALGRIND = 'valgrind is not installed (apt-get install valgrind)';

function withValgrind(opts) {
  if (VALGRIND || opts.skip || MUST_WORK) return opts;
  return { ...opts, skip: `${NO_VALGRIND}; set SANDBOX_TEST_MUST_WORK=1 to fail instead` };
}

function requireValgrind() {
  if (!VALGRIND) throw new Error(`SANDBOX_TEST_MUST_WORK=1 but ${NO_VALGRIND}`);
}

const dir = mkdtempSync(join(tmpdir(), 'sandbox-valgrind-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

/** The server under valgrind, with a tiny JSON-RPC client over its stdio. */
class VgServer {
  constructor(label, env = {}) {
    this.log = join(dir, `${label}.log`);
    this.stderr = '';
    this.child = spawn('valgrind', [
      '--leak-check=full', '--errors-for-leak-kinds=definite', '--show-leak-kinds=definite',
      '--error-exitcode=99', `--log-file=${this.log}`, serverBin(),
    ], { env: serverEnv({ SANDBOX_LOG_LEVEL: 'info', SANDBOX_IDLE_TTL_S: 0, ...env }), stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-8000); });
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
    this.waiters = new Map();
    this.nextId = 1;
    let partial = '';
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (d) => {
      const parts = (partial + d).split('\n');
      partial = parts.pop();
      for (const line of parts) {
        const m = JSON.parse(line);
        if (m.id !== undefined) this.waiters.get(m.id)?.(m);
      }
    });
  }

  request(method, params, timeoutMs = 120000) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to ${method} within ${timeoutMs} ms; ` +
        `stderr: ${this.stderr}`)), timeoutMs);
      this.waiters.set(id, (m) => { clearTimeout(timer); resolve(m); });
      this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
  }

  async call(name, args = {}) {
    const m = await this.request('tools/call', { name, arguments: args });
    assert.ok(m.result, `${name}: ${JSON.stringify(m).slice(0, 1000)}`);
    return m.result;
  }

  async initialize() {
    const init = await this.request('initialize', {
      protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'valgrind', version: '0' },
    });
    assert.ok(init.result, JSON.stringify(init));
    this.child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  }

  /** EOF; waits for the exit and checks valgrind's verdict. */
  async finish(what) {
    this.child.stdin.end();
    let timer;
    const ex = await Promise.race([this.exited, new Promise((r) => { timer = setTimeout(() => r(null), 120000); })]);
    clearTimeout(timer);
    if (!ex) this.child.kill('SIGKILL');
    const report = readFileSync(this.log, 'utf8');
    const summary = report.split('\n')
      .filter((l) => /ERROR SUMMARY|definitely lost|indirectly lost|possibly lost|still reachable|in use at exit/.test(l))
      .map((l) => l.replace(/^==\d+== +/, '  ')).join('\n');
    console.log(`valgrind (${VALGRIND}), ${what}:\n${summary}`);
    assert.ok(ex, `the server exited within 120 s of EOF; stderr: ${this.stderr}`);
    assert.equal(ex.code, 0, `exit code 0 (99: valgrind found errors); report:\n${report.slice(-6000)}`);
    assert.match(report, /ERROR SUMMARY: 0 errors/, report.slice(-6000));
    assert.doesNotMatch(report, /definitely lost: [1-9]/, report.slice(-6000));
    assert.doesNotMatch(report, /Invalid (read|write|free)|uninitialised|Mismatched free/, report.slice(-6000));
  }
}

describe('valgrind: a short scenario against the real engine', withValgrind(suite({ timeout: 300000 })), () => {
  before(() => {
    requireValgrind();
    requireEngine();
  });

  after(async () => {
    await cleanup();
  });

  test('no definite leak, no invalid access, clean exit, container removed', async () => {
    const vg = new VgServer('engine');
    await vg.initialize();
    const list = await vg.request('tools/list', {});
    assert.ok(list.result.tools.length > 0);
    const env = await vg.call('env_info');
    assert.equal(env.structuredContent.engine.reachable, true, JSON.stringify(env));
    const run = await vg.call('run_command', { command: 'echo hello; echo oops >&2; exit 3' });
    assert.equal(run.structuredContent?.stdout, 'hello\n', JSON.stringify(run).slice(0, 1500));
    assert.equal(run.structuredContent.exit_code, 3);
    const { sessions } = (await vg.call('session_list')).structuredContent;
    assert.equal(sessions.length, 1);
    trackContainer(sessions[0].container_id); // cleanup() removes it if the server does not
    const bad = await vg.call('run_command', { command: 'true', session_id: 'nope' });
    assert.equal(bad.isError, true);
    await vg.finish('real engine');
    const id = sessions[0].container_id;
    assert.equal(await containerExists(id), false, `the session's container ${id.slice(0, 12)} was removed at exit`);
  });
});

describe('valgrind: engine faults (fake engine)', withValgrind({ timeout: 300000 }), () => {
  test('the error paths: no definite leak, no invalid access, clean exit', async () => {
    requireValgrind();
    const fake = await FakeEngine.start('none');
    try {
      // each fault is meant for one call's path: a warm pool would meet or dodge it (lib/fake.mjs startServer);
      // the real-engine scenario above runs with the pool
      const vg = new VgServer('faults', {
        DOCKER_HOST: fake.dockerHost, SANDBOX_ENGINE_TIMEOUT_S: ENGINE_TIMEOUT_S, SANDBOX_POOL_SIZE: 0,
      });
      await vg.initialize();
      const run = await vg.call('run_command', { command: 'echo hello' });
      assert.equal(run.structuredContent.stdout, 'hello\n', JSON.stringify(run));
      const faults = [
        ['reset-head', 'GET /version', 'env_info'],
        ['truncated-chunked', 'GET /version', 'env_info'],
        ['big-header', 'GET /version', 'env_info'],
        ['not-json', 'GET /version', 'env_info'],
        ['stall', 'GET /version', 'env_info'],
        ['exec-4g', 'POST /exec/*/start', 'run_command'],
        ['http-404-json', 'POST /containers/*/exec', 'run_command'],
        ['http-500-text', 'POST /containers/create', 'run_command'],
      ];
      for (const [fault, pattern, tool] of faults) {
        await fake.setFault(fault, pattern);
        const res = await vg.call(tool, tool === 'run_command' ? { command: 'echo hello' } : {});
        const failed = tool === 'env_info' ? res.structuredContent.engine.reachable === false : res.isError === true;
        assert.ok(failed, `${fault} on ${pattern} via ${tool} fails: ${JSON.stringify(res).slice(0, 800)}`);
        await fake.heal();
      }
      const s = await vg.call('session_create', { name: 'closing' });
      await fake.setFault('http-500-json', 'DELETE /containers/*');
      assert.equal((await vg.call('session_close', { session_id: 'closing' })).isError, true);
      await fake.heal();
      assert.ok(!(await vg.call('run_command', { command: 'echo hello' })).isError);
      await vg.finish('fake engine with faults');
      await fake.sync();
      assert.deepEqual(fake.containers().leaked, [], `every container removed (session ${s.structuredContent.session_id})`);
    } finally {
      await fake.stop();
    }
  });
});
