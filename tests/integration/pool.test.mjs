// The warm pool (docs/sandboxes.md, "Warm pool"): containers of the default
// settings made ahead, handed out by session_create and the default session
// when the settings match, refilled in the background, removed on exit and by
// the next server's sweep of a dead one (never adopted), never reused, and no
// state of one session seen by the next.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import {
  Server, suite, requireEngine, cleanup, inspectContainer, containerExists, containersOfInstance, docker,
  poolMembersOf, poolFilled, sleep, trackContainer,
} from '../lib/harness.mjs';

const ENV = { SANDBOX_TIMEOUT_S: 30, SANDBOX_IDLE_TTL_S: 0, SANDBOX_POOL_SIZE: 2 };

/** Waits until none of ids exists any more; the ones left after timeoutMs. */
async function gone(ids, timeoutMs = 30000) {
  const until = Date.now() + timeoutMs;
  let left = ids;
  while (left.length && Date.now() < until) {
    left = (await Promise.all(left.map(async (id) => (await containerExists(id)) ? id : null))).filter(Boolean);
    if (left.length) await sleep(200);
  }
  return left;
}

describe('warm pool', suite({ timeout: 600000 }), () => {
  let S;

  before(async () => {
    requireEngine();
    S = await Server.start('pool', ENV);
  });

  after(async () => {
    await cleanup();
  });

  test('members: labelled, running, with the agent up, not sessions', async () => {
    const ids = await poolFilled(S, 2);
    for (const id of ids) {
      const c = await inspectContainer(id);
      assert.equal(c.State.Running, true, `${id} runs`);
      assert.equal(c.Config.Labels['io.sandbox-mcp.pool'], '1');
      assert.equal(c.Config.Labels['io.sandbox-mcp.instance'], S.instance);
      assert.equal(c.Config.Labels['io.sandbox-mcp.persistent'], 'false');
      const ps = await docker(['exec', id, 'ps', '-eo', 'args']);
      assert.match(ps.stdout, /\/\.sandbox-mcp\/agent(\s|$)/m, `the command agent runs in ${id}: ${ps.stdout}`);
    }
    const list = await S.ok('session_list');
    assert.deepEqual(list.sessions, [], 'pool members are not sessions');
  });

  test('hand-out: session_create takes a member made before the call, faster than a fresh create', async () => {
    const ids = await poolFilled(S, 2);
    const createdBefore = Math.max(...await Promise.all(ids.map(async (id) => Date.parse((await inspectContainer(id)).Created))));
    const t0 = Date.now();
    const s = await S.createSession({ name: 'pooled' });
    const pooledMs = Date.now() - t0;
    assert.ok(ids.includes(s.container_id), `the session got a pool member (${s.container_id} in ${ids})`);
    assert.ok(createdBefore < t0, 'its container was created before the call');
    const labels = (await inspectContainer(s.container_id)).Config.Labels;
    assert.equal(labels['io.sandbox-mcp.session'], s.session_id, 'the session label names the session handed out');
    assert.equal(s.name, 'pooled');
    // the same settings but one: a fresh container, made during the call
    const t1 = Date.now();
    const f = await S.createSession({ memory_mb: 256 });
    const freshMs = Date.now() - t1;
    assert.ok(pooledMs < freshMs, `pooled create (${pooledMs} ms) is faster than a fresh one (${freshMs} ms)`);
    const out = await S.sh('echo hi; id -u; pwd', { session_id: s.session_id });
    assert.equal(out.stdout, 'hi\n1000\n/workspace\n');
    await S.ok('session_close', { session_id: s.session_id });
    await S.ok('session_close', { session_id: f.session_id });
  });

  test('refill: the pool is back to its size after a hand-out', async () => {
    const before = await poolFilled(S, 2);
    const s = await S.createSession();
    assert.ok(before.includes(s.container_id));
    const after = await poolFilled(S, 2);
    assert.equal(after.filter((id) => before.includes(id)).length, 1, 'one old member and one new one');
    await S.ok('session_close', { session_id: s.session_id });
  });

  test('mismatch creates fresh: other memory, cpus, env, image, network-less read_only, persistent', async () => {
    const ids = await poolFilled(S, 2);
    const asks = [
      { memory_mb: 256 }, { cpus: 0.5 }, { env: { A: '1' } }, { image: 'debian:bookworm-slim' },
      { read_only: true }, { persistent: true },
    ];
    for (const ask of asks) {
      const s = await S.createSession(ask);
      assert.ok(!ids.includes(s.container_id), `${JSON.stringify(ask)}: a fresh container`);
      const labels = (await inspectContainer(s.container_id)).Config.Labels;
      assert.equal(labels['io.sandbox-mcp.pool'], '0', `${JSON.stringify(ask)}: labelled not a pool member`);
      await S.ok('session_close', { session_id: s.session_id });
    }
    assert.deepEqual((await poolMembersOf(S)).sort(), [...ids].sort(), 'the members are untouched');
  });

  test('no leakage: files, processes and Python state of a closed session are not in the next one', async () => {
    await poolFilled(S, 2);
    const a = await S.createSession();
    await S.sh('echo secret > /workspace/left; echo secret > /tmp/left; ' +
      '(setsid sleep 1000 </dev/null >/dev/null 2>&1 &); echo ok', { session_id: a.session_id });
    const set = await S.call('run_python', { code: 'leaked_var = 42', session_id: a.session_id });
    assert.ok(!set.isError, JSON.stringify(set));
    await S.ok('session_close', { session_id: a.session_id });
    assert.deepEqual(await gone([a.container_id]), [], 'a closed session\'s container is removed, not pooled again');
    await poolFilled(S, 2);
    for (let i = 0; i < 3; i++) {
      const b = await S.createSession();
      assert.notEqual(b.container_id, a.container_id);
      const st = await S.sh('ls -A /workspace; ls -A /tmp; ps -eo args | grep -c "^sleep 1000" || true',
        { session_id: b.session_id });
      assert.equal(st.stdout, '0\n', `an empty workspace and /tmp, no sleep: ${st.stdout}`);
      const py = await S.call('run_python', { code: 'print("leaked_var" in globals())', session_id: b.session_id });
      assert.match(py.content.map((c) => c.text).join('\n'), /False/);
      await S.ok('session_close', { session_id: b.session_id });
    }
  });

  test('the default session comes from the pool too', async () => {
    const ids = await poolFilled(S, 2);
    await S.sh('true');
    const list = await S.ok('session_list');
    const d = list.sessions.find((s) => s.name === 'default');
    assert.ok(d && ids.includes(d.container_id), `the default session is a former member: ${JSON.stringify(list)}`);
    await S.ok('session_close', { session_id: 'default' });
  });

  test('exit removes the pool members', async () => {
    const X = await Server.start('pool-exit', ENV);
    const ids = await poolFilled(X, 2);
    const status = await X.endStdin();
    assert.equal(status.code, 0);
    assert.deepEqual(await gone(ids, 1000), [], 'no member is left after the exit');
    assert.deepEqual(await containersOfInstance(X.instance), []);
    await X.close();
  });

  test('a killed server\'s members are removed by its janitor', async () => {
    const K = await Server.start('pool-janitor', ENV);
    const ids = await poolFilled(K, 2);
    await K.kill('SIGKILL');
    assert.deepEqual(await gone(ids), [], 'its janitor removed them, with no other server started');
  });

  test('a killed server\'s members are removed by the next server\'s sweep, never adopted', async () => {
    const K = await Server.start('pool-killed', ENV);
    const ids = await poolFilled(K, 2);
    await K.kill('SIGKILL', { withJanitor: true });
    assert.equal((await Promise.all(ids.map(containerExists))).every(Boolean), true, 'a killed server leaves them');
    const N = await Server.start('pool-next', { ...ENV, SANDBOX_POOL_SIZE: 0 });
    const list = await N.ok('session_list'); // answers after the start-up sweep
    assert.equal(list.sessions.filter((s) => ids.includes(s.container_id)).length, 0, 'none adopted');
    assert.deepEqual(await gone(ids), [], 'the sweep removed them');
    await N.close();
  });

  test('a pool member forged persistent is still not adopted', async () => {
    const K = await Server.start('pool-forged', { ...ENV, SANDBOX_POOL_SIZE: 0 });
    // a container that says both persistent and pool, as a dead instance's (K, once killed)
    const made = await docker(['create', '--label', 'io.sandbox-mcp=1', '--label', `io.sandbox-mcp.instance=${K.instance}`,
      '--label', `io.sandbox-mcp.host=${(await import('node:os')).hostname()}`,
      '--label', 'io.sandbox-mcp.persistent=true', '--label', 'io.sandbox-mcp.pool=1',
      '--label', 'io.sandbox-mcp.session=abcdefabcdef', '--user', '1000:1000', '--network', 'none',
      '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', '--memory', '256m', '--cpus', '0.5', '--pids-limit', '64',
      'debian:bookworm-slim', 'sleep', '1000']);
    assert.equal(made.code, 0, made.stderr);
    const id = made.stdout.trim();
    trackContainer(id);
    await K.kill('SIGKILL', { withJanitor: true });
    const N = await Server.start('pool-forged-next', { ...ENV, SANDBOX_POOL_SIZE: 0 });
    const list = await N.ok('session_list');
    assert.equal(list.sessions.filter((s) => s.container_id === id).length, 0, 'not adopted');
    assert.deepEqual(await gone([id]), [], 'removed by the sweep');
    await N.close();
  });

  test('an image that carries the pool label makes no session a member', async () => {
    // a session made from it: the container inherits the image's labels unless its create sets them
    const tag = 'sandbox-mcp-test/pool-label:latest';
    const base = await docker(['create', '--label', 'io.sandbox-mcp.pool=1', 'sandbox-mcp-python:latest']);
    assert.equal(base.code, 0, base.stderr);
    const made = await commitWithLabel(base.stdout.trim(), tag, 'io.sandbox-mcp.pool', '1');
    await docker(['rm', base.stdout.trim()]);
    assert.equal(made.status, 201, `commit: ${made.status} ${made.body}`);
    try {
      const labels = (await docker(['image', 'inspect', '-f', '{{json .Config.Labels}}', tag])).stdout;
      assert.equal(JSON.parse(labels)['io.sandbox-mcp.pool'], '1', `the image carries the label: ${labels}`);
      const K = await Server.start('pool-label', { ...ENV, SANDBOX_POOL_SIZE: 0 });
      const p = await K.createSession({ image: tag, persistent: true });
      assert.equal((await inspectContainer(p.container_id)).Config.Labels['io.sandbox-mcp.pool'], '0');
      // K's janitor removes what K made but did not keep: a pool member would go, the persistent session stays
      const jpid = K.janitorPid();
      assert.ok(jpid, 'K runs a janitor');
      await K.kill('SIGKILL');
      for (let i = 0; i < 150 && existsSync(`/proc/${jpid}`); i++) await sleep(200);
      assert.ok(!existsSync(`/proc/${jpid}`), 'the janitor ended');
      assert.equal(await containerExists(p.container_id), true, 'the persistent session was not swept as a member');
      const N = await Server.start('pool-label-next', { ...ENV, SANDBOX_POOL_SIZE: 0 });
      const list = await N.ok('session_list');
      assert.ok(list.sessions.some((s) => s.session_id === p.session_id), 'the next server adopted it');
      await N.ok('session_close', { session_id: p.session_id });
      await N.close();
    } finally {
      await docker(['rmi', '-f', tag]);
    }
  });

  test('SANDBOX_POOL_SIZE=0 disables the pool', async () => {
    const Z = await Server.start('pool-zero', { ...ENV, SANDBOX_POOL_SIZE: 0 });
    await Z.ok('session_list');
    await sleep(2000);
    const info = await Z.ok('env_info');
    assert.equal(info.pool_ready, 0);
    assert.equal(info.config.pool_size, 0);
    assert.deepEqual(await containersOfInstance(Z.instance), [], 'no container before a session is asked for');
    const s = await Z.createSession();
    assert.deepEqual(await containersOfInstance(Z.instance), [s.container_id]);
    await Z.close();
  });

  test('SANDBOX_POOL_SIZE past its cap is refused at start', async () => {
    const r = await new Promise((resolve) => {
      import('node:child_process').then(({ execFile }) => {
        execFile(process.env.SANDBOX_MCP_BIN, ['--pool-size', '17'], { timeout: 20000 }, (err, stdout, stderr) =>
          resolve({ code: err?.code ?? 0, stderr: String(stderr) }));
      });
    });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /pool.size/);
  });
});

/**
 * Commits container as tag with label=value, through the engine's API: the
 * docker CLI's commit sends no body, which Podman's API refuses (Decode(): EOF).
 * Podman ignores the body's config (docs/remote.md): the container carries
 * the label too, and the caller checks that the image does.
 */
function commitWithLabel(container, tag, label, value) {
  const host = process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
  assert.ok(host.startsWith('unix://'), `a unix socket engine: ${host}`);
  const [repo, version] = tag.split(':');
  const path = `/v1.41/commit?container=${container}&repo=${encodeURIComponent(repo)}&tag=${version}`;
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: host.slice('unix://'.length), method: 'POST', path,
      headers: { 'Content-Type': 'application/json' } }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ Labels: { [label]: value } }));
  });
}
