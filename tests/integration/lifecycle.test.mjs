// Several servers against one engine: a server that starts removes what a
// dead instance left behind, never what a live instance or a persistent
// session owns; a persistent session is adopted by the next server; a server
// whose stdin ends removes its own non-persistent containers before it exits;
// a server killed alone has its janitor do that exit for it.
//
// The servers use the machine's normal lock directory (XDG_RUNTIME_DIR or
// /tmp/sandbox-mcp-<uid>): with a private one, server C would take every
// other live instance on this engine for dead.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import {
  sleep, Server, suite, requireEngine, cleanup, inspectContainer, containerExists, containersOfInstance, poolFilled,
  janitorPidOf,
} from '../lib/harness.mjs';

const ENV = { SANDBOX_TIMEOUT_S: 30, SANDBOX_IDLE_TTL_S: 0 };

describe('instances, dead-instance cleanup and persistent sessions', suite({ timeout: 180000 }), () => {
  let A;
  let B;
  let C;
  let a; // A's non-persistent session
  let b; // B's non-persistent session
  let p; // A's persistent session

  before(async () => {
    requireEngine();
    [A, B] = await Promise.all([Server.start('A', ENV), Server.start('B', ENV)]);
    assert.notEqual(A.instance, B.instance, 'each server has its own instance id');
    [a, b] = await Promise.all([A.createSession({ name: 'a' }), B.createSession({ name: 'b' })]);
    p = await A.createSession({ persistent: true });
    assert.equal(p.persistent, true);
    await A.sh('echo from-A > /workspace/mark', { session_id: p.session_id });
  });

  after(async () => {
    // close P through a live server if a test failed before doing it; cleanup() removes leftovers
    if (C?.alive && p && await containerExists(p.container_id)) {
      await C.call('session_close', { session_id: p.session_id }).catch(() => {});
    }
    await cleanup();
  });

  test('labels: instance, session and persistent on every container', async () => {
    for (const [srv, s, persistent] of [[A, a, 'false'], [B, b, 'false'], [A, p, 'true']]) {
      const labels = (await inspectContainer(s.container_id)).Config.Labels;
      assert.equal(labels['io.sandbox-mcp.instance'], srv.instance);
      assert.equal(labels['io.sandbox-mcp.session'], s.session_id);
      assert.equal(labels['io.sandbox-mcp.persistent'], persistent);
    }
    // besides their sessions, each server holds its warm pool (SANDBOX_POOL_SIZE, 2 by default), full by now
    const [poolA, poolB] = await Promise.all([poolFilled(A, 2), poolFilled(B, 2)]);
    assert.deepEqual((await containersOfInstance(A.instance)).sort(), [a.container_id, p.container_id, ...poolA].sort());
    assert.deepEqual((await containersOfInstance(B.instance)).sort(), [b.container_id, ...poolB].sort());
  });

  test('SIGKILL A and its janitor, start C: A\'s non-persistent container goes, B\'s stays, P is adopted', async () => {
    await A.kill('SIGKILL', { withJanitor: true });
    assert.equal(A.exit.signal, 'SIGKILL');
    assert.ok(await containerExists(a.container_id), 'a killed server cannot clean up: its container is still there');

    C = await Server.start('C', ENV);
    // C scans the engine off its read loop; session tools wait for that scan, so once
    // session_list answered, the clean-up and the adoption are done
    const { sessions } = await C.ok('session_list');
    assert.equal(await containerExists(a.container_id), false,
      `C removed dead A's non-persistent container ${a.container_id.slice(0, 12)}; C stderr: ${C.stderrTail}`);
    assert.ok(await containerExists(b.container_id), 'C left live B\'s container alone');
    const pInfo = await inspectContainer(p.container_id);
    assert.ok(pInfo, 'C left the persistent session\'s container alone');
    assert.equal(pInfo.State.Running, true, 'P is running');

    const adopted = sessions.find((s) => s.session_id === p.session_id);
    assert.ok(adopted, `C's session_list shows P ${p.session_id}: ${JSON.stringify(sessions)}`);
    assert.equal(adopted.persistent, true);
    assert.equal(adopted.container_id, p.container_id);
    assert.equal(adopted.state, 'running');
    assert.ok(!sessions.some((s) => s.session_id === b.session_id), 'C does not adopt B\'s session');
    assert.ok(!sessions.some((s) => s.session_id === a.session_id), 'C does not list A\'s removed session');

    const st = await C.sh('echo hello-from-C; cat /workspace/mark', { session_id: p.session_id });
    assert.equal(st.stdout, 'hello-from-C\nfrom-A\n', 'P runs commands through C and kept its files');
  });

  test('B still works, and on stdin EOF removes its containers before it exits', async () => {
    const st = await B.sh('echo alive', { session_id: b.session_id });
    assert.equal(st.stdout, 'alive\n');
    const exit = await B.endStdin(30000);
    assert.equal(exit.code, 0, `B exits 0 after EOF: ${JSON.stringify(exit)}; stderr: ${B.stderrTail}`);
    // checked right after the exit: nothing may be left to a later clean-up
    assert.equal(await containerExists(b.container_id), false,
      `B removed its container before exiting; stderr: ${B.stderrTail}`);
    assert.deepEqual(await containersOfInstance(B.instance), [], 'nothing labelled with B\'s instance is left');
    assert.ok(await containerExists(p.container_id), 'B did not touch P');
  });

  test('closing P through C removes it', async () => {
    const st = await C.ok('session_close', { session_id: p.session_id });
    assert.equal(st.closed, true);
    assert.equal(await containerExists(p.container_id), false, 'P\'s container is gone');
    const { sessions } = await C.ok('session_list');
    assert.ok(!sessions.some((s) => s.session_id === p.session_id), 'C no longer lists P');
    assert.deepEqual(await containersOfInstance(A.instance), [], 'nothing labelled with A\'s instance is left');
  });
});

describe('a killed server\'s janitor', suite({ timeout: 180000 }), () => {
  after(async () => {
    await cleanup();
  });

  test('SIGKILL J alone: its janitor removes its session and pool, leaves Q for the next server', async () => {
    const J = await Server.start('J', ENV);
    const j = await J.createSession({ name: 'j' });
    const q = await J.createSession({ persistent: true });
    await J.sh('echo from-J > /workspace/mark', { session_id: q.session_id });
    const pool = await poolFilled(J, 2);
    await J.kill('SIGKILL');

    // no other server runs for J's instance: only its janitor can remove them
    let left = [j.container_id, ...pool];
    for (let i = 0; i < 150 && left.length; i++) {
      await sleep(200);
      left = (await Promise.all(left.map(async (id) => ((await containerExists(id)) ? id : null)))).filter(Boolean);
    }
    assert.deepEqual(left, [], `J's janitor removed its session and pool members within 30 s`);
    assert.deepEqual(await containersOfInstance(J.instance), [q.container_id], 'only the persistent session is left');
    assert.equal((await inspectContainer(q.container_id)).State.Running, true, 'Q still runs');

    // the janitor left J's lock alone: the next server proves J dead through it and adopts Q
    const L = await Server.start('L', ENV);
    const { sessions } = await L.ok('session_list');
    assert.ok(sessions.some((x) => x.session_id === q.session_id), `L adopted Q: ${JSON.stringify(sessions)}`);
    const st = await L.sh('cat /workspace/mark', { session_id: q.session_id });
    assert.equal(st.stdout, 'from-J\n');
    await L.ok('session_close', { session_id: q.session_id });
    assert.equal(await containerExists(q.container_id), false);
  });

  test('the janitor holds no file of the client\'s but its stdio and its pipe', async () => {
    // a client that hands the server one more pipe (fd 3) must see its EOF when the server ends
    const child = spawn(process.env.SANDBOX_MCP_BIN, [], { stdio: ['pipe', 'pipe', 'pipe', 'pipe'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const jpid = await janitorOf(child);
      const extra = readlinkSync(`/proc/${child.pid}/fd/3`);
      const links = fdLinks(jpid);
      assert.ok(!Object.values(links).includes(extra), `the janitor let go of the client's ${extra}: ${JSON.stringify(links)}`);
      assert.equal(Object.keys(links).length, 4, `stdin, stdout, stderr and the server's pipe: ${JSON.stringify(links)}`);
    } finally {
      child.stdin.end();
      await exited;
    }
  });

  test('a server started with stdin and stdout closed still has its janitor', async () => {
    // a daemon's way (HTTP mode): the pipe must not land on fd 0 or 1, where the janitor's /dev/null goes
    const port = await freePort();
    const child = spawn('sh', ['-c', 'exec "$0" serve --http "$1" <&- >&-', process.env.SANDBOX_MCP_BIN,
      `127.0.0.1:${port}`], { stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise((resolve) => child.once('exit', (code, sig) => resolve({ code, sig })));
    try {
      const jpid = await janitorOf(child);
      await sleep(300); // a janitor whose pipe was replaced by /dev/null reads EOF at once and ends
      const links = fdLinks(jpid);
      assert.ok(Object.keys(links).length > 0, 'the janitor still runs');
      assert.deepEqual([links[0], links[1]], ['/dev/null', '/dev/null'], JSON.stringify(links));
      assert.ok(Object.entries(links).some(([fd, l]) => Number(fd) > 2 && l.startsWith('pipe:')),
        `its pipe is above stderr: ${JSON.stringify(links)}`);
    } finally {
      child.kill('SIGTERM');
      const { code } = await exited;
      assert.equal(code, 0, 'the server ended cleanly on SIGTERM');
    }
  });
});

/** The pid of child's janitor; waits up to 5 s. */
async function janitorOf(child) {
  for (let i = 0; i < 100; i++) {
    const pid = janitorPidOf(child.pid);
    if (pid) return pid;
    await sleep(50);
  }
  assert.fail(`server ${child.pid} forked no janitor`);
}

/** What each open fd of pid names ({} when pid is gone). */
function fdLinks(pid) {
  const links = {};
  let fds = [];
  try { fds = readdirSync(`/proc/${pid}/fd`); } catch { return links; }
  for (const fd of fds) {
    try { links[fd] = readlinkSync(`/proc/${pid}/fd/${fd}`); } catch { /* closed meanwhile */ }
  }
  return links;
}

/** A free port on 127.0.0.1 (the kernel's pick, released for the server). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
