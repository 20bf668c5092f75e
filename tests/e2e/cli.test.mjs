// The command line around the server: --help, --version, bad flags and
// settings, client configuration printing, and doctor's verdicts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modernMeta, openPipe } from '../lib/rawpipe.mjs';

const bin = process.env.SANDBOX_MCP_BIN;
if (!bin) throw new Error('SANDBOX_MCP_BIN must name the built sandbox-mcp binary');

function run(args, env = {}) {
  const r = spawnSync(bin, args, { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 20000, input: '' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('--help prints usage, every setting, and exits 0', () => {
  const r = run(['--help']);
  assert.equal(r.code, 0);
  assert.match(r.out, /^Usage: sandbox-mcp/);
  for (const v of ['DOCKER_HOST', 'SANDBOX_IMAGE', 'SANDBOX_MEMORY_MB', 'SANDBOX_TIMEOUT_S', 'SANDBOX_TOOLS'])
    assert.ok(r.out.includes(v), `--help lists ${v}`);
  assert.equal(r.err, '');
});

test('--version prints the version and exits 0', () => {
  const r = run(['--version']);
  assert.equal(r.code, 0);
  assert.match(r.out, /^sandbox-mcp \d+\.\d+\.\d+\n$/);
});

test('an unknown flag exits 2 with one line on stderr and nothing on stdout', () => {
  const r = run(['--bogus']);
  assert.equal(r.code, 2);
  assert.equal(r.out, '');
  assert.equal(r.err.trim().split('\n').length, 1, r.err);
  assert.match(r.err, /unknown setting '--bogus'/);
});

test('an unknown command exits 2', () => {
  const r = run(['frobnicate']);
  assert.equal(r.code, 2);
  assert.match(r.err, /unknown command 'frobnicate'/);
});

test('bad setting values exit 2 naming the setting and the range', () => {
  let r = run(['--memory-mb', '5']);
  assert.equal(r.code, 2);
  assert.match(r.err, /--memory-mb.*from 16/);
  r = run([], { SANDBOX_TIMEOUT_S: 'soon' });
  assert.equal(r.code, 2);
  assert.match(r.err, /SANDBOX_TIMEOUT_S: 'soon' is not a whole number/);
  r = run([], { SANDBOX_TOOLS: 'run,nope' });
  assert.equal(r.code, 2);
  assert.match(r.err, /unknown group 'nope'/);
  // ssh:// is supported since issue 19: an unknown scheme is still refused
  r = run([], { DOCKER_HOST: 'ftp://somewhere' });
  assert.equal(r.code, 1);
  assert.match(r.err, /DOCKER_HOST 'ftp:\/\/somewhere' is not supported/);
  // an ssh host that ssh would read as an option never reaches ssh
  r = run([], { DOCKER_HOST: 'ssh://-oProxyCommand=touch${IFS}pwned' });
  assert.equal(r.code, 1);
  assert.match(r.err, /the host must be a name or address/);
});

test('config claude-desktop prints an mcpServers entry with this binary\'s absolute path', () => {
  const r = run(['config', 'claude-desktop']);
  assert.equal(r.code, 0);
  const j = JSON.parse(r.out);
  assert.equal(j.mcpServers.sandbox.command, realpathSync(bin));
  assert.deepEqual(j.mcpServers.sandbox.args, []);
});

test('config claude-code prints a claude mcp add line for the user scope', () => {
  const r = run(['config', 'claude-code']);
  assert.equal(r.code, 0);
  assert.ok(r.out.endsWith(`claude mcp add -s user sandbox -- '${realpathSync(bin)}'\n`), r.out);
  const bad = run(['config', 'vim']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /unknown client 'vim' \(clients: claude-desktop, claude-code, gemini, codex\)/);
});

// A binary whose path has a space, an apostrophe, a double quote and a backslash:
// what config prints must hand each client exactly that path.
test('config output carries a hostile binary path exactly, for every client', () => {
  const base = mkdtempSync(join(tmpdir(), 'sandbox-mcp-cfg-'));
  try {
    const dir = join(base, `it's a "dir" \\ x`);
    mkdirSync(dir);
    const copy = join(dir, 'sandbox mcp');
    copyFileSync(bin, copy);
    chmodSync(copy, 0o755);
    const path = realpathSync(copy);
    const runCopy = (args) => spawnSync(copy, args, { encoding: 'utf8', timeout: 20000, input: '' });

    // claude-code: the printed lines, run by sh with a stub `claude` on PATH, pass the exact path
    const stubDir = join(base, 'bin');
    mkdirSync(stubDir);
    writeFileSync(join(stubDir, 'claude'), '#!/bin/sh\nfor a in "$@"; do printf \'%s\\n\' "$a"; done\n');
    chmodSync(join(stubDir, 'claude'), 0o755);
    let r = runCopy(['config', 'claude-code']);
    assert.equal(r.status, 0, r.stderr);
    const sh = spawnSync('sh', ['-c', r.stdout], { encoding: 'utf8', env: { ...process.env, PATH: `${stubDir}:${process.env.PATH}` } });
    assert.equal(sh.status, 0, sh.stderr);
    assert.deepEqual(sh.stdout.split('\n').slice(0, -1), ['mcp', 'add', '-s', 'user', 'sandbox', '--', path]);

    // claude-desktop and gemini: JSON that parses to the path
    for (const client of ['claude-desktop', 'gemini']) {
      r = runCopy(['config', client]);
      assert.equal(r.status, 0, r.stderr);
      const j = JSON.parse(r.stdout);
      assert.equal(j.mcpServers.sandbox.command, path, client);
      assert.deepEqual(j.mcpServers.sandbox.args, [], client);
    }

    // codex: a TOML table that a TOML parser reads back to the path
    r = runCopy(['config', 'codex']);
    assert.equal(r.status, 0, r.stderr);
    const py = spawnSync('python3', ['-c', 'import json, sys, tomllib; print(json.dumps(tomllib.loads(sys.stdin.read())))'],
      { input: r.stdout, encoding: 'utf8' });
    assert.equal(py.status, 0, py.stderr);
    const t = JSON.parse(py.stdout);
    assert.equal(t.mcp_servers.sandbox.command, path);
    assert.deepEqual(t.mcp_servers.sandbox.args, []);
    assert.ok(t.mcp_servers.sandbox.tool_timeout_sec >= 60);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test('settings may follow the command', () => {
  // the setting after `doctor` is used: doctor reports that endpoint, not "unknown command"
  const r = run(['doctor', '--docker-host', 'unix:///nonexistent/sandbox-mcp-after.sock']);
  assert.equal(r.code, 1, r.err);
  assert.match(r.out, /FAIL {2}socket \/nonexistent\/sandbox-mcp-after\.sock/);
  const v = run(['config', 'claude-code', '--log-level=error']);
  assert.equal(v.code, 0, v.err);
  const bad = run(['doctor', '--memory-mb', '5']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--memory-mb: '5' is not a whole number from 16/);
});

test('help, help COMMAND, and messages that name what was wrong', () => {
  let r = run(['help']);
  assert.equal(r.code, 0);
  assert.match(r.out, /^Usage: sandbox-mcp/);
  assert.match(r.out, /config CLIENT/);
  r = run(['help', 'config']);
  assert.equal(r.code, 0);
  assert.match(r.out, /^Usage: sandbox-mcp config CLIENT/);
  assert.match(r.out, /claude-desktop.*claude-code.*gemini.*codex/s);
  r = run(['help', 'nope']);
  assert.equal(r.code, 2);
  assert.match(r.err, /help: unknown command 'nope'/);
  r = run(['config']);
  assert.equal(r.code, 2);
  assert.equal(r.err, 'sandbox-mcp: config needs a client: claude-desktop, claude-code, gemini, codex\n');
  r = run(['doctor', '--no-such-setting']);
  assert.equal(r.code, 2);
  assert.match(r.err, /unknown setting '--no-such-setting'/);
  assert.doesNotMatch(r.err, /unknown command/);
  r = run(['doctor', 'now']);
  assert.equal(r.code, 2);
  assert.match(r.err, /doctor takes no arguments; got 'now'/);
  r = run(['config', 'codex', 'extra']);
  assert.equal(r.code, 2);
  assert.match(r.err, /config codex: 'extra' is not docker or docker=IMAGE/);
  r = run(['config', 'codex', 'docker', 'extra']);
  assert.equal(r.code, 2);
  assert.match(r.err, /'extra' is one argument too many/);
  r = run(['--image', 'x', 'frobnicate']);
  assert.equal(r.code, 2);
  assert.match(r.err, /unknown command 'frobnicate'/);
});

test('doctor without an engine exits 1 and says how to fix it', () => {
  const r = run(['doctor'], { DOCKER_HOST: 'unix:///nonexistent/sandbox-mcp-doctor.sock' });
  assert.equal(r.code, 1);
  assert.match(r.out, /FAIL {2}socket \/nonexistent\/sandbox-mcp-doctor\.sock/);
  assert.match(r.out, /DOCKER_HOST/);
});

test('doctor against a socket that never answers exits 1 within its timeout', () => {
  const r = run(['doctor'], { DOCKER_HOST: 'tcp://127.0.0.1:9', SANDBOX_ENGINE_TIMEOUT_S: '2' });
  assert.equal(r.code, 1);
  assert.match(r.out, /FAIL {2}engine: cannot connect/);
});

test('doctor checks the host folders and the outbox, engine or not', () => {
  const base = mkdtempSync(join(tmpdir(), 'sandbox-mcp-doctor-'));
  try {
    mkdirSync(join(base, 'allowed', 'outbox'), { recursive: true });
    const noEngine = { DOCKER_HOST: 'unix:///nonexistent/sandbox-mcp-doctor.sock' };
    let r = run(['doctor'], { ...noEngine, SANDBOX_HOST_DIRS: '' });
    assert.match(r.out, /^note {2}no host folders allowed \(SANDBOX_HOST_DIRS\)/m);
    r = run(['doctor'], { ...noEngine, SANDBOX_HOST_DIRS: join(base, 'allowed'), SANDBOX_OUTBOX: join(base, 'allowed', 'outbox') });
    assert.match(r.out, new RegExp(`^ok {4}host folders for file_upload/file_download: ${realpathSync(join(base, 'allowed'))}$`, 'm'));
    assert.match(r.out, new RegExp(`^ok {4}outbox ${realpathSync(join(base, 'allowed', 'outbox'))}$`, 'm'));
    r = run(['doctor'], { ...noEngine, SANDBOX_HOST_DIRS: join(base, 'allowed'), SANDBOX_OUTBOX: base });
    assert.match(r.out, /^FAIL {2}SANDBOX_OUTBOX: host path .* is outside the allowed host directories/m);
    r = run(['doctor'], { ...noEngine, SANDBOX_HOST_DIRS: join(base, 'missing') });
    assert.match(r.out, /^FAIL {2}SANDBOX_HOST_DIRS=.*missing names no existing absolute folder/m);
    assert.equal(r.code, 1);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test('an engine that does not answer at start: a warning, the instructions and env_info say so', { timeout: 60000 }, async (t) => {
  const p = openPipe(t, { env: { DOCKER_HOST: 'unix:///nonexistent/sandbox-mcp-e2e.sock' } });
  const init = await p.initialize();
  const instr = init.result.instructions;
  assert.match(instr, /^WARNING: the Docker engine was unreachable when this server started/, instr);
  assert.match(instr, /\/nonexistent\/sandbox-mcp-e2e\.sock/);
  assert.match(instr, /start Docker or fix DOCKER_HOST/);
  const disc = await p.request('server/discover', { _meta: modernMeta() });
  assert.match(disc.result.instructions, /Docker engine was unreachable/);
  const call = await p.request('tools/call', { name: 'env_info', arguments: {} });
  assert.equal(call.result.isError, undefined);
  assert.equal(call.result.structuredContent.engine.reachable, false);
  assert.match(call.result.content.map((c) => c.text).join('\n'), /Docker engine not reachable at unix:\/\/\/nonexistent/);
  assert.match(p.stderr, /warning: .*the Docker engine does not answer, so every sandbox tool will fail until it does: .*nonexistent.*sandbox-mcp doctor/);
});

test('a healthy engine: no warning at start', { timeout: 60000 }, async (t) => {
  const p = openPipe(t, { env: { SANDBOX_LOG_LEVEL: 'warning' } });
  const init = await p.initialize();
  assert.doesNotMatch(init.result.instructions, /WARNING/);
  await p.request('ping');
  assert.doesNotMatch(p.stderr, /does not answer/);
});
