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
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client';
import { serverBin, serverEnv, sleep } from '../lib/rawpipe.mjs';
import { serverIsSanitized } from '../lib/harness.mjs';
import { ACCEPT_BOTH, freePort, startServer, post, rawRequest, statusOf } from '../lib/httpserver.mjs';

const BIN = serverBin();
const INIT = {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'http-e2e', version: '0' } },
};

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

function textOf(res) {
  return res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

const URL_META = 'io.sandbox-mcp/url';
const FIGURE_CODE = 'import matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 1])\n' +
  'open("report.txt", "w").write("linked-report\\n")\nplt.show()';

/**
 * A run_python result with a figure and a new file: the image is inlined AND
 * linked, and both links carry a signed URL that fetches the bytes with no
 * header at all. Returns the links for hostile checks.
 */
async function checkLinkedFigure(res, base) {
  assert.ok(!res.isError, textOf(res));
  const img = res.content.find((c) => c.type === 'image');
  assert.ok(img, `an image block: ${JSON.stringify(res.content).slice(0, 500)}`);
  const fig = res.content.find((c) => c.type === 'resource_link' && c.mimeType === 'image/png');
  assert.ok(fig, `the figure is linked too: ${JSON.stringify(res.content.filter((c) => c.type !== 'image'))}`);
  const rep = res.content.find((c) => c.type === 'resource_link' && c.name === 'report.txt');
  assert.ok(rep, 'the new file is linked');
  for (const l of [fig, rep]) {
    assert.ok(l._meta?.[URL_META]?.startsWith(`${base}/files/`), `signed URL on ${l.uri}: ${JSON.stringify(l._meta)}`);
    assert.match(l._meta[URL_META], /\?exp=\d+&sig=[0-9a-f]{64}$/);
  }
  const png = await fetch(fig._meta[URL_META]);
  assert.equal(png.status, 200);
  assert.equal(png.headers.get('content-type'), 'image/png');
  assert.deepEqual(Buffer.from(await png.arrayBuffer()), Buffer.from(img.data, 'base64'), 'the linked figure is the inlined one');
  const txt = await fetch(rep._meta[URL_META]);
  assert.equal(txt.status, 200);
  assert.equal(await txt.text(), 'linked-report\n');
  return { fig: fig._meta[URL_META], report: rep._meta[URL_META] };
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

  test('run_python returns a figure as a PNG, also linked; files fetched through signed links', { timeout: 120000 }, async () => {
    const res = await client.callTool({ name: 'run_python', arguments: { code: FIGURE_CODE } },
      undefined, { timeout: 110000 });
    assert.ok(!res.isError, textOf(res));
    const img = res.content.find((c) => c.type === 'image');
    assert.ok(img, `an image block: ${JSON.stringify(res.content).slice(0, 500)}`);
    assert.equal(img.mimeType, 'image/png');
    assert.equal(Buffer.from(img.data, 'base64').subarray(1, 4).toString(), 'PNG');
    await checkLinkedFigure(res, srv.base);
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
      // run_python with a figure; the figure and a new file fetched through their signed links
      const py = await client.callTool({ name: 'run_python', arguments: { code: FIGURE_CODE } }, { timeout: 110000 });
      await checkLinkedFigure(py, srv.base);
      // progress, then cancel: the command is killed within 5 s
      const ac = new AbortController();
      let progress = 0;
      const call = client.callTool({
        name: 'run_command',
        arguments: { command: 'for i in $(seq 1 700); do echo tock-$i; sleep 0.2; done; echo never-client2' },
      }, { signal: ac.signal, timeout: 110000, onprogress: () => { progress++; if (progress === 2) ac.abort('enough'); } });
      await assert.rejects(call, /abort|enough|cancel/i);
      const aborted = Date.now();
      assert.ok(progress >= 2, `progress seen: ${progress}`);
      let left;
      do {
        await sleep(250);
        const ps = await client.callTool({ name: 'run_command', arguments: { command: 'ps -eo args | grep -c "[s]eq 1 700" || true' } },
          { timeout: 60000 });
        left = String(ps.structuredContent?.stdout ?? '').trim();
      } while (left !== '0' && Date.now() - aborted < 5000);
      assert.equal(left, '0', 'the cancelled command was killed');
      assert.ok(Date.now() - aborted < 6000, 'killed within 5 s of the cancel');
    } finally {
      await client.close().catch(() => {});
    }
  });
});

describe('hostile and broken HTTP clients', () => {
  let srv;
  before(async () => {
    srv = await startServer({ SANDBOX_MAX_LINE_BYTES: 65536, SANDBOX_HTTP_TIMEOUT_S: 2, SANDBOX_HTTP_REQUEST_TIMEOUT_S: 3 });
  });
  after(async () => {
    const r = await srv?.stop();
    assert.equal(r.code, 0, `exit after SIGTERM: ${JSON.stringify(r)}; ${srv.stderr()}`);
  });

  test('an MCP-Protocol-Version the server does not speak is 400, naming the ones it does', async () => {
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
    for (const v of ['1999-01-01', '2025-06-1', '2025-06-180', 'x'.repeat(4000), '2026-07-28 '.repeat(3)]) {
      const r = await post(srv, list, { 'MCP-Protocol-Version': v });
      assert.equal(r.status, 400, `${v.slice(0, 20)}: ${r.text}`);
      assert.match(r.text, /speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05/, r.text);
    }
    const ok = await post(srv, { jsonrpc: '2.0', id: 2, method: 'ping', params: {} }, { 'MCP-Protocol-Version': '2025-06-18' });
    assert.doesNotMatch(ok.text, /unsupported MCP-Protocol-Version/, 'a version it speaks passes the check');
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

  test('/health too answers only a Host that names the server (no token guards it)', async () => {
    const req = (host) => `GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
    for (const host of [`evil.example:${srv.port}`, '127.0.0.1:1', `127.0.0.1.nip.io:${srv.port}`]) {
      const raw = await rawRequest(srv.port, req(host));
      assert.equal(statusOf(raw), 421, host);
      assert.doesNotMatch(raw, /"sessions"/, 'nothing of the server in the answer');
    }
    assert.equal(statusOf(await rawRequest(srv.port, req(`localhost:${srv.port}`))), 200);
    assert.equal(statusOf(await rawRequest(srv.port, `GET /health HTTP/1.1\r\nConnection: close\r\n\r\n`)), 421, 'no Host');
  });

  test('Content-Length given twice with different values is 400 (RFC 9112 6.3)', async () => {
    const body = JSON.stringify(INIT);
    const n = Buffer.byteLength(body);
    const req = (lengths) => `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nContent-Type: application/json\r\n` +
      `Accept: ${ACCEPT_BOTH}\r\n${lengths.map((l) => `Content-Length: ${l}\r\n`).join('')}Connection: close\r\n\r\n${body}`;
    for (const lengths of [[n, n + 1], [n + 1, n], [n, 0], [`${n}, ${n - 1}`], [`${n}x`]]) {
      assert.equal(statusOf(await rawRequest(srv.port, req(lengths))), 400, JSON.stringify(lengths));
    }
    // the same length twice is one length (a list in one field libmicrohttpd refuses itself)
    assert.equal(statusOf(await rawRequest(srv.port, req([n, n]))), 200);
    // a length beside chunks: which framing counts depends on who reads it (smuggling), and a
    // Content-Length: 0 would have let a chunked body past the body budget uncharged
    const chunked = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nContent-Type: application/json\r\n` +
      `Accept: ${ACCEPT_BOTH}\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
      `${n.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    assert.equal(statusOf(await rawRequest(srv.port, chunked)), 400);
    assert.equal((await post(srv, INIT)).status, 200, 'the server goes on');
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
    await closed;
    const secs = (Date.now() - t0) / 1000;
    assert.ok(secs >= 1.5 && secs < 15, `closed after ${secs.toFixed(1)} s (timeout 2 s)`);
  });

  test('a slowloris client (a byte every 300 ms, never idle 2 s) is cut off at the request deadline', { timeout: 30000 }, async () => {
    const t0 = Date.now();
    const sock = net.connect(srv.port, '127.0.0.1');
    sock.on('error', () => {});
    let answer = '';
    sock.on('data', (d) => { answer += d; });
    const closed = new Promise((resolve) => sock.on('close', resolve));
    const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nContent-Type: application/json\r\n` +
      `X-Pad: ${'p'.repeat(200)}\r\n\r\n`;
    let sent = 0;
    const drip = setInterval(() => { if (sent < head.length && !sock.destroyed) sock.write(head[sent++]); }, 300);
    // without a whole-request deadline the idle timeout (2 s) never fires: the head takes 70 s to drip in
    const outcome = await Promise.race([closed.then(() => 'closed'), sleep(15000).then(() => 'open')]);
    clearInterval(drip);
    sock.destroy();
    const secs = (Date.now() - t0) / 1000;
    assert.equal(outcome, 'closed', `the drip client still connected after ${secs.toFixed(1)} s (${sent} bytes sent)`);
    assert.ok(secs >= 2.5 && secs < 10, `closed after ${secs.toFixed(1)} s (request deadline 3 s)`);
    assert.ok(sent < head.length, 'cut before its head was in');
    assert.equal(answer, '', 'nothing reached MCP');
    assert.equal((await post(srv, INIT)).status, 200, 'the server still serves');
  });

  test('a response write that makes no progress is cut after SANDBOX_HTTP_TIMEOUT_S', { timeout: 120000 }, async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
    const r = await post(srv, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_command',
      arguments: { command: 'head -c 6000000 /dev/urandom > /workspace/big' }, _meta: meta } }, { Accept: 'application/json' });
    const sid = JSON.parse(r.text).result.structuredContent.session_id;
    // python's socket, for a 4 KiB receive buffer (node's net cannot set one): the server's writes stall
    const reader = (pauseS) => spawnSync('python3', ['-c', `
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", ${srv.port}))
s.sendall(b"GET /files/${sid}/workspace/big HTTP/1.1\\r\\nHost: 127.0.0.1:${srv.port}\\r\\nConnection: close\\r\\n\\r\\n")
time.sleep(${pauseS})
s.settimeout(20)
n = 0
while True:
    d = s.recv(65536)
    if not d: break
    n += len(d)
print(n)
`], { encoding: 'utf8', timeout: 60000 });
    const stalled = reader(8);
    assert.equal(stalled.status, 0, stalled.stderr);
    assert.ok(Number(stalled.stdout) < 6000000, `a reader stalled 8 s got ${stalled.stdout.trim()} bytes: cut`);
    const slow = reader(1);
    assert.ok(Number(slow.stdout) > 6000000, `a reader that pauses 1 s gets it all: ${slow.stdout.trim()}`);
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

  test('images a principal commits are its own: not listed, started or replaced by another', { timeout: 300000 }, async () => {
    const REPO = 'sandbox-mcp-commit';
    const made = [];
    const rmi = () => { for (const ref of made) spawnSync('docker', ['rmi', '-f', ref], { stdio: 'ignore' }); };
    // room under SANDBOX_MAX_SESSIONS=2 for each: the test before left both at the limit
    for (const tok of [TA, TB]) {
      for (const x of (await call(tok, 'session_list', {})).structuredContent.sessions)
        await call(tok, 'session_close', { session_id: x.session_id });
    }
    try {
      const a = await call(TA, 'session_create', { name: 'imgsrc' });
      assert.ok(!a.isError, JSON.stringify(a));
      const asid = a.structuredContent.session_id;
      // env_info counts the caller's own sessions
      assert.equal((await call(TA, 'env_info', {})).structuredContent.sessions_open, 1);
      assert.equal((await call(TB, 'env_info', {})).structuredContent.sessions_open, 0);
      assert.ok(!(await call(TA, 'run_command', { command: 'echo alice-secret > /workspace/s.txt', session_id: asid })).isError);
      const c = await call(TA, 'session_commit', { session_id: asid });
      assert.ok(!c.isError, JSON.stringify(c));
      const { reference: ref, image_id: id, tag } = c.structuredContent;
      made.push(ref);
      assert.ok(!tag.includes('imgsrc'), `the default tag names no session: ${tag}`);
      const owner = spawnSync('docker', ['image', 'inspect', '-f', '{{index .Config.Labels "io.sandbox-mcp.commit.owner"}}', ref]);
      assert.match(owner.stdout.toString().trim(), /^uid=\d+,token=alice$/);
      // listed for alice, not for bob
      const local = async (tok) => (await call(tok, 'env_info', {})).structuredContent.images.local;
      assert.ok((await local(TA)).includes(ref), 'alice sees her image');
      assert.ok(!(await local(TB)).includes(ref), 'bob does not');
      // bob cannot start it by name, full id, short id, digest-like or repository-qualified names
      const hex = id.replace(/^sha256:/, '');
      for (const name of [ref, `docker.io/library/${ref}`, id, hex, hex.slice(0, 12), `sha256:${hex.slice(0, 12)}`, hex.slice(0, 4)]) {
        const r = await call(TB, 'session_create', { image: name });
        if (!r.isError) await call(TB, 'session_close', { session_id: r.structuredContent.session_id });
        assert.ok(r.isError, `bob started alice's image as ${name}: ${JSON.stringify(r.structuredContent)}`);
        // missing for him (an ambiguous 4-digit prefix may be the engine's own refusal), never a limit
        assert.ok(['image_not_found', 'invalid_argument', 'engine_error'].includes(errCode(r)), JSON.stringify(r));
        if (name === ref || name === id) assert.equal(errCode(r), 'image_not_found', JSON.stringify(r));
        assert.doesNotMatch(JSON.stringify(r), /alice/, 'the refusal names no other principal');
      }
      // nor replace her tag: her next session still runs her image
      const over = await call(TB, 'session_commit', { repository: REPO, tag });
      assert.equal(errCode(over), 'invalid_argument', JSON.stringify(over));
      const still = spawnSync('docker', ['image', 'inspect', '-f', '{{.Id}}', ref]).stdout.toString().trim();
      assert.equal(still, id, 'the tag is still alice\'s image');
      // alice starts it and reads her file; a commit of her first session may replace her tag
      const again = await call(TA, 'session_create', { image: ref });
      assert.ok(!again.isError, JSON.stringify(again));
      const sid2 = again.structuredContent.session_id;
      const cat = await call(TA, 'run_command', { command: 'cat /workspace/s.txt', session_id: sid2 });
      assert.equal(cat.structuredContent.stdout.trim(), 'alice-secret');
      const mine = await call(TA, 'session_commit', { session_id: asid, repository: REPO, tag });
      assert.ok(!mine.isError, JSON.stringify(mine));
      for (const s of [asid, sid2]) await call(TA, 'session_close', { session_id: s });
    } finally {
      rmi();
    }
  });

  test('checkpoints are their principal\'s: another can neither list, roll back to, fork, export nor delete them', { timeout: 300000 }, async () => {
    for (const tok of [TA, TB]) {
      for (const x of (await call(tok, 'session_list', {})).structuredContent.sessions)
        await call(tok, 'session_close', { session_id: x.session_id });
    }
    const a = await call(TA, 'session_create', { name: 'ckpt' });
    assert.ok(!a.isError, JSON.stringify(a));
    const asid = a.structuredContent.session_id;
    assert.ok(!(await call(TA, 'run_command', { command: 'echo alice-state > /workspace/s.txt', session_id: asid })).isError);
    const ck = await call(TA, 'session_checkpoint', { session_id: asid, name: 'mine' });
    assert.ok(!ck.isError, JSON.stringify(ck));
    const cid = ck.structuredContent.checkpoint_id;
    const owner = spawnSync('docker', ['image', 'inspect', '-f', '{{index .Config.Labels "io.sandbox-mcp.commit.owner"}}',
      `sandbox-mcp-checkpoint:${cid}`]);
    assert.match(owner.stdout.toString().trim(), /^uid=\d+,token=alice$/);
    // alice lists it, bob does not
    const listed = async (tok) => JSON.stringify((await call(tok, 'session_checkpoint', { action: 'list' })).structuredContent);
    assert.ok((await listed(TA)).includes(cid));
    assert.ok(!(await listed(TB)).includes(cid), 'bob does not list it');
    const b = await call(TB, 'session_create', { name: 'thief' });
    assert.ok(!b.isError, JSON.stringify(b));
    const bsid = b.structuredContent.session_id;
    for (const ref of [cid, 'mine']) {
      assert.equal(errCode(await call(TB, 'session_checkpoint', { session_id: bsid, action: 'rollback', checkpoint: ref })),
        'checkpoint_not_found', ref);
      assert.equal(errCode(await call(TB, 'session_fork', { checkpoint: ref })), 'checkpoint_not_found', ref);
      assert.equal(errCode(await call(TB, 'session_export', { checkpoint: ref })), 'checkpoint_not_found', ref);
      assert.equal(errCode(await call(TB, 'session_checkpoint', { action: 'delete', checkpoint: ref })), 'checkpoint_not_found', ref);
    }
    // nor start its image by name
    const img = await call(TB, 'session_create', { image: `sandbox-mcp-checkpoint:${cid}` });
    assert.equal(errCode(img), 'image_not_found', JSON.stringify(img));
    const cat = await call(TB, 'run_command', { command: 'cat /workspace/s.txt 2>&1 || true', session_id: bsid });
    assert.doesNotMatch(cat.structuredContent.stdout, /alice-state/);
    // alice still has it, and forks from it
    const f = await call(TA, 'session_fork', { checkpoint: cid });
    assert.ok(!f.isError, JSON.stringify(f));
    const fid = f.structuredContent.sessions[0].session_id;
    const got = await call(TA, 'run_command', { command: 'cat /workspace/s.txt', session_id: fid });
    assert.equal(got.structuredContent.stdout.trim(), 'alice-state');
    for (const s of [asid, fid]) await call(TA, 'session_close', { session_id: s });
    await call(TB, 'session_close', { session_id: bsid });
    const left = spawnSync('docker', ['images', '-q', `sandbox-mcp-checkpoint:${cid}`]).stdout.toString().trim();
    assert.equal(left, '', 'closing the sessions removed the checkpoint');
  });

  test('signed links: no header needed; altered, re-pointed or forged ones are 403', { timeout: 120000 }, async () => {
    const links = (res) => Object.fromEntries(res.content.filter((c) => c.type === 'resource_link')
      .map((c) => [c.name, c._meta?.[URL_META]]));
    const a = await call(TA, 'run_python', { code: 'open("secret.txt", "w").write("alice-only\\n")' });
    const aUrl = links(a)['secret.txt'];
    assert.ok(aUrl, JSON.stringify(a.content));
    const b = await call(TB, 'run_python', { code: 'open("mine.txt", "w").write("bob\\n")' });
    const bUrl = links(b)['mine.txt'];
    assert.ok(bUrl, JSON.stringify(b.content));
    const aSid = /\/files\/([0-9a-f]+)\//.exec(aUrl)[1];
    const bSid = /\/files\/([0-9a-f]+)\//.exec(bUrl)[1];
    assert.notEqual(aSid, bSid);
    const status = async (u, headers = {}) => (await fetch(u, { headers })).status;
    // the link is the credential: no Authorization, and any Origin (a chat UI shows it)
    const ok = await fetch(aUrl, { headers: { Origin: 'https://chat.example' } });
    assert.equal(ok.status, 200);
    assert.equal(await ok.text(), 'alice-only\n');
    assert.match(ok.headers.get('content-security-policy'), /sandbox/, 'sandbox-written pages cannot run as this origin');
    assert.equal(ok.headers.get('x-content-type-options'), 'nosniff');
    const exp = /exp=(\d+)/.exec(aUrl)[1];
    const sig = /sig=([0-9a-f]+)/.exec(aUrl)[1];
    const flip = (h) => (h[0] === '0' ? '1' : '0') + h.slice(1);
    const altered = {
      'exp + 1': aUrl.replace(`exp=${exp}`, `exp=${Number(exp) + 1}`),
      'exp with a leading zero': aUrl.replace(`exp=${exp}`, `exp=0${exp}`),
      'sig changed': aUrl.replace(`sig=${sig}`, `sig=${flip(sig)}`),
      'sig upper case': aUrl.replace(`sig=${sig}`, `sig=${sig.toUpperCase()}`),
      'sig missing': aUrl.replace(`&sig=${sig}`, ''),
      'exp missing': aUrl.replace(`exp=${exp}&`, ''),
      'path changed': aUrl.replace('secret.txt', 'mine.txt'),
      'path re-spelled': aUrl.replace('/workspace/', '/workspace/./'),
      'session changed': aUrl.replace(aSid, bSid),
      'session by name': aUrl.replace(aSid, 'default'),
      // bob's genuine signature, pointed at alice's session or file
      'bob\'s link on alice\'s session': bUrl.replace(bSid, aSid),
      'bob\'s sig on alice\'s path': aUrl.replace(`sig=${sig}`, `sig=${/sig=([0-9a-f]+)/.exec(bUrl)[1]}`)
        .replace(`exp=${exp}`, `exp=${/exp=(\d+)/.exec(bUrl)[1]}`),
    };
    for (const [what, u] of Object.entries(altered)) {
      // 'path re-spelled' normalises to the same file: the same MAC, so it is served
      const want = what === 'path re-spelled' ? 200 : 403;
      assert.equal(await status(u), want, `${what}: ${u}`);
      assert.equal(await status(u, { Authorization: `Bearer ${TB}` }), want, `${what}, with bob's token`);
    }
    assert.equal(await status(bUrl), 200, 'bob\'s own link works');
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

describe('MCP sessions: per principal, never another\'s', () => {
  const names = Array.from({ length: 10 }, (_, i) => `p${i}`);
  const tok = (n) => `${n}-token-${'x'.repeat(24)}`;
  let dir;
  let srv;
  const auth = (n) => ({ Authorization: `Bearer ${tok(n)}` });
  const init = async (n) => {
    const r = await post(srv, INIT, auth(n));
    return { status: r.status, sid: r.headers.get('mcp-session-id'), text: r.text };
  };
  const inits = async (n, count) => {
    const out = [];
    for (let i = 0; i < count; i += 64) {
      out.push(...await Promise.all(Array.from({ length: Math.min(64, count - i) }, () => init(n))));
    }
    return out;
  };
  const ping = async (n, sid) => (await post(srv, { jsonrpc: '2.0', id: 9, method: 'ping' },
    { ...auth(n), 'Mcp-Session-Id': sid })).status;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-mcp-http-msessions-'));
    writeFileSync(join(dir, 'tokens'), names.map((n) => `${n}:${tok(n)}\n`).join(''), { mode: 0o600 });
    mkdirSync(join(dir, 'host'));
    srv = await startServer({ SANDBOX_HTTP_TOKEN_FILE: join(dir, 'tokens'), SANDBOX_HOST_DIRS: join(dir, 'host') });
  });
  after(async () => {
    const r = await srv?.stop();
    rmSync(dir, { recursive: true, force: true });
    assert.equal(r.code, 0, srv.stderr());
  });

  test('host folders: each principal has <dir>/<NAME>, and none of another\'s', { timeout: 120000 }, async () => {
    const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
    let id = 1000;
    const call = async (n, name, args) => {
      const r = await post(srv, { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: args, _meta: META } },
        { ...auth(n), Accept: 'application/json' });
      assert.equal(r.status, 200, r.text);
      return JSON.parse(r.text).result;
    };
    const code = (res) => res.structuredContent?.error?.code;
    const host = join(dir, 'host');
    for (const n of ['p0', 'p1']) {
      assert.ok(!(await call(n, 'file_write', { path: 'note.txt', content: `${n}'s note\n` })).isError);
    }
    // p0 downloads into its own folder, made on first use
    const d0 = await call('p0', 'file_download', { path: 'note.txt', host_dir: join(host, 'p0') });
    assert.ok(!d0.isError, JSON.stringify(d0));
    assert.equal(readFileSync(join(host, 'p0', 'note.txt'), 'utf8'), 'p0\'s note\n');
    // p1: not into p0's folder, nor the shared one, nor through ..; its own works
    for (const hostDir of [join(host, 'p0'), host, `${host}/p1/../p0`]) {
      assert.equal(code(await call('p1', 'file_download', { path: 'note.txt', host_dir: hostDir })), 'host_path_not_allowed', hostDir);
    }
    for (const hostPath of [join(host, 'p0', 'note.txt'), join(host, 'p0'), `${host}/p1/../p0/note.txt`]) {
      assert.equal(code(await call('p1', 'file_upload', { host_path: hostPath })), 'host_path_not_allowed', hostPath);
    }
    assert.ok(!(await call('p1', 'file_download', { path: 'note.txt', host_dir: join(host, 'p1') })).isError);
    assert.equal(readFileSync(join(host, 'p0', 'note.txt'), 'utf8'), 'p0\'s note\n', 'p0\'s file is untouched');
    assert.equal(readFileSync(join(host, 'p1', 'note.txt'), 'utf8'), 'p1\'s note\n');
    for (const n of ['p0', 'p1']) {
      for (const x of (await call(n, 'session_list', {})).structuredContent.sessions) {
        await call(n, 'session_close', { session_id: x.session_id });
      }
    }
  });

  test('a flood of initialize ends only the flooder\'s own sessions; a full table is 503', { timeout: 180000 }, async () => {
    // p0's session, with a command running in it
    const a = await init('p0');
    assert.equal(a.status, 200, a.text);
    assert.equal((await post(srv, { jsonrpc: '2.0', method: 'notifications/initialized' },
      { ...auth('p0'), 'Mcp-Session-Id': a.sid })).status, 202);
    const running = post(srv, { jsonrpc: '2.0', id: 7, method: 'tools/call',
      params: { name: 'run_command', arguments: { command: 'sleep 4; echo still-here' } } },
    { ...auth('p0'), 'Mcp-Session-Id': a.sid, Accept: 'application/json' });
    await sleep(500);
    // p1 floods: past 128 its own oldest ones end, and only those
    const flood = await inits('p1', 300);
    assert.ok(flood.every((r) => r.status === 200), 'every initialize of p1 is answered');
    assert.equal(await ping('p1', flood[0].sid), 404, 'p1\'s oldest session ended');
    assert.equal(await ping('p1', flood[299].sid), 200);
    assert.equal(await ping('p0', a.sid), 200, 'p0\'s session is untouched');
    // the table fills with others' sessions: 1 + 128 + 6 x 128 + 127 = 1024
    for (const n of ['p2', 'p3', 'p4', 'p5', 'p6', 'p7']) {
      assert.ok((await inits(n, 128)).every((r) => r.status === 200), n);
    }
    assert.ok((await inits('p8', 127)).every((r) => r.status === 200), 'p8');
    // full: a principal with a session replaces its own; one without gets 503, and nobody loses one
    assert.equal((await init('p8')).status, 200);
    const none = await init('p9');
    assert.equal(none.status, 503, none.text);
    assert.match(none.text, /held by other clients/);
    assert.equal(await ping('p0', a.sid), 200, 'p0\'s session is still untouched');
    const r = await running;
    assert.equal(r.status, 200, r.text);
    assert.match(r.text, /still-here/, 'p0\'s command ran to its end');
    // p0 ends its session: the slot is free for p9
    const del = await fetch(srv.url, { method: 'DELETE', headers: { ...auth('p0'), 'Mcp-Session-Id': a.sid } });
    assert.equal(del.status, 200);
    assert.equal((await init('p9')).status, 200);
  });
});

describe('HTTP memory: one budget for request bodies, all connections together', () => {
  let srv;
  before(async () => { srv = await startServer({}); });
  after(async () => {
    const r = await srv?.stop();
    assert.equal(r.code, 0, srv.stderr());
  });

  /** POSTs body on a socket of its own; resolves with the status line's code (0: no answer). */
  const rawPost = (body) => new Promise((resolve) => {
    const sock = net.connect(srv.port, '127.0.0.1');
    let got = '';
    const done = () => { sock.destroy(); resolve(Number((/^HTTP\/1\.1 (\d+)/.exec(got) ?? [])[1] ?? 0)); };
    sock.setTimeout(120000, done);
    sock.on('error', done);
    sock.on('data', (d) => { got += d.toString('latin1', 0, Math.min(d.length, 200)); if (/\r\n\r\n/.test(got)) done(); });
    sock.on('connect', () => {
      sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nContent-Type: application/json\r\n` +
        `Accept: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
      sock.write(body);
    });
  });

  test('240 parallel 4 MiB requests: answered 200 or 503, the server\'s peak RSS bounded', { timeout: 300000 }, async () => {
    // strings in an array: inside the JSON cost budget, so each is read and decoded in full
    const pad = `"${'a'.repeat(32)}",`.repeat((4 << 20) / 35);
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping',
      params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' }, pad: [] } })
      .replace('"pad":[]', `"pad":[${pad}"z"]`));
    assert.ok(body.length > (4 << 20) - 64, `${body.length}`);
    const statuses = await Promise.all(Array.from({ length: 240 }, () => rawPost(body)));
    const counts = {};
    for (const st of statuses) counts[st] = (counts[st] ?? 0) + 1;
    assert.ok(statuses.every((st) => st === 200 || st === 503), JSON.stringify(counts));
    assert.ok((counts[200] ?? 0) >= 8, `some of the budget's worth got through: ${JSON.stringify(counts)}`);
    const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${srv.child.pid}/status`, 'utf8'))[1]) / 1024;
    console.log(`240 x ${(body.length / 1048576).toFixed(1)} MiB: ${JSON.stringify(counts)}, VmHWM ${hwm.toFixed(0)} MiB`);
    // the budget (512 MiB of charges at 8x a body) and the server's own; sanitizers cost more
    assert.ok(hwm < (serverIsSanitized() ? 1800 : 900), `peak RSS ${hwm.toFixed(0)} MiB`);
    assert.equal((await post(srv, INIT)).status, 200, 'the server goes on');
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

describe('signed links expire (SANDBOX_HTTP_LINK_TTL_S)', () => {
  let srv;
  before(async () => { srv = await startServer({ SANDBOX_HTTP_LINK_TTL_S: 2 }); });
  after(async () => { await srv?.stop(); });

  test('a link works until exp, then is 403 (expired)', { timeout: 120000 }, async () => {
    const r = await post(srv, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_python',
      arguments: { code: 'open("soon.txt", "w").write("x")' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } },
    { Accept: 'application/json' });
    const link = JSON.parse(r.text).result.content.find((c) => c.type === 'resource_link');
    const u = link._meta[URL_META];
    const exp = Number(/exp=(\d+)/.exec(u)[1]);
    if (Date.now() / 1000 < exp) assert.equal((await fetch(u)).status, 200, 'fresh');
    while (Date.now() / 1000 <= exp + 1) await sleep(250);
    const late = await fetch(u);
    assert.equal(late.status, 403);
    assert.match(await late.text(), /expired/);
  });
});

describe('links die with the server', () => {
  test('a persistent session\'s link of the last run is 403; a new one works', { timeout: 180000 }, async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
    const call = async (srv, name, args) => {
      const r = await post(srv, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: meta } },
        { Accept: 'application/json' });
      assert.equal(r.status, 200, r.text);
      return JSON.parse(r.text).result;
    };
    const linkOf = (res) => res.content.find((c) => c.type === 'resource_link')?._meta?.[URL_META];
    let srv = await startServer();
    let sid;
    try {
      const c = await call(srv, 'session_create', { persistent: true, name: `links-restart-${process.pid}` });
      assert.ok(!c.isError, JSON.stringify(c));
      sid = c.structuredContent.session_id;
      const old = linkOf(await call(srv, 'file_write', { path: 'kept.txt', content: 'kept', session_id: sid }));
      assert.equal((await fetch(old)).status, 200);
      const oldPath = old.slice(srv.base.length);
      await srv.stop();
      srv = await startServer();
      // the session was adopted by the new run, but the key is new
      let fresh;
      const deadline = Date.now() + 30000;
      do {
        const r = await call(srv, 'file_read', { path: 'kept.txt', session_id: sid });
        fresh = r.isError ? null : linkOf(r);
        if (!fresh) await sleep(500);
      } while (!fresh && Date.now() < deadline);
      assert.ok(fresh, 'the persistent session is there after the restart');
      const stale = await fetch(`${srv.base}${oldPath}`);
      assert.equal(stale.status, 403, 'the old link, on the new server');
      assert.equal(await (await fetch(fresh)).text(), 'kept');
    } finally {
      if (sid) await call(srv, 'session_close', { session_id: sid }).catch(() => {});
      await srv.stop();
    }
  });
});

describe('--http-public-url', () => {
  const PUB = 'https://sandbox.example.com:8443/box';
  let srv;
  before(async () => { srv = await startServer({ SANDBOX_HTTP_PUBLIC_URL: `${PUB}/` }); });
  after(async () => { await srv?.stop(); });

  test('links name the public URL, never the Host a client sent; its host is a valid Host', { timeout: 120000 }, async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_python',
      arguments: { code: 'open("pub.txt", "w").write("p")' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
    const req = (host) => `POST /mcp HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
      `Accept: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
    const raw = await rawRequest(srv.port, req('sandbox.example.com:8443'), { timeoutMs: 110000 });
    assert.equal(statusOf(raw), 200, raw.slice(0, 300));
    const link = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)).result.content.find((c) => c.type === 'resource_link');
    const u = link._meta[URL_META];
    assert.ok(u.startsWith(`${PUB}/files/`), u);
    // the proxy strips /box: the same path and query on the bound address fetch the file
    const local = await fetch(`${srv.base}${u.slice(PUB.length)}`);
    assert.equal(local.status, 200);
    assert.equal(await local.text(), 'p');
    assert.equal(statusOf(await rawRequest(srv.port, req('evil.example'))), 421);
    assert.equal(statusOf(await rawRequest(srv.port, req('sandbox.example.com'))), 421, 'the port counts');
  });

  test('refused at start: a public URL that is not http(s) or carries a query', async () => {
    const port = await freePort();
    for (const bad of ['ftp://x.example', 'https://x.example/?a=1', 'https://user@x.example', 'x.example']) {
      const r = await runToExit(['serve', '--http', `127.0.0.1:${port}`, '--http-public-url', bad]);
      assert.equal(r.code, 1, bad);
      assert.match(r.stderr, /--http-public-url .* is not an http:\/\/ or https:\/\/ URL/, bad);
    }
  });
});

describe('stdio results are unchanged', () => {
  test('resource_link without a download URL; figures inlined, not linked', { timeout: 120000 }, async () => {
    const client = new Client({ name: 'http-e2e-stdio', version: '0' }, { capabilities: {} });
    await client.connect(new StdioClientTransport({ command: BIN, args: [], env: serverEnv(), stderr: 'ignore' }));
    try {
      const res = await client.callTool({ name: 'run_python', arguments: { code: FIGURE_CODE } }, undefined, { timeout: 110000 });
      assert.ok(!res.isError, textOf(res));
      assert.ok(res.content.some((c) => c.type === 'image'), 'the figure is inlined');
      const linksOut = res.content.filter((c) => c.type === 'resource_link');
      assert.deepEqual(linksOut.map((c) => c.name), ['report.txt'], 'only the file is linked, not the figure');
      assert.equal(linksOut[0]._meta, undefined, 'no signed URL on stdio');
      assert.doesNotMatch(JSON.stringify(res), /io\.sandbox-mcp\/url|sandbox-mcp-figures/);
    } finally {
      await client.close().catch(() => {});
    }
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
