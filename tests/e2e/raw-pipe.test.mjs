// JSON-RPC framing and error paths, straight on the server's stdin/stdout.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { openPipe, sleep, isResponse, describeMsg, initializeParams } from '../lib/rawpipe.mjs';

/** The stdout of every pipe must be JSON-RPC 2.0 lines only. */
function assertCleanStdout(p) {
  assert.deepEqual(p.badLines.map((l) => l.slice(0, 200)), [], 'every stdout line parses as JSON');
  for (const m of p.messages) {
    const all = Array.isArray(m) ? m : [m];
    for (const x of all) assert.equal(x?.jsonrpc, '2.0', `jsonrpc "2.0" on ${describeMsg(x)}`);
  }
}

function assertError(msg, code, id, what) {
  assert.ok(msg && typeof msg === 'object' && !Array.isArray(msg), `${what}: a response object, got ${describeMsg(msg)}`);
  assert.equal(msg.jsonrpc, '2.0', `${what}: jsonrpc 2.0`);
  assert.ok(!('result' in msg), `${what}: no result beside the error: ${describeMsg(msg)}`);
  assert.ok(msg.error && typeof msg.error === 'object', `${what}: an error object: ${describeMsg(msg)}`);
  assert.equal(msg.error.code, code, `${what}: error code: ${describeMsg(msg)}`);
  assert.equal(typeof msg.error.message, 'string', `${what}: error.message is a string`);
  assert.ok('id' in msg, `${what}: the id member is present (null when unknown): ${describeMsg(msg)}`);
  assert.deepEqual(msg.id, id, `${what}: id: ${describeMsg(msg)}`);
}

/** Send one raw line and return the next message the server writes. */
async function sendAndNext(p, line, timeoutMs = 5000) {
  const n = p.messages.length;
  await p.send(line);
  await p.waitForCount(n + 1, timeoutMs);
  return p.messages[n];
}

/** A started, initialized legacy pipe. */
async function ready(t, opts) {
  const p = openPipe(t, opts);
  await p.initialize();
  return p;
}

/** A unix socket that accepts connections and never answers: a hung Docker engine. */
async function hungEngine(t) {
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-mcp-e2e-hung-'));
  const path = join(dir, 'docker.sock');
  const sockets = new Set();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
    // Read and discard; never write.
    s.resume();
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
  const engine = { path, url: `unix://${path}`, connections: 0 };
  server.on('connection', () => { engine.connections++; });
  t.after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  return engine;
}

test('a line that is not JSON → -32700 with id null', { timeout: 20000 }, async (t) => {
  const p = await ready(t);
  for (const line of ['this is not json', '{"jsonrpc":"2.0","id":1,"method":"ping"', '{\'a\':1}', '\u00e9\u00e8']) {
    assertError(await sendAndNext(p, line), -32700, null, `parse error for ${JSON.stringify(line)}`);
  }
  // Invalid UTF-8 is not JSON text either.
  assertError(await sendAndNext(p, Buffer.from([0x7b, 0xff, 0xfe, 0x7d])), -32700, null, 'invalid UTF-8');
  assert.deepEqual((await p.request('ping', undefined, { id: 99 })).result, {});
  assertCleanStdout(p);
});

test('valid JSON that is not a request → -32600, id echoed only when it is a valid id', { timeout: 30000 }, async (t) => {
  const p = await ready(t);
  const cases = [
    ['{"jsonrpc":"2.0","id":1}', 1],
    ['{"jsonrpc":"2.0","id":"s1"}', 's1'],
    ['{"jsonrpc":"1.0","id":2,"method":"ping"}', 2],
    ['{"id":3,"method":"ping"}', 3],
    ['{"jsonrpc":2,"id":"x3","method":"ping"}', 'x3'],
    ['{"jsonrpc":"2.0","id":4,"method":17}', 4],
    ['{"jsonrpc":"2.0","id":"m","method":null}', 'm'],
    ['42', null],
    ['"hello"', null],
    ['null', null],
    ['true', null],
    ['{}', null],
    ['{"jsonrpc":"2.0","id":1.5,"method":"ping"}', null],
    ['{"jsonrpc":"2.0","id":null,"method":"ping"}', null],
    ['{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', null],
    ['{"jsonrpc":"2.0","id":[5],"method":"ping"}', null],
    ['{"jsonrpc":"2.0","id":true,"method":"ping"}', null],
  ];
  for (const [line, id] of cases) {
    assertError(await sendAndNext(p, line), -32600, id, line);
  }
  assert.deepEqual((await p.request('ping', undefined, { id: 100 })).result, {});
  assertCleanStdout(p);
});

test('unknown method → -32601 with the id echoed exactly', { timeout: 20000 }, async (t) => {
  const p = await ready(t);
  const ids = [7, 'seven', 0, -3, 9007199254740991, '', '7', 'a"b\\c\u00e9\u{1F600}'];
  for (const id of ids) {
    const res = await p.request('no/such_method', {}, { id });
    assertError(res, -32601, id, `unknown method, id ${JSON.stringify(id)}`);
    assert.equal(typeof res.id, typeof id, 'integer ids stay integers, string ids stay strings');
  }
  // An unknown notification gets no reply at all.
  const n = p.messages.length;
  await p.notify('notifications/no_such_thing', {});
  const ping = await p.request('ping', undefined, { id: 'after' });
  assert.deepEqual(ping.result, {});
  assert.equal(p.messages.length, n + 1, `only the ping was answered: ${describeMsg(p.messages.slice(n))}`);
  assertCleanStdout(p);
});

test('tools/call with an unknown tool → -32602', { timeout: 20000 }, async (t) => {
  const p = await ready(t);
  const res = await p.request('tools/call', { name: 'no_such_tool', arguments: {} }, { id: 5 });
  assertError(res, -32602, 5, 'unknown tool');
  assertCleanStdout(p);
});

test('tools/call with bad params → -32602', { timeout: 20000 }, async (t) => {
  const p = await ready(t);
  const cases = [
    ['params is a string', 'env_info'],
    ['params is an array', ['env_info']],
    ['params is a number', 5],
    ['params is null', null],
    ['name is a number', { name: 5, arguments: {} }],
    ['name is an object', { name: { tool: 'env_info' }, arguments: {} }],
    ['name is missing', { arguments: {} }],
    ['params are missing', undefined],
  ];
  let id = 1;
  for (const [what, params] of cases) {
    const res = await p.request('tools/call', params, { id: id++ });
    assertError(res, -32602, id - 1, what);
  }
  assertCleanStdout(p);
});

test('a request before initialize → an error reply, then initialize still works', { timeout: 20000 }, async (t) => {
  const p = openPipe(t);
  const early = await p.request('tools/list', {}, { id: 1 });
  assert.ok(early.error, `tools/list before initialize is refused: ${describeMsg(early)}`);
  assert.equal(early.id, 1);
  assert.ok(Number.isInteger(early.error.code), 'an integer error code');
  assert.ok(early.error.code !== -32022, 'not the modern-era version error (the request had no version)');
  t.diagnostic(`pre-initialize tools/list → ${describeMsg(early)}`);
  const early2 = await p.request('tools/call', { name: 'env_info', arguments: {} }, { id: 2 });
  assert.ok(early2.error, `tools/call before initialize is refused: ${describeMsg(early2)}`);
  // ping is allowed at any time.
  assert.deepEqual((await p.request('ping', undefined, { id: 3 })).result, {});
  const init = await p.initialize();
  assert.ok(init.result.protocolVersion);
  const list = await p.request('tools/list', {}, { id: 4 });
  assert.ok(list.result?.tools?.some((x) => x.name === 'env_info'), `tools/list after initialize: ${describeMsg(list)}`);
  assertCleanStdout(p);
});

test('a second initialize is refused; the first one\'s version stands', { timeout: 20000 }, async (t) => {
  const p = openPipe(t);
  const first = await p.initialize('2025-03-26');
  assert.equal(first.result.protocolVersion, '2025-03-26');
  for (const [id, version] of [[2, '2025-06-18'], [3, '2025-03-26']]) {
    const again = await p.request('initialize', initializeParams(version), { id });
    assertError(again, -32600, id, `initialize #${id}`);
    assert.match(again.error.message, /already initialized \(protocol 2025-03-26\)/);
  }
  // the session goes on as it was
  const list = await p.request('tools/list', {}, { id: 4 });
  assert.ok(list.result?.tools?.length > 0, describeMsg(list));
  assert.deepEqual((await p.request('ping', undefined, { id: 5 })).result, {});
  assertCleanStdout(p);
});

test('a JSON array batch → an array of responses or one -32600; the server keeps working', { timeout: 20000 }, async (t) => {
  const p = await ready(t);
  const batch = JSON.stringify([
    { jsonrpc: '2.0', id: 10, method: 'ping' },
    { jsonrpc: '2.0', id: 11, method: 'ping' },
  ]);
  const reply = await sendAndNext(p, batch);
  if (Array.isArray(reply)) {
    assert.equal(reply.length, 2, `two responses: ${describeMsg(reply)}`);
    assert.deepEqual(reply.map((r) => r.id).sort(), [10, 11]);
    for (const r of reply) assert.deepEqual(r.result, {});
  } else {
    assertError(reply, -32600, null, 'batch refused');
  }
  t.diagnostic(`batch → ${describeMsg(reply)}`);
  // An empty array is an invalid request under every reading of JSON-RPC.
  assertError(await sendAndNext(p, '[]'), -32600, null, 'empty batch');
  assert.deepEqual((await p.request('ping', undefined, { id: 12 })).result, {});
  assertCleanStdout(p);
});

test('a 10 MiB line is answered and the server keeps working', { timeout: 60000 }, async (t) => {
  const p = await ready(t);
  const big = 'a'.repeat(10 * 1024 * 1024);
  const line = JSON.stringify({ jsonrpc: '2.0', id: 'big', method: 'ping', params: { _meta: { x: big } } });
  assert.ok(line.length > 10 * 1024 * 1024);
  const n = p.messages.length;
  const t0 = Date.now();
  await p.send(line);
  await p.waitForCount(n + 1, 45000);
  const reply = p.messages[n];
  t.diagnostic(`10 MiB ping answered in ${Date.now() - t0} ms: ${describeMsg(reply)}`);
  assert.ok(isResponse(reply), `a response: ${describeMsg(reply)}`);
  if (reply.id === 'big' && 'result' in reply) {
    assert.deepEqual(reply.result, {});
  } else {
    // A server may cap line length; then it must say so and recover.
    assert.ok(reply.error, `an error if not a result: ${describeMsg(reply)}`);
    assert.ok(reply.id === 'big' || reply.id === null, `id "big" or null: ${describeMsg(reply)}`);
  }
  assert.deepEqual((await p.request('ping', undefined, { id: 'small' })).result, {});
  assert.equal(p.messages.length, n + 2, 'exactly one reply for the big line');
  assertCleanStdout(p);
});

test('10,000 lines of random bytes: one error each, no crash, then a ping is answered', { timeout: 120000 }, async (t) => {
  const p = await ready(t);
  const LINES = 10000;
  const parts = [];
  for (let i = 0; i < LINES; i++) {
    const body = randomBytes(1 + Math.floor(Math.random() * 200));
    for (let j = 0; j < body.length; j++) if (body[j] === 0x0a) body[j] = 0x0b;
    body[0] = 0x01; // no JSON value starts with 0x01: never a valid message, never empty
    parts.push(body, Buffer.from('\n'));
  }
  const noise = Buffer.concat(parts);
  const n = p.messages.length;
  await p.writeRaw(noise);
  const ping = await p.request('ping', undefined, { id: 'after-noise', timeoutMs: 90000 });
  assert.deepEqual(ping.result, {});
  await sleep(200);
  const replies = p.messages.slice(n).filter((m) => m !== ping);
  const codes = {};
  for (const r of replies) {
    const key = r?.error ? `${r.error.code}/id=${JSON.stringify(r.id)}` : `other:${describeMsg(r)}`;
    codes[key] = (codes[key] ?? 0) + 1;
  }
  t.diagnostic(`replies to noise: ${JSON.stringify(codes)}`);
  assert.equal(replies.length, LINES, `exactly one reply per line: ${JSON.stringify(codes)}`);
  for (const r of replies) {
    assert.ok(r.error && (r.error.code === -32700 || r.error.code === -32600) && r.id === null,
      `each noise reply is -32700/-32600 with id null: ${describeMsg(r)}`);
  }
  assert.ok(p.alive, 'the server is still running');
  assertCleanStdout(p);
});

test('empty lines are ignored', { timeout: 20000 }, async (t) => {
  const p = await ready(t);
  const n = p.messages.length;
  await p.writeRaw('\n\n\n');
  const ping = await p.request('ping', undefined, { id: 'e' });
  assert.deepEqual(ping.result, {});
  await sleep(200);
  assert.equal(p.messages.length, n + 1, `only the ping was answered: ${describeMsg(p.messages.slice(n))}`);
  assertCleanStdout(p);
});

test('a request line ending in CRLF is answered (\\r is JSON whitespace)', { timeout: 20000 }, async (t) => {
  const p = await ready(t);
  await p.writeRaw('{"jsonrpc":"2.0","id":"crlf","method":"ping"}\r\n');
  const res = await p.waitForId('crlf', 5000);
  assert.deepEqual(res.result, {});
  assertCleanStdout(p);
});

test('EOF on stdin: exit code 0 within 1 s (after initialize)', { timeout: 20000 }, async (t) => {
  const p = await ready(t);
  await p.request('tools/list', {}, { id: 1 });
  p.closeStdin();
  const { code, signal, ms } = await p.waitExit(5000);
  t.diagnostic(`exited ${code}/${signal} ${ms} ms after EOF`);
  assert.equal(signal, null, 'no signal');
  assert.equal(code, 0, `exit code 0; stderr: ${p.stderr.slice(-1000)}`);
  assert.ok(ms <= 1000, `exited within 1 s of EOF (took ${ms} ms)`);
  assertCleanStdout(p);
});

test('EOF on stdin with no input at all: exit code 0 within 1 s', { timeout: 20000 }, async (t) => {
  const p = openPipe(t);
  await sleep(300); // let it start up
  p.closeStdin();
  const { code, ms } = await p.waitExit(5000);
  assert.equal(code, 0, `exit code 0; stderr: ${p.stderr.slice(-1000)}`);
  assert.ok(ms <= 1000, `exited within 1 s of EOF (took ${ms} ms)`);
  assert.equal(p.messages.length, 0, 'nothing written to stdout');
  assertCleanStdout(p);
});

test('stdout carries only JSON-RPC lines, even at debug log level', { timeout: 40000 }, async (t) => {
  const p = await ready(t, { env: { SANDBOX_LOG_LEVEL: 'debug' } });
  await p.request('logging/setLevel', { level: 'debug' }, { id: 1 });
  await p.request('tools/list', {}, { id: 2 });
  await p.request('tools/call', { name: 'env_info', arguments: {} }, { id: 3, timeoutMs: 25000 });
  await p.request('no/such_method', {}, { id: 4 });
  await p.send('garbage');
  await p.request('ping', undefined, { id: 5 });
  p.closeStdin();
  await p.waitExit(5000);
  assert.ok(p.messages.length >= 6, `all answered: ${p.messages.length}`);
  assertCleanStdout(p);
  for (const m of p.notifications('notifications/message')) {
    assert.equal(typeof m.params?.level, 'string', `log notification has a level: ${describeMsg(m)}`);
    assert.ok('data' in m.params, `log notification has data: ${describeMsg(m)}`);
  }
});

test('a ping sent while a slow tools/call runs is answered first', { timeout: 40000 }, async (t) => {
  const engine = await hungEngine(t);
  const p = await ready(t, { env: { DOCKER_HOST: engine.url, SANDBOX_ENGINE_TIMEOUT_S: '2' } });
  const t0 = Date.now();
  await p.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'env_info', arguments: {} } });
  await p.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
  const ping = await p.waitForId(2, 5000);
  const pingMs = Date.now() - t0;
  assert.deepEqual(ping.result, {});
  const call = await p.waitForId(1, 15000);
  const callMs = Date.now() - t0;
  t.diagnostic(`ping after ${pingMs} ms, env_info after ${callMs} ms; engine connections: ${engine.connections}`);
  assert.ok(p.messages.indexOf(ping) < p.messages.indexOf(call), 'the ping reply came before the tools/call reply');
  assert.ok(engine.connections >= 1, 'env_info did try the engine at DOCKER_HOST');
  assert.ok(callMs <= 6000, `env_info gave up on the hung engine in ~5 s (took ${callMs} ms)`);
  assert.ok(call.result, `env_info answered with a result: ${describeMsg(call)}`);
  assert.ok(!call.result.isError, `an unreachable engine is reported, not a tool error: ${describeMsg(call)}`);
  assert.equal(call.result.structuredContent?.engine?.reachable, false, `engine.reachable false: ${describeMsg(call)}`);
  assert.equal(typeof call.result.structuredContent.engine.endpoint, 'string');
  assertCleanStdout(p);
});

test('notifications/cancelled for an in-flight call: no reply for it, server still answers', { timeout: 40000 }, async (t) => {
  const engine = await hungEngine(t);
  const p = await ready(t, { env: { DOCKER_HOST: engine.url, SANDBOX_ENGINE_TIMEOUT_S: '2' } });
  await p.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'env_info', arguments: {} } });
  // Make sure it is really in flight (talking to the hung engine) before cancelling.
  const deadline = Date.now() + 3000;
  while (engine.connections === 0 && Date.now() < deadline) await sleep(20);
  assert.ok(engine.connections >= 1, 'env_info reached the engine socket');
  await p.notify('notifications/cancelled', { requestId: 1, reason: 'test cancels it' });
  await sleep(4000);
  const forOne = p.messages.filter((m) => isResponse(m) && m.id === 1);
  assert.deepEqual(forOne, [], 'no response for the cancelled request');
  assert.deepEqual((await p.request('ping', undefined, { id: 2 })).result, {});
  // And the tool still works afterwards.
  const again = await p.request('tools/call', { name: 'env_info', arguments: {} }, { id: 3, timeoutMs: 15000 });
  assert.equal(again.result?.structuredContent?.engine?.reachable, false, describeMsg(again));
  assert.deepEqual(p.messages.filter((m) => isResponse(m) && m.id === 1), [], 'still nothing for id 1');
  assertCleanStdout(p);
});
