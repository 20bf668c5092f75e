// MCP over Streamable HTTP (`serve --http`): the official clients (SDK 1.x
// StreamableHTTPClientTransport, @modelcontextprotocol/client 2.x) against
// the real engine, then what a hostile or broken HTTP client may try.
//
// Each server runs on a port of its own on 127.0.0.1 and is stopped with
// SIGTERM, which removes the sandboxes it made.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import https from 'node:https';
import net from 'node:net';
import { mkdtempSync, writeFileSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client';
import { serverBin, serverEnv, sleep } from './lib/rawpipe.mjs';

const BIN = serverBin();
const INIT = {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'http-e2e', version: '0' } },
};
const ACCEPT_BOTH = 'application/json, text/event-stream';

/** A free port on 127.0.0.1 (the kernel's pick, released for the server). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Runs the server to its exit (a start that must fail); resolves { code, stderr }. */
function runToExit(args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(BIN, args, { env: serverEnv(env), stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    const t = setTimeout(() => child.kill('SIGKILL'), 20000);
    child.on('exit', (code) => { clearTimeout(t); resolve({ code, stderr }); });
  });
}

/** Starts `serve --http 127.0.0.1:PORT`; resolves once /health answers. */
async function startServer(env = {}) {
  const port = await freePort();
  const child = spawn(BIN, ['serve', '--http', `127.0.0.1:${port}`],
    { env: serverEnv(env), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-8000); });
  const exited = new Promise((resolve) => child.on('exit', (code, sig) => resolve({ code, sig })));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20000;
  for (;;) {
    try {
      const r = await fetch(`${base}/health`);
      if (r.ok) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not answer /health in 20 s; stderr: ${stderr}`);
    }
    await sleep(100);
  }
  return {
    port, base, url: new URL(`${base}/mcp`), child, exited, stderr: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 15000);
      const r = await exited;
      clearTimeout(t);
      return r;
    },
  };
}

/** POST one message; returns { status, headers, text }. */
async function post(srv, msg, headers = {}) {
  const r = await fetch(srv.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: ACCEPT_BOTH, ...headers },
    body: typeof msg === 'string' ? msg : JSON.stringify(msg),
  });
  return { status: r.status, headers: r.headers, text: await r.text() };
}

/** initialize + notifications/initialized over raw HTTP; returns the session id. */
async function rawSession(srv) {
  const r = await post(srv, INIT);
  assert.equal(r.status, 200, r.text);
  const sid = r.headers.get('mcp-session-id');
  assert.match(sid, /^[0-9a-f]{32}$/);
  const n = await post(srv, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'Mcp-Session-Id': sid });
  assert.equal(n.status, 202);
  return sid;
}

/** Raw HTTP/1.1 over a socket: for headers fetch will not send (Host) and for hanging up. */
function rawRequest(port, text, { timeoutMs = 10000 } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = '';
    const t = setTimeout(() => { sock.destroy(); reject(new Error(`no answer in ${timeoutMs} ms: ${data}`)); }, timeoutMs);
    sock.on('data', (d) => { data += d; });
    sock.on('error', (e) => { clearTimeout(t); reject(e); });
    sock.on('close', () => { clearTimeout(t); resolve(data); });
    sock.write(text);
  });
}

function statusOf(raw) {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(raw);
  return m ? Number(m[1]) : 0;
}

function textOf(res) {
  return res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

describe('SDK 1.x StreamableHTTPClientTransport', () => {
  let srv;
  let client;

  before(async () => {
    srv = await startServer();
    client = new Client({ name: 'http-e2e-sdk1', version: '0' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(srv.url));
  });
  after(async () => {
    await client?.close().catch(() => {});
    const r = await srv?.stop();
    assert.equal(r.code, 0, `exit after SIGTERM: ${JSON.stringify(r)}; ${srv.stderr()}`);
  });

  test('lists tools', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ['run_command', 'run_python', 'env_info', 'session_list']) assert.ok(names.includes(n), names.join());
  });

  test('run_command answers with the output', { timeout: 120000 }, async () => {
    const res = await client.callTool({ name: 'run_command', arguments: { command: 'echo hello-http' } },
      undefined, { timeout: 110000 });
    assert.ok(!res.isError, textOf(res));
    assert.match(textOf(res), /hello-http/);
  });

  test('run_python returns a figure as a PNG', { timeout: 120000 }, async () => {
    const res = await client.callTool({
      name: 'run_python',
      arguments: { code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 1])\nplt.show()' },
    }, undefined, { timeout: 110000 });
    assert.ok(!res.isError, textOf(res));
    const img = res.content.find((c) => c.type === 'image');
    assert.ok(img, `an image block: ${JSON.stringify(res.content).slice(0, 500)}`);
    assert.equal(img.mimeType, 'image/png');
    assert.equal(Buffer.from(img.data, 'base64').subarray(1, 4).toString(), 'PNG');
  });

  test('progress arrives over SSE, and cancelling kills the command', { timeout: 120000 }, async () => {
    const ac = new AbortController();
    let progress = 0;
    const call = client.callTool({
      name: 'run_command',
      arguments: { command: 'for i in $(seq 1 600); do echo tick-$i; sleep 0.2; done; echo never-http-9' },
    }, undefined, {
      signal: ac.signal, timeout: 110000,
      onprogress: () => { progress++; if (progress === 2) ac.abort('enough'); },
    });
    await assert.rejects(call, /abort|enough|cancel/i);
    const aborted = Date.now();
    assert.ok(progress >= 2, `progress seen: ${progress}`);
    // the loop is killed: within 5 s no process of it is left in the session
    const deadline = Date.now() + 5000;
    let left;
    do {
      await sleep(250);
      const ps = await client.callTool({ name: 'run_command', arguments: { command: 'ps -eo args | grep -c "[s]eq 1 600" || true' } },
        undefined, { timeout: 60000 });
      left = String(ps.structuredContent?.stdout ?? '').trim();
    } while (left !== '0' && Date.now() < deadline);
    assert.equal(left, '0', 'the cancelled command was killed');
    const secs = (Date.now() - aborted) / 1000;
    assert.ok(secs < 6, `killed and the session free again ${secs.toFixed(1)} s after the cancel`);
  });
});

describe('@modelcontextprotocol/client 2.x over HTTP', () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => { await srv?.stop(); });

  test('negotiates, lists tools and runs a command', { timeout: 120000 }, async () => {
    const client = new Client2({ name: 'http-e2e-client2', version: '0' },
      { versionNegotiation: { mode: 'auto', probe: { timeoutMs: 10000 } } });
    await client.connect(new Transport2(srv.url), { timeout: 20000 });
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'run_command'));
      const res = await client.callTool({ name: 'run_command', arguments: { command: 'echo modern-http' } },
        { timeout: 110000 });
      assert.match(textOf(res), /modern-http/);
    } finally {
      await client.close().catch(() => {});
    }
  });
});

describe('hostile and broken HTTP clients', () => {
  let srv;
  before(async () => { srv = await startServer({ SANDBOX_MAX_LINE_BYTES: 65536, SANDBOX_HTTP_TIMEOUT_S: 2 }); });
  after(async () => {
    const r = await srv?.stop();
    assert.equal(r.code, 0, `exit after SIGTERM: ${JSON.stringify(r)}; ${srv.stderr()}`);
  });

  test('GET /health answers without MCP', async () => {
    const r = await fetch(`${srv.base}/health`);
    const j = await r.json();
    assert.equal(j.status, 'ok');
    assert.equal(j.engine.reachable, true);
    assert.equal(typeof j.engine.version, 'string');
    assert.equal(typeof j.sessions, 'number');
  });

  test('GET /mcp is 405; other paths 404', async () => {
    const r = await fetch(srv.url, { headers: { Accept: 'text/event-stream' } });
    assert.equal(r.status, 405);
    assert.match(r.headers.get('allow'), /POST/);
    assert.equal((await fetch(`${srv.base}/other`)).status, 404);
  });

  test('a request without Mcp-Session-Id is 400, an unknown one 404, an ended one 404', async () => {
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    assert.equal((await post(srv, list)).status, 400);
    assert.equal((await post(srv, list, { 'Mcp-Session-Id': 'f'.repeat(32) })).status, 404);
    assert.equal((await post(srv, list, { 'Mcp-Session-Id': 'x' })).status, 404);
    const sid = await rawSession(srv);
    const ok = await post(srv, list, { 'Mcp-Session-Id': sid });
    assert.equal(ok.status, 200);
    assert.ok(JSON.parse(ok.text).result.tools.length > 0);
    const del = await fetch(srv.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid } });
    assert.equal(del.status, 200);
    assert.equal((await post(srv, list, { 'Mcp-Session-Id': sid })).status, 404);
  });

  test('the stateless era needs no MCP session', async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
    const d = await post(srv, { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta } });
    assert.equal(d.status, 200, d.text);
    assert.ok(JSON.parse(d.text).result.supportedVersions.includes('2026-07-28'));
    const l = await post(srv, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: meta } });
    assert.equal(l.status, 200, l.text);
    assert.equal(JSON.parse(l.text).result.resultType, 'complete');
  });

  test('a bad Origin is 403; localhost origins and none are served', async () => {
    assert.equal((await post(srv, INIT, { Origin: 'http://evil.example' })).status, 403);
    assert.equal((await post(srv, INIT, { Origin: 'null' })).status, 403);
    assert.equal((await post(srv, INIT, { Origin: `http://localhost:${srv.port}` })).status, 200);
    assert.equal((await post(srv, INIT)).status, 200);
  });

  test('a Host that is not the bound address is 421 (DNS rebinding)', async () => {
    const body = JSON.stringify(INIT);
    const req = (host) => `POST /mcp HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
      `Accept: ${ACCEPT_BOTH}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
    assert.equal(statusOf(await rawRequest(srv.port, req(`evil.example:${srv.port}`))), 421);
    assert.equal(statusOf(await rawRequest(srv.port, req('127.0.0.1:1'))), 421);
    assert.equal(statusOf(await rawRequest(srv.port, req(`localhost:${srv.port}`))), 200);
  });

  test('a body over SANDBOX_MAX_LINE_BYTES is 413, and the server goes on', async () => {
    const big = JSON.stringify({ ...INIT, params: { ...INIT.params, pad: 'x'.repeat(70000) } });
    assert.equal((await post(srv, big)).status, 413);
    // chunked, without Content-Length: refused once read past the cap
    const chunked = await rawRequest(srv.port,
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nContent-Type: application/json\r\nAccept: ${ACCEPT_BOTH}\r\n` +
      `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`);
    assert.equal(statusOf(chunked), 413);
    assert.equal((await post(srv, INIT)).status, 200);
  });

  test('a stalled client (half a request head) is cut off after SANDBOX_HTTP_TIMEOUT_S', { timeout: 30000 }, async () => {
    const t0 = Date.now();
    const sock = net.connect(srv.port, '127.0.0.1');
    sock.on('error', () => {});
    const closed = new Promise((resolve) => sock.on('close', resolve));
    sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\n`);
    // (a client that drips a byte now and then is held to the connection limit instead: next test)
    await closed;
    const secs = (Date.now() - t0) / 1000;
    assert.ok(secs >= 1.5 && secs < 15, `closed after ${secs.toFixed(1)} s (timeout 2 s)`);
  });

  test('1,000 connections are bounded: 503 or refused past the limit, then served again', { timeout: 90000 }, async () => {
    const socks = [];
    let answered503 = 0;
    let closedByServer = 0;
    await Promise.all(Array.from({ length: 1000 }, () => new Promise((resolve) => {
      const s = net.connect(srv.port, '127.0.0.1');
      s.on('error', () => resolve());
      s.on('data', (d) => { if (/^HTTP\/1\.1 503/.test(String(d))) answered503++; });
      s.on('close', () => { closedByServer++; resolve(); });
      s.on('connect', () => { s.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\n`); resolve(); });
      socks.push(s);
    })));
    await sleep(1000);
    // a complete request while the server is full is refused at once, not queued forever
    const during = await rawRequest(srv.port,
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
      { timeoutMs: 10000 }).catch((e) => `error ${e.code || e.message}`);
    assert.ok(statusOf(during) === 503 || during === '' || /^error/.test(during), `while full: ${during.slice(0, 200)}`);
    assert.ok(closedByServer + answered503 >= 1000 - 272 - 1, `refused ${closedByServer} + 503 ${answered503}`);
    for (const s of socks) s.destroy();
    await sleep(1000);
    const r = await post(srv, INIT);
    assert.equal(r.status, 200, 'served again once the flood is gone');
  });

  test('a client that hangs up mid-call has its command killed; the sandbox stays usable', { timeout: 120000 }, async () => {
    const sid = await rawSession(srv);
    const call = (id, command, signal) => fetch(srv.url, {
      method: 'POST', signal,
      headers: { 'Content-Type': 'application/json', Accept: ACCEPT_BOTH, 'Mcp-Session-Id': sid },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run_command', arguments: { command } } }),
    });
    const warm = await call(10, 'true');
    assert.equal(warm.status, 200, await warm.text());
    const ac = new AbortController();
    const pending = call(11, 'sleep 287; echo not-killed', ac.signal).catch(() => null);
    await sleep(1500);
    ac.abort();
    const aborted = Date.now();
    await pending;
    const deadline = Date.now() + 5000;
    let count;
    do {
      await sleep(250);
      const r = await call(12, 'ps -eo args | grep -c "[s]leep 287" || true');
      const body = await r.text();
      const msg = JSON.parse(body.startsWith('{') ? body : body.split('\n').filter((l) => l.startsWith('data: ')).pop().slice(6));
      count = String(msg.result.structuredContent?.stdout ?? '').trim();
    } while (count !== '0' && Date.now() < deadline);
    assert.equal(count, '0', 'the command of the client that hung up was killed');
    // the check queues behind the call on the session: it answers only once the call ended
    const secs = (Date.now() - aborted) / 1000;
    assert.ok(secs < 6, `killed and the session free again ${secs.toFixed(1)} s after the hang-up`);
  });
});

describe('access tokens (--http-token-file)', () => {
  const TOK_A = 'a'.repeat(20) + 'Xq9';
  const TOK_B = 'b'.repeat(40);
  let dir;
  let file;
  let srv;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-mcp-http-keys-'));
    file = join(dir, 'tokens');
    writeFileSync(file, `# the team\nteam:${TOK_A}\n`, { mode: 0o600 });
    srv = await startServer({ SANDBOX_HTTP_TOKEN_FILE: file, SANDBOX_LOG_LEVEL: 'debug' });
  });
  after(async () => {
    await srv?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('no token, a wrong one, or another scheme: 401 with WWW-Authenticate: Bearer', async () => {
    for (const auth of [undefined, `Bearer ${TOK_B}`, `Bearer ${TOK_A}x`, `Bearer ${TOK_A.slice(0, -1)}`, `Basic ${TOK_A}`, 'Bearer ']) {
      const r = await post(srv, INIT, auth ? { Authorization: auth } : {});
      assert.equal(r.status, 401, `${auth}: ${r.text}`);
      assert.match(r.headers.get('www-authenticate'), /^Bearer/);
    }
    const del = await fetch(srv.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': 'f'.repeat(32) } });
    assert.equal(del.status, 401, 'DELETE needs the token too');
    assert.equal((await fetch(`${srv.base}/health`)).status, 200, '/health needs none');
  });

  test('the SDK with the token lists tools and runs a command', { timeout: 120000 }, async () => {
    const client = new Client({ name: 'http-e2e-token', version: '0' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(srv.url,
      { requestInit: { headers: { Authorization: `Bearer ${TOK_A}` } } }));
    try {
      assert.ok((await client.listTools()).tools.length > 0);
      const res = await client.callTool({ name: 'run_command', arguments: { command: 'echo token-ok' } },
        undefined, { timeout: 110000 });
      assert.match(textOf(res), /token-ok/);
    } finally {
      await client.close().catch(() => {});
    }
  });

  test('SIGHUP re-reads the file; a broken file keeps the old tokens', { timeout: 30000 }, async () => {
    writeFileSync(file, `team:${TOK_B}\n`);
    srv.child.kill('SIGHUP');
    const deadline = Date.now() + 10000;
    let r;
    do {
      await sleep(100);
      r = await post(srv, INIT, { Authorization: `Bearer ${TOK_B}` });
    } while (r.status !== 200 && Date.now() < deadline);
    assert.equal(r.status, 200, 'the new token works');
    assert.equal((await post(srv, INIT, { Authorization: `Bearer ${TOK_A}` })).status, 401, 'the old one no longer');
    writeFileSync(file, 'team no colon\n');
    srv.child.kill('SIGHUP');
    await sleep(500);
    assert.equal((await post(srv, INIT, { Authorization: `Bearer ${TOK_B}` })).status, 200, 'kept after a bad file');
    assert.match(srv.stderr(), /SIGHUP: .*line 1/);
    assert.ok(!srv.stderr().includes(TOK_A) && !srv.stderr().includes(TOK_B), 'tokens never logged');
  });

  test('refused at start: a bad file, a public address without tokens', async () => {
    const port = await freePort();
    let r;
    r = await runToExit(['serve', '--http', `127.0.0.1:${port}`, '--http-token-file', join(dir, 'missing')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /No such file/);
    r = await runToExit(['serve', '--http', `0.0.0.0:${port}`]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /not a loopback address and no --http-token-file/);
  });
});

describe('principals: each token NAME sees only its own sandboxes', () => {
  const TA = 'alice-token-' + 'a'.repeat(20);
  const TB = 'bob-token-' + 'b'.repeat(20);
  const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
  let dir;
  let srv;
  let id = 100;
  const call = async (token, name, args) => {
    const r = await post(srv, { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: args, _meta: META } },
      { Authorization: `Bearer ${token}`, Accept: 'application/json' });
    assert.equal(r.status, 200, r.text);
    return JSON.parse(r.text).result;
  };
  const errCode = (res) => res.structuredContent?.error?.code;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-mcp-http-principals-'));
    writeFileSync(join(dir, 'tokens'), `alice:${TA}\nbob:${TB}\n`, { mode: 0o600 });
    srv = await startServer({ SANDBOX_HTTP_TOKEN_FILE: join(dir, 'tokens'), SANDBOX_MAX_SESSIONS: 2 });
  });
  after(async () => {
    const r = await srv?.stop();
    rmSync(dir, { recursive: true, force: true });
    assert.equal(r.code, 0, srv.stderr());
  });

  test('another principal\'s session is session_not_found by id and by name, and unlisted', { timeout: 120000 }, async () => {
    const a = await call(TA, 'run_command', { command: 'echo a > /workspace/who; echo alice' });
    const aid = a.structuredContent.session_id;
    const w = await call(TA, 'session_create', { name: 'work' });
    assert.ok(!w.isError, JSON.stringify(w));
    const wid = w.structuredContent.session_id;
    for (const ref of [aid, wid, 'work']) {
      assert.equal(errCode(await call(TB, 'run_command', { command: 'true', session_id: ref })), 'session_not_found', ref);
      assert.equal(errCode(await call(TB, 'file_read', { path: 'who', session_id: ref })), 'session_not_found', ref);
      assert.equal(errCode(await call(TB, 'session_close', { session_id: ref })), 'session_not_found', ref);
    }
    const list = JSON.stringify(await call(TB, 'session_list', {}));
    assert.ok(!list.includes(aid) && !list.includes(wid), list);
    // bob's default session is his own; he may use the same names
    const b = await call(TB, 'run_command', { command: 'cat /workspace/who 2>&1; echo bob' });
    assert.notEqual(b.structuredContent.session_id, aid);
    assert.doesNotMatch(b.structuredContent.stdout, /^a$/m, 'bob does not see alice\'s files');
    assert.ok(!(await call(TB, 'session_create', { name: 'work' })).isError, 'names are per principal');
    // SANDBOX_MAX_SESSIONS=2 holds per principal: both are at 2 now
    assert.equal(errCode(await call(TA, 'session_create', {})), 'session_limit');
    // alice still has hers
    const again = await call(TA, 'run_command', { command: 'cat /workspace/who', session_id: aid });
    assert.equal(again.structuredContent.stdout.trim(), 'a');
    // downloads: the owner gets the file, the other principal 404, no token 401
    const get = (token, path) => fetch(`${srv.base}/files/${path}`, token ? { headers: { Authorization: `Bearer ${token}` } } : {});
    const mine = await get(TA, `${aid}/workspace/who`);
    assert.equal(mine.status, 200);
    assert.equal(await mine.text(), 'a\n');
    assert.equal((await get(TA, `work/workspace/nothing-here`)).status, 404);
    assert.equal((await get(TB, `${aid}/workspace/who`)).status, 404, 'another principal\'s file is 404');
    assert.equal((await get(null, `${aid}/workspace/who`)).status, 401);
    assert.equal((await get(TB, `default/workspace/who`)).status, 404, 'default is not created by a download');
    const res = await post(srv, { jsonrpc: '2.0', id: 1, method: 'resources/list', params: { _meta: META } },
      { Authorization: `Bearer ${TB}`, Accept: 'application/json' });
    assert.ok(!res.text.includes(aid) && !res.text.includes(wid), 'resources/list shows only bob\'s');
  });

  test('another principal\'s MCP session id is 404', async () => {
    const r = await post(srv, INIT, { Authorization: `Bearer ${TA}` });
    const sid = r.headers.get('mcp-session-id');
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    assert.equal((await post(srv, list, { Authorization: `Bearer ${TA}`, 'Mcp-Session-Id': sid })).status, 200);
    assert.equal((await post(srv, list, { Authorization: `Bearer ${TB}`, 'Mcp-Session-Id': sid })).status, 404);
    const del = await fetch(srv.url, { method: 'DELETE', headers: { Authorization: `Bearer ${TB}`, 'Mcp-Session-Id': sid } });
    assert.equal(del.status, 404, 'bob cannot end alice\'s MCP session');
  });
});

describe('HTTPS (--tls-cert, --tls-key)', () => {
  let dir;
  let ca;
  let port;
  let child;
  let stderr = '';
  const req = (path, { method = 'GET', body, headers = {} } = {}) => new Promise((resolve, reject) => {
    const r = https.request({ host: '127.0.0.1', port, path, method, ca, servername: 'localhost',
      headers: { Host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      let data = '';
      res.on('data', (d) => { data += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: data }));
    });
    r.on('error', reject);
    r.end(body);
  });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-mcp-http-tls-'));
    const gen = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'),
      '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { encoding: 'utf8' });
    assert.equal(gen.status, 0, `openssl (from ca-certificates) makes the test certificate: ${gen.stderr}`);
    ca = readFileSync(join(dir, 'cert.pem'));
    port = await freePort();
    child = spawn(BIN, ['serve', '--http', `127.0.0.1:${port}`, '--tls-cert', join(dir, 'cert.pem'),
      '--tls-key', join(dir, 'key.pem')], { env: serverEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-8000); });
    const deadline = Date.now() + 20000;
    for (;;) {
      try {
        if ((await req('/health')).status === 200) break;
      } catch { /* not yet */ }
      if (Date.now() > deadline) throw new Error(`no HTTPS /health in 20 s: ${stderr}`);
      await sleep(100);
    }
  });
  after(async () => {
    if (child) {
      child.kill('SIGTERM');
      await new Promise((r) => child.on('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test('MCP over HTTPS: initialize, then a command in the session', { timeout: 120000 }, async () => {
    const h = { 'Content-Type': 'application/json', Accept: 'application/json' };
    const init = await req('/mcp', { method: 'POST', headers: h, body: JSON.stringify(INIT) });
    assert.equal(init.status, 200, init.text);
    const sid = init.headers['mcp-session-id'];
    const call = await req('/mcp', { method: 'POST', headers: { ...h, 'Mcp-Session-Id': sid },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run_command', arguments: { command: 'echo over-tls' } } }) });
    assert.equal(call.status, 200, call.text);
    assert.match(JSON.parse(call.text).result.structuredContent.stdout, /over-tls/);
  });

  test('plain HTTP on the HTTPS port gets no answer', async () => {
    const raw = await rawRequest(port, `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`)
      .catch(() => '');
    assert.equal(statusOf(raw), 0, raw.slice(0, 100));
  });

  test('refused at start: a certificate without a key, a file that is not PEM', async () => {
    const p = await freePort();
    let r = await runToExit(['serve', '--http', `127.0.0.1:${p}`, '--tls-cert', join(dir, 'cert.pem')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /both --tls-cert FILE and --tls-key FILE/);
    writeFileSync(join(dir, 'junk.pem'), 'not a key');
    r = await runToExit(['serve', '--http', `127.0.0.1:${p}`, '--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'junk.pem')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /--tls-key .*not a PEM file/);
  });
});

describe('the form of an answer', () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => { await srv?.stop(); });

  test('a call that sends nothing before its response is plain JSON, however its threads are scheduled', { timeout: 60000 }, async () => {
    // The response reaches the connection thread just before the worker lets
    // go of the request: that moment must not turn the answer into SSE.
    const sid = await rawSession(srv);
    const hdr = { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' };
    const types = new Map();
    let id = 100;
    for (let round = 0; round < 40; round++) {
      const rs = await Promise.all(Array.from({ length: 8 }, () => post(srv,
        { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'env_info', arguments: {} } }, hdr)));
      for (const r of rs) {
        assert.equal(r.status, 200, r.text);
        const t = r.headers.get('content-type');
        types.set(t, (types.get(t) ?? 0) + 1);
      }
    }
    assert.deepEqual([...types], [['application/json', 320]]);
  });
});
