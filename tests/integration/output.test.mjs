// run_command's input and output: capped output with the full stream saved in
// the workspace, a 50 MB output with the server's memory bounded, stdin, env,
// workdir, a timeout that kills the whole process tree, and cancellation.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  Server, suite, requireEngine, cleanup, show, sleep, serverIsSanitized,
} from '../lib/harness.mjs';

const DEFAULT_OUTPUT_BYTES = 8192;
// the cap on the server's peak RSS while 50 MB of output pass through it
// (doubled for an AddressSanitizer build, whose shadow memory and quarantine
// cost something; still far below the 67 MB output held in memory)
const RSS_CAP_KIB = (serverIsSanitized() ? 128 : 64) * 1024;

/** Command lines of the session's processes that match `re` (ps -eo args). */
async function leftovers(srv, sessionId, re) {
  const { stdout } = await srv.sh('ps -eo args', { session_id: sessionId });
  return stdout.split('\n').filter((l) => re.test(l));
}

describe('run_command input and output', suite({ timeout: 240000 }), () => {
  let srv;
  let sid;

  before(async () => {
    requireEngine();
    // the 50 MB test checks that all of a big output can be saved: allow that much
    srv = await Server.start('output', { SANDBOX_TIMEOUT_S: 30, SANDBOX_OUTPUT_SAVE_MB: 100 });
    sid = (await srv.createSession({ name: 'output' })).session_id;
  });

  after(async () => {
    await cleanup();
  });

  test('100 kB of stdout is capped, and the full stream is saved with the same size and sha256', async () => {
    const full = 'x'.repeat(100000) + '\n';
    const st = await srv.sh(`python3 -c "print('x'*100000)"`, { session_id: sid });
    assert.equal(st.truncated, true, 'truncated');
    assert.equal(st.stdout_bytes, 100001, 'stdout_bytes counts every byte');
    assert.ok(st.stdout.length >= DEFAULT_OUTPUT_BYTES && st.stdout.length <= DEFAULT_OUTPUT_BYTES + 400,
      `the kept stdout is the ${DEFAULT_OUTPUT_BYTES}-byte cap plus a marker: ${st.stdout.length} chars`);
    const marker = st.stdout.replace(/^x+/, '').replace(/x+\n$/, '');
    assert.match(marker, /\d+ bytes/, `a marker says how much was left out: ${JSON.stringify(marker)}`);
    assert.ok(marker.includes(String(100001 - DEFAULT_OUTPUT_BYTES)),
      `the marker names the ${100001 - DEFAULT_OUTPUT_BYTES} bytes left out: ${JSON.stringify(marker)}`);
    assert.ok(st.stdout.startsWith('x'.repeat(1000)) && st.stdout.endsWith('x'.repeat(1000) + '\n'), 'head and tail kept');
    const file = st.output_files?.stdout;
    assert.equal(typeof file, 'string', `output_files.stdout names the saved stream: ${JSON.stringify(st.output_files)}`);

    const q = `'${file.replace(/'/g, "'\\''")}'`;
    const check = await srv.sh(`wc -c < ${q}; sha256sum < ${q}`, { session_id: sid });
    const [size, sum] = check.stdout.trim().split('\n');
    assert.equal(Number(size), st.stdout_bytes, 'the saved file has stdout_bytes bytes');
    assert.equal(sum.split(/\s+/)[0], createHash('sha256').update(full).digest('hex'),
      'the saved file is the full output');
  });

  test('50 MB of output returns in < 60 s with the server\'s peak RSS bounded', { timeout: 120000 }, async () => {
    const t0 = Date.now();
    const st = await srv.sh('head -c 50000000 /dev/urandom | base64', { session_id: sid, timeout_s: 110 },
      { timeoutMs: 115000 });
    const secs = (Date.now() - t0) / 1000;
    const rss = srv.peakRssKiB();
    console.log(`# 50 MB output: ${secs.toFixed(1)} s, ${st.stdout_bytes} bytes, server VmHWM ${rss} KiB ` +
      `(cap ${RSS_CAP_KIB} KiB${serverIsSanitized() ? ', sanitizer build' : ''})`);
    assert.ok(secs < 60, `returned after ${secs.toFixed(1)} s`);
    // base64 of 50,000,000 bytes: 66,666,668 characters in 76-column lines
    assert.equal(st.stdout_bytes, 66666668 + Math.ceil(66666668 / 76), 'stdout_bytes');
    assert.equal(st.truncated, true);
    assert.ok(st.stdout.length <= DEFAULT_OUTPUT_BYTES + 400, `kept stdout is capped: ${st.stdout.length}`);
    const file = st.output_files?.stdout;
    assert.equal(typeof file, 'string', `output_files.stdout: ${JSON.stringify(st.output_files)}`);
    const size = await srv.sh(`wc -c < '${file}'`, { session_id: sid });
    assert.equal(Number(size.stdout.trim()), st.stdout_bytes, 'the saved file holds all of it');
    await srv.sh(`rm -f '${file}'`, { session_id: sid });
    assert.ok(rss !== null, 'read the server\'s VmHWM');
    assert.ok(rss < RSS_CAP_KIB, `the server's peak RSS is ${rss} KiB, over ${RSS_CAP_KIB} KiB: ` +
      'the output must stream through, never sit in memory');
  });

  test('stdin passes through', async () => {
    const st = await srv.sh('cat', { session_id: sid, stdin: 'hello' });
    assert.equal(st.stdout, 'hello');
    const lines = await srv.sh('wc -l', { session_id: sid, stdin: 'a\nb\nc\n' });
    assert.equal(lines.stdout.trim(), '3');
  });

  test('env reaches the command', async () => {
    const st = await srv.sh('printf "%s|%s" "$FOO" "$BAR_2"', { session_id: sid, env: { FOO: 'bar baz', BAR_2: "it's" } });
    assert.equal(st.stdout, "bar baz|it's");
    const bad = await srv.fails('run_command', { command: 'true', session_id: sid, env: { 'A-B': 'x' } }, 'invalid_argument');
    assert.match(bad.error.message, /A-B/);
  });

  test('workdir: relative and absolute inside the workspace; outside is invalid_argument', async () => {
    await srv.sh('mkdir -p sub/deeper', { session_id: sid });
    assert.equal((await srv.sh('pwd', { session_id: sid, workdir: 'sub' })).stdout, '/workspace/sub\n');
    assert.equal((await srv.sh('pwd', { session_id: sid, workdir: '/workspace/sub/deeper' })).stdout,
      '/workspace/sub/deeper\n');
    assert.equal((await srv.sh('pwd', { session_id: sid })).stdout, '/workspace\n', 'default: the workspace');
    for (const workdir of ['/etc', '../..', 'sub/../../etc']) {
      const st = await srv.fails('run_command', { command: 'pwd', session_id: sid, workdir }, 'invalid_argument');
      assert.match(st.error.message, /workspace/, `the message says where workdir must be: ${st.error.message}`);
    }
  });

  test('a timeout kills the whole process tree and the session stays usable', async () => {
    await srv.sh('echo kept > /tmp/marker', { session_id: sid });
    const t0 = Date.now();
    const res = await srv.call('run_command',
      { command: 'sleep 100 & sleep 100 & sleep 100', session_id: sid, timeout_s: 2 }, { timeoutMs: 60000 });
    const secs = (Date.now() - t0) / 1000;
    const st = res.structuredContent;
    assert.equal(res.isError, true, `a timeout is a tool error: ${show(res)}`);
    assert.equal(st.error?.code, 'timeout', show(res));
    assert.equal(st.timed_out, true);
    assert.ok(secs < 15, `returned ${secs.toFixed(1)} s after the start (timeout_s 2)`);
    assert.match(st.error.message, /2 s/, `the message names the limit: ${st.error.message}`);
    assert.deepEqual(await leftovers(srv, sid, /^sleep 100/), [], 'no sleep 100 is left in the session');
    assert.equal(st.restarted, false, 'killed from inside: the container was not restarted');
    const marker = await srv.sh('cat /tmp/marker', { session_id: sid });
    assert.equal(marker.stdout, 'kept\n', '/tmp survived: the session was not restarted');
  });

  test('cancelling a running call kills it; the server answers the next call', async () => {
    const ac = new AbortController();
    const t0 = Date.now();
    const pending = srv.call('run_command', { command: 'sleep 30', session_id: sid }, { signal: ac.signal, timeoutMs: 60000 });
    await sleep(1000);
    ac.abort('test cancels');
    await assert.rejects(pending, 'the aborted call rejects');
    await srv.client.ping({ timeout: 5000 });
    const st = await srv.sh('echo next', { session_id: sid }, { timeoutMs: 20000 });
    const secs = (Date.now() - t0) / 1000;
    assert.equal(st.stdout, 'next\n');
    assert.ok(secs < 15, `the next call on the session answered ${secs.toFixed(1)} s after the start, ` +
      'not after sleep 30 ended');
    assert.deepEqual(await leftovers(srv, sid, /^sleep 30/), [], 'no sleep 30 is left in the session');
  });
  test('a call cancelled at once: the session and its files survive', async () => {
    // cancelled before the exec reported its pid: only the exec is killed (the server waits
    // a bounded while for the pid), the container is not restarted
    await srv.sh('echo kept > /tmp/cancel-marker', { session_id: sid });
    const before = (await srv.sh('cat /proc/1/stat | cut -d" " -f22', { session_id: sid })).stdout;
    for (const delay of [0, 5, 30]) {
      const ac = new AbortController();
      const pending = srv.call('run_command', { command: 'sleep 30', session_id: sid }, { signal: ac.signal, timeoutMs: 60000 });
      if (delay) await sleep(delay);
      ac.abort('test cancels at once');
      await assert.rejects(pending, 'the aborted call rejects');
    }
    const st = await srv.sh('cat /tmp/cancel-marker; cat /proc/1/stat | cut -d" " -f22', { session_id: sid }, { timeoutMs: 30000 });
    assert.equal(st.stdout, `kept\n${before}`, 'the file in /tmp survived and pid 1 is the same process: no restart');
    for (let i = 0; i < 50 && (await leftovers(srv, sid, /^sleep 30/)).length; i++) await sleep(100);
    assert.deepEqual(await leftovers(srv, sid, /^sleep 30/), [], 'no sleep 30 is left in the session');
  });
  test('a call with a progressToken gets progress notifications carrying its output while it runs', async () => {
    const seen = [];
    const t0 = Date.now();
    const res = await srv.client.callTool(
      { name: 'run_command', arguments: { command: 'for i in 0 1 2 3; do echo "step $i"; sleep 1; done; sleep 3', session_id: sid } },
      undefined,
      { timeout: 60000, onprogress: (p) => seen.push({ ...p, at: Date.now() - t0 }) },
    );
    assert.ok(!res.isError, show(res));
    assert.equal(res.structuredContent.stdout, 'step 0\nstep 1\nstep 2\nstep 3\n');
    assert.ok(seen.length >= 4, `at least 4 progress notifications in 7 s: ${JSON.stringify(seen)}`);
    assert.ok(seen.some((p) => /^\d+\.\d s: step [0-3]$/.test(p.message ?? '')), `messages carry output lines: ${JSON.stringify(seen)}`);
    assert.ok(seen.some((p) => /^\d+\.\d s$/.test(p.message ?? '') && p.at > 4500), `quiet periods still tick: ${JSON.stringify(seen)}`);
    assert.ok(seen[0].at < 2000, `the first came while the command ran (${seen[0].at} ms)`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress, 'progress grows');
  });
});
