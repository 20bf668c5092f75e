// The server as a container (README "Install"): the image that
// image/server/build.sh makes from this build, started the way
// `sandbox-mcp config CLIENT docker` prints, through the official SDK's stdio
// transport. It serves stdio like the binary; a client that kills its
// `docker run` leaves no sandbox behind within seconds; two servers in two
// containers on one engine leave each other's sessions alone; a server
// container the engine killed has its sandboxes removed by the next server,
// and its persistent sessions adopted by one next server (the claim).

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { serverBin, sleep } from '../lib/rawpipe.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TAG = `sandbox-mcp-e2e:${process.pid}`;
const docker = (...args) => execFileSync('docker', args, { encoding: 'utf8' }).trim();
/** The engine's containers of sandbox-mcp instances: [{ id, instance }] (sessions and pool members). */
const sandboxes = () => docker('ps', '--no-trunc', '--filter', 'label=io.sandbox-mcp.instance', '--format',
  '{{.ID}} {{.Label "io.sandbox-mcp.instance"}}').split('\n').filter(Boolean).map((l) => {
  const [id, instance] = l.split(' ');
  return { id, instance };
});
/** The instances that have containers now and had none in before. */
const newInstances = (before) => [...new Set(sandboxes().filter((c) => !before.has(c.id)).map((c) => c.instance))];
const alive = (instance) => sandboxes().some((c) => c.instance === instance);
const serverContainers = () => docker('ps', '-q', '--no-trunc', '--filter', `ancestor=${TAG}`).split('\n').filter(Boolean);

/** A client on the printed docker launch; resolves { client, transport }. */
async function connect(launch) {
  const transport = new StdioClientTransport({ command: launch.command, args: launch.args, stderr: 'pipe' });
  const client = new Client({ name: 'docker-run-e2e', version: '0' });
  await client.connect(transport);
  return { client, transport };
}

async function until(what, fn, ms = 30000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (fn()) return;
    await sleep(250);
  }
  assert.fail(`${what} within ${ms} ms`);
}

describe('the server image, started as `config CLIENT docker` prints', { timeout: 300000 }, () => {
  let launch;

  before(() => {
    const r = spawnSync(join(ROOT, 'image/server/build.sh'), [serverBin(), TAG], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), TAG);
    const cfg = JSON.parse(execFileSync(serverBin(), ['config', 'claude-desktop', `docker=${TAG}`], { encoding: 'utf8' }));
    launch = cfg.mcpServers.sandbox;
  });
  after(() => {
    for (const id of serverContainers()) spawnSync('docker', ['rm', '-f', id]);
    spawnSync('docker', ['rmi', '-f', TAG]);
  });

  test('the printed entry is docker run -i --rm with the engine socket', () => {
    assert.equal(launch.command, 'docker');
    assert.deepEqual(launch.args.slice(0, 5), ['run', '-i', '--rm', '-v', '/var/run/docker.sock:/var/run/docker.sock']);
    assert.equal(launch.args.at(-1), TAG);
    const size = Number(docker('image', 'inspect', '-f', '{{.Size}}', TAG));
    assert.ok(size < 80e6, `the image is ${size} bytes`);
    // what the MCP Registry checks before it lists the image (server.json)
    const label = docker('image', 'inspect', '-f', '{{index .Config.Labels "io.modelcontextprotocol.server.name"}}', TAG);
    assert.equal(label, JSON.parse(readFileSync(join(ROOT, 'server.json'), 'utf8')).name);
  });

  test('it serves stdio like the binary; a killed docker run leaves no sandbox behind', async () => {
    const before = new Set(sandboxes().map((c) => c.id));
    const { client, transport } = await connect(launch);
    const tools = await client.listTools();
    assert.ok(tools.tools.some((t) => t.name === 'run_command'));
    const r = await client.callTool({ name: 'run_command', arguments: { command: 'echo from-a-container' } });
    assert.ok(!r.isError, JSON.stringify(r));
    assert.match(r.structuredContent.stdout, /from-a-container/);
    const mine = newInstances(before);
    assert.equal(mine.length, 1, 'the containers of one server instance');
    assert.equal(serverContainers().length, 1);
    process.kill(transport.pid, 'SIGKILL'); // the client kills its `docker run`
    await until('its session and pool containers are removed', () => !alive(mine[0]));
    await until('the server container is gone', () => serverContainers().length === 0);
    await client.close().catch(() => {});
  });

  test('two servers in two containers leave each other\'s sessions alone', async () => {
    const before = new Set(sandboxes().map((c) => c.id));
    const a = await connect(launch);
    await a.client.callTool({ name: 'run_command', arguments: { command: 'echo a > /workspace/who' } });
    const [ia] = newInstances(before);
    const b = await connect(launch);
    await b.client.callTool({ name: 'run_command', arguments: { command: 'echo b > /workspace/who' } });
    const ib = newInstances(before).filter((i) => i !== ia);
    assert.ok(ia);
    assert.equal(ib.length, 1, 'b is an instance of its own');
    process.kill(a.transport.pid, 'SIGKILL');
    await until('a\'s containers are removed', () => !alive(ia));
    await sleep(1000);
    assert.ok(alive(ib[0]), 'b\'s containers live on');
    const r = await b.client.callTool({ name: 'run_command', arguments: { command: 'cat /workspace/who' } });
    assert.equal(r.structuredContent.stdout, 'b\n', 'b\'s session is its own, untouched');
    await b.client.close();
    await until('b\'s containers are removed when b ends', () => !alive(ib[0]));
    await a.client.close().catch(() => {});
  });

  test('a server container killed by the engine: the next server on it removes its sandboxes', async () => {
    const before = new Set(sandboxes().map((c) => c.id));
    const a = await connect(launch);
    await a.client.callTool({ name: 'run_command', arguments: { command: 'echo a' } });
    const [ia] = newInstances(before);
    assert.ok(ia);
    const [server] = serverContainers();
    const labels = JSON.parse(docker('inspect', '-f', '{{json .Config.Labels}}',
      sandboxes().find((c) => c.instance === ia).id));
    assert.equal(labels['io.sandbox-mcp.server'], server, 'its sessions name the server\'s container');
    docker('kill', server); // not its client: no end of stdin, no cleanup, its janitor dies with it
    await until('the server container is gone', () => serverContainers().length === 0);
    await sleep(1500);
    assert.ok(alive(ia), 'nothing removed them yet');
    const b = await connect(launch); // its start-up scan asks the engine for a's container
    await until('a\'s sandboxes are removed by the next server', () => !alive(ia));
    const r = await b.client.callTool({ name: 'run_command', arguments: { command: 'echo b' } });
    assert.equal(r.structuredContent.stdout, 'b\n');
    await b.client.close();
    await a.client.close().catch(() => {});
  });

  test('a persistent session outlives its server container: one next server claims it', async () => {
    const name = `keep-${process.pid}`;
    const call = (c, args) => c.client.callTool({ name: 'run_command', arguments: { session_id: name, ...args } });
    const a = await connect(launch);
    const made = await a.client.callTool({ name: 'session_create', arguments: { name, persistent: true } });
    assert.ok(!made.isError, JSON.stringify(made));
    const kept = made.structuredContent.container_id;
    const dead = docker('inspect', '-f', '{{index .Config.Labels "io.sandbox-mcp.instance"}}', kept);
    await call(a, { command: 'echo kept > /workspace/k.txt' });
    docker('kill', serverContainers()[0]); // no cleanup at all: the session stays behind
    await until('the server container is gone', () => serverContainers().length === 0);
    await a.client.close().catch(() => {});
    // two servers at once: the engine lets one of them name the claim
    const [b, c] = await Promise.all([connect(launch), connect(launch)]);
    const got = await Promise.all([b, c].map((x) => call(x, { command: 'cat /workspace/k.txt' })));
    const owners = got.filter((r) => !r.isError);
    assert.equal(owners.length, 1, `exactly one server adopted it: ${JSON.stringify(got)}`);
    assert.equal(owners[0].structuredContent.stdout, 'kept\n');
    assert.match(JSON.stringify(got.find((r) => r.isError)), /session_not_found|no session/);
    const claims = () => docker('ps', '-a', '-q', '--filter', `label=io.sandbox-mcp.claim=${dead}`)
      .split('\n').filter(Boolean);
    assert.equal(claims().length, 1, 'one claim, by the server that adopted it');
    // both end cleanly: the claim goes with its server, the session stays for the next one
    await Promise.all([b.client.close(), c.client.close()]);
    await until('the claim is removed with its server', () => claims().length === 0);
    assert.ok(docker('ps', '-q', '--no-trunc').includes(kept), 'the persistent session is still running');
    const d = await connect(launch);
    const r = await call(d, { command: 'cat /workspace/k.txt' });
    assert.equal(r.structuredContent?.stdout, 'kept\n', `the next server adopted it too: ${JSON.stringify(r)}`);
    const closed = await d.client.callTool({ name: 'session_close', arguments: { session_id: name } });
    assert.ok(!closed.isError, JSON.stringify(closed));
    await d.client.close();
    await until('closing it removed it', () => !docker('ps', '-a', '-q', '--no-trunc').includes(kept));
  });
});
