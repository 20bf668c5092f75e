// The real engine changed behind the server's back: a session's container
// killed or removed from outside (idle, and while a command runs), and the
// default image removed while the server runs. No crash, no hang, the next
// call says session_not_found or works in a new default session,
// session_list tells the truth, and no container is left behind.
//
// The engine itself is never restarted here (other suites use it at the same
// time), and the images other tests need are never removed: the image test
// tags debian:bookworm-slim under a name of its own and removes only that tag.
// Skips without an engine unless SANDBOX_TEST_MUST_WORK=1.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Server, suite, requireEngine, cleanup, docker, inspectContainer, containerExists, show, sleep,
} from '../lib/harness.mjs';

const ENV = { SANDBOX_TIMEOUT_S: 30, SANDBOX_IDLE_TTL_S: 0 };

/** The session_list entry of a session, or undefined. */
async function listed(srv, id) {
  const { sessions } = await srv.ok('session_list');
  return sessions.find((s) => s.session_id === id);
}

async function defaultSession(srv) {
  const { sessions } = await srv.ok('session_list');
  return sessions.find((s) => s.name === 'default');
}

/** Waits until docker reports the container stopped (or gone). */
async function waitStopped(id) {
  for (let i = 0; i < 50; i++) {
    const c = await inspectContainer(id);
    if (!c || !c.State.Running) return;
    await sleep(100);
  }
  throw new Error(`container ${id} still runs 5 s after docker kill`);
}

/** The container is removed by the server shortly after it dropped the session. */
async function waitRemoved(id) {
  for (let i = 0; i < 50 && await containerExists(id); i++) await sleep(100);
  assert.equal(await containerExists(id), false, `the dropped session's container ${id.slice(0, 12)} was removed`);
}

describe('containers killed or removed from outside', suite({ timeout: 240000 }), () => {
  let srv;

  before(async () => {
    requireEngine();
    srv = await Server.start('outside', ENV);
  });

  after(async () => {
    // the server removed every container it dropped: nothing is left for cleanup to remove
    assert.deepEqual(await cleanup(), [], 'no container left behind');
  });

  for (const how of ['kill', 'rm -f']) {
    test(`docker ${how} of a named session: session_list tells, the next call is session_not_found, then it is gone`, async () => {
      const s = await srv.createSession({ name: `victim-${how === 'kill' ? 'k' : 'r'}` });
      await srv.sh('echo alive', { session_id: s.session_id });
      const r = await docker(how === 'kill' ? ['kill', s.container_id] : ['rm', '-f', s.container_id]);
      assert.equal(r.code, 0, `docker ${how}: ${r.stderr}`);
      await waitStopped(s.container_id);

      const before = await listed(srv, s.session_id);
      assert.ok(before, 'still listed before anything used it');
      assert.equal(before.state, how === 'kill' ? 'exited' : 'missing', `state: ${JSON.stringify(before)}`);

      const t0 = Date.now();
      const res = await srv.call('run_command', { command: 'echo hi', session_id: s.session_id });
      assert.equal(res.isError, true, show(res));
      assert.equal(res.structuredContent?.error?.code, 'session_not_found', show(res));
      assert.match(res.structuredContent.error.message, /without session_id|session_create/, show(res));
      assert.ok(Date.now() - t0 < 10000, `answered in ${Date.now() - t0} ms`);

      assert.equal(await listed(srv, s.session_id), undefined, 'no longer listed');
      await srv.fails('run_command', { command: 'true', session_id: s.session_id }, 'session_not_found');
      await waitRemoved(s.container_id);
    });

    test(`docker ${how} of the default session: one session_not_found, then a new default session works`, async () => {
      await srv.sh('echo one');
      const d = await defaultSession(srv);
      assert.ok(d, 'a default session exists');
      await docker(how === 'kill' ? ['kill', d.container_id] : ['rm', '-f', d.container_id]);
      await waitStopped(d.container_id);

      await srv.fails('run_command', { command: 'echo two' }, 'session_not_found');
      const st = await srv.sh('echo three');
      assert.equal(st.stdout, 'three\n');
      const d2 = await defaultSession(srv);
      assert.notEqual(d2.session_id, d.session_id, 'a new default session');
      assert.equal(d2.state, 'running');
      await waitRemoved(d.container_id);
    });
  }

  test('docker kill while a command runs: the call ends at once with session_not_found, not out_of_memory', async () => {
    const s = await srv.createSession({ name: 'busy-victim' });
    const pending = srv.call('run_command', { command: 'echo started; sleep 60', session_id: s.session_id });
    await sleep(1500);
    const t0 = Date.now();
    await docker(['kill', s.container_id]);
    const res = await pending;
    const ms = Date.now() - t0;
    assert.equal(res.isError, true, show(res));
    assert.equal(res.structuredContent?.error?.code, 'session_not_found', show(res));
    assert.equal(res.structuredContent.stdout, 'started\n', 'the output so far is kept');
    assert.ok(ms < 10000, `ended ${ms} ms after the kill`);
    assert.equal(await listed(srv, s.session_id), undefined, 'dropped from session_list');
    await waitRemoved(s.container_id);
    await srv.client.ping({ timeout: 5000 });
  });

  test('docker rm -f while a command runs: the call ends with a clear error and the server goes on', async () => {
    const s = await srv.createSession({ name: 'busy-removed' });
    const pending = srv.call('run_command', { command: 'sleep 60', session_id: s.session_id });
    await sleep(1500);
    const t0 = Date.now();
    await docker(['rm', '-f', s.container_id]);
    const res = await pending;
    assert.ok(Date.now() - t0 < 10000, `ended ${Date.now() - t0} ms after the removal`);
    assert.equal(res.isError, true, show(res));
    assert.equal(res.structuredContent?.error?.code, 'session_not_found', show(res));
    assert.equal(await listed(srv, s.session_id), undefined, 'dropped from session_list');
    const again = await srv.createSession({ name: 'busy-removed' });
    await srv.sh('true', { session_id: again.session_id });
  });
});

describe('the default image removed while the server runs', suite({ timeout: 120000 }), () => {
  const image = `sandbox-fault-img:${process.pid}`;
  let srv;
  let s;

  before(async () => {
    requireEngine();
    const base = await docker(['image', 'inspect', 'debian:bookworm-slim']);
    assert.equal(base.code, 0, 'debian:bookworm-slim is present (bash .ci/prepare pulls it)');
    const tag = await docker(['tag', 'debian:bookworm-slim', image]);
    assert.equal(tag.code, 0, `docker tag: ${tag.stderr}`);
    srv = await Server.start('image', { ...ENV, SANDBOX_IMAGE: image });
    s = await srv.createSession();
  });

  after(async () => {
    const left = await cleanup();
    await docker(['rmi', image]); // only this test's tag, if a test failed before removing it
    assert.deepEqual(left, [], 'no container left behind');
  });

  test('session_create says image_not_found with the pull hint; the existing session still works', async () => {
    const rmi = await docker(['rmi', '-f', image]);
    assert.equal(rmi.code, 0, `docker rmi -f ${image}: ${rmi.stderr}`);
    const st = await srv.fails('session_create', {}, 'image_not_found');
    assert.ok(st.error.message.includes(image), `names the image: ${st.error.message}`);
    assert.match(st.error.message, /docker pull|docker build/, `says how to get it: ${st.error.message}`);
    assert.equal((await srv.sh('echo still here', { session_id: s.session_id })).stdout, 'still here\n');
    const { sessions } = await srv.ok('session_list');
    assert.deepEqual(sessions.map((x) => x.session_id), [s.session_id], 'no half-made session is listed');
  });
});
