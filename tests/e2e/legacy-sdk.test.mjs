// The legacy (handshake) era through the official 1.x SDK client:
// @modelcontextprotocol/sdk Client + StdioClientTransport.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { serverBin, serverEnv, openPipe, NEWEST_LEGACY, LEGACY_VERSIONS } from '../lib/rawpipe.mjs';
import { assertEnvInfoTool, assertEnvInfoResult } from '../lib/expect.mjs';

const BIN = serverBin();
const CALL_TIMEOUT = { timeout: 30000 };

/**
 * StdioClientTransport that can make the 1.x client ask for an older protocol
 * revision (the SDK always sends LATEST_PROTOCOL_VERSION in initialize and has
 * no option to change it) and records the version the server answered with.
 */
class VersionedStdioTransport extends StdioClientTransport {
  constructor(params, requestVersion) {
    super(params);
    this.requestVersion = requestVersion;
    this.negotiated = undefined;
  }

  async send(message) {
    if (this.requestVersion && message.method === 'initialize') {
      message = { ...message, params: { ...message.params, protocolVersion: this.requestVersion } };
    }
    return super.send(message);
  }

  setProtocolVersion(version) {
    this.negotiated = version;
  }
}

function makeClient(t, requestVersion) {
  const transport = new VersionedStdioTransport({
    command: BIN,
    args: [],
    env: serverEnv(), // the SDK's default environment would drop DOCKER_HOST and SANDBOX_*
    stderr: 'pipe',
  }, requestVersion);
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr = (stderr + d.toString()).slice(-8000); });
  const client = new Client({ name: 'sandbox-mcp-e2e-legacy', version: '0.0.0' }, { capabilities: {} });
  client.onerror = (e) => { client.lastError = e; };
  if (t) {
    t.after(async () => {
      await client.close().catch(() => {});
    });
  }
  return { client, transport, stderr: () => stderr };
}

describe(`sdk ${LATEST_PROTOCOL_VERSION} handshake`, () => {
  let client;
  let transport;
  let stderr;

  before(async () => {
    ({ client, transport, stderr } = makeClient(null));
    await client.connect(transport, { timeout: 20000 });
  }, { timeout: 30000 });

  after(async () => {
    await client?.close().catch(() => {});
  });

  test('negotiates the newest legacy revision', () => {
    assert.equal(LATEST_PROTOCOL_VERSION, NEWEST_LEGACY, 'this SDK asks for the newest legacy revision');
    assert.equal(transport.negotiated, NEWEST_LEGACY);
  });

  test('serverInfo and instructions', () => {
    const info = client.getServerVersion();
    assert.equal(info?.name, 'sandbox-mcp', `serverInfo: ${JSON.stringify(info)}`);
    assert.match(String(info.version), /^\d+\.\d+\.\d+/);
    const instructions = client.getInstructions();
    assert.equal(typeof instructions, 'string', 'instructions are a string');
    assert.ok(instructions.trim().length > 0, 'instructions are not empty');
    const caps = client.getServerCapabilities();
    assert.ok(caps?.tools, `capabilities.tools: ${JSON.stringify(caps)}`);
    assert.ok(caps?.logging, 'capabilities.logging');
  });

  test('listTools: env_info with schemas, annotations, title', CALL_TIMEOUT, async () => {
    const { tools } = await client.listTools();
    assertEnvInfoTool(tools);
    const again = await client.listTools();
    assert.deepEqual(again.tools.map((x) => x.name), tools.map((x) => x.name), 'tools/list order is deterministic');
  });

  test('callTool env_info', CALL_TIMEOUT, async () => {
    // The SDK validates structuredContent against the tool's outputSchema here.
    const result = await client.callTool({ name: 'env_info', arguments: {} }, undefined, { timeout: 25000 });
    assertEnvInfoResult(result);
  });

  test('ping', CALL_TIMEOUT, async () => {
    const r = await client.ping();
    assert.deepEqual(Object.keys(r).filter((k) => k !== '_meta'), [], `ping result is empty: ${JSON.stringify(r)}`);
  });

  test('setLoggingLevel(debug)', CALL_TIMEOUT, async () => {
    await client.setLoggingLevel('debug');
    // Still healthy afterwards, and notifications/message (if any) did not upset the client.
    await client.ping();
    assert.equal(client.lastError, undefined, `client saw no error: ${client.lastError} ${stderr()}`);
  });
});

describe('sdk client asking for 2024-11-05', () => {
  test('the server answers 2024-11-05 and serves tools', { timeout: 40000 }, async (t) => {
    const { client, transport } = makeClient(t, '2024-11-05');
    await client.connect(transport, { timeout: 20000 });
    assert.equal(transport.negotiated, '2024-11-05');
    assert.equal(client.getServerVersion()?.name, 'sandbox-mcp');
    const { tools } = await client.listTools();
    const tool = tools.find((x) => x.name === 'env_info');
    assert.ok(tool, 'env_info is listed');
    assert.equal(tool.inputSchema?.type, 'object');
    const result = await client.callTool({ name: 'env_info', arguments: {} }, undefined, { timeout: 25000 });
    // structuredContent arrived with 2025-06-18; a 2024-11-05 client needs the text.
    assertEnvInfoResult(result, { structured: false });
    await client.ping();
    await client.close();
  });
});

describe('raw initialize version negotiation', () => {
  for (const version of LEGACY_VERSIONS) {
    test(`initialize ${version} → ${version}`, { timeout: 20000 }, async (t) => {
      const p = openPipe(t);
      const res = await p.initialize(version);
      assert.equal(res.jsonrpc, '2.0');
      assert.equal(res.result.protocolVersion, version);
      assert.equal(res.result.serverInfo?.name, 'sandbox-mcp');
      assert.equal(typeof res.result.serverInfo?.version, 'string');
      assert.ok(res.result.capabilities?.tools, 'capabilities.tools');
      assert.equal(res.result.capabilities.tools.listChanged, false, 'tools.listChanged is false');
      assert.ok(res.result.capabilities?.logging, 'capabilities.logging');
      assert.equal(typeof res.result.instructions, 'string');
      assert.ok(!('resultType' in res.result), 'a legacy result carries no resultType');
      assert.deepEqual(p.badLines, [], 'stdout carries only JSON lines');
    });
  }

  test('capabilities advertise exactly what is served (resources)', { timeout: 20000 }, async (t) => {
    // docs/design.md §2 wants resources; until they exist the server must not advertise them.
    const p = openPipe(t);
    const res = await p.initialize();
    const caps = res.result.capabilities;
    const list = await p.request('resources/list', {}, { id: 'rl' });
    const templates = await p.request('resources/templates/list', {}, { id: 'rtl' });
    if (caps.resources) {
      assert.ok(Array.isArray(list.result?.resources), `resources/list serves: ${JSON.stringify(list)}`);
      assert.ok(Array.isArray(templates.result?.resourceTemplates), `resources/templates/list serves: ${JSON.stringify(templates)}`);
    } else {
      t.diagnostic('capabilities.resources is not advertised (docs/design.md §2 wants it)');
      assert.equal(list.error?.code, -32601, `resources/list is unknown: ${JSON.stringify(list)}`);
      assert.equal(templates.error?.code, -32601, `resources/templates/list is unknown: ${JSON.stringify(templates)}`);
    }
  });

  test('initialize 1999-01-01 → the newest legacy revision', { timeout: 20000 }, async (t) => {
    const p = openPipe(t);
    const res = await p.initialize('1999-01-01');
    assert.equal(res.result.protocolVersion, NEWEST_LEGACY);
  });

  test('initialize with a modern revision string → the newest legacy revision', { timeout: 20000 }, async (t) => {
    // initialize is a legacy-era method: it can only ever settle on a legacy revision.
    const p = openPipe(t);
    const res = await p.initialize('2026-07-28');
    assert.equal(res.result.protocolVersion, NEWEST_LEGACY);
  });
});
