// What one line or one frame of JSON may cost the server (security finding 9)
// and how it hears about requests it cannot decode (finding 11).
//
// - User code in run_python can reach the driver's own send() and forge a
//   result frame: a few MiB of [{},{},...] must not cost the server hundreds
//   of MB, in six sessions at once; the call fails with too_large and the
//   session works on (with a fresh interpreter).
// - A stdin line of tens of MB of [{},{},...] is refused with its own id and
//   does not hold up the read loop: a ping written right behind it is
//   answered at once.  A big line that is fine (one big string) is parsed
//   and a ping behind it answered within a small bound too.
// - Peak RSS (VmHWM) stays under 16 MiB + 8x the largest line or frame.
// - Whole-number reals (memory_mb: 256.0, timeout_s: 2.0) are read as the
//   integers they are; a request holding \u0000 is answered with its own id.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Server, suite, requireEngine, cleanup, show, sleep, serverIsSanitized, CGROUP_LIMITS_SCRIPT } from '../lib/harness.mjs';
import { openPipe } from '../lib/rawpipe.mjs';

const MiB = 1 << 20;
// the sanitizer build's shadow memory and quarantine are not the server's own cost
const SANITIZED = serverIsSanitized();

/** The bound of finding 9 in KiB: 16 MiB + 8x the largest line or frame (bytes). */
function boundKiB(largest) {
  return (SANITIZED ? 3 : 1) * (16 * 1024 + Math.ceil((8 * largest) / 1024));
}

function vmHwmKiB(pid) {
  const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

function vmRssKiB(pid) {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

/** Python that finds the driver's send() up the stack and sends a result frame of `expr` (bytes). */
function forgeResult(expr) {
  return [
    'import sys',
    'f = sys._getframe()',
    "while f is not None and not ('send' in f.f_globals and '_wlock' in f.f_globals):",
    '    f = f.f_back',
    "assert f is not None, 'driver frame not found'",
    `f.f_globals['send'](b'r', ${expr})`,
    "print('forged')",
  ].join('\n');
}

describe('forged result frames from run_python', suite({ timeout: 300000 }), () => {
  let srv;

  before(async () => {
    requireEngine();
    srv = await Server.start('jsoncost-frames', { SANDBOX_TIMEOUT_S: 60 });
  });

  after(async () => {
    await cleanup();
  });

  test('several MiB of [{},{},...] in six sessions: too_large, bounded memory, sessions work on', async () => {
    const FRAME = 4 * MiB;
    const sessions = [];
    for (let i = 0; i < 6; i++) sessions.push((await srv.createSession({ name: `forge-${i}` })).session_id);
    for (const sid of sessions) {
      // the interpreter holds a variable, so a restart is visible
      const res = await srv.call('run_python', { session_id: sid, code: 'kept = 41' }, { timeoutMs: 120000 });
      assert.ok(!res.isError, show(res));
    }
    const cases = [
      // over the frame cap: refused on its header
      `b"[" + b"{}," * ${Math.floor(FRAME / 3) - 1} + b"{}]"`,
      // under the cap but far too many values: refused by the scan before jansson
      `b'[' + b'{},' * ${Math.floor(MiB / 3) - 2} + b'{}]'`,
      // deeper than a result ever is
      "b'[' * 5000 + b']' * 5000",
    ];
    const results = [];
    for (const [i, sid] of sessions.entries()) {
      results.push(await srv.call('run_python', { session_id: sid, code: forgeResult(cases[i % cases.length]) },
        { timeoutMs: 120000 }));
    }
    const hwm = srv.peakRssKiB();
    console.log(`# forged frames: server VmHWM ${(hwm / 1024).toFixed(1)} MiB (bound ${(boundKiB(FRAME) / 1024).toFixed(0)} MiB)`);
    assert.ok(hwm < boundKiB(FRAME), `server VmHWM ${hwm} KiB under ${boundKiB(FRAME)} KiB`);
    for (const res of results) {
      assert.equal(res.isError, true, `a forged frame fails the call: ${show(res)}`);
      const err = res.structuredContent?.error;
      assert.equal(err?.code, 'too_large', show(res));
      assert.match(err.message, /sandbox sent an? (oversized|.*too complex)/,
        `the message says the sandbox sent a bad frame: ${err.message}`);
      assert.match(err.message, /next run_python call starts a fresh/, err.message);
    }
    for (const sid of sessions) {
      const res = await srv.call('run_python', { session_id: sid, code: "'kept' in globals(), 6 * 7" });
      assert.ok(!res.isError, `the session runs Python again: ${show(res)}`);
      assert.match(JSON.stringify(res.content), /\(False, 42\)/, `a fresh interpreter: ${show(res)}`);
    }
  });

  test('a forged frame that is small and valid is still no more than a result', async () => {
    const sid = (await srv.createSession({ name: 'forge-small' })).session_id;
    const res = await srv.call('run_python', { session_id: sid, code: forgeResult("b'{\"cell\": 0}'") });
    // a result for another cell is ignored; the real one ends the call
    assert.ok(!res.isError, show(res));
    assert.match(JSON.stringify(res.content), /forged/, show(res));
  });
});

describe('whole-number reals, written as such on the wire', suite({ timeout: 180000 }), () => {
  before(() => requireEngine());

  test('memory_mb 256.0 and timeout_s 2.0 are read as 256 and 2, timeout_s 2.5 is refused', async (t) => {
    // raw lines: a JavaScript client writes 256.0 as 256
    const p = openPipe(t, { env: { SANDBOX_LOG_LEVEL: 'warning', SANDBOX_TIMEOUT_S: 60 } });
    t.after(async () => {
      p.closeStdin(); // the server removes its sessions on the way out
      await p.waitExit(60000).catch(() => {});
    });
    await p.initialize();
    const call = async (id, name, args, timeoutMs = 120000) => {
      await p.send(`{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`);
      const r = await p.waitForId(id, timeoutMs);
      assert.ok(r.result, JSON.stringify(r).slice(0, 500));
      return r.result;
    };
    const created = await call(1, 'session_create', '{"name":"reals","memory_mb":256.0}');
    assert.ok(!created.isError, JSON.stringify(created).slice(0, 500));
    const sid = created.structuredContent.session_id;
    assert.equal(created.structuredContent.memory_mb, 256, JSON.stringify(created.structuredContent));
    const lim = await call(2, 'run_command', JSON.stringify({ session_id: sid, command: CGROUP_LIMITS_SCRIPT }));
    assert.match(lim.structuredContent.stdout, /^v[12] 268435456 /, `a 256 MiB limit, not none: ${lim.structuredContent.stdout}`);
    const t0 = Date.now();
    const slow = await call(3, 'run_command', `{"session_id":"${sid}","command":"sleep 30","timeout_s":2.0}`);
    const secs = (Date.now() - t0) / 1000;
    assert.equal(slow.structuredContent?.error?.code, 'timeout', JSON.stringify(slow).slice(0, 500));
    assert.ok(secs < 20, `timeout_s 2.0 stopped it in ${secs} s, not the 60 s default`);
    const bad = await call(4, 'run_command', `{"session_id":"${sid}","command":"true","timeout_s":2.5}`);
    assert.equal(bad.structuredContent?.error?.code, 'invalid_argument', JSON.stringify(bad).slice(0, 500));
    assert.match(bad.structuredContent.error.message, /timeout_s must be an integer/);
  });
});

describe('big stdin lines', { timeout: 240000 }, () => {
  test('20 MB of [{},{},...] is refused with its id, and a ping right behind it is answered at once', async (t) => {
    const p = openPipe(t, { env: { SANDBOX_LOG_LEVEL: 'warning' } });
    await p.initialize();
    const n = Math.floor((20 * MiB) / 3);
    const big = `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"run_command","arguments":` +
      `{"command":"true","x":[${'{},'.repeat(n - 1)}{}]}},"id":"big"}`;
    const bare = `[${'{},'.repeat(n - 1)}{}]`;
    const t0 = Date.now();
    await p.writeRaw(`${big}\n{"jsonrpc":"2.0","id":"p1","method":"ping"}\n${bare}\n` +
      '{"jsonrpc":"2.0","id":"p2","method":"ping"}\n');
    const written = Date.now();
    const ping = await p.waitForId('p2', 120000);
    const ms = Date.now() - written;
    const hwm = vmHwmKiB(p.child.pid);
    console.log(`# 2 x ${(big.length / MiB).toFixed(1)} MiB lines of {}: written in ${written - t0} ms, ` +
      `ping answered ${ms} ms later; VmHWM ${(hwm / 1024).toFixed(1)} MiB (bound ${(boundKiB(big.length) / 1024).toFixed(0)} MiB)`);
    assert.ok(hwm < boundKiB(big.length), `VmHWM ${hwm} KiB under ${boundKiB(big.length)} KiB`);
    assert.ok(ms < 5000, `ping answered ${ms} ms after the lines were written`);
    assert.deepEqual(ping.result, {});
    const refused = p.responses().find((m) => m.id === 'big');
    assert.ok(refused, 'the big request was answered with its own id');
    assert.equal(refused.error.code, -32600);
    assert.match(refused.error.message, /too many JSON values/);
    assert.match(refused.error.message, /base64|split/, `says what to do: ${refused.error.message}`);
    const bareReply = p.responses().find((m) => m.id === null && m.error);
    assert.ok(bareReply, 'the bare array got an error too');
  });

  test('a 60 MB line that is fine (one big string) is parsed off the read loop: a ping behind it is answered soon', async (t) => {
    const p = openPipe(t, { env: { SANDBOX_LOG_LEVEL: 'warning' } });
    await p.initialize();
    const s = 'A'.repeat(60 * MiB);
    // an unknown tool: refused once parsed, no container needed
    const big = JSON.stringify({ jsonrpc: '2.0', id: 'big', method: 'tools/call',
      params: { name: 'no_such_tool', arguments: { content: s } } });
    await p.writeRaw(`${big}\n{"jsonrpc":"2.0","id":"p","method":"ping"}\n`);
    const t1 = Date.now();
    await p.waitForId('p', 60000);
    const ms = Date.now() - t1;
    const r = await p.waitForId('big', 60000);
    assert.equal(r.error?.code, -32602, JSON.stringify(r).slice(0, 300));
    const order = p.responses().filter((m) => m.id === 'p' || m.id === 'big').map((m) => m.id).join(' before ');
    const hwm = vmHwmKiB(p.child.pid);
    console.log(`# ${(big.length / MiB).toFixed(1)} MiB string line: ping answered ${ms} ms after the write (${order}); ` +
      `VmHWM ${(hwm / 1024).toFixed(1)} MiB (bound ${(boundKiB(big.length) / 1024).toFixed(0)} MiB)`);
    assert.ok(ms < 5000, `ping answered ${ms} ms after the line was written`);
    assert.ok(hwm < boundKiB(big.length), `VmHWM ${hwm} KiB under ${boundKiB(big.length)} KiB`);
  });

  test('after a 19 MB line of 200,000 small strings the memory goes back (VmRSS)', async (t) => {
    const p = openPipe(t, { env: { SANDBOX_LOG_LEVEL: 'warning' } });
    await p.initialize();
    const before = vmRssKiB(p.child.pid);
    const arr = Array.from({ length: 200000 }, (_, i) => 'x'.repeat(90) + i);
    const line = JSON.stringify({ jsonrpc: '2.0', id: 'many', method: 'ping', params: { _meta: { a: arr } } });
    await p.send(line);
    const r = await p.waitForId('many', 60000);
    assert.deepEqual(r.result, {}, 'within the budget: parsed and answered');
    // the reply is written once the message is freed; the trim follows at once
    let rss = vmRssKiB(p.child.pid);
    for (let i = 0; i < 50 && !SANITIZED && rss - before > 8 * 1024; i++) {
      await sleep(100);
      rss = vmRssKiB(p.child.pid);
    }
    const hwm = vmHwmKiB(p.child.pid);
    console.log(`# ${(line.length / MiB).toFixed(1)} MiB of small strings: VmRSS ${(before / 1024).toFixed(1)} -> ` +
      `${(rss / 1024).toFixed(1)} MiB after, VmHWM ${(hwm / 1024).toFixed(1)} MiB`);
    assert.ok(hwm < boundKiB(line.length), `VmHWM ${hwm} KiB under ${boundKiB(line.length)} KiB`);
    // ASan's allocator keeps freed memory in its quarantine, and malloc_trim is glibc's
    if (!SANITIZED) assert.ok(rss - before < 8 * 1024, `VmRSS back within 8 MiB of where it was: ${before} -> ${rss} KiB`);
  });

  test('a valid request holding \\u0000 is answered with its own id (-32602), not -32700 with null', async (t) => {
    const p = openPipe(t, { env: { SANDBOX_LOG_LEVEL: 'warning' } });
    await p.initialize();
    await p.send('{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"file_write",' +
      '"arguments":{"path":"a.txt","content":"x\\u0000y"}}}');
    const r = await p.waitForId(42, 10000);
    assert.equal(r.error?.code, -32602, JSON.stringify(r));
    assert.match(r.error.message, /\\u0000|NUL/);
    assert.match(r.error.message, /base64/, 'says what to do instead');
    assert.ok(!p.responses().some((m) => m.id === null), 'no reply with a null id');
  });
});
