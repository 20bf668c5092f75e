// Progress notifications and the 1.x SDK (the client inside Claude Code).
//
// SDK 1.x runs a notification's handler in a microtask but handles a response
// at once, deleting the request's progress handler: a progress notification
// that arrives in the same read as its response finds no handler, and the
// client reports "Received a progress notification for an unknown token"
// through onerror (Claude Code then logs "STDIO connection dropped"). env_info
// used to send a "done" progress right before its result; a run_command whose
// last output line comes just before it exits does the same through the
// output progress. No onerror may fire, however often we call.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { serverBin, serverEnv } from '../lib/rawpipe.mjs';

const BIN = serverBin();

describe('progress never races the result (SDK 1.x)', () => {
  let client;
  let stderr = '';
  const errors = [];

  before(async () => {
    const transport = new StdioClientTransport({
      command: BIN, args: [], env: serverEnv(), stderr: 'pipe',
    });
    transport.stderr?.on('data', (d) => { stderr = (stderr + d.toString()).slice(-8000); });
    client = new Client({ name: 'sandbox-mcp-e2e-progress', version: '0.0.0' }, { capabilities: {} });
    client.onerror = (e) => { errors.push(String(e?.message ?? e)); };
    await client.connect(transport, { timeout: 20000 });
  });

  after(async () => {
    await client?.close().catch(() => {});
  });

  test('env_info with a progress handler, 20 calls: no onerror', { timeout: 120000 }, async () => {
    let progress = 0;
    for (let i = 0; i < 20; i++) {
      const r = await client.callTool({ name: 'env_info', arguments: {} }, undefined,
        { timeout: 25000, onprogress: () => { progress++; } });
      assert.ok(r.structuredContent?.server, `env_info answered: ${JSON.stringify(r).slice(0, 500)}`);
    }
    // let any late notification's microtask run
    await new Promise((res) => setTimeout(res, 200));
    assert.deepEqual(errors, [], `the client reported errors (progress seen ${progress}); server stderr: ${stderr.slice(-2000)}`);
  });

  test('run_command whose last line comes right before its exit: no onerror', { timeout: 240000 }, async (t) => {
    if (process.env.SANDBOX_TEST_MUST_WORK !== '1') {
      const info = await client.callTool({ name: 'env_info', arguments: {} });
      if (!info.structuredContent?.engine?.reachable) {
        t.skip('no Docker engine (SANDBOX_TEST_MUST_WORK=1 makes this a failure)');
        return;
      }
    }
    let progress = 0;
    for (let i = 0; i < 3; i++) {
      const r = await client.callTool({
        name: 'run_command',
        arguments: { command: 'for i in 1 2 3 4 5 6; do echo "line $i"; sleep 0.1; done; echo last' },
      }, undefined, { timeout: 120000, onprogress: () => { progress++; } });
      assert.equal(r.structuredContent?.exit_code, 0, `run_command answered: ${JSON.stringify(r).slice(0, 800)}`);
    }
    await new Promise((res) => setTimeout(res, 200));
    assert.ok(progress > 0, 'the server sent progress while the command printed');
    assert.deepEqual(errors, [], `the client reported errors (progress seen ${progress}); server stderr: ${stderr.slice(-2000)}`);
    await client.callTool({ name: 'session_close', arguments: { session_id: 'default' } }).catch(() => {});
  });
});
