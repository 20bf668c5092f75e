// The real engine restarted or broken behind the server's back, in a PRIVATE
// dockerd (lib/dockerd.mjs; the shared engine is never restarted or changed):
// restarted while a session is idle and while a command runs, the default
// image removed while the server runs, and the socket's permissions changed
// under an unprivileged server. Each time: a clear tool error (never a crash
// or a hang), the next call works or says the session is gone, session_list
// tells the truth, and no container is left on the engine at the end.
// Skips without root, dockerd or the shared engine, unless
// SANDBOX_TEST_MUST_WORK=1.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, engine, MUST_WORK, show, sleep } from '../lib/harness.mjs';
import { PrivateDockerd, canRunDockerd } from '../lib/dockerd.mjs';

const IMAGE = 'debian:bookworm-slim';
const can = await canRunDockerd();
const skip = !MUST_WORK && (!engine.ok || !can.ok)
  ? `needs the shared engine (to copy ${IMAGE}) and a private dockerd: ${engine.ok ? can.reason : engine.reason}`
  : false;

/** Tool errors the server may give while the engine is away or just back. */
const ENGINE_CODES = ['docker_unavailable', 'engine_error', 'session_not_found'];

describe('a private engine restarted or broken', { skip, timeout: 240000 }, () => {
  let dockerd;
  const servers = [];

  async function server(label, env = {}, opts = {}) {
    const s = await Server.start(label, {
      DOCKER_HOST: dockerd.host,
      SANDBOX_IMAGE: IMAGE,
      SANDBOX_TIMEOUT_S: 30,
      SANDBOX_IDLE_TTL_S: 0,
      SANDBOX_ENGINE_TIMEOUT_S: 10,
      ...env,
    }, opts);
    servers.push(s);
    return s;
  }

  /** session_list's view of one session id, or undefined. */
  async function listed(srv, id) {
    const { sessions } = await srv.ok('session_list');
    return sessions.find((s) => s.session_id === id);
  }

  before(async () => {
    assert.ok(engine.ok, `the shared engine is needed to copy ${IMAGE}: ${engine.reason}`);
    assert.ok(can.ok, can.reason);
    dockerd = new PrivateDockerd();
    await dockerd.start();
    await dockerd.loadImage(IMAGE);
  });

  after(async () => {
    for (const s of servers) await s.close().catch(() => {});
    if (dockerd) {
      const left = await dockerd.containers().catch(() => []);
      await dockerd.destroy();
      assert.deepEqual(left, [], 'no container left on the private engine after every server closed');
    }
  });

  test('restarted while a session is idle: the next call works or says the session is gone; session_list agrees', async () => {
    const srv = await server('idle');
    // sessions and calls in parallel leave several kept-alive connections in the engine
    // client's pool, all stale after the restart: the first call after it must not fail on them
    const [s, o1, o2] = await Promise.all(['idle', 'other1', 'other2'].map((name) => srv.createSession({ name })));
    await Promise.all([s, o1, o2, s].map((x, i) => srv.sh(`echo warm ${i} > /tmp/f`, { session_id: x.session_id })));

    await dockerd.restart();

    const fresh = await srv.call('session_create', { name: 'after' }, { timeoutMs: 60000 });
    assert.ok(!fresh.isError, `the first call after the restart works (stale kept-alive connections are dropped): ${show(fresh)}`);
    await srv.sh('echo fresh', { session_id: fresh.structuredContent.session_id });
    await srv.ok('session_close', { session_id: fresh.structuredContent.session_id });

    const t0 = Date.now();
    const res = await srv.call('run_command', { command: 'echo after', session_id: s.session_id }, { timeoutMs: 60000 });
    const secs = (Date.now() - t0) / 1000;
    assert.ok(secs < 30, `answered in ${secs.toFixed(1)} s`);
    const entry = await listed(srv, s.session_id);
    if (res.isError) {
      assert.equal(res.structuredContent?.error?.code, 'session_not_found', `a failed call says the session is gone: ${show(res)}`);
      assert.equal(entry, undefined, 'session_list no longer lists it');
    } else {
      assert.equal(res.structuredContent.stdout, 'after\n', show(res));
      assert.ok(entry, 'session_list lists the session that answered');
    }
    for (const x of [o1, o2]) {
      const r = await srv.call('run_command', { command: 'true', session_id: x.session_id });
      assert.equal(!r.isError, Boolean(await listed(srv, x.session_id)), `session_list tells the truth: ${show(r)}`);
    }
    assert.ok(srv.alive, 'the server is up');
    if (!res.isError) await srv.ok('session_close', { session_id: s.session_id });
  });

  test('restarted during run_command: the call fails cleanly and fast; the next call works', async () => {
    const srv = await server('running');
    const s = await srv.createSession({ name: 'running' });
    const t0 = Date.now();
    const pending = srv.call('run_command', { command: 'echo started; sleep 60', session_id: s.session_id }, { timeoutMs: 90000 });
    await sleep(1500);
    const stopped = dockerd.stop();
    const res = await pending;
    const secs = (Date.now() - t0) / 1000;
    await stopped;
    assert.equal(res.isError, true, `the call fails: ${show(res)}`);
    assert.ok(ENGINE_CODES.includes(res.structuredContent?.error?.code), `a clear engine error: ${show(res)}`);
    assert.ok(secs < 25, `it failed ${secs.toFixed(1)} s after the start, not after sleep 60`);

    // while the engine is down: a clear docker_unavailable, quickly
    const t1 = Date.now();
    const down = await srv.call('session_create', { name: 'down' }, { timeoutMs: 60000 });
    assert.equal(down.isError, true, show(down));
    assert.equal(down.structuredContent?.error?.code, 'docker_unavailable', show(down));
    assert.ok(Date.now() - t1 < 15000, 'docker_unavailable within 15 s');

    await dockerd.start();
    const again = await srv.call('run_command', { command: 'echo next', session_id: s.session_id }, { timeoutMs: 60000 });
    const entry = await listed(srv, s.session_id);
    if (again.isError) {
      assert.equal(again.structuredContent?.error?.code, 'session_not_found', show(again));
      assert.equal(entry, undefined, 'session_list no longer lists it');
    } else {
      assert.equal(again.structuredContent.stdout, 'next\n', show(again));
      assert.ok(entry, 'session_list lists it');
      await srv.ok('session_close', { session_id: s.session_id });
    }
    const s2 = await srv.createSession({ name: 'running2' });
    await srv.sh('echo works', { session_id: s2.session_id });
    await srv.ok('session_close', { session_id: s2.session_id });
    assert.ok(srv.alive, 'the server is up');
  });

  test('the default image removed while the server runs: image_not_found on the next session_create', async () => {
    const TAG = 'sandbox-fault-default:gone';
    assert.equal((await dockerd.docker(['tag', IMAGE, TAG])).code, 0);
    const srv = await server('image', { SANDBOX_IMAGE: TAG });
    const s = await srv.createSession({ name: 'img' });
    await srv.ok('session_close', { session_id: s.session_id });
    const rm = await dockerd.docker(['rmi', TAG]);
    assert.equal(rm.code, 0, rm.stderr);
    const st = await srv.fails('session_create', { name: 'img2' }, 'image_not_found', { timeoutMs: 60000 });
    assert.match(st.error.message, /sandbox-fault-default/, `the message names the image: ${st.error.message}`);
    // a session on an image that exists still works
    const s2 = await srv.createSession({ name: 'img3', image: IMAGE });
    await srv.sh('echo ok', { session_id: s2.session_id });
    await srv.ok('session_close', { session_id: s2.session_id });
  });

  test('the socket made unreadable to an unprivileged server: docker_unavailable about permissions; restored: works', async () => {
    const wrap = ['setpriv', '--reuid', 'nobody', '--regid', 'nogroup', '--clear-groups', '--'];
    const env = { XDG_RUNTIME_DIR: undefined, HOME: '/tmp' };
    const { chmodSync } = await import('node:fs');
    chmodSync(dockerd.sock, 0o666);
    const srv = await server('perm', env, { wrap });
    const s = await srv.createSession({ name: 'perm' });
    await srv.sh('echo as nobody', { session_id: s.session_id });

    chmodSync(dockerd.sock, 0o600);
    const t0 = Date.now();
    const st = await srv.fails('run_command', { command: 'echo denied', session_id: s.session_id }, 'docker_unavailable', { timeoutMs: 60000 });
    assert.ok(Date.now() - t0 < 15000, 'answered within 15 s');
    assert.match(st.error.message, /permission/i, `the message says it is about permissions: ${st.error.message}`);
    // every exec needs a connection of its own, so each one fails the same way (kept-alive
    // connections opened before the chmod still work: the engine checked them when they connected)
    const again = await srv.fails('run_command', { command: 'echo denied', session_id: s.session_id }, 'docker_unavailable', { timeoutMs: 60000 });
    assert.match(again.error.message, /permission/i, again.error.message);
    assert.ok(srv.alive, 'the server is up');

    chmodSync(dockerd.sock, 0o666);
    const back = await srv.sh('echo restored', { session_id: s.session_id });
    assert.equal(back.stdout, 'restored\n');
    await srv.ok('session_close', { session_id: s.session_id });
    assert.ok(srv.alive, 'the server is up');
  });
});
