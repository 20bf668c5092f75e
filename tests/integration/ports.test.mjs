// Port forwards against the real engine (docs/jobs.md): a web server run as a
// background job in a session with no network, bound to the sandbox's own
// 127.0.0.1, reached from the host through port_forward with a real client;
// a forward reaches only the sandbox's port (not a host service on the same
// port, not another session's); it follows a rollback, ends with its
// session, is listed, and its caps hold.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Server, suite, requireEngine, cleanup, show, sleep, docker } from '../lib/harness.mjs';

/** Connects to 127.0.0.1:port, sends req, resolves with all it got before the close (or '' on refusal). */
function exchange(host, port, req, ms = 10000) {
  return new Promise((resolve) => {
    const s = net.connect(port, host);
    let got = '';
    const t = setTimeout(() => { s.destroy(); resolve(got); }, ms);
    s.on('connect', () => s.end(req));
    s.on('data', (d) => { got += d.toString(); });
    s.on('error', () => { clearTimeout(t); resolve(got); });
    s.on('close', () => { clearTimeout(t); resolve(got); });
  });
}

describe('port forwards', suite({ timeout: 600000 }), () => {
  let srv;
  let sid;
  let hostSrv;

  before(async () => {
    requireEngine();
    srv = await Server.start('ports', { SANDBOX_POOL_SIZE: 0 });
    sid = (await srv.createSession({ name: 'web' })).session_id;
  });
  after(async () => {
    hostSrv?.close();
    await cleanup();
  });

  test('a server bound to the sandbox\'s loopback, in a session without network, answers on the host', async () => {
    await srv.ok('file_write', { session_id: sid, path: 'site/index.html', content: '<h1>from the sandbox</h1>\n' });
    await srv.ok('run_command', { session_id: sid, background: true,
      command: 'cd site && exec python3 -m http.server 8000 --bind 127.0.0.1' });
    await srv.ok('job', { session_id: sid, action: 'ready', port: 8000 });
    const f = await srv.ok('port_forward', { session_id: sid, action: 'open', port: 8000 });
    // a loopback address of its own: no cookies shared with the other web apps on 127.0.0.1
    assert.match(f.host, /^127\.\d+\.\d+\.\d+$/);
    assert.notEqual(f.host, '127.0.0.1');
    assert.equal(f.url, `http://${f.host}:${f.host_port}/`);
    const r = await fetch(f.url);
    assert.equal(r.status, 200);
    assert.equal(await r.text(), '<h1>from the sandbox</h1>\n');
    // a binary file, whole
    await srv.sh('head -c 5000000 /dev/urandom > site/blob.bin && sha256sum site/blob.bin > blob.sum', { session_id: sid });
    const sum = (await srv.sh('cut -d" " -f1 blob.sum', { session_id: sid })).stdout.trim();
    const blob = Buffer.from(await (await fetch(f.url + 'blob.bin')).arrayBuffer());
    const { createHash } = await import('node:crypto');
    assert.equal(createHash('sha256').update(blob).digest('hex'), sum);
    const listed = (await srv.ok('session_list', {})).sessions.find((x) => x.session_id === sid);
    assert.equal(listed.forwards[0].host_port, f.host_port);
    assert.ok(listed.forwards[0].accepted >= 2);
    const again = await srv.fails('port_forward', { session_id: sid, action: 'open', port: 8000 }, 'invalid_argument');
    assert.match(again.error.message, /forwarded already/);
  });

  test('hostile: a forward reaches only its sandbox\'s own port, never the host\'s or another session\'s', async () => {
    // a host service on a port the sandbox forwards: the forward must not reach it
    hostSrv = net.createServer((c) => c.end('HOST-SECRET\n'));
    await new Promise((r) => hostSrv.listen(0, '127.0.0.1', r));
    const hostPort = hostSrv.address().port;
    const f = await srv.ok('port_forward', { session_id: sid, action: 'open', port: hostPort });
    const got = await exchange(f.host, f.host_port, 'GET / HTTP/1.0\r\n\r\n');
    assert.doesNotMatch(got, /HOST-SECRET/, 'the sandbox has a loopback of its own');
    // another session's server on the same port is not this session's
    const other = (await srv.createSession({ name: 'other' })).session_id;
    await srv.ok('run_command', { session_id: other, background: true,
      command: 'exec python3 -c "import socket; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((\'127.0.0.1\', 9000)); s.listen(); c,_=s.accept(); c.sendall(b\'OTHER-SESSION\'); c.close()"' });
    await srv.ok('job', { session_id: other, action: 'ready', port: 9000 });
    const f9 = await srv.ok('port_forward', { session_id: sid, action: 'open', port: 9000 });
    assert.doesNotMatch(await exchange(f9.host, f9.host_port, 'x'), /OTHER-SESSION/);
    await srv.ok('session_close', { session_id: other });
    for (const p of [hostPort, 9000]) await srv.ok('port_forward', { session_id: sid, action: 'close', port: p });
    // privileged host ports are refused, a named one is kept; at most 8 forwards
    await srv.fails('port_forward', { session_id: sid, action: 'open', port: 1, host_port: 80 }, 'invalid_argument');
    const named = await srv.ok('port_forward', { session_id: sid, action: 'open', port: 1, host_port: hostPort });
    assert.equal(named.host_port, hostPort);
    await srv.ok('port_forward', { session_id: sid, action: 'close', port: 1 });
    for (let p = 2; p <= 8; p++) await srv.ok('port_forward', { session_id: sid, action: 'open', port: p });
    await srv.fails('port_forward', { session_id: sid, action: 'open', port: 9 }, 'invalid_argument');
    for (let p = 2; p <= 8; p++) await srv.ok('port_forward', { session_id: sid, action: 'close', port: p });
    await srv.fails('port_forward', { session_id: sid, action: 'close', port: 2 }, 'invalid_argument');
  });

  test('connections during checkpoints and a pause never start an exec into the frozen container', async () => {
    // an exec that starts while the container freezes hangs in runc, and the engine with it:
    // forwards keep spares started ahead, and hold new starts while a commit or a pause freezes it
    const f = (await srv.ok('port_forward', { session_id: sid })).forwards.find((x) => x.port === 8000);
    let stop = false;
    let served = 0;
    const load = (async () => {
      while (!stop) {
        const r = await fetch(`http://${f.host}:${f.host_port}/`).then((x) => x.text().then(() => x.status), () => 0);
        if (r === 200) served++;
      }
    })();
    try {
      for (let i = 0; i < 4; i++) {
        const t0 = Date.now();
        await srv.ok('session_checkpoint', { session_id: sid, name: `busy-${i}` }, { timeoutMs: 30000 });
        assert.ok(Date.now() - t0 < 20000, `checkpoint ${i} took ${Date.now() - t0} ms`);
      }
      await srv.ok('session_pause', { session_id: sid, action: 'pause' }, { timeoutMs: 30000 });
      await sleep(500);
      await srv.ok('session_pause', { session_id: sid, action: 'resume' }, { timeoutMs: 30000 });
    } finally {
      stop = true;
      await load;
    }
    assert.ok(served > 10, `served ${served} requests while checkpointing`);
    assert.equal((await fetch(`http://${f.host}:${f.host_port}/`)).status, 200);
    for (let i = 0; i < 4; i++) await srv.ok('session_checkpoint', { session_id: sid, action: 'delete', checkpoint: `busy-${i}` });
  });

  test('after its container restarted, the first connection works (no dead spare is handed out)', async () => {
    const f = (await srv.ok('port_forward', { session_id: sid })).forwards.find((x) => x.port === 8000);
    const cid = (await srv.ok('session_list', {})).sessions.find((x) => x.session_id === sid).container_id;
    await sleep(500); // the spares are started
    assert.equal((await docker(['restart', '-t', '0', cid])).code, 0);
    await srv.ok('run_command', { session_id: sid, background: true,
      command: 'cd site && exec python3 -m http.server 8000 --bind 127.0.0.1' });
    await srv.ok('job', { session_id: sid, action: 'ready', port: 8000 });
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`http://${f.host}:${f.host_port}/`).then((x) => x.status, (e) => e.cause?.code ?? 'error');
      assert.equal(r, 200, `request ${i + 1} after the restart`);
    }
  });

  test('a forward follows a rollback, and ends with its session', async () => {
    const f = (await srv.ok('port_forward', { session_id: sid })).forwards.find((x) => x.port === 8000);
    await srv.ok('session_checkpoint', { session_id: sid, name: 'web' });
    await srv.ok('session_checkpoint', { session_id: sid, action: 'rollback', checkpoint: 'web' });
    // the rollback ended the server; a new one in the new container is reached through the same host port
    await srv.ok('run_command', { session_id: sid, background: true,
      command: 'cd site && exec python3 -m http.server 8000 --bind 127.0.0.1' });
    await srv.ok('job', { session_id: sid, action: 'ready', port: 8000 });
    assert.equal((await fetch(`http://${f.host}:${f.host_port}/`)).status, 200);
    await srv.ok('session_close', { session_id: sid });
    await sleep(200);
    const after = await fetch(`http://${f.host}:${f.host_port}/`).then((r) => r.status, (e) => e.cause?.code ?? 'error');
    assert.equal(after, 'ECONNREFUSED', show({ content: [], structuredContent: { after } }));
  });
});
