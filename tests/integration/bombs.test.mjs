// A fork bomb and a memory bomb inside a session: each ends in a clear tool
// error within a bounded time, the bombed session is usable afterwards (or
// says clearly why not), another session keeps working meanwhile, and the
// server keeps answering.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, suite, requireEngine, cleanup, show, sleep } from '../lib/harness.mjs';

const BOMB_TIMEOUT_S = 5;
// the classic, in bash (dash refuses ':' as a function name): each call puts a
// pipeline of two more calls in the background and returns at once
const FORK_BOMB = "bash -c ':(){ :|:& };:'";
// the same without '&': every level waits for its pipeline, so the command
// itself never ends and only the deadline stops it
const FOREGROUND_BOMB = "bash -c 'b(){ b|b; }; b'";

/** Asserts that a bomb call ended in a timeout tool error in bounded time. */
function assertTimedOut(res, elapsedS, what, srv) {
  const st = res.structuredContent;
  assert.equal(res.isError, true, `${what} ends in a tool error: ${show(res)}`);
  assert.equal(st?.error?.code, 'timeout', `${what}: error.code: ${show(res)}`);
  assert.equal(st.timed_out, true, `${what}: timed_out`);
  assert.ok(elapsedS <= BOMB_TIMEOUT_S + 15, `${what} returned after ${elapsedS.toFixed(1)} s ` +
    `(timeout_s ${BOMB_TIMEOUT_S} + 15 s at most); server stderr: ${srv.stderrTail.slice(-1500)}`);
}

/** `echo ok` in a session after a bomb: works, or is a clear tool error (never a wedged exec). */
async function assertUsableOrClear(srv, sessionId, what) {
  const res = await srv.call('run_command', { command: 'echo ok', session_id: sessionId, timeout_s: 20 },
    { timeoutMs: 60000 });
  if (res.isError) {
    const err = res.structuredContent?.error;
    assert.ok(err && /^[a-z_]+$/.test(err.code ?? '') && err.message?.length > 20,
      `${what}: echo ok either works or the session reports clearly: ${show(res)}`);
    return false;
  }
  assert.equal(res.structuredContent.exit_code, 0, `${what}: echo ok in the same session: ${show(res)}`);
  assert.equal(res.structuredContent.stdout, 'ok\n');
  // and nothing of the bomb is left running in it
  const ps = await srv.sh('ps -eo args', { session_id: sessionId });
  assert.ok(!/^bash /m.test(ps.stdout), `${what}: no bomb process left:\n${ps.stdout}`);
  return true;
}

describe('fork bombs (SANDBOX_PIDS=64, timeout_s 5)', suite({ timeout: 180000 }), () => {
  let srv;
  let other;

  before(async () => {
    requireEngine();
    srv = await Server.start('fork-bomb', { SANDBOX_PIDS: 64, SANDBOX_TIMEOUT_S: 30 });
    other = await srv.createSession({ name: 'bystander' });
    await srv.sh('echo before', { session_id: other.session_id });
  });

  after(async () => {
    await cleanup();
  });

  test('a foreground fork bomb is stopped at the deadline and the session works after', async () => {
    const s = await srv.createSession({ name: 'fg-bomb' });
    const t0 = Date.now();
    const res = await srv.call('run_command', { command: FOREGROUND_BOMB, session_id: s.session_id, timeout_s: BOMB_TIMEOUT_S },
      { timeoutMs: 90000 });
    const elapsed = (Date.now() - t0) / 1000;
    assertTimedOut(res, elapsed, 'the foreground fork bomb', srv);
    console.log(`# foreground fork bomb returned after ${elapsed.toFixed(1)} s, restarted=${res.structuredContent.restarted}`);
    assert.equal(await assertUsableOrClear(srv, s.session_id, 'after the foreground bomb'), true,
      'the session survives a fork bomb stopped at its deadline');
    await srv.sh('echo still', { session_id: other.session_id });
  });

  describe('the classic `:(){ :|:& };:`', () => {
    let bombed;
    let bombRes;
    let bombElapsed;
    let during;
    let duringS;

    before(async () => {
      bombed = await srv.createSession({ name: 'bombed' });
      const t0 = Date.now();
      const bombCall = srv.call('run_command', { command: FORK_BOMB, session_id: bombed.session_id, timeout_s: BOMB_TIMEOUT_S },
        { timeoutMs: 90000 });
      // while the bomb runs: the other session and the server itself
      await sleep(1000);
      during = await srv.call('run_command', { command: 'echo during', session_id: other.session_id },
        { timeoutMs: 60000 });
      duringS = (Date.now() - t0) / 1000;
      await srv.client.ping({ timeout: 10000 });
      bombRes = await bombCall;
      bombElapsed = (Date.now() - t0) / 1000;
      console.log(`# classic fork bomb returned after ${bombElapsed.toFixed(1)} s: isError=${bombRes.isError} ` +
        `exit_code=${bombRes.structuredContent?.exit_code} restarted=${bombRes.structuredContent?.restarted}; ` +
        `bystander call during it returned after ${duringS.toFixed(1)} s`);
    });

    test('ends in a clear tool error within timeout + 15 s', () => {
      // the top-level shell returns at once while its children fork on, so the
      // server sees the shell's fork failures and stops the group right away
      // (too_many_processes); a deadline kill (timeout) is fine as well
      const st = bombRes.structuredContent;
      assert.equal(bombRes.isError, true, `the classic fork bomb ends in a tool error: ${show(bombRes)}`);
      assert.ok(['too_many_processes', 'timeout'].includes(st?.error?.code),
        `the classic fork bomb: error.code: ${show(bombRes)}`);
      assert.match(st.error.message, /processes|limit/, 'the message names the limit');
      assert.ok(bombElapsed <= BOMB_TIMEOUT_S + 15, `returned after ${bombElapsed.toFixed(1)} s`);
    });

    test('afterwards `echo ok` in the same session works or the session reports clearly', async () => {
      await assertUsableOrClear(srv, bombed.session_id, 'after the classic bomb');
    });

    test('the bystander session worked during the bomb and still works; the server answers ping', async () => {
      assert.ok(!during.isError, `the bystander session ran a command during the bomb: ${show(during)}`);
      assert.equal(during.structuredContent.stdout, 'during\n');
      const st = await srv.sh('echo after', { session_id: other.session_id });
      assert.equal(st.stdout, 'after\n');
      await srv.client.ping({ timeout: 5000 });
      const { sessions } = await srv.ok('session_list');
      assert.ok(sessions.some((x) => x.session_id === other.session_id), `session_list: ${JSON.stringify(sessions)}`);
    });
  });
});

describe('memory bomb (SANDBOX_MEMORY_MB=128)', suite({ timeout: 120000 }), () => {
  let srv;

  before(async () => {
    requireEngine();
    srv = await Server.start('memory-bomb', { SANDBOX_MEMORY_MB: 128, SANDBOX_TIMEOUT_S: 60 });
  });

  after(async () => {
    await cleanup();
  });

  test('ends in out_of_memory naming the limit; the session works afterwards', async () => {
    const s = await srv.createSession();
    assert.equal(s.memory_mb, 128);
    const t0 = Date.now();
    const res = await srv.call('run_command', {
      command: 'python3 -c "b=bytearray(10**9); b[::4096]=b\'x\'*len(b[::4096])"',
      session_id: s.session_id,
      timeout_s: 45,
    }, { timeoutMs: 90000 });
    const elapsed = (Date.now() - t0) / 1000;
    const st = res.structuredContent;
    assert.equal(res.isError, true, `the memory bomb is a tool error: ${show(res)}`);
    assert.equal(st?.error?.code, 'out_of_memory', `error.code: ${show(res)}`);
    assert.match(st.error.message, /\b128\s?MB\b/, `the message names the 128 MB limit: ${st.error.message}`);
    assert.equal(st.timed_out, false, 'killed by the kernel, not by the deadline');
    assert.equal(st.exit_code, 137, 'SIGKILL');
    const text = res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    assert.match(text, /out_of_memory/, 'the text content tells the model too');
    console.log(`# memory bomb returned after ${elapsed.toFixed(1)} s`);

    const after = await srv.sh('echo ok', { session_id: s.session_id });
    assert.equal(after.stdout, 'ok\n');
    await srv.client.ping({ timeout: 5000 });
  });
});
