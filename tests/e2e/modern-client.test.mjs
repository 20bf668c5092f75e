// The modern (2026-07-28, stateless) era: the official 2.x client
// (@modelcontextprotocol/client), which probes server/discover and then sends
// the per-request _meta envelope, plus raw-pipe checks of what the era requires.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  serverBin, serverEnv, openPipe, sleep, modernMeta, isResponse,
  MODERN_VERSION, META_VERSION, META_CAPS, META_SERVERINFO, META_LOGLEVEL,
} from '../lib/rawpipe.mjs';
import { assertEnvInfoTool, assertEnvInfoResult } from '../lib/expect.mjs';

const BIN = serverBin();
const WIRETAP = fileURLToPath(new URL('../lib/wiretap.mjs', import.meta.url));

/** Connect a 2.x client through the wiretap; returns { client, wire() }. */
async function connectModern(t, mode) {
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-mcp-e2e-wire-'));
  const log = join(dir, 'wire.jsonl');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [WIRETAP],
    env: serverEnv({ SANDBOX_MCP_BIN: BIN, E2E_WIRE_LOG: log }),
    stderr: 'pipe',
  });
  const client = new Client({ name: 'sandbox-mcp-e2e-modern', version: '0.0.0' },
    { versionNegotiation: { mode, probe: { timeoutMs: 10000 } } });
  t.after(async () => {
    await client.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  });
  await client.connect(transport, { timeout: 20000 });
  const wire = () => (existsSync(log) ? readFileSync(log, 'utf8') : '')
    .split('\n').filter(Boolean).map((l) => JSON.parse(l));
  return { client, wire };
}

function resultOf(rec) {
  return JSON.parse(rec.line);
}

describe('@modelcontextprotocol/client 2.x', () => {
  test('auto negotiation settles on 2026-07-28 via server/discover', { timeout: 60000 }, async (t) => {
    const { client, wire } = await connectModern(t, 'auto');
    assert.equal(client.getProtocolEra(), 'modern', 'the client chose the modern era (not the legacy fallback)');
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN_VERSION);
    assert.equal(client.getServerVersion()?.name, 'sandbox-mcp', `serverInfo: ${JSON.stringify(client.getServerVersion())}`);
    assert.ok(client.getInstructions()?.trim(), 'instructions from server/discover');
    assert.ok(client.getServerCapabilities()?.tools, 'capabilities.tools');
    const discover = client.getDiscoverResult();
    assert.ok(discover?.supportedVersions?.includes(MODERN_VERSION), `discover result: ${JSON.stringify(discover)}`);

    const { tools } = await client.listTools();
    assertEnvInfoTool(tools);
    const result = await client.callTool({ name: 'env_info', arguments: {} }, { timeout: 25000 });
    assertEnvInfoResult(result);

    // What went over the wire: the probe first, never initialize, always the envelope.
    const records = wire();
    const sent = records.filter((r) => r.dir === 'c2s').map(resultOf);
    assert.ok(sent.length >= 3, `wire log has the session: ${JSON.stringify(records).slice(0, 2000)}`);
    assert.equal(sent[0].method, 'server/discover', 'the first thing the client sends is server/discover');
    assert.ok(!sent.some((m) => m.method === 'initialize'), 'no initialize on a modern connection');
    for (const m of sent.filter((x) => x.id !== undefined)) {
      assert.equal(m.params?._meta?.[META_VERSION], MODERN_VERSION, `request ${m.method} carries the version`);
    }
    const got = records.filter((r) => r.dir === 's2c').map(resultOf);
    for (const m of got.filter((x) => isResponse(x) && x.result)) {
      assert.equal(m.result.resultType, 'complete', `result for id ${JSON.stringify(m.id)} has resultType complete`);
      assert.equal(m.result._meta?.[META_SERVERINFO]?.name, 'sandbox-mcp', `result for id ${JSON.stringify(m.id)} names the server`);
    }
    assert.ok(!got.some((m) => m.method === 'notifications/message'), 'no log notifications without a logLevel');
  });

  test(`pinned ${MODERN_VERSION}`, { timeout: 60000 }, async (t) => {
    const { client } = await connectModern(t, { pin: MODERN_VERSION });
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN_VERSION);
    const { tools } = await client.listTools();
    assert.ok(tools.some((x) => x.name === 'env_info'));
    const result = await client.callTool({ name: 'env_info', arguments: {} }, { timeout: 25000 });
    assertEnvInfoResult(result);
  });
});

describe('modern era on the raw pipe', () => {
  test('server/discover', { timeout: 20000 }, async (t) => {
    const p = openPipe(t);
    const res = await p.request('server/discover', { _meta: modernMeta() });
    assert.equal(res.jsonrpc, '2.0');
    const r = res.result;
    assert.ok(r, `a result: ${JSON.stringify(res)}`);
    assert.equal(r.resultType, 'complete');
    assert.ok(Array.isArray(r.supportedVersions) && r.supportedVersions.includes(MODERN_VERSION),
      `supportedVersions: ${JSON.stringify(r.supportedVersions)}`);
    assert.ok(r.capabilities?.tools, 'capabilities.tools');
    assert.equal(typeof r.instructions, 'string');
    assert.ok(r.instructions.trim().length > 0, 'instructions not empty');
    assert.ok(Number.isInteger(r.ttlMs) && r.ttlMs >= 0, `ttlMs is an integer >= 0: ${r.ttlMs}`);
    assert.ok(['public', 'private'].includes(r.cacheScope), `cacheScope: ${r.cacheScope}`);
    assert.equal(r._meta?.[META_SERVERINFO]?.name, 'sandbox-mcp');
    assert.equal(typeof r._meta[META_SERVERINFO].version, 'string');
    assert.deepEqual(p.badLines, []);
  });

  test('tools/list with the modern envelope, no initialize', { timeout: 20000 }, async (t) => {
    const p = openPipe(t);
    const res = await p.request('tools/list', {
      _meta: { [META_VERSION]: MODERN_VERSION, [META_CAPS]: {} },
    });
    const r = res.result;
    assert.ok(r, `a result: ${JSON.stringify(res)}`);
    assert.equal(r.resultType, 'complete');
    assert.ok(Number.isInteger(r.ttlMs) && r.ttlMs >= 0, `ttlMs: ${r.ttlMs}`);
    assert.ok(['public', 'private'].includes(r.cacheScope), `cacheScope: ${r.cacheScope}`);
    assert.equal(r._meta?.[META_SERVERINFO]?.name, 'sandbox-mcp');
    assertEnvInfoTool(r.tools);
  });

  test('tools/call env_info with the modern envelope', { timeout: 30000 }, async (t) => {
    const p = openPipe(t);
    const res = await p.request('tools/call', { name: 'env_info', arguments: {}, _meta: modernMeta() }, { timeoutMs: 25000 });
    assert.ok(res.result, `a result: ${JSON.stringify(res)}`);
    assert.equal(res.result.resultType, 'complete');
    assert.equal(res.result._meta?.[META_SERVERINFO]?.name, 'sandbox-mcp');
    assertEnvInfoResult(res.result);
  });

  test('unsupported version → -32022 with data.supported and data.requested', { timeout: 20000 }, async (t) => {
    const p = openPipe(t);
    const res = await p.request('tools/list', {
      _meta: { [META_VERSION]: '2099-01-01', [META_CAPS]: {} },
    }, { id: 'v' });
    assert.equal(res.id, 'v');
    assert.ok(res.error, `an error: ${JSON.stringify(res)}`);
    assert.equal(res.error.code, -32022);
    assert.equal(typeof res.error.message, 'string');
    assert.ok(Array.isArray(res.error.data?.supported), `data.supported: ${JSON.stringify(res.error.data)}`);
    assert.ok(res.error.data.supported.includes(MODERN_VERSION));
    assert.equal(res.error.data.requested, '2099-01-01');
    // The server is still fine afterwards.
    const ok = await p.request('server/discover', { _meta: modernMeta() });
    assert.ok(ok.result);
  });

  test('-32022 never lists the requested version as supported', { timeout: 20000 }, async (t) => {
    // data.supported is what the client should retry with (schema: "choose a mutually supported
    // version from this list and retry"), so it must not contain the version just refused, or a
    // client loops. A legacy revision in _meta is either served or refused consistently.
    const p = openPipe(t);
    for (const v of ['2025-11-25', '2024-11-05']) {
      const res = await p.request('tools/list', { _meta: { [META_VERSION]: v, [META_CAPS]: {} } }, { id: `v-${v}` });
      if (res.error) {
        assert.equal(res.error.code, -32022, `refused with -32022: ${JSON.stringify(res)}`);
        assert.equal(res.error.data?.requested, v);
        assert.ok(!res.error.data.supported.includes(v),
          `data.supported must not include the refused ${v}: ${JSON.stringify(res.error)}`);
      } else {
        assert.ok(Array.isArray(res.result?.tools), `served: ${JSON.stringify(res)}`);
      }
    }
  });

  test('no notifications/message for a modern request without logLevel', { timeout: 40000 }, async (t) => {
    // A debug-level server has plenty to say; none of it may reach this client.
    const p = openPipe(t, { env: { SANDBOX_LOG_LEVEL: 'debug' } });
    const res = await p.request('tools/call', { name: 'env_info', arguments: {}, _meta: modernMeta() }, { id: 7, timeoutMs: 25000 });
    assert.ok(res.result, `a result: ${JSON.stringify(res)}`);
    await p.request('tools/list', { _meta: modernMeta() }, { id: 8 });
    await sleep(300);
    const logs = p.notifications('notifications/message');
    assert.deepEqual(logs, [], 'no log notifications were sent');
    assert.deepEqual(p.badLines, []);
  });

  test('log notifications for a modern request that asked, only while it is in flight', { timeout: 40000 }, async (t) => {
    // Sending logs is optional; what is sent must be well-formed and come before the response.
    const p = openPipe(t);
    const res = await p.request('tools/call', {
      name: 'env_info', arguments: {}, _meta: modernMeta({ [META_LOGLEVEL]: 'debug' }),
    }, { id: 9, timeoutMs: 25000 });
    assert.ok(res.result, `a result: ${JSON.stringify(res)}`);
    const at = p.messages.indexOf(res);
    await sleep(300);
    p.messages.forEach((m, i) => {
      if (m.method !== 'notifications/message') return;
      assert.ok(i < at, `log notification after the response: ${JSON.stringify(m)}`);
      assert.equal(typeof m.params?.level, 'string');
      assert.ok('data' in m.params);
    });
  });
});
