// The client side misbehaving, against the fake engine (fake-engine.c):
// stdin closed in the middle of a call, stdout closed by the client, and a
// flood of 10,000 requests written faster than they are answered. The server
// must exit cleanly (code 0, no signal) and remove its containers, or answer
// every request exactly once.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { RawPipe, isResponse, sleep } from '../lib/rawpipe.mjs';
import { FakeEngine, ENGINE_TIMEOUT_S, memKiB } from '../lib/fake.mjs';
import { serverIsSanitized } from '../lib/harness.mjs';

const SANITIZED = serverIsSanitized();

function pipe(t, fake, label, env = {}) {
  const p = new RawPipe({
    label,
    env: {
      DOCKER_HOST: fake.dockerHost,
      SANDBOX_ENGINE_TIMEOUT_S: ENGINE_TIMEOUT_S,
      SANDBOX_IDLE_TTL_S: 0,
      SANDBOX_LOG_LEVEL: 'info',
      // faults meant for one call's path: a warm pool filling in the background would meet them first
      // (as startServer in lib/fake.mjs says)
      SANDBOX_POOL_SIZE: 0,
      ...env,
    },
  });
  t.after(() => p.kill());
  return p;
}

function callMsg(id, name, args = {}) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } };
}

/** Every container the fake engine created was removed. */
async function assertNoLeak(fake) {
  await fake.sync();
  const { created, leaked } = fake.containers();
  assert.ok(created.length > 0, 'the scenario created a container');
  assert.deepEqual(leaked, [], `containers removed on the way out; log tail: ${fake.lines.slice(-8).join(' | ')}`);
}

describe('stdin closed in the middle of a call', { timeout: 120000 }, () => {
  test('a call that finishes within the grace period is answered, then the server exits and cleans up', async (t) => {
    const fake = await FakeEngine.start('none');
    t.after(() => fake.stop());
    const p = pipe(t, fake, 'eof-answered');
    await p.initialize();
    await p.send(callMsg(7, 'run_command', { command: 'echo hello' }));
    p.closeStdin();
    const ex = await p.waitExit(15000);
    assert.deepEqual([ex.code, ex.signal], [0, null], `clean exit; stderr: ${p.stderr.slice(-1500)}`);
    const res = p.responses().filter((m) => m.id === 7);
    assert.equal(res.length, 1, 'the call asked before EOF was answered once');
    assert.equal(res[0].result?.structuredContent?.stdout, 'hello\n', JSON.stringify(res[0]));
    await assertNoLeak(fake);
  });

  // the call outlives the 5 s grace and the cancellation: the server removes its container and
  // ends the process without tearing down what the call still uses (clean under ASan/LSan too)
  test('a call that hangs: the server exits within a few seconds and removes its container', async (t) => {
    // the first exec's stream never ends (the kill exec that follows is healthy)
    const fake = await FakeEngine.start('exec-hang', 'POST /exec/*/start', { count: 1 });
    t.after(() => fake.stop());
    const p = pipe(t, fake, 'eof-hang');
    await p.initialize();
    await p.send(callMsg(8, 'run_command', { command: 'sleep 1000' }));
    await fake.waitLine((l) => l.startsWith('FAULT exec-hang'), 10000, 'the hanging exec');
    const t0 = Date.now();
    p.closeStdin();
    const ex = await p.waitExit(20000);
    const ms = Date.now() - t0;
    console.log(`stdin EOF with a hanging call: exit ${ex.code} after ${ms} ms`);
    assert.deepEqual([ex.code, ex.signal], [0, null], `clean exit; stderr: ${p.stderr.slice(-1500)}`);
    assert.ok(ms < 15000, `exited ${ms} ms after EOF`);
    assert.ok(p.responses().filter((m) => m.id === 8).length <= 1, 'at most one answer');
    await assertNoLeak(fake);
  });
});

describe('stdout closed by the client', { timeout: 120000 }, () => {
  test('idle server: the next write fails, and it exits with 0 (no SIGPIPE death, no loop)', async (t) => {
    const fake = await FakeEngine.start('none');
    t.after(() => fake.stop());
    const p = pipe(t, fake, 'stdout-closed');
    await p.initialize();
    p.child.stdout.destroy();
    const t0 = Date.now();
    for (let i = 0; i < 3; i++) await p.send({ jsonrpc: '2.0', id: 100 + i, method: 'ping' });
    const ex = await p.waitExit(10000);
    console.log(`stdout closed: exit ${ex.code} ${ex.signal ?? ''} after ${Date.now() - t0} ms`);
    assert.deepEqual([ex.code, ex.signal], [0, null], `clean exit; stderr: ${p.stderr.slice(-1500)}`);
    assert.ok(p.stderr.split('\n').length < 100, `a few log lines, not a loop: ${p.stderr.slice(-1500)}`);
  });

  test('with a call in flight: exits with 0 and removes its container', async (t) => {
    const fake = await FakeEngine.start('exec-hang', 'POST /exec/*/start', { count: 1 });
    t.after(() => fake.stop());
    const p = pipe(t, fake, 'stdout-closed-busy');
    await p.initialize();
    await p.send(callMsg(9, 'run_command', { command: 'sleep 1000' }));
    await fake.waitLine((l) => l.startsWith('FAULT exec-hang'), 10000, 'the hanging exec');
    p.child.stdout.destroy();
    await p.send({ jsonrpc: '2.0', id: 110, method: 'ping' });
    const ex = await p.waitExit(20000);
    assert.deepEqual([ex.code, ex.signal], [0, null], `clean exit; stderr: ${p.stderr.slice(-1500)}`);
    await assertNoLeak(fake);
  });
});

describe('a flood of 10,000 requests', { timeout: 180000 }, () => {
  test('written in one go, faster than answered: every one answered exactly once', async (t) => {
    const fake = await FakeEngine.start('none');
    t.after(() => fake.stop());
    const p = pipe(t, fake, 'flood');
    await p.initialize();
    const N = 10000;
    const lines = [];
    const kinds = new Map();
    for (let i = 0; i < N; i++) {
      const id = i % 2 ? `s-${i}` : i; // string and integer ids
      let msg;
      if (i % 10 === 3) msg = callMsg(id, 'env_info');
      else if (i % 10 === 7) msg = callMsg(id, 'session_list');
      else if (i % 5 === 1) msg = { jsonrpc: '2.0', id, method: 'tools/list' };
      else msg = { jsonrpc: '2.0', id, method: 'ping' };
      kinds.set(JSON.stringify(id), msg.method === 'tools/call' ? msg.params.name : msg.method);
      lines.push(JSON.stringify(msg));
    }
    const before = p.messages.length;
    const t0 = Date.now();
    const written = p.writeRaw(lines.join('\n') + '\n');
    // count, not p.waitFor: that rescans every message on every chunk
    const deadline = Date.now() + 150000;
    while (p.messages.length - before < N && p.alive && Date.now() < deadline) await sleep(50);
    const ms = Date.now() - t0;
    assert.equal(p.messages.length - before, N, `${N} messages within 150 s (server exit: ${JSON.stringify(p.exit)})`);
    assert.equal(await written, true, 'the whole flood was written');
    const seen = new Map();
    for (const m of p.messages.slice(before)) {
      if (!isResponse(m)) continue;
      const k = JSON.stringify(m.id);
      seen.set(k, (seen.get(k) ?? 0) + 1);
      assert.ok(kinds.has(k), `a response to a request that was sent: ${JSON.stringify(m).slice(0, 300)}`);
      assert.ok(m.result, `${kinds.get(k)} ${k} succeeded: ${JSON.stringify(m).slice(0, 500)}`);
      if (kinds.get(k) === 'env_info') assert.equal(m.result.structuredContent.engine.reachable, true);
    }
    const missing = [...kinds.keys()].filter((k) => !seen.has(k));
    const twice = [...seen.entries()].filter(([, n]) => n !== 1);
    assert.deepEqual(missing, [], 'every request answered');
    assert.deepEqual(twice, [], 'no request answered twice');
    assert.deepEqual(p.badLines, [], 'every stdout line is JSON');
    const { hwm } = memKiB(p.child.pid);
    console.log(`flood: ${N} requests (${N / 10} env_info, ${N / 10} session_list, ${N / 5} tools/list) ` +
      `answered in ${ms} ms; server VmHWM ${(hwm / 1024).toFixed(1)} MiB`);
    assert.ok(hwm < (SANITIZED ? 512 : 128) * 1024, `peak RSS ${hwm} KiB`);
    p.closeStdin();
    const ex = await p.waitExit(15000);
    assert.deepEqual([ex.code, ex.signal], [0, null]);
  });
});

describe('big requests written faster than one slow session takes them', { timeout: 120000 }, () => {
  test('past the queue\'s limit they are refused at once (busy), memory stays bounded, nothing is lost', async (t) => {
    // the first two execs hang, so every call queued behind the first on the default session waits:
    // the agent's start (which gives up after the engine timeout, sooner than 40 MiB of lines are
    // read on a loaded machine) and the engine's exec path that the call falls back to
    const fake = await FakeEngine.start('exec-hang', 'POST /exec/*/start', { count: 2 });
    t.after(() => fake.stop());
    const LINE = 2 << 20; // queued calls may hold 4 such lines: 8 MiB
    const p = pipe(t, fake, 'queue-limit', { SANDBOX_MAX_LINE_BYTES: LINE });
    await p.initialize();
    await p.send(callMsg(1, 'run_command', { command: 'sleep 1000' }));
    await fake.waitLine((l) => l.startsWith('FAULT exec-hang'), 10000, 'the hanging exec');
    const N = 40;
    const content = 'x'.repeat(1 << 20);
    const lines = [];
    for (let i = 0; i < N; i++) lines.push(JSON.stringify(callMsg(100 + i, 'file_write', { path: `f${i}.txt`, content })));
    const before = memKiB(p.child.pid).hwm;
    await p.writeRaw(lines.join('\n') + '\n');
    // the refusals come at once, while the first call still hangs
    const busy = () => p.responses().filter((m) => m.id >= 100 && /Server busy/.test(m.error?.message ?? ''));
    const deadline = Date.now() + 20000;
    while (busy().length < N - 8 && Date.now() < deadline) await sleep(50);
    const refused = busy();
    const hwm = memKiB(p.child.pid).hwm;
    console.log(`queue limit: ${refused.length} of ${N} 1 MiB file_writes refused behind a hanging call; ` +
      `VmHWM ${(before / 1024).toFixed(1)} -> ${(hwm / 1024).toFixed(1)} MiB`);
    assert.ok(refused.length >= N - 8 && refused.length < N, `most refused, some queued: ${refused.length}`);
    assert.equal(refused[0].error.code, -32603);
    assert.match(refused[0].error.message, /wait for some answers, then send this one again/);
    assert.ok(hwm - before < (SANITIZED ? 256 : 48) * 1024, `memory bounded: VmHWM grew ${hwm - before} KiB`);
    // the hanging call cancelled: the queued writes run, each request is answered exactly once
    await p.notify('notifications/cancelled', { requestId: 1, reason: 'test' });
    const ids = Array.from({ length: N }, (_, i) => 100 + i);
    const all = Date.now() + 60000;
    while (ids.some((id) => !p.responses().some((m) => m.id === id)) && Date.now() < all) await sleep(50);
    for (const id of ids) assert.equal(p.responses().filter((m) => m.id === id).length, 1, `id ${id} answered once`);
    // and room again for the next call
    await p.send(callMsg(200, 'file_write', { path: 'after.txt', content }));
    await p.waitFor((m) => m.id === 200, 30000);
    const after = p.responses().find((m) => m.id === 200);
    assert.ok(after.result, `admitted once the queue drained: ${JSON.stringify(after).slice(0, 300)}`);
    p.closeStdin();
    const ex = await p.waitExit(15000);
    assert.deepEqual([ex.code, ex.signal], [0, null]);
  });
});
