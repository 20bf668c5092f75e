// run_command through sandbox-mcp-agent: the agent runs in the session as the
// sandbox user and cannot be replaced, commands report cpu_ms and max_rss_kb,
// argv runs without a shell, and a killed agent ends the call with a clear
// error, its command's processes killed, and the next call restarts it.
// read_only sessions keep the exec path (the engine refuses to copy into a
// read-only root filesystem). An image holding one static binary (no shell,
// no python) runs a session: argv works, a command string is shell_not_found.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Server, suite, requireEngine, cleanup, docker, show, sleep,
} from './lib/harness.mjs';

// a server built without musl-gcc has no agent (doctor says so): nothing to test here
const doctor = spawnSync(process.env.SANDBOX_MCP_BIN ?? 'sandbox-mcp', ['doctor'], { encoding: 'utf8', timeout: 30000 });
// ... except in CI (SANDBOX_TEST_MUST_WORK=1), where .ci/prepare installs musl-tools: there it must run
const noAgent = /built without the in-sandbox agent/.test(doctor.stdout ?? '') && process.env.SANDBOX_TEST_MUST_WORK !== '1'
  ? 'this sandbox-mcp was built without the agent (no musl-gcc)' : false;

/** The command agents in the container (not the idle one), as "pid user args" lines. */
async function agents(cid) {
  const out = await docker(['exec', cid, 'ps', '-eo', 'pid,user,args']);
  return out.stdout.split('\n').filter((l) => /\/\.sandbox-mcp\/agent$/.test(l.trim()));
}

describe('run_command through the agent', suite({ timeout: 110000, skip: noAgent }), () => {
  let srv;
  let sid;
  let cid;

  before(async () => {
    requireEngine();
    srv = await Server.start('agent', { SANDBOX_TIMEOUT_S: 30 });
    const st = await srv.createSession({ name: 'agent' });
    sid = st.session_id;
    cid = st.container_id;
  });

  after(async () => {
    await cleanup();
  });

  test('the agent runs as the sandbox user, owned by root, mode 0555, and reports usage', async () => {
    // a loop of 0.2 s of CPU time (not wall time: on a loaded machine 0.2 s of wall time may get far less CPU)
    const st = await srv.sh('python3 -c "x = bytearray(40 << 20); import time; t = time.process_time()\nwhile time.process_time() - t < 0.2: pass"',
      { session_id: sid });
    assert.equal(typeof st.cpu_ms, 'number', `cpu_ms in structuredContent: ${JSON.stringify(st)}`);
    assert.ok(st.cpu_ms >= 100, `cpu_ms counts the busy loop: ${st.cpu_ms}`);
    assert.ok(st.max_rss_kb >= 40 * 1024, `max_rss_kb sees the 40 MiB buffer: ${st.max_rss_kb}`);
    const res = await srv.call('run_command', { command: 'true', session_id: sid });
    assert.match(res.content[0].text, /^exit code 0 \(\d+\.\d\d s, cpu \d+ ms, max rss \d+ KiB\)/, show(res));

    const procs = await agents(cid);
    assert.equal(procs.length, 1, `one agent: ${procs.join('\n')}`);
    assert.doesNotMatch(procs[0], /^\s*\d+\s+root\s/, `the agent is not root: ${procs[0]}`);
    const ls = await srv.sh('stat -c "%U %a" /.sandbox-mcp /.sandbox-mcp/agent', { session_id: sid });
    assert.equal(ls.stdout, 'root 555\nroot 555\n');
    const w = await srv.ok('run_command', {
      command: 'cp /bin/true /.sandbox-mcp/agent || mv /.sandbox-mcp /tmp/x || rm -f /.sandbox-mcp/agent',
      session_id: sid,
    });
    assert.notEqual(w.exit_code, 0, `the sandbox user cannot replace the agent: ${JSON.stringify(w)}`);
  });

  test('argv runs without a shell; both or neither of command and argv is refused', async () => {
    const st = await srv.ok('run_command', { argv: ['printf', '%s|', 'a b', '$HOME', ';ls'], session_id: sid });
    assert.equal(st.stdout, 'a b|$HOME|;ls|');
    assert.equal(typeof st.cpu_ms, 'number');
    const nf = await srv.ok('run_command', { argv: ['no-such-program-x'], session_id: sid });
    assert.equal(nf.exit_code, 127, JSON.stringify(nf));
    assert.match(nf.stderr, /no-such-program-x/);
    await srv.fails('run_command', { command: 'true', argv: ['true'], session_id: sid }, 'invalid_argument');
    await srv.fails('run_command', { session_id: sid }, 'invalid_argument');
    await srv.fails('run_command', { argv: [], session_id: sid }, 'invalid_argument');
    await srv.fails('run_command', { argv: [''], session_id: sid }, 'invalid_argument');
  });

  test('env, workdir and stdin reach the command; a timeout kills its whole group', async () => {
    await srv.sh('mkdir -p sub', { session_id: sid });
    const st = await srv.ok('run_command', {
      command: 'echo "$FOO"; pwd; cat', env: { FOO: 'bar baz' }, workdir: 'sub', stdin: 'in put\n', session_id: sid,
    });
    assert.equal(st.stdout, 'bar baz\n/workspace/sub\nin put\n');
    const t = await srv.fails('run_command', {
      command: 'sleep 300 & sleep 301 & sleep 302', timeout_s: 1, session_id: sid,
    }, 'timeout');
    assert.equal(t.timed_out, true, JSON.stringify(t));
    assert.equal(t.restarted, false, 'killed by the agent, no restart');
    const left = await srv.sh('ps -eo args | grep "^sleep 30[012]" || true', { session_id: sid });
    assert.equal(left.stdout, '', 'no sleep left');
  });

  test('killing the agent mid-call ends the call with a clear error; the next call works', async () => {
    const call = srv.call('run_command', { command: 'echo started; sleep 120', session_id: sid });
    let procs = [];
    // wait for the command to be running, then kill the agent from the host
    for (let i = 0; i < 200; i++) {
      const ps = await docker(['exec', cid, 'ps', '-eo', 'args']);
      if (ps.stdout.includes('sleep 120')) break;
      await sleep(50);
    }
    procs = await agents(cid);
    assert.equal(procs.length, 1, procs.join('\n'));
    await docker(['exec', cid, 'kill', '-KILL', procs[0].trim().split(/\s+/)[0]]);
    const res = await call;
    assert.equal(res.isError, true, show(res));
    assert.equal(res.structuredContent.error.code, 'engine_error', show(res));
    assert.match(res.structuredContent.error.message, /agent.*stopped while the command ran/, show(res));
    assert.match(res.structuredContent.stdout, /started/, 'the output so far is kept');
    const ps = await docker(['exec', cid, 'ps', '-eo', 'args']);
    assert.doesNotMatch(ps.stdout, /sleep 120/, 'the command was killed with the agent');
    const st = await srv.sh('echo again', { session_id: sid });
    assert.equal(st.stdout, 'again\n');
    assert.equal(typeof st.cpu_ms, 'number', 'the next call went through a new agent');
    assert.equal((await agents(cid)).length, 1);
  });

  test('read_only sessions keep the exec path and work', async () => {
    const ro = await srv.createSession({ read_only: true });
    const st = await srv.sh('echo ro; touch /x 2>/dev/null || echo refused', { session_id: ro.session_id });
    assert.equal(st.stdout, 'ro\nrefused\n');
    assert.equal(st.cpu_ms, undefined, 'no usage figures on the exec path');
    const a = await srv.ok('run_command', { argv: ['echo', 'a b'], session_id: ro.session_id });
    assert.equal(a.stdout, 'a b\n');
  });
});

describe('an image without a shell', suite({ timeout: 60000, skip: noAgent }), () => {
  const tag = 'sandbox-mcp-agenttest-noshell:latest';
  let srv;

  before(async () => {
    requireEngine();
    // one static binary, nothing else: no /bin/sh, no python3, no /etc/passwd
    const dir = mkdtempSync(join(tmpdir(), 'agent-noshell-'));
    mkdirSync(join(dir, 'bin'));
    copyFileSync('/bin/busybox', join(dir, 'bin', 'busybox'));
    chmodSync(join(dir, 'bin', 'busybox'), 0o755);
    const tar = join(tmpdir(), `agent-noshell-${process.pid}.tar`);
    execFileSync('tar', ['-C', dir, '-cf', tar, 'bin']);
    await docker(['import', '--change', 'LABEL io.sandbox-mcp.test=agent', tar, tag]);
    rmSync(dir, { recursive: true, force: true });
    rmSync(tar, { force: true });
    srv = await Server.start('agent-noshell', { SANDBOX_TIMEOUT_S: 30 });
  });

  after(async () => {
    await cleanup();
    await docker(['rmi', '-f', tag]).catch(() => {});
  });

  test('argv works, a command string fails with shell_not_found naming the image', async () => {
    const s = await srv.createSession({ image: tag });
    const st = await srv.ok('run_command', { argv: ['/bin/busybox', 'echo', 'no shell'], session_id: s.session_id });
    assert.equal(st.stdout, 'no shell\n', JSON.stringify(st));
    assert.equal(st.exit_code, 0);
    const f = await srv.fails('run_command', { command: 'echo hi', session_id: s.session_id }, 'shell_not_found');
    assert.match(f.error.message, new RegExp(tag.replace(/[.:]/g, '\\$&')), f.error.message);
    assert.match(f.error.message, /argv/, 'says what to do instead');
    // the session is still usable
    const again = await srv.ok('run_command', { argv: ['/bin/busybox', 'true'], session_id: s.session_id });
    assert.equal(again.exit_code, 0);
  });
});
