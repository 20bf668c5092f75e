// run_command through sandbox-mcp-agent: the agent runs in the session as the
// sandbox user and cannot be replaced, commands report cpu_ms and max_rss_kb,
// argv runs without a shell, and a killed agent ends the call with a clear
// error, its command's processes killed, and the next call restarts it.
// read_only sessions get the agent through an anonymous volume at
// /.sandbox-mcp (the engine refuses to copy into a read-only root, not into
// a volume), removed with the container. An image holding one static binary (no shell,
// no python) runs a session: argv works, a command string is shell_not_found,
// and the file tools work there through the agent's built-in file operations.
// The file tools take no exec of the engine once the agent runs.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Server, suite, requireEngine, cleanup, docker, show, sleep, inspectContainer, PODMAN,
} from '../lib/harness.mjs';

// a server built without musl-gcc has no agent (doctor says so): nothing to test here
const doctor = spawnSync(process.env.SANDBOX_MCP_BIN ?? 'sandbox-mcp', ['doctor'], { encoding: 'utf8', timeout: 30000 });
// ... except in CI (SANDBOX_TEST_MUST_WORK=1), where .ci/prepare installs musl-tools: there it must run
const noAgent = /built without the in-sandbox agent/.test(doctor.stdout ?? '') && process.env.SANDBOX_TEST_MUST_WORK !== '1'
  ? 'this sandbox-mcp was built without the agent (no musl-gcc)' : false;

/** The exec_create events of container cid from since (unix seconds) to now, as their commands. */
async function execsSince(cid, since) {
  const until = (Date.now() / 1000 + 1).toFixed(3);
  const ev = await docker(['events', '--since', since, '--until', until, '--filter', `container=${cid}`,
    '--filter', 'event=exec_create', '--format', '{{.Action}}']);
  assert.equal(ev.code, 0, ev.stderr);
  return ev.stdout.split('\n').filter(Boolean);
}

/** file_write, file_read, file_list, file_patch and file_delete on session sid, as a model would. */
async function fileRoundTrip(srv, sid) {
  const w = await srv.ok('file_write', { path: 'ft/dir/a.txt', content: 'héllo\nwörld\n', session_id: sid });
  assert.equal(w.bytes, 14);
  const r = await srv.call('file_read', { path: 'ft/dir/a.txt', session_id: sid });
  assert.ok(!r.isError, show(r));
  assert.equal(r.content[1].text, 'héllo\nwörld\n');
  const part = await srv.call('file_read', { path: 'ft/dir/a.txt', offset: 1, length: 5, session_id: sid });
  assert.equal(part.content[1].text, 'éllo', show(part));
  await srv.ok('file_write', { path: 'ft/bin.dat', content: 'AAEC/w==', encoding: 'base64', mode: '600', session_id: sid });
  const l = await srv.ok('file_list', { path: 'ft', depth: 3, session_id: sid });
  const names = l.entries.map((e) => `${e.path}:${e.type}:${e.size}`).sort();
  assert.deepEqual(names, ['bin.dat:file:4', 'dir/a.txt:file:14', 'dir:directory:' + l.entries.find((e) => e.path === 'dir').size]);
  assert.equal(l.entries.find((e) => e.path === 'bin.dat').mode, '0600', JSON.stringify(l.entries));
  const p = await srv.ok('file_patch', { path: 'ft/dir/a.txt', patches: [{ old: 'wörld', new: 'there' }], session_id: sid });
  assert.equal(p.bytes, 13);
  await srv.fails('file_write', { path: 'ft/dir/a.txt', content: 'x', overwrite: false, session_id: sid }, 'file_exists');
  await srv.fails('file_read', { path: 'ft/none.txt', session_id: sid }, 'file_not_found');
  const d = await srv.fails('file_read', { path: 'ft/dir', session_id: sid }, 'invalid_argument');
  assert.match(d.error.message, /is a directory/);
  const nr = await srv.fails('file_delete', { path: 'ft', session_id: sid }, 'invalid_argument');
  assert.match(nr.error.message, /recursive/);
  const del = await srv.ok('file_delete', { path: 'ft', recursive: true, session_id: sid });
  assert.equal(del.type, 'directory');
  await srv.fails('file_list', { path: 'ft', session_id: sid }, 'file_not_found');
}

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

  test('the agent runs as the sandbox user, owned by root, mode 0511, and reports usage', async () => {
    // 0.2 s of CPU, not of wall time: on a loaded machine a wall-time loop gets a fraction of it
    const st = await srv.sh('python3 -c "x = bytearray(40 << 20); import time; t = time.process_time()\n' +
      'while time.process_time() - t < 0.2: pass"',
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
    assert.equal(ls.stdout, 'root 555\nroot 511\n', 'the agent is execute-only for the user (drop.test.mjs)');
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

  test('the file tools go through the agent: no exec of the engine per call, same answers', async () => {
    await srv.ok('file_list', { session_id: sid }); // the agent is up (it is started at most once here)
    const since = (Date.now() / 1000).toFixed(3);
    await fileRoundTrip(srv, sid);
    const execs = await execsSince(cid, since);
    assert.deepEqual(execs, [], `no exec was created for the file tools: ${execs.join('\n')}`);
    // the kernel still decides: the sandbox user cannot read what it could not read before
    await srv.fails('file_read', { path: '/etc/shadow', session_id: sid }, 'invalid_argument');
    await srv.fails('file_write', { path: '/usr/bin/python3', content: 'x', session_id: sid }, 'invalid_argument');
    const nf = await srv.fails('file_delete', { path: '/etc/passwd', session_id: sid }, 'engine_error');
    assert.match(nf.error.message, /Permission denied/, nf.error.message);
  });

  test('a killed agent: the file call works (the exec path if need be), the next starts a new agent', async () => {
    await srv.ok('file_write', { path: 'k.txt', content: 'k', session_id: sid });
    const procs = await agents(cid);
    assert.equal(procs.length, 1, procs.join('\n'));
    await docker(['exec', cid, 'kill', '-KILL', procs[0].trim().split(/\s+/)[0]]);
    // whether the server saw the agent's stream end before this call or during it, the call works
    const r = await srv.call('file_read', { path: 'k.txt', session_id: sid });
    assert.equal(r.content[1]?.text, 'k', show(r));
    const l = await srv.ok('file_list', { session_id: sid });
    assert.ok(l.entries.some((e) => e.path === 'k.txt'), JSON.stringify(l.entries));
    assert.equal((await agents(cid)).length, 1, 'a new agent');
  });

  test('read_only sessions get the agent through a volume of its own, removed with the container', async () => {
    const ro = await srv.createSession({ read_only: true });
    const st = await srv.sh('echo ro; touch /x 2>/dev/null || echo refused', { session_id: ro.session_id });
    assert.equal(st.stdout, 'ro\nrefused\n');
    assert.equal(typeof st.cpu_ms, 'number', 'the command ran through the agent');
    const a = await srv.ok('run_command', { argv: ['echo', 'a b'], session_id: ro.session_id });
    assert.equal(a.stdout, 'a b\n');
    // the sandbox user can run the agent but not replace it, and the volume is no way out of read_only
    const w = await srv.ok('run_command', {
      command: 'cp /bin/true /.sandbox-mcp/agent || touch /.sandbox-mcp/x || rm -f /.sandbox-mcp/agent',
      session_id: ro.session_id,
    });
    // Podman 4.3 hands a new volume to the container's user (docs/remote.md), so there the
    // sandbox user may add files beside the agent; the agent itself stays root's, 0511 (below)
    if (!PODMAN) assert.notEqual(w.exit_code, 0, `the sandbox user cannot write the agent's volume: ${JSON.stringify(w)}`);
    else assert.match(w.stderr, /cp: .*Permission denied/, `the agent cannot be overwritten: ${JSON.stringify(w)}`);
    const own = await srv.sh('stat -c "%U %a" /.sandbox-mcp/agent', { session_id: ro.session_id });
    assert.equal(own.stdout, 'root 511\n');
    await fileRoundTrip(srv, ro.session_id);
    const info = await inspectContainer(ro.container_id);
    assert.equal(info.HostConfig.ReadonlyRootfs, true);
    const vols = info.Mounts.filter((m) => m.Type === 'volume').map((m) => m.Name);
    assert.equal(vols.length, 2, `the workspace and the agent's volume: ${JSON.stringify(info.Mounts)}`);
    await srv.ok('session_close', { session_id: ro.session_id });
    for (const v of vols) {
      const r = await docker(['volume', 'inspect', v]);
      assert.notEqual(r.code, 0, `volume ${v} was removed with the container`);
    }
  });
});

describe('an image without a shell', suite({ timeout: 60000, skip: noAgent }), () => {
  const tag = 'sandbox-mcp-agenttest-noshell:latest';
  let srv;
  let hostDir;

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
    hostDir = mkdtempSync(join(tmpdir(), 'agent-noshell-host-'));
    srv = await Server.start('agent-noshell', { SANDBOX_TIMEOUT_S: 30, SANDBOX_HOST_DIRS: hostDir });
  });

  after(async () => {
    await cleanup();
    await docker(['rmi', '-f', tag]).catch(() => {});
    if (hostDir) rmSync(hostDir, { recursive: true, force: true });
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

  test('file_upload and file_download work too: the drop needs no sh or tar in the image', async () => {
    const s = await srv.createSession({ image: tag });
    writeFileSync(join(hostDir, 'up.txt'), 'no tar here\n');
    await srv.ok('file_upload', { host_path: join(hostDir, 'up.txt'), session_id: s.session_id });
    const st = await srv.ok('run_command', { argv: ['/bin/busybox', 'cat', '/workspace/up.txt'], session_id: s.session_id });
    assert.equal(st.stdout, 'no tar here\n');
    mkdirSync(join(hostDir, 'back'));
    await srv.ok('file_download', { path: 'up.txt', host_dir: join(hostDir, 'back'), session_id: s.session_id });
    assert.equal(readFileSync(join(hostDir, 'back', 'up.txt'), 'utf8'), 'no tar here\n');
  });

  test('the file tools work through the agent (no sh, tar or find in the image)', async () => {
    const s = await srv.createSession({ image: tag });
    await fileRoundTrip(srv, s.session_id);
    const st = await srv.ok('run_command', { argv: ['/bin/busybox', 'ls', '-ln', '/workspace'], session_id: s.session_id });
    assert.equal(st.stdout, 'total 0\n', 'file_delete removed it all');
  });

  // last: it replaces srv. Adopted sessions keep the engine's exec path, whose scripts need /bin/sh.
  test('an adopted session without the agent says its image lacks /bin/sh, and what to do', async () => {
    const s = await srv.createSession({ image: tag, persistent: true });
    await srv.kill('SIGKILL'); // its janitor leaves a persistent session for the next server
    srv = await Server.start('agent-noshell-heir', { SANDBOX_TIMEOUT_S: 30, SANDBOX_HOST_DIRS: hostDir });
    const { sessions } = await srv.ok('session_list');
    assert.ok(sessions.some((x) => x.session_id === s.session_id), `adopted: ${JSON.stringify(sessions)}`);
    writeFileSync(join(hostDir, 'adopted.txt'), 'x\n');
    for (const [tool, args] of [['file_write', { path: 'a.txt', content: 'x' }],
      ['file_upload', { host_path: join(hostDir, 'adopted.txt') }]]) {
      const f = await srv.fails(tool, { ...args, session_id: s.session_id }, 'engine_error');
      assert.match(f.error.message, /no tar \(or no \/bin\/sh\)/, `${tool}: ${f.error.message}`);
      assert.match(f.error.message, /create a new session/, `${tool} says what to do: ${f.error.message}`);
      assert.doesNotMatch(f.error.message, /exit code 126|no message/, f.error.message);
    }
    await srv.ok('session_close', { session_id: s.session_id });
  });
});
