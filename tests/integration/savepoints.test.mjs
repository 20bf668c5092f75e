// Save points against the real engine (docs/checkpoints.md): a checkpoint
// and a rollback bring back files and pip packages and say what the
// interpreter lost; a rollback ends the command running on the session;
// forks are independent and all-or-nothing; lineage (a checkpoint of a
// checkpoint) exports and builds each state; the caps; pause and resume;
// idle snapshots brought back by name, by this server and the next; and
// nothing left behind after close, a failed fork or a killed server.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, suite, requireEngine, cleanup, show, docker, sleep } from '../lib/harness.mjs';
import { writePackage } from '../lib/packages.mjs';

const LABEL = 'io.sandbox-mcp.checkpoint';
const textOf = (res) => res.content.filter((b) => b.type === 'text').map((b) => b.text).join('\n');

/** Checkpoint images on the engine (tagged or waiting for their children) that were not there before these tests. */
let baseline = new Set();
async function checkpointImages() {
  const r = await docker(['images', '-aq', '--no-trunc', '--filter', `label=${LABEL}`]);
  return [...new Set(r.stdout.split('\n').filter(Boolean))].filter((id) => !baseline.has(id));
}

async function containersOfSession(sid) {
  const r = await docker(['ps', '-aq', '--filter', `label=io.sandbox-mcp.session=${sid}`]);
  return r.stdout.split('\n').filter(Boolean);
}

async function until(what, fn, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

describe('save points', suite({ timeout: 900000 }), () => {
  let srv;
  const madeImages = new Set();

  before(async () => {
    requireEngine();
    baseline = new Set(await checkpointImages());
    srv = await Server.start('savepoints', { SANDBOX_TIMEOUT_S: 120, SANDBOX_POOL_SIZE: 0 });
  });

  after(async () => {
    await cleanup();
    for (const ref of madeImages) await docker(['rmi', '-f', ref], { timeoutMs: 120000 });
  });

  test('checkpoint and rollback: files and pip packages come back, the interpreter\'s loss is said', async () => {
    const sid = (await srv.createSession({ name: 'rb', env: { KEEP_ME: 'yes' } })).session_id;
    await srv.ok('file_write', { session_id: sid, path: 'notes.txt', content: 'before\n' });
    await writePackage(srv, sid, 'src/ckpkg', 'ckpkg', '1.0.0', 'from-checkpoint');
    await srv.ok('pip_install', { session_id: sid, packages: ['./src/ckpkg'] }, { timeoutMs: 120000 });
    for (const code of ['x = 41', 'y = x + 1']) assert.ok(!(await srv.call('run_python', { session_id: sid, code })).isError);
    const ck = await srv.ok('session_checkpoint', { session_id: sid, name: 'good' });
    assert.match(ck.checkpoint_id, /^[0-9a-f]{12}$/);
    assert.equal(ck.name, 'good');
    assert.equal(ck.cells, 2);
    assert.equal(ck.kind, 'manual');
    // damage: a file changed and one removed, the package uninstalled
    await srv.sh('echo after > notes.txt && rm -rf src && echo junk > junk.txt', { session_id: sid });
    await srv.ok('pip_uninstall', { session_id: sid, packages: ['ckpkg'] }, { timeoutMs: 120000 });
    const before = (await srv.ok('session_list', {})).sessions.find((x) => x.session_id === sid);

    const res = await srv.call('session_checkpoint', { session_id: sid, action: 'rollback', checkpoint: 'good' });
    assert.ok(!res.isError, show(res));
    assert.match(textOf(res), /run_python's variables are gone .*cells 1-2 defined them/);
    assert.equal(res.structuredContent.cells_lost, 2);
    console.log(`rollback took ${res.structuredContent.ms} ms`);
    const after = (await srv.ok('session_list', {})).sessions.find((x) => x.session_id === sid);
    assert.equal(after.name, 'rb', 'same name');
    assert.notEqual(after.container_id, before.container_id, 'a new container');
    assert.equal(after.checkpoint, ck.checkpoint_id);
    assert.equal(after.memory_mb, before.memory_mb);
    assert.deepEqual(await containersOfSession(sid), [after.container_id.slice(0, 12)], 'the old container is gone');
    const st = await srv.sh('cat notes.txt; test ! -e junk.txt && echo no-junk; echo $KEEP_ME; ' +
      'python3 -c "import ckpkg; print(ckpkg.__name__)"', { session_id: sid });
    assert.equal(st.stdout, 'before\nno-junk\nyes\nckpkg\n');
    // the interpreter started afresh
    const py = await srv.call('run_python', { session_id: sid, code: 'print(x)' });
    assert.match(textOf(py), /NameError/);
    // an unknown checkpoint, and another session's, are refused
    await srv.fails('session_checkpoint', { session_id: sid, action: 'rollback', checkpoint: 'nope' }, 'checkpoint_not_found');
    const other = (await srv.createSession({ name: 'other' })).session_id;
    const res2 = await srv.fails('session_checkpoint', { session_id: other, action: 'rollback', checkpoint: ck.checkpoint_id },
      'invalid_argument');
    assert.match(res2.error.message, /session_fork/);
    await srv.ok('session_close', { session_id: other });
  });

  test('a rollback ends the command running on its session, which gets a cancelled result', async () => {
    const sid = (await srv.createSession({ name: 'busy' })).session_id;
    await srv.ok('session_checkpoint', { session_id: sid, name: 'calm' });
    const running = srv.call('run_command', { session_id: sid, command: 'sleep 60; echo finished', timeout_s: 100 },
      { timeoutMs: 120000 });
    await sleep(1500);
    const t0 = Date.now();
    const rb = await srv.call('session_checkpoint', { session_id: sid, action: 'rollback', checkpoint: 'calm' });
    assert.ok(!rb.isError, show(rb));
    const cmd = await running;
    assert.ok(Date.now() - t0 < 20000, 'the rollback did not wait for the command');
    assert.equal(cmd.isError, true, show(cmd));
    assert.equal(cmd.structuredContent?.error?.code, 'cancelled', show(cmd));
    assert.match(textOf(cmd), /rollback of this session/);
    // two rollbacks at once are serialised: both succeed
    const [a, b] = await Promise.all([
      srv.call('session_checkpoint', { session_id: sid, action: 'rollback', checkpoint: 'calm' }),
      srv.call('session_checkpoint', { session_id: sid, action: 'rollback', checkpoint: 'calm' }),
    ]);
    assert.ok(!a.isError && !b.isError, show(a) + show(b));
    assert.equal((await containersOfSession(sid)).length, 1);
    await srv.sh('true', { session_id: sid });
    await srv.ok('session_close', { session_id: sid });
  });

  test('fork: N independent sessions named <name>-i, from the live session or a checkpoint', async () => {
    const sid = (await srv.createSession({ name: 'tree' })).session_id;
    await srv.sh('echo root > shared.txt', { session_id: sid });
    const res = await srv.call('session_fork', { session_id: sid, count: 3 });
    assert.ok(!res.isError, show(res));
    const forks = res.structuredContent.sessions;
    console.log(`fork of 3 took ${res.structuredContent.ms} ms`);
    assert.deepEqual(forks.map((f) => f.name), ['tree-1', 'tree-2', 'tree-3']);
    assert.equal(new Set(forks.map((f) => f.session_id)).size, 3);
    for (const [i, f] of forks.entries()) {
      const st = await srv.sh(`echo fork${i} >> shared.txt`, { session_id: f.session_id });
      // the agent came with the checkpoint's image (not copied in again) and runs the command
      assert.equal(typeof st.cpu_ms, 'number', JSON.stringify(st));
    }
    for (const [i, f] of forks.entries()) {
      const st = await srv.sh('cat shared.txt', { session_id: f.session_id });
      assert.equal(st.stdout, `root\nfork${i}\n`, 'a fork sees only its own write');
    }
    assert.equal((await srv.sh('cat shared.txt', { session_id: sid })).stdout, 'root\n', 'the parent sees none');
    // from the checkpoint the fork made, by id, with another name
    const more = await srv.ok('session_fork', { checkpoint: res.structuredContent.checkpoint_id, count: 1, name: 'leaf' });
    assert.equal(more.sessions[0].name, 'leaf-1');
    assert.equal((await srv.sh('cat shared.txt', { session_id: 'leaf-1' })).stdout, 'root\n');
    // taken names make the whole fork fail, with nothing made
    const n = (await srv.ok('session_list', {})).sessions.length;
    await srv.fails('session_fork', { session_id: sid, count: 2, name: 'leaf' }, 'invalid_argument');
    assert.equal((await srv.ok('session_list', {})).sessions.length, n);
    await srv.fails('session_fork', { session_id: sid, count: 17 }, 'invalid_argument');
    for (const f of [...forks, ...more.sessions]) await srv.ok('session_close', { session_id: f.session_id });
    await srv.ok('session_close', { session_id: sid });
  });

  test('lineage: a checkpoint of a checkpoint; each exports and builds its own files', async () => {
    const sid = (await srv.createSession({ name: 'line' })).session_id;
    await srv.sh('echo one > a.txt', { session_id: sid });
    const c1 = await srv.ok('session_checkpoint', { session_id: sid, name: 'one' });
    await srv.sh('echo two > b.txt', { session_id: sid });
    const c2 = await srv.ok('session_checkpoint', { session_id: sid, name: 'two' });
    assert.equal(c2.parent ?? null, null, 'both taken of the live session made from the base image');
    // a session rolled back to c1 takes c3 with c1 as its parent
    await srv.ok('session_checkpoint', { session_id: sid, action: 'rollback', checkpoint: 'one' });
    await srv.sh('echo three > c.txt', { session_id: sid });
    const c3 = await srv.ok('session_checkpoint', { session_id: sid, name: 'three' });
    assert.equal(c3.parent, c1.checkpoint_id);
    const list = (await srv.ok('session_checkpoint', { action: 'list' })).checkpoints;
    const mine = list.filter((c) => c.session_id === sid).map((c) => c.name);
    assert.deepEqual(mine, ['one', 'two', 'three']);
    assert.deepEqual(list.find((c) => c.name === 'one').sessions, [sid], 'the session made from it');
    assert.ok(list.every((c) => c.size >= 0 && c.created > 0));
    for (const [c, files] of [[c1, ['a.txt']], [c2, ['a.txt', 'b.txt']], [c3, ['a.txt', 'c.txt']]]) {
      const ex = await srv.ok('session_export', { checkpoint: c.checkpoint_id, build: true }, { timeoutMs: 300000 });
      assert.equal(ex.checkpoint_id, c.checkpoint_id);
      assert.equal(ex.base_image, 'sandbox-mcp-python:latest', 'FROM the lineage\'s base');
      madeImages.add(ex.reference);
      const s2 = (await srv.createSession({ image: ex.reference })).session_id;
      const st = await srv.sh('ls *.txt', { session_id: s2 });
      assert.deepEqual(st.stdout.trim().split('\n'), files, `export of ${c.name}`);
      await srv.ok('session_close', { session_id: s2 });
    }
    // the transient sessions of the exports are gone
    assert.equal((await srv.ok('session_list', {})).sessions.filter((x) => !x.name).length, 0);
    await srv.ok('session_checkpoint', { action: 'delete', checkpoint: c2.checkpoint_id });
    await srv.fails('session_fork', { checkpoint: c2.checkpoint_id }, 'checkpoint_not_found');
    await srv.ok('session_close', { session_id: sid });
  });

  test('read-only sessions are refused with the reason, not checkpointed without their files', async () => {
    const sid = (await srv.createSession({ read_only: true })).session_id;
    const r = await srv.fails('session_checkpoint', { session_id: sid }, 'invalid_argument');
    assert.match(r.error.message, /read-only root: its workspace is a volume/);
    await srv.fails('session_fork', { session_id: sid }, 'invalid_argument');
    await srv.ok('session_close', { session_id: sid });
  });

  test('pause freezes a session, a call resumes it', async () => {
    const sid = (await srv.createSession({ name: 'nap' })).session_id;
    const p = await srv.ok('session_pause', { session_id: sid });
    assert.equal(p.paused, true);
    const cid = (await srv.ok('session_list', {})).sessions.find((x) => x.session_id === sid).container_id;
    const state = async () => (await docker(['inspect', '-f', '{{.State.Paused}}', cid])).stdout.trim();
    assert.equal(await state(), 'true');
    const listed = (await srv.ok('session_list', {})).sessions.find((x) => x.session_id === sid);
    assert.equal(listed.state, 'paused');
    assert.equal((await srv.sh('echo awake', { session_id: sid })).stdout, 'awake\n');
    assert.equal(await state(), 'false');
    await srv.ok('session_pause', { session_id: sid });
    assert.equal((await srv.ok('session_pause', { session_id: sid, action: 'resume' })).paused, false);
    assert.equal(await state(), 'false');
    await srv.ok('session_close', { session_id: sid });
  });

  test('cleanup: closing sessions removes their checkpoints; forks keep theirs until they close', async () => {
    const sid = (await srv.createSession({ name: 'tidy' })).session_id;
    const c = await srv.ok('session_checkpoint', { session_id: sid });
    const f = (await srv.ok('session_fork', { checkpoint: c.checkpoint_id })).sessions[0];
    const busy = await srv.fails('session_checkpoint', { action: 'delete', checkpoint: c.checkpoint_id }, 'invalid_argument');
    assert.match(busy.error.message, /close that session first/);
    await srv.ok('session_close', { session_id: sid });
    assert.ok((await srv.ok('session_checkpoint', { action: 'list' })).checkpoints.some((x) => x.checkpoint_id === c.checkpoint_id),
      'the fork still rests on it');
    await srv.ok('session_close', { session_id: f.session_id });
    const left = (await srv.ok('session_checkpoint', { action: 'list' })).checkpoints.filter((x) => x.session_id === sid);
    assert.deepEqual(left, []);
    // everything made by the tests above is gone once their sessions closed
    for (const x of (await srv.ok('session_list', {})).sessions) await srv.ok('session_close', { session_id: x.session_id });
    assert.deepEqual(await checkpointImages(), []);
  });
});

describe('save point caps and limits', suite({ timeout: 600000 }), () => {
  after(cleanup);

  test('per-session cap, fork past SANDBOX_MAX_SESSIONS: session_limit with nothing made', async () => {
    const srv = await Server.start('savepoint-caps', { SANDBOX_SESSION_CHECKPOINTS: 2, SANDBOX_MAX_SESSIONS: 3,
      SANDBOX_POOL_SIZE: 0 });
    const sid = (await srv.createSession({ name: 'capped' })).session_id;
    await srv.ok('session_checkpoint', { session_id: sid });
    await srv.ok('session_checkpoint', { session_id: sid });
    const r = await srv.fails('session_checkpoint', { session_id: sid }, 'too_large');
    assert.match(r.error.message, /SANDBOX_SESSION_CHECKPOINTS=2/);
    const images = (await checkpointImages()).length;
    const ck = (await srv.ok('session_checkpoint', { action: 'list' })).checkpoints[0].checkpoint_id;
    const lim = await srv.fails('session_fork', { checkpoint: ck, count: 3 }, 'session_limit');
    assert.match(lim.error.message, /SANDBOX_MAX_SESSIONS=3/);
    assert.equal((await srv.ok('session_list', {})).sessions.length, 1, 'no fork was listed');
    assert.equal((await docker(['ps', '-aq', '--filter', `label=io.sandbox-mcp.instance=${srv.instance}`])).stdout.trim().split('\n').length, 1,
      'no fork container was made');
    assert.equal((await checkpointImages()).length, images, 'no checkpoint was made for it');
    await srv.close();
    assert.deepEqual(await checkpointImages(), [], 'the exit removed them with the session');
  });

  test('per-principal caps: count across sessions, and bytes', async () => {
    // the caps count every checkpoint of the principal on the engine: a run that failed earlier may have
    // left some (an idle snapshot waits to be brought back), so the caps here are on top of those
    const probe = await Server.start('savepoint-caps-probe', { SANDBOX_POOL_SIZE: 0 });
    const prior = (await probe.ok('session_checkpoint', { action: 'list' })).checkpoints;
    await probe.close();
    const n0 = prior.length;
    const mb0 = Math.ceil(prior.reduce((a, c) => a + c.size, 0) / 1048576);
    const srv = await Server.start('savepoint-principal-caps', { SANDBOX_MAX_CHECKPOINTS: n0 + 2,
      SANDBOX_CHECKPOINT_MB: mb0 + 5, SANDBOX_POOL_SIZE: 0 });
    const a = (await srv.createSession({ name: 'a' })).session_id;
    const b = (await srv.createSession({ name: 'b' })).session_id;
    await srv.ok('session_checkpoint', { session_id: a });
    await srv.ok('session_checkpoint', { session_id: b });
    const count = await srv.fails('session_checkpoint', { session_id: a }, 'too_large');
    assert.match(count.error.message, new RegExp(`SANDBOX_MAX_CHECKPOINTS=${n0 + 2}`));
    // a deleted one frees its place; 8 MiB more written passes the bytes cap on the next
    const first = (await srv.ok('session_checkpoint', { action: 'list' })).checkpoints.find((c) => c.session_id === a)
      .checkpoint_id;
    await srv.ok('session_checkpoint', { action: 'delete', checkpoint: first });
    await srv.sh('head -c 8388608 /dev/urandom > big.bin', { session_id: a });
    const imgs = (await docker(['images', '-a', '--filter', `label=${LABEL}`, '--format', '{{.ID}} {{.Repository}}:{{.Tag}} {{.CreatedSince}}'])).stdout;
    const bigr = await srv.call('session_checkpoint', { session_id: a });
    assert.ok(!bigr.isError, `${show(bigr)}\n${imgs}`);
    const big = bigr.structuredContent;
    assert.ok(big.size > 8e6, JSON.stringify(big));
    await srv.ok('session_checkpoint', { action: 'delete', checkpoint: (await srv.ok('session_checkpoint', { action: 'list' })).checkpoints.find((c) => c.session_id === b).checkpoint_id });
    const bytes = await srv.fails('session_checkpoint', { session_id: b }, 'too_large');
    assert.match(bytes.error.message, new RegExp(`SANDBOX_CHECKPOINT_MB=${mb0 + 5}`));
    await srv.close();
    assert.deepEqual(await checkpointImages(), []);
  });

  test('a killed server\'s checkpoints are swept with its containers', async () => {
    const srv = await Server.start('savepoint-killed', { SANDBOX_POOL_SIZE: 0 });
    const sid = (await srv.createSession()).session_id;
    await srv.ok('session_checkpoint', { session_id: sid });
    await srv.ok('session_fork', { session_id: sid, count: 2 });
    assert.equal((await checkpointImages()).length, 2);
    await srv.kill('SIGKILL');
    // its janitor removes the containers, then the checkpoints nothing needs
    await until('the janitor sweeps the checkpoints', async () => (await checkpointImages()).length === 0, 60000);
  });

  test('snapshot on idle: the TTL checkpoints the session; naming it brings it back, here and in the next server', async () => {
    const env = { SANDBOX_IDLE_TTL_S: 2, SANDBOX_IDLE_SNAPSHOT: 1, SANDBOX_POOL_SIZE: 0 };
    const srv = await Server.start('savepoint-idle', env);
    const sleeper = `sleeper-${process.pid}`; // a run that failed may have left a snapshot of another
    const sid = (await srv.createSession({ name: sleeper })).session_id;
    await srv.ok('file_write', { session_id: sid, path: 'dream.txt', content: 'kept\n' });
    // the default session is closed without a snapshot: no server picks it up implicitly
    const def = (await srv.sh('echo planted > planted.txt')).session_id;
    assert.ok(!(await srv.call('run_python', { session_id: sid, code: 'z = 1' })).isError);
    await until('the idle TTL closes it', async () => (await containersOfSession(sid)).length === 0, 30000);
    await until('the default session closes too', async () => (await containersOfSession(def)).length === 0, 30000);
    assert.equal((await checkpointImages()).length, 1, 'its snapshot, none of the default session');
    const fresh = await srv.sh('cat planted.txt 2>/dev/null || echo absent');
    assert.notEqual(fresh.session_id, def);
    assert.equal(fresh.stdout, 'absent\n');
    const res = await srv.call('file_read', { session_id: sleeper, path: 'dream.txt' });
    assert.ok(!res.isError, show(res));
    assert.match(textOf(res), /brought back from its snapshot .*cells 1-1/);
    assert.match(textOf(res), /kept/);
    assert.equal((await srv.ok('session_list', {})).sessions.find((x) => x.name === sleeper)?.session_id, sid,
      'the same id');
    // a paused session is not closed for idleness
    await srv.ok('session_pause', { session_id: sid });
    await sleep(5000);
    assert.equal((await containersOfSession(sid)).length, 1, 'paused: still there');
    await srv.ok('session_pause', { session_id: sid, action: 'resume' });
    await until('idle again', async () => (await containersOfSession(sid)).length === 0, 30000);
    await srv.close();
    // the next server brings it back too
    const next = await Server.start('savepoint-idle-next', env);
    const again = await next.ok('run_command', { session_id: sid, command: 'cat dream.txt' });
    assert.equal(again.stdout, 'kept\n');
    await next.ok('session_close', { session_id: sid });
    assert.deepEqual(await checkpointImages(), [], 'closing it drops its snapshot');
    await next.close();
  });
});
