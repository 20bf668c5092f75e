// Engine faults: the real server against the faulty fake engine
// (fake-engine.c), one fault per test. For each: the tool call that meets the
// fault returns a clear tool error (a stable structuredContent.error.code and
// a message that says what to do) within the engine timeout plus a few
// seconds, the server stays up (ping answers), its peak RSS stays bounded even
// when the engine streams 1 GB, and once the fault is healed the next call
// works. Every container the fake engine created is removed by the time the
// server has exited. A table of what happened is printed at the end.

import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { FakeEngine, startServer, memKiB, ENGINE_TIMEOUT_S } from '../lib/fake.mjs';
import { serverIsSanitized, show, withTimeout } from '../lib/harness.mjs';

const SANITIZED = serverIsSanitized();
/** Peak RSS allowed to the server (KiB); ASan's shadow memory and quarantine need more. */
const RSS_CAP_KIB = (SANITIZED ? 256 : 64) * 1024;
/** What a message must mention so that the model (or its user) knows what to do next. */
const ACTIONABLE = /docker info|doctor|start docker|dockerd|DOCKER_HOST|try again|run it again|retry|docker pull|docker build|session_create|session_list|without session_id|timeout_s|upgrade/i;

/*
 * What the message must say happened, by fault (or by the code it ends in):
 * ACTIONABLE alone would pass on the generic advice every engine error ends
 * with, so each message must also name the fault itself.
 */
const WHAT = {
  refused: /cannot connect/, nosocket: /cannot connect/,
  close: /closed the connection/, 'truncated-chunked': /closed the connection/,
  'reset-head': /reading from the Docker engine failed|closed the connection/,
  'reset-body': /reading from the Docker engine failed|closed the connection/,
  'bad-chunk': /malformed/, 'long-chunk-size': /malformed/, 'big-header': /malformed|oversized/,
  'many-headers': /malformed|oversized/, garbage: /malformed/, 'exec-raw': /malformed/, 'exec-4g': /malformed|too large|larger/,
  endless: /larger than/, trickle: /did not finish/, stall: /did not answer/, 'stall-head': /did not finish/,
  'not-json': /invalid JSON|inval/, 'wrong-json': /inval/, 'empty-json': /no valid/,
  'exec-hang': /ran past its 2 s/,
  // by code, for the HTTP statuses
  session_not_found: /container of session/, image_not_found: /image/,
  'http-500': /error 500|did not report its exit code/, 'http-404': /error 404/, 'http-409': /error 409/,
};

function whatFor(c, code) {
  if (WHAT[c.fault]) return WHAT[c.fault];
  if (WHAT[code]) return WHAT[code];
  return WHAT[c.fault.split('-').slice(0, 2).join('-')];
}

const rows = [];

const CAP_NOT_CLOCK = { env: { SANDBOX_ENGINE_TIMEOUT_S: 30 }, limitMs: 33000 };

// fault, pattern (fnmatch over "METHOD /path"), tool, allowed error codes, extra
const CASES = [
  { fault: 'refused', tool: 'env_info', codes: ['docker_unavailable'] },
  { fault: 'refused', tool: 'run_command', codes: ['docker_unavailable'] },
  { fault: 'nosocket', tool: 'run_command', codes: ['docker_unavailable'] },
  { fault: 'close', pattern: 'GET /version', tool: 'env_info', codes: ['docker_unavailable'] },
  { fault: 'close', pattern: 'POST /containers/*/start', tool: 'run_command', codes: ['docker_unavailable'] },
  { fault: 'reset-head', pattern: 'GET /version', tool: 'env_info', codes: ['docker_unavailable'] },
  { fault: 'reset-head', pattern: 'POST /containers/create', tool: 'run_command', codes: ['docker_unavailable'] },
  { fault: 'reset-body', pattern: 'POST /containers/create', tool: 'run_command', codes: ['docker_unavailable'] },
  { fault: 'reset-body', pattern: 'GET /version', tool: 'env_info', codes: ['docker_unavailable'] },
  { fault: 'truncated-chunked', pattern: 'GET /version', tool: 'env_info', codes: ['engine_error'] },
  { fault: 'truncated-chunked', pattern: 'GET /images/*/json', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'bad-chunk', pattern: 'GET /images/*/json', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'long-chunk-size', pattern: 'GET /containers/*/json', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'big-header', pattern: 'GET /version', tool: 'env_info', codes: ['engine_error'] },
  { fault: 'big-header', pattern: 'POST /containers/create', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'many-headers', pattern: 'GET /version', tool: 'env_info', codes: ['engine_error'] },
  // an endless body must meet the 16 MiB size cap, not the clock: a long engine timeout here (and only
  // here), so a slow sanitizer build on a loaded machine cannot turn the case into a race
  { fault: 'endless', pattern: 'GET /version', tool: 'env_info', codes: ['engine_error'], ...CAP_NOT_CLOCK },
  { fault: 'endless', pattern: 'GET /images/*/json', tool: 'run_command', codes: ['engine_error'], ...CAP_NOT_CLOCK },
  { fault: 'trickle', pattern: 'GET /version', tool: 'env_info', codes: ['timeout'] },
  { fault: 'trickle', pattern: 'POST /containers/create', tool: 'run_command', codes: ['timeout'] },
  { fault: 'stall', pattern: 'GET /version', tool: 'env_info', codes: ['timeout'] },
  { fault: 'stall', pattern: 'POST /containers/*/start', tool: 'run_command', codes: ['timeout'] },
  { fault: 'stall-head', pattern: 'POST /containers/*/exec', tool: 'run_command', codes: ['timeout'] },
  { fault: 'garbage', pattern: 'GET /version', tool: 'env_info', codes: ['engine_error'] },
  { fault: 'not-json', pattern: 'GET /version', tool: 'env_info', codes: ['engine_error'] },
  { fault: 'not-json', pattern: 'POST /containers/create', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'wrong-json', pattern: 'GET /version', tool: 'env_info', codes: ['engine_error'] },
  { fault: 'wrong-json', pattern: 'POST /containers/create', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'empty-json', pattern: 'POST /containers/*/exec', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'http-500-json', pattern: 'POST /containers/*/start', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'http-500-text', pattern: 'GET /version', tool: 'env_info', codes: ['engine_error'] },
  { fault: 'http-500-empty', pattern: 'POST /containers/create', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'http-500-json', pattern: 'GET /exec/*/json', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'http-404-json', pattern: 'POST /containers/*/exec', tool: 'run_command', codes: ['session_not_found'] },
  { fault: 'http-404-empty', pattern: 'GET /images/*/json', tool: 'run_command', codes: ['image_not_found'] },
  // a 404 from create is a missing image only when the engine says so (it may be a missing network)
  { fault: 'http-404-text', pattern: 'POST /containers/create', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'http-409-json', pattern: 'POST /exec/*/start', tool: 'run_command', codes: ['session_not_found'] },
  { fault: 'http-409-empty', pattern: 'POST /containers/create', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'http-409-json', pattern: 'POST /containers/*/exec', tool: 'run_command', codes: ['session_not_found'] },
  { fault: 'exec-4g', pattern: 'POST /exec/*/start', tool: 'run_command', codes: ['engine_error'] },
  { fault: 'exec-raw', pattern: 'POST /exec/*/start', tool: 'run_command', codes: ['engine_error'] },
  // the file tools move tar streams through execs of their own (src/xfer.c, src/files.c)
  { fault: 'exec-4g', pattern: 'POST /exec/*/start', tool: 'file_read', args: { path: 'x.txt' }, codes: ['engine_error'] },
  { fault: 'exec-raw', pattern: 'POST /exec/*/start', tool: 'file_read', args: { path: 'x.txt' }, codes: ['engine_error'] },
  { fault: 'close', pattern: 'POST /exec/*/start', tool: 'file_write', args: { path: 'x.txt', content: 'hi' },
    codes: ['docker_unavailable', 'engine_error'] },
  { fault: 'http-500-json', pattern: 'POST /containers/*/exec', tool: 'file_write', args: { path: 'x.txt', content: 'hi' },
    codes: ['engine_error'] },
  { fault: 'stall', pattern: 'POST /exec/*/start', tool: 'file_list', codes: ['timeout'] },
  // the command's own deadline, then the kill, then the grace for a stream that does not end; the first
  // hanging exec is the in-sandbox agent's start (given up after one engine timeout, then the exec path),
  // the second the command's own
  { fault: 'exec-hang', pattern: 'POST /exec/*/start', count: 2, tool: 'run_command', args: { timeout_s: 2 },
    codes: ['timeout'], limitMs: 14000 },
];

/** Calls `tool` and returns { ms, code, message } of the error it reports. */
async function meetFault(srv, c) {
  const args = { ...(c.tool === 'run_command' ? { command: 'echo hello' } : {}), ...(c.args ?? {}) };
  const t0 = Date.now();
  const res = await srv.call(c.tool, args, { timeoutMs: 60000 });
  const ms = Date.now() - t0;
  if (c.tool === 'env_info') {
    // an unreachable engine is what env_info reports, not a failure of the tool
    assert.ok(!res.isError, `env_info itself succeeds: ${show(res)}`);
    const eng = res.structuredContent?.engine;
    assert.equal(eng?.reachable, false, `engine.reachable is false: ${show(res)}`);
    return { ms, code: eng.error_code, message: eng.error };
  }
  assert.equal(res.isError, true, `${c.tool} fails: ${show(res)}`);
  const err = res.structuredContent?.error;
  assert.ok(err, `structuredContent.error: ${show(res)}`);
  assert.equal(typeof err.message, 'string');
  assert.match(res.content?.[0]?.text ?? '', new RegExp(`Error \\(${err.code}\\)`), 'the text says the code too');
  return { ms, code: err.code, message: err.message };
}

async function works(srv, tool) {
  if (tool === 'env_info') {
    const st = await srv.ok('env_info', {}, { timeoutMs: 30000 });
    assert.equal(st.engine.reachable, true, `after healing, env_info reaches the engine: ${JSON.stringify(st.engine)}`);
    return;
  }
  const st = await srv.ok('run_command', { command: 'echo hello' }, { timeoutMs: 30000 });
  assert.equal(st.exit_code, 0, JSON.stringify(st));
  assert.equal(st.stdout, 'hello\n');
}

describe('session_close when the engine fails to remove the container', { timeout: 60000 }, () => {
  test('http-500-json on DELETE /containers/*: engine_error, the session stays listed, a retry removes it', async () => {
    const fake = await FakeEngine.start('none');
    let srv;
    try {
      srv = await startServer('close-fails', fake);
      const s = await srv.createSession({ name: 'sticky' });
      await fake.setFault('http-500-json', 'DELETE /containers/*');
      const st = await srv.fails('session_close', { session_id: 'sticky' }, 'engine_error');
      assert.match(st.error.message, ACTIONABLE, st.error.message);
      const { sessions } = await srv.ok('session_list');
      assert.ok(sessions.some((x) => x.session_id === s.session_id), 'still listed: its container is still there');
      await fake.heal();
      await srv.ok('session_close', { session_id: 'sticky' });
      await fake.sync();
      assert.deepEqual(fake.containers().leaked, [], 'the retry removed the container');
      assert.deepEqual((await srv.ok('session_list')).sessions, []);
    } finally {
      await srv?.close();
      await fake.stop();
    }
  });
});

describe('a container the engine made but would not start or remove', { timeout: 60000 }, () => {
  test('start and DELETE fail: session_create fails; at exit the server finds and removes it', async () => {
    // "POST /containers/<64 hex>/start" and "DELETE /containers/<64 hex>" (not the create, the
    // archive PUTs or the inspects): the container exists, and the removal after the failed start fails
    const pattern = `[PD][OE]* /containers/${'?'.repeat(64)}*`;
    const fake = await FakeEngine.start('none');
    let srv;
    try {
      srv = await startServer('orphan', fake);
      await fake.setFault('http-500-json', pattern);
      await srv.fails('session_create', { name: 'orphan' }, 'engine_error');
      await fake.sync();
      assert.equal(fake.containers().leaked.length, 1, `one container made and not removed: ${fake.requests().slice(-6).join(' | ')}`);
      assert.ok(fake.faults().some((l) => l.includes('DELETE')), 'its removal met the fault');
      await fake.heal();
      await withTimeout(srv.endStdin(), 20000, 'server exit');
      assert.equal(srv.exit.code, 0, `clean exit: ${JSON.stringify(srv.exit)}; stderr: ${srv.stderrTail.slice(-1000)}`);
      await fake.sync();
      assert.deepEqual(fake.containers().leaked, [], 'removed at exit by its instance label');
    } finally {
      await srv?.close();
      await fake.stop();
    }
  });
});

describe('an engine too slow to remove a container at exit', { timeout: 90000 }, () => {
  test('a stalled DELETE: the server exits in about 8 s, not the engine timeout; its janitor removes it', async () => {
    const fake = await FakeEngine.start('none');
    let srv;
    try {
      // a long engine timeout: waiting it out would be the bug
      srv = await startServer('slow-exit', fake, { SANDBOX_ENGINE_TIMEOUT_S: '30' });
      await srv.createSession({ name: 'slow' });
      await fake.setFault('stall', 'DELETE /containers/*', 1); // the server's removal; the janitor's goes through
      const t0 = Date.now();
      await withTimeout(srv.endStdin(), 25000, 'server exit');
      const secs = (Date.now() - t0) / 1000;
      assert.equal(srv.exit.code, 0, `clean exit: ${JSON.stringify(srv.exit)}; stderr: ${srv.stderrTail.slice(-1000)}`);
      assert.ok(secs >= 7 && secs < 15, `exited ${secs.toFixed(1)} s after EOF (waits 8 s, the engine timeout is 30 s)`);
      assert.match(srv.stderrTail, /janitor goes on after the exit/);
      assert.ok(fake.faults().some((l) => l.includes('DELETE')), 'the removal met the stall');
      const until = Date.now() + 20000;
      while (fake.containers().leaked.length && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 200));
        await fake.sync();
      }
      assert.deepEqual(fake.containers().leaked, [], `the janitor removed it: ${fake.requests().slice(-6).join(' | ')}`);
    } finally {
      await srv?.close();
      await fake.stop();
    }
  });
});

/** env_info's pool_ready once it equals n (polled for up to timeoutMs); throws past it. */
async function poolReady(srv, n, timeoutMs = 30000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const st = await srv.ok('env_info', {}, { timeoutMs: 30000 });
    if (st.pool_ready === n) return;
    if (Date.now() > until) throw new Error(`pool_ready is ${st.pool_ready}, not ${n}; stderr: ${srv.stderrTail.slice(-1500)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the warm pool under engine faults', { timeout: 120000 }, () => {
  for (const [fault, pattern] of [['http-500-json', 'POST /containers/create'], ['http-500-json', 'POST /containers/*/start'],
    ['close', 'POST /containers/*/start'], ['stall', 'GET /containers/*/json']]) {
    test(`${fault} on ${pattern}: the pool stays empty, calls still work, it fills once healed, nothing leaks`, async () => {
      const fake = await FakeEngine.start(fault, pattern);
      let srv;
      try {
        srv = await startServer(`pool-${fault}`, fake, { SANDBOX_POOL_SIZE: 2 });
        // a few failed builds (the back-off starts at 1 s), while calls keep answering
        await new Promise((r) => setTimeout(r, ENGINE_TIMEOUT_S * 1000 + 1500));
        await fake.sync();
        assert.ok(fake.faults().length > 0, `the pool met the fault: ${fake.requests().slice(-5).join(' | ')}`);
        assert.equal((await srv.ok('env_info', {}, { timeoutMs: 30000 })).pool_ready, 0);
        await srv.client.ping({ timeout: 5000 });
        await fake.heal();
        await poolReady(srv, 2);
        // a session from the pool works, and the pool is refilled behind it
        const s = await srv.createSession();
        await poolReady(srv, 2);
        const st = await srv.ok('run_command', { command: 'echo hello', session_id: s.session_id });
        assert.equal(st.stdout, 'hello\n');
        await withTimeout(srv.endStdin(), 20000, 'server exit');
        assert.equal(srv.exit.code, 0, `clean exit: ${JSON.stringify(srv.exit)}; stderr: ${srv.stderrTail.slice(-1000)}`);
        await fake.sync();
        assert.deepEqual(fake.containers().leaked, [], 'every container the pool made, failed or not, was removed');
      } finally {
        await srv?.close();
        await fake.stop();
      }
    });
  }
});

describe('engine faults', { concurrency: 4, timeout: 240000 }, () => {
  after(() => {
    const w = (s, n) => String(s).padEnd(n);
    const lines = [
      `fault results (engine timeout ${ENGINE_TIMEOUT_S} s${SANITIZED ? ', sanitizer build' : ''}):`,
      `${w('fault', 18)}${w('endpoint', 26)}${w('tool', 12)}${w('code', 19)}${w('ms', 7)}${w('VmHWM', 10)}message`,
    ];
    for (const r of rows) {
      lines.push(`${w(r.fault, 18)}${w(r.pattern, 26)}${w(r.tool, 12)}${w(r.code, 19)}${w(r.ms, 7)}` +
        `${w(`${(r.hwm / 1024).toFixed(1)}M`, 10)}${r.message.slice(0, 140)}`);
    }
    console.log(lines.join('\n'));
  });

  for (const c of CASES) {
    const label = `${c.fault}${c.pattern ? ` on ${c.pattern}` : ''} via ${c.tool}`;
    test(label, async () => {
      const fake = await FakeEngine.start(c.fault, c.pattern, { count: c.count });
      let srv;
      try {
        srv = await startServer(c.fault, fake, c.env);
        const got = await meetFault(srv, c);
        await fake.sync();
        assert.ok(fake.faults().length > 0 || c.fault === 'refused' || c.fault === 'nosocket',
          `the fault was injected: ${fake.requests().slice(-5).join(' | ')}`);
        const { hwm } = memKiB(srv.pid);
        rows.push({ fault: c.fault, pattern: c.pattern ?? '(socket)', tool: c.tool, ...got, hwm });

        assert.ok(c.codes.includes(got.code), `error code ${got.code} is one of ${c.codes}: ${got.message}`);
        assert.match(got.message, ACTIONABLE, `the message says what to do: ${got.message}`);
        assert.match(got.message, whatFor(c, got.code), `the message says what happened: ${got.message}`);
        // one engine timeout (every timeout case meets one stalled request), and some slack for a loaded machine
        const limit = c.limitMs ?? (ENGINE_TIMEOUT_S * 1000 + 3000);
        assert.ok(got.ms < limit, `answered in ${got.ms} ms (limit ${limit})`);
        assert.ok(srv.alive, `the server is still up: ${JSON.stringify(srv.exit)}`);
        await srv.client.ping({ timeout: 5000 });
        assert.ok(hwm < RSS_CAP_KIB, `peak RSS ${hwm} KiB < ${RSS_CAP_KIB} KiB`);

        await fake.heal();
        await works(srv, c.tool);
        await works(srv, c.tool); // and again, on what is left in the connection pool

        await withTimeout(srv.endStdin(), 20000, 'server exit');
        assert.equal(srv.exit.code, 0, `clean exit: ${JSON.stringify(srv.exit)}; stderr: ${srv.stderrTail.slice(-1000)}`);
        await fake.sync();
        const { leaked } = fake.containers();
        assert.deepEqual(leaked, [], 'every container the server created was removed');
      } finally {
        await srv?.close();
        await fake.stop();
      }
    });
  }
});

/** `serve --http` against the fake engine; post(body, headers) posts to /mcp, init() opens an MCP session. */
async function httpServer(fake, env = {}) {
  const { spawn } = await import('node:child_process');
  const net = await import('node:net');
  const port = await new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
  const child = spawn(process.env.SANDBOX_MCP_BIN, ['serve', '--http', `127.0.0.1:${port}`], {
    env: { ...process.env, DOCKER_HOST: fake.dockerHost, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const srv = { child, stderr: '' };
  child.stderr.on('data', (d) => { srv.stderr = (srv.stderr + d).slice(-4000); });
  srv.exited = new Promise((resolve) => child.on('exit', (code, sig) => resolve({ code, sig })));
  srv.post = (body, headers = {}) => fetch(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  let init;
  for (let i = 0; i < 100 && !init; i++) {
    init = await srv.post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
      protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fault', version: '0' } } }).catch(() => null);
    if (!init) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(init?.ok, `initialize: ${init?.status}; ${srv.stderr}`);
  srv.headers = { 'Mcp-Session-Id': init.headers.get('mcp-session-id'), 'MCP-Protocol-Version': '2025-11-25' };
  srv.envInfo = (id) => srv.post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'env_info', arguments: {} } },
    srv.headers);
  return srv;
}

describe('HTTP: env_info and a stalled engine', { timeout: 60000 }, () => {
  test('SIGTERM while env_info waits for a stalled engine: the server exits at once', async () => {
    const fake = await FakeEngine.start('none');
    // a long engine timeout: waiting for it would be the bug
    const srv = await httpServer(fake, { SANDBOX_ENGINE_TIMEOUT_S: '30' });
    try {
      const from = fake.lines.length;
      await fake.setFault('stall', 'GET /version');
      const call = srv.envInfo(2).catch(() => null);
      await fake.waitLine((l) => l.startsWith('FAULT stall'), 10000, 'the stalled /version', from);
      const t0 = Date.now();
      srv.child.kill('SIGTERM');
      const r = await srv.exited;
      const secs = (Date.now() - t0) / 1000;
      assert.equal(r.code, 0, `exit: ${JSON.stringify(r)}; ${srv.stderr}`);
      assert.ok(secs < 5, `exited ${secs.toFixed(1)} s after SIGTERM (the engine timeout is 30 s)`);
      await call;
    } finally {
      srv.child.kill('SIGKILL');
      await fake.stop();
    }
  });

  test('once its answer is old, one call asks the engine; the others get the last answer', async () => {
    const fake = await FakeEngine.start('none');
    const srv = await httpServer(fake, { SANDBOX_ENGINE_TIMEOUT_S: String(ENGINE_TIMEOUT_S) });
    try {
      const first = await (await srv.envInfo(2)).json();
      assert.equal(first.result.structuredContent.engine.reachable, true, JSON.stringify(first));
      await new Promise((r) => setTimeout(r, 1200)); // past the 1 s it is kept
      const from = fake.lines.length;
      await fake.setFault('stall', 'GET /version');
      const asking = srv.envInfo(3);
      await fake.waitLine((l) => l.startsWith('FAULT stall'), 10000, 'the stalled /version', from);
      const others = await Promise.all([4, 5, 6, 7, 8, 9].map(async (id) => (await srv.envInfo(id)).json()));
      for (const o of others) {
        const e = o.result.structuredContent.engine;
        assert.equal(e.reachable, true, JSON.stringify(o));
        assert.ok(e.age_ms >= 1000, `the last answer, and how old: ${e.age_ms} ms`);
      }
      const late = await (await asking).json();
      assert.equal(late.result.structuredContent.engine.reachable, false, JSON.stringify(late).slice(0, 300));
      assert.equal(fake.lines.slice(from).filter((l) => l.startsWith('FAULT stall')).length, 1,
        fake.lines.slice(from).join(' | '));
    } finally {
      srv.child.kill('SIGTERM');
      await srv.exited;
      await fake.stop();
    }
  });
});
