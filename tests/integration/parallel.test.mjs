// Concurrency: calls on different sessions run in parallel, calls on one
// session run one after the other in the order they were sent, and
// SANDBOX_MAX_SESSIONS caps the number of sessions with a clear error.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, suite, requireEngine, cleanup, show } from '../lib/harness.mjs';

/** A command that prints its start and end time (ns) around `sleep 1`. */
const TIMED_SLEEP = 'date +%s%N; sleep 1; date +%s%N';

function interval(st) {
  const [start, end] = st.stdout.trim().split('\n').map((x) => BigInt(x));
  assert.ok(start && end && end > start, `start/end times: ${JSON.stringify(st.stdout)}`);
  return { start, end };
}

describe('parallel sessions and per-session order', suite({ timeout: 120000 }), () => {
  let srv;
  let sessions;

  before(async () => {
    requireEngine();
    srv = await Server.start('parallel', { SANDBOX_TIMEOUT_S: 30, SANDBOX_MAX_SESSIONS: 10 });
    sessions = [];
    for (let i = 0; i < 4; i++) sessions.push(await srv.createSession({ name: `par-${i}` }));
    // warm each one up: the first exec in a fresh container can be slower
    await Promise.all(sessions.map((s) => srv.sh('true', { session_id: s.session_id })));
  });

  after(async () => {
    await cleanup();
  });

  test('four `sleep 1` on four sessions run in parallel (< 3 s in all)', async () => {
    const t0 = Date.now();
    const results = await Promise.all(sessions.map((s) => srv.sh(TIMED_SLEEP, { session_id: s.session_id })));
    const secs = (Date.now() - t0) / 1000;
    console.log(`# four parallel sleep 1: ${secs.toFixed(2)} s`);
    assert.ok(secs < 3, `four sleep 1 on four sessions took ${secs.toFixed(2)} s: they did not run in parallel`);
    results.forEach((st, i) => assert.equal(st.session_id, sessions[i].session_id));
    // and they overlapped in the containers, not just on the wire
    const iv = results.map(interval);
    const latestStart = iv.reduce((m, x) => (x.start > m ? x.start : m), 0n);
    const earliestEnd = iv.reduce((m, x) => (x.end < m ? x.end : m), iv[0].end);
    assert.ok(latestStart < earliestEnd, 'all four sleeps were running at the same moment');
  });

  test('two `sleep 1` on one session run one after the other, in order (>= 2 s)', async () => {
    const s = sessions[0];
    const t0 = Date.now();
    const first = srv.sh(TIMED_SLEEP, { session_id: s.session_id });
    const second = srv.sh(TIMED_SLEEP, { session_id: s.session_id });
    const [r1, r2] = await Promise.all([first, second]);
    const secs = (Date.now() - t0) / 1000;
    console.log(`# two sleep 1 on one session: ${secs.toFixed(2)} s`);
    assert.ok(secs >= 2, `two sleep 1 on one session took ${secs.toFixed(2)} s: they overlapped`);
    const a = interval(r1);
    const b = interval(r2);
    assert.ok(a.end <= b.start, `the second call started (${b.start}) after the first ended (${a.end}): ` +
      'in the order sent, without overlap');
  });

  test('a session busy with one call still serves other sessions', async () => {
    const slow = srv.sh('sleep 2; echo slow', { session_id: sessions[1].session_id });
    const t0 = Date.now();
    const quick = await srv.sh('echo quick', { session_id: sessions[2].session_id });
    const quickMs = Date.now() - t0;
    const { sessions: listed } = await srv.ok('session_list');
    const busy = listed.find((x) => x.session_id === sessions[1].session_id);
    assert.equal(busy?.busy, true, `session_list shows the sleeping session busy: ${JSON.stringify(busy)}`);
    assert.equal(quick.stdout, 'quick\n');
    assert.ok(quickMs < 1500, `a call on another session answered in ${quickMs} ms while one slept`);
    assert.equal((await slow).stdout, 'slow\n');
  });
});

describe('SANDBOX_MAX_SESSIONS=2', suite({ timeout: 60000 }), () => {
  after(async () => {
    await cleanup();
  });

  test('the third session_create is a session_limit error that points at session_close', async () => {
    requireEngine();
    const srv = await Server.start('limit', { SANDBOX_MAX_SESSIONS: 2, SANDBOX_TIMEOUT_S: 30 });
    // persistent sessions of other servers on this engine are adopted and count too
    const { sessions: before } = await srv.ok('session_list');
    const created = [];
    let res;
    for (let i = 0; i < 3; i++) {
      res = await srv.call('session_create', { name: `lim-${i}` });
      if (res.isError) break;
      created.push(res.structuredContent);
    }
    assert.equal(created.length, Math.max(0, 2 - before.length),
      `sessions created before the limit (already open: ${before.length}): ${show(res)}`);
    assert.equal(res.isError, true, `session_create over the limit fails: ${show(res)}`);
    assert.equal(res.structuredContent?.error?.code, 'session_limit', show(res));
    assert.match(res.structuredContent.error.message, /session_close/, 'the message says how to make room');
    const { sessions } = await srv.ok('session_list');
    assert.equal(sessions.length, 2, 'two sessions open');

    // closing one makes room again (only one of ours: adopted sessions are not ours to close)
    if (created.length) {
      await srv.ok('session_close', { session_id: created[0].session_id });
      const again = await srv.createSession({ name: 'lim-again' });
      assert.equal(again.name, 'lim-again');
    }
  });
});
