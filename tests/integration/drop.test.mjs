// file_upload and file_download through the drop (docs/agent.md "Transfers
// through the drop"): the bytes move with the engine's archive API (the
// engine's events show extract-to-dir and archive-path, and no exec of a
// tar) into and out of a secret slot of /.sandbox-mcp/drop, and the agent
// moves them as the sandbox user: owner, modes and mtimes as before, /tmp
// (a tmpfs: the agent's copy path), overwrite and its refusal. The sandbox
// cannot list, touch or rename the drop, and no result or log line names a
// slot. A killed agent, a read_only session and a pool member transfer the
// same way.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import {
  mkdtempSync, mkdirSync, writeFileSync, readFileSync, statSync, utimesSync, chmodSync, rmSync, truncateSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Server, suite, requireEngine, cleanup, docker, show, PODMAN, poolFilled,
} from '../lib/harness.mjs';

const sha256 = (b) => createHash('sha256').update(b).digest('hex');
const doctor = spawnSync(process.env.SANDBOX_MCP_BIN ?? 'sandbox-mcp', ['doctor'], { encoding: 'utf8', timeout: 30000 });
const noAgent = /built without the in-sandbox agent/.test(doctor.stdout ?? '') && process.env.SANDBOX_TEST_MUST_WORK !== '1'
  ? 'this sandbox-mcp was built without the agent (no musl-gcc)' : false;
// an mtime in the past, whole seconds (tar keeps seconds)
const MTIME = 1500000000;

/** The engine's events for container cid from since (unix seconds) to now, as "Action" lines. */
async function eventsSince(cid, since) {
  const until = (Date.now() / 1000 + 1).toFixed(3);
  const ev = await docker(['events', '--since', since, '--until', until, '--filter', `container=${cid}`,
    '--format', '{{.Action}}']);
  assert.equal(ev.code, 0, ev.stderr);
  return ev.stdout.split('\n').filter(Boolean);
}

/** Asserts the transfer took the exec path: a tar exec'd (Podman: an exec that ended during the call). */
function viaExec(events, what) {
  assert.equal(events.drops, 0, `${what}: the server logged no transfer through the drop`);
  if (PODMAN) {
    assert.ok(events.includes('exec_died'), `${what}: an exec ran and ended (${events.join(', ')})`);
    return;
  }
  assert.ok(!events.includes('extract-to-dir'), `${what}: no archive PUT (${events.join(', ')})`);
  // the script's lines are lines of the events' output
  assert.ok(foreignExecs(events).length > 0 && events.join('\n').includes('exec tar -x'), `${what}: the exec'd tar: ${events.join(', ')}`);
}

/** Transfers the tracked servers logged as going through the drop, so far. */
let dropLines = 0;

/** Counts server's "... through the drop (...)" log lines into dropLines; returns server. */
function trackDrops(server) {
  let partial = '';
  server.transport.stderr.on('data', (d) => {
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop();
    dropLines += lines.filter((l) => /(upload|download) through the drop \(/.test(l)).length;
  });
  return server;
}

/**
 * Runs fn and returns the engine's events of cid meanwhile; events.drops is how many
 * transfers the tracked servers logged as going through the drop meanwhile.
 */
async function during(cid, fn) {
  const since = (Date.now() / 1000 - 0.05).toFixed(3);
  const before = dropLines;
  const value = await fn();
  const events = await eventsSince(cid, since);
  events.drops = dropLines - before;
  return { value, events };
}

/** exec_create events of anything but the agent itself (a restarted agent is one) or this test's own docker execs. */
function foreignExecs(events) {
  // the agent's own execs are not (its loop, --walker, --connect); `agent --guard PROG` runs PROG
  return events.filter((a) => a.startsWith('exec_create') && !/\/\.sandbox-mcp\/agent(?! --guard)/.test(a) &&
    !/^exec_create: (kill|find|ls|stat|chmod|ps) /.test(a));
}

/**
 * Asserts the transfer went through the archive API: the server says so, the engine's action
 * seen, no exec of a tar, no pause. Podman's events name neither archive calls nor an exec's
 * command (and report a killed exec late): there the server's word is the proof.
 */
function viaDrop(events, action, what) {
  assert.equal(events.drops, 1, `${what}: the server logged one transfer through the drop`);
  if (PODMAN) return;
  assert.ok(events.includes(action), `${what}: the engine's ${action} event (${events.join(', ')})`);
  assert.deepEqual(foreignExecs(events), [], `${what}: no exec_create of a script (${events.join(', ')})`);
  assert.ok(!events.includes('pause'), `${what}: the container was not paused`);
}

describe('transfers through the drop', suite({ timeout: 300000, skip: noAgent }), () => {
  let srv;
  let sid;
  let cid;
  let base;
  let allowed;
  const results = []; // every tool result of this file, as JSON text, for the slot-name check

  async function rec(name, args, kind = 'ok', code) {
    const res = await srv.call(name, args);
    results.push(JSON.stringify(res));
    if (kind === 'ok') {
      assert.ok(!res.isError, `${name} failed: ${show(res)}`);
      return res.structuredContent;
    }
    assert.equal(res.isError, true, `${name} must fail: ${show(res)}`);
    assert.equal(res.structuredContent?.error?.code, code, show(res));
    return res.structuredContent;
  }

  /** A host tree: dir/ (0750) with a (0640, MTIME), sub/b (0755) and 1 MiB of random bytes. */
  function hostTree(name) {
    const top = join(allowed, name);
    mkdirSync(join(top, 'sub'), { recursive: true });
    writeFileSync(join(top, 'a.txt'), 'alpha\n');
    chmodSync(join(top, 'a.txt'), 0o640);
    writeFileSync(join(top, 'sub', 'b.sh'), '#!/bin/sh\necho b\n');
    chmodSync(join(top, 'sub', 'b.sh'), 0o755);
    const data = randomBytes(1 << 20);
    writeFileSync(join(top, 'sub', 'r.bin'), data);
    utimesSync(join(top, 'a.txt'), MTIME, MTIME);
    chmodSync(top, 0o750);
    return { top, data };
  }

  before(async () => {
    requireEngine();
    base = mkdtempSync(join(tmpdir(), 'sandbox-drop-'));
    allowed = join(base, 'allowed');
    mkdirSync(allowed);
    srv = trackDrops(await Server.start('drop', {
      SANDBOX_TIMEOUT_S: 60, SANDBOX_HOST_DIRS: allowed, SANDBOX_LOG_LEVEL: 'info', SANDBOX_MAX_UPLOAD_MB: 1024,
    }));
    const st = await srv.createSession({ name: 'drop' });
    sid = st.session_id;
    cid = st.container_id;
    // the agent up before any window: its own start is one exec
    await srv.sh('true', { session_id: sid });
  });

  after(async () => {
    await cleanup();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  test('an upload is an archive PUT and no exec; owner, modes and mtimes kept', async () => {
    const { data } = hostTree('up1');
    const { value: up, events } = await during(cid, () => rec('file_upload', { host_path: join(allowed, 'up1'), session_id: sid }));
    assert.equal(up.path, '/workspace/up1');
    assert.equal(up.files, 3);
    assert.equal(up.dirs, 2);
    viaDrop(events, 'extract-to-dir', 'file_upload');
    const st = await srv.sh('cd up1 && stat -c "%n %U:%G %a %Y" . a.txt sub sub/b.sh && sha256sum sub/r.bin && ./sub/b.sh',
      { session_id: sid });
    const lines = st.stdout.trim().split('\n');
    assert.equal(lines[0].replace(/ \d+$/, ''), '. sandbox:sandbox 750');
    assert.equal(lines[1], `a.txt sandbox:sandbox 640 ${MTIME}`);
    assert.equal(lines[2].replace(/ \d+$/, ''), 'sub sandbox:sandbox 755');
    assert.equal(lines[3].replace(/ \d+$/, ''), 'sub/b.sh sandbox:sandbox 755');
    assert.equal(lines[4].split(/\s+/)[0], sha256(data), 'the bytes arrive whole');
    assert.equal(lines[5], 'b');
  });

  test('a download is an archive GET and no exec; bytes and modes come back', async () => {
    mkdirSync(join(allowed, 'back'));
    const { value: down, events } = await during(cid, () => rec('file_download',
      { path: 'up1', host_dir: join(allowed, 'back'), session_id: sid }));
    viaDrop(events, 'archive-path', 'file_download');
    assert.equal(down.files, 3);
    assert.equal(down.dirs, 1, 'the folders below the top one, as the exec path counts them');
    assert.deepEqual(down.skipped, []);
    assert.equal(sha256(readFileSync(join(allowed, 'back', 'up1', 'sub', 'r.bin'))),
      sha256(readFileSync(join(allowed, 'up1', 'sub', 'r.bin'))));
    assert.equal(statSync(join(allowed, 'back', 'up1', 'a.txt')).mtimeMs, MTIME * 1000, 'the mtime comes back');
    // one file, under its own name
    mkdirSync(join(allowed, 'back1'));
    const { value: one, events: ev1 } = await during(cid, () => rec('file_download',
      { path: '/workspace/up1/a.txt', host_dir: join(allowed, 'back1'), session_id: sid }));
    viaDrop(ev1, 'archive-path', 'file_download of a file');
    assert.equal(one.files, 1);
    assert.equal(readFileSync(join(allowed, 'back1', 'a.txt'), 'utf8'), 'alpha\n');
  });

  test('upload into /tmp (a tmpfs: the agent copies) is visible inside, owned by the user', async () => {
    writeFileSync(join(allowed, 'tmpfile.txt'), 'into tmp\n');
    chmodSync(join(allowed, 'tmpfile.txt'), 0o604);
    const { value: up, events } = await during(cid, () => rec('file_upload',
      { host_path: join(allowed, 'tmpfile.txt'), path: '/tmp/deep/tmpfile.txt', session_id: sid }));
    viaDrop(events, 'extract-to-dir', 'file_upload to /tmp');
    assert.equal(up.path, '/tmp/deep/tmpfile.txt');
    const st = await srv.sh('stat -f -c %T /tmp; stat -c "%U %a" /tmp/deep/tmpfile.txt; cat /tmp/deep/tmpfile.txt',
      { session_id: sid });
    assert.equal(st.stdout, 'tmpfs\nsandbox 604\ninto tmp\n');
    hostTree('tmptree');
    await rec('file_upload', { host_path: join(allowed, 'tmptree'), path: '/tmp/tree', session_id: sid });
    const t = await srv.sh('cd /tmp/tree && stat -c "%n %a %Y" a.txt sub/b.sh && wc -c < sub/r.bin', { session_id: sid });
    assert.equal(t.stdout, `a.txt 640 ${MTIME}\nsub/b.sh 755 ${t.stdout.split('\n')[1].split(' ')[2]}\n1048576\n`);
  });

  test('overwrite: false refuses with file_exists as before; overwrite replaces', async () => {
    writeFileSync(join(allowed, 'ow.txt'), 'second\n');
    await srv.ok('file_write', { path: 'ow.txt', content: 'first\n', session_id: sid });
    const f = await rec('file_upload', { host_path: join(allowed, 'ow.txt'), overwrite: false, session_id: sid },
      'fails', 'file_exists');
    assert.equal(f.error.message, '/workspace/ow.txt already exists: pass overwrite: true to replace it');
    assert.equal((await srv.sh('cat ow.txt', { session_id: sid })).stdout, 'first\n');
    await rec('file_upload', { host_path: join(allowed, 'ow.txt'), session_id: sid });
    assert.equal((await srv.sh('cat ow.txt', { session_id: sid })).stdout, 'second\n');
    // a folder over a folder merges, as tar -x does
    await srv.sh('mkdir -p up1/keep && echo kept > up1/keep/k', { session_id: sid });
    await rec('file_upload', { host_path: join(allowed, 'up1'), session_id: sid });
    assert.equal((await srv.sh('cat up1/keep/k up1/a.txt', { session_id: sid })).stdout, 'kept\nalpha\n');
    // the errors of a download are the exec path's
    mkdirSync(join(allowed, 'nf'));
    const nf = await rec('file_download', { path: 'nope', host_dir: join(allowed, 'nf'), session_id: sid },
      'fails', 'file_not_found');
    assert.match(nf.error.message, /^\/workspace\/nope does not exist in the sandbox/);
    const den = await rec('file_download', { path: '/etc/shadow', host_dir: join(allowed, 'nf'), session_id: sid },
      'fails', 'invalid_argument');
    assert.match(den.error.message, /permission denied: the sandbox user cannot read \/etc\/shadow/);
  });

  test('the sandbox cannot list, touch, rename or replace the drop', async () => {
    const st = await srv.ok('run_command', {
      command: 'stat -c "%U %a" /.sandbox-mcp/drop; ls /.sandbox-mcp/drop >/dev/null 2>&1 && echo listed; ' +
        'touch /.sandbox-mcp/drop/x 2>/dev/null && echo touched; mv /.sandbox-mcp/drop /.sandbox-mcp/d2 2>/dev/null && echo moved; ' +
        'mkdir /.sandbox-mcp/drop/y 2>/dev/null && echo made; ln -s /etc /.sandbox-mcp/drop/z 2>/dev/null && echo linked; echo end',
      session_id: sid,
    });
    assert.equal(st.stdout, 'root 711\nend\n', show(st));
  });

  test('a killed agent: the next transfer still goes through the drop', async () => {
    const ps = await docker(['exec', cid, 'ps', '-eo', 'pid,args']);
    const pids = ps.stdout.split('\n').filter((l) => /\/\.sandbox-mcp\/agent$/.test(l.trim())).map((l) => l.trim().split(/\s+/)[0]);
    assert.equal(pids.length, 1, ps.stdout);
    await docker(['exec', cid, 'kill', '-KILL', pids[0]]);
    writeFileSync(join(allowed, 'after-kill.txt'), 'still\n');
    const { events } = await during(cid, () => rec('file_upload', { host_path: join(allowed, 'after-kill.txt'), session_id: sid }));
    viaDrop(events, 'extract-to-dir', 'file_upload after the agent was killed');
    mkdirSync(join(allowed, 'ak'));
    await rec('file_download', { path: 'after-kill.txt', host_dir: join(allowed, 'ak'), session_id: sid });
    assert.equal(readFileSync(join(allowed, 'ak', 'after-kill.txt'), 'utf8'), 'still\n');
  });

  test('a read_only session transfers through the drop in the agent volume (Podman: the exec path)', async () => {
    const ro = await srv.createSession({ read_only: true });
    await srv.sh('true', { session_id: ro.session_id });
    writeFileSync(join(allowed, 'ro.txt'), 'read only\n');
    const { events } = await during(ro.container_id, () => rec('file_upload',
      { host_path: join(allowed, 'ro.txt'), session_id: ro.session_id }));
    if (PODMAN) {
      // the agent volume is handed to the container's user there: dropcheck refuses, tar does it
      viaExec(events, 'file_upload in a read_only session on Podman');
    } else {
      viaDrop(events, 'extract-to-dir', 'file_upload in a read_only session');
    }
    assert.equal((await srv.sh('cat ro.txt', { session_id: ro.session_id })).stdout, 'read only\n');
    mkdirSync(join(allowed, 'ro-back'));
    const { events: ev2 } = await during(ro.container_id, () => rec('file_download',
      { path: 'ro.txt', host_dir: join(allowed, 'ro-back'), session_id: ro.session_id }));
    if (!PODMAN) viaDrop(ev2, 'archive-path', 'file_download in a read_only session');
    assert.equal(readFileSync(join(allowed, 'ro-back', 'ro.txt'), 'utf8'), 'read only\n');
  });

  test('a pool member transfers through the drop', async () => {
    const P = trackDrops(await Server.start('drop-pool', { SANDBOX_TIMEOUT_S: 60, SANDBOX_HOST_DIRS: allowed, SANDBOX_POOL_SIZE: 1 }));
    const ids = await poolFilled(P, 1);
    const s = await P.createSession({ name: 'drop-pooled' });
    assert.ok(ids.includes(s.container_id), 'the session is the pool member');
    writeFileSync(join(allowed, 'pooled.txt'), 'pooled\n');
    const { value: res, events } = await during(s.container_id, () => P.call('file_upload',
      { host_path: join(allowed, 'pooled.txt'), session_id: s.session_id }));
    results.push(JSON.stringify(res));
    assert.ok(!res.isError, show(res));
    viaDrop(events, 'extract-to-dir', 'file_upload in a pool member');
    assert.equal((await P.sh('cat pooled.txt', { session_id: s.session_id })).stdout, 'pooled\n');
    await P.close();
  });

  test('a drop that fails the agent\'s check: the exec path, for the whole session', async () => {
    const ex = await srv.createSession({ name: 'drop-unusable' });
    await srv.sh('true', { session_id: ex.session_id });
    // group- and other-writable: a user could swap what is in it, so dropcheck refuses it
    const chm = await docker(['exec', '-u', '0', ex.container_id, 'chmod', '777', '/.sandbox-mcp/drop']);
    assert.equal(chm.code, 0, chm.stderr);
    writeFileSync(join(allowed, 'ex.txt'), 'exec path\n');
    for (let i = 0; i < 2; i++) {
      const { events } = await during(ex.container_id, () => rec('file_upload',
        { host_path: join(allowed, 'ex.txt'), session_id: ex.session_id }));
      viaExec(events, 'file_upload with a drop that fails the check');
    }
    assert.equal((await srv.sh('cat ex.txt', { session_id: ex.session_id })).stdout, 'exec path\n');
    assert.match(srv.stderrTail, /the drop is not usable/, 'the log says why');
  });

  test('a cancelled upload leaves nothing in the drop; the next one works', async (t) => {
    const big = join(allowed, 'big.bin');
    writeFileSync(big, '');
    truncateSync(big, 480 * 2 ** 20); // 480 MiB of zeros (under this server's 1 GiB limit): a second or more
    const ac = new AbortController();
    const call = srv.call('file_upload', { host_path: big, path: '/workspace/big.bin', session_id: sid },
      { signal: ac.signal, timeoutMs: 120000 });
    setTimeout(() => ac.abort(), 200);
    const outcome = await call.then((r) => `finished: ${show(r)}`, (e) => `aborted: ${e.message}`);
    assert.match(outcome, /^(aborted|finished)/);
    t.diagnostic(outcome.slice(0, 120));
    // the server empties the slot after the cancelled PUT; wait for it, without racing a timer
    let left = 'unchecked';
    for (let i = 0; i < 100 && left !== ''; i++) {
      const f = await docker(['exec', '-u', '0', cid, 'find', '/.sandbox-mcp/drop', '-mindepth', '2']);
      left = f.stdout;
      if (left) await new Promise((r) => { setTimeout(r, 200); });
    }
    assert.equal(left, '', `the slot was emptied (${outcome.slice(0, 200)})`);
    rmSync(big);
    writeFileSync(join(allowed, 'after-cancel.txt'), 'after\n');
    const { events } = await during(cid, () => rec('file_upload', { host_path: join(allowed, 'after-cancel.txt'), session_id: sid }));
    viaDrop(events, 'extract-to-dir', 'file_upload after a cancelled one');
    assert.equal((await srv.sh('cat after-cancel.txt; rm -f big.bin', { session_id: sid })).stdout, 'after\n');
  });

  test('a container removed behind the server\'s back: session_not_found, as on the exec path', async () => {
    const g = await srv.createSession({ name: 'drop-gone' });
    writeFileSync(join(allowed, 'gone.txt'), 'gone\n');
    await rec('file_upload', { host_path: join(allowed, 'gone.txt'), session_id: g.session_id });
    const rm = await docker(['rm', '-f', g.container_id]);
    assert.equal(rm.code, 0, rm.stderr);
    const f = await rec('file_upload', { host_path: join(allowed, 'gone.txt'), session_id: g.session_id },
      'fails', 'session_not_found');
    assert.match(f.error.message, /is gone .*the session was dropped/);
    mkdirSync(join(allowed, 'gone-back'));
    await rec('file_download', { path: 'gone.txt', host_dir: join(allowed, 'gone-back'), session_id: g.session_id },
      'fails', 'session_not_found');
  });

  test('a download of /proc/self/fd (stage\'s own fds, links into the slot) names no slot', async () => {
    // stage holds the slot open while it walks: its /proc/self/fd links name the slot, and a skipped
    // link's target is shown to the caller; knowing the slot, the sandbox could swap <slot>/f for a
    // symlink to /etc between stage and the GET, and the engine (root) would read /etc/shadow
    for (const path of ['/proc/self/fd', '/proc/self']) {
      const to = join(allowed, `proc${path.length}`);
      mkdirSync(to);
      const down = await rec('file_download', { path, host_dir: to, session_id: sid });
      assert.ok(down.skipped.length >= 3, `the fd links are skipped: ${JSON.stringify(down.skipped).slice(0, 300)}`);
      assert.doesNotMatch(JSON.stringify(down), /sandbox-mcp\/drop/, 'no skipped entry leads into the drop');
    }
  });

  test('an agent is non-dumpable from its exec on: its binary is execute-only for the user', async () => {
    // the agent learns slot names and makes itself non-dumpable (prctl) at start; between its exec and
    // that call a process of the user spinning PTRACE_SEIZE on the next pid attached to it (and stays
    // attached past the prctl). The kernel makes a process non-dumpable at the exec of a file its user
    // cannot read: here an agent that never reaches the prctl (--idle) shows it
    const st = await srv.ok('run_command', {
      command: '[ -r /.sandbox-mcp/agent ] && echo readable; /.sandbox-mcp/agent --idle & p=$!; sleep 0.3; ' +
        'ls /proc/$p/fd >/dev/null 2>&1 && echo dumpable; stat -c %U /proc/$p/environ; kill $p; echo end',
      session_id: sid,
    });
    assert.equal(st.stdout, 'root\nend\n', show(st));
  });

  test('no result, error or info log line names a slot', async () => {
    const ls = await docker(['exec', '-u', '0', cid, 'ls', '/.sandbox-mcp/drop']);
    assert.equal(ls.code, 0, ls.stderr);
    const slots = ls.stdout.split('\n').filter(Boolean);
    assert.ok(slots.length >= 1 && slots.every((n) => /^[0-9a-f]{32}$/.test(n)), `slots: ${slots}`);
    const st = await docker(['exec', '-u', '0', cid, 'stat', '-c', '%U %a', `/.sandbox-mcp/drop/${slots[0]}`]);
    assert.equal(st.stdout.trim(), 'sandbox 700', 'a slot is the user\'s, 0700');
    const empty = await docker(['exec', '-u', '0', cid, 'find', '/.sandbox-mcp/drop', '-mindepth', '2']);
    assert.equal(empty.stdout, '', 'every slot was emptied');
    assert.ok(results.length > 10, `${results.length} results seen`);
    for (const slot of slots) {
      for (const r of results) assert.ok(!r.includes(slot), `a result names slot ${slot}: ${r.slice(0, 300)}`);
      assert.ok(!srv.stderrTail.includes(slot), 'the log names a slot');
    }
    for (const r of results) assert.doesNotMatch(r, /sandbox-mcp\/drop/, 'no result names the drop');
  });
});
