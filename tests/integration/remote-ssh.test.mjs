// Remote engines over ssh: DOCKER_HOST=ssh://root@127.0.0.1:PORT through an
// sshd on loopback (tests/lib/remote-sshd.sh: keys and host key
// made by the test, `ssh` on PATH a wrapper that counts its starts). The far
// side runs `docker system dial-stdio` to this machine's engine. A session,
// commands and file transfer work; kept-alive connections are reused; a
// host key or login failure is docker_unavailable with ssh's own reason.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server, suite, requireEngine, cleanup, show, serverIsSanitized, poolFilled } from '../lib/harness.mjs';
import { compareWithCli } from '../lib/remote-bench.mjs';
import { mkdirSync } from 'node:fs';

const here = dirname(fileURLToPath(import.meta.url));
const script = join(here, '..', 'lib', 'remote-sshd.sh');
const PORT = 25000 + (process.pid % 2000);
const DIR = `/tmp/sandbox-mcp-remote-ssh-${process.pid}`;
const HOST = `ssh://root@127.0.0.1:${PORT}`;
const sha256 = (b) => createHash('sha256').update(b).digest('hex');
const spawns = () => readFileSync(`${DIR}/spawns`, 'utf8').split('\n').filter(Boolean).length;

function sshEnv(extra = {}) {
  return { DOCKER_HOST: HOST, PATH: `${DIR}/bin:${process.env.PATH}`, DOCKER_TLS_VERIFY: '', ...extra };
}

describe('a remote engine over ssh', suite({ timeout: 300000 }), () => {
  before(() => {
    requireEngine();
    execFileSync(script, ['start', DIR, String(PORT)], { stdio: ['ignore', 'inherit', 'inherit'], timeout: 60000 });
  });

  after(async () => {
    try {
      await cleanup();
    } finally {
      spawnSync(script, ['stop', DIR], { stdio: 'inherit', timeout: 60000 });
    }
  });

  test('session, run_command and file transfer through ssh + docker system dial-stdio', async (t) => {
    const srv = await Server.start('remote-ssh', sshEnv());
    const st = await srv.createSession({ name: 'ssh' });
    const r = await srv.sh('echo hello over ssh; echo err >&2', { session_id: st.session_id });
    assert.equal(r.stdout, 'hello over ssh\n');
    assert.equal(r.stderr, 'err\n');
    const c = await srv.sh('wc -c', { session_id: st.session_id, stdin: 'y'.repeat(100000) });
    assert.equal(c.stdout.trim(), '100000');
    const big = await srv.sh('head -c 30000000 /dev/zero | wc -c', { session_id: st.session_id });
    assert.equal(big.stdout, '30000000\n');
    const data = randomBytes(4 << 20);
    await srv.ok('file_write', { path: 'r.bin', content: data.toString('base64'), encoding: 'base64',
      session_id: st.session_id });
    const sum = await srv.sh('sha256sum r.bin', { session_id: st.session_id });
    assert.equal(sum.stdout.split(' ')[0], sha256(data), 'the bytes arrived intact');

    // warm calls: the kept-alive connections (ssh processes) are reused. The warm pool refills
    // in the background after the session_create above, on connections of its own: counted
    // only once it is full, so what is counted is the calls'.
    await poolFilled(srv, 2);
    await srv.ok('session_list', {});
    const before20 = spawns();
    for (let i = 0; i < 20; i++) await srv.ok('session_list', {});
    assert.equal(spawns() - before20, 0, '20 warm session_list (each asks the engine) start no ssh process');
    const beforeRun = spawns();
    let t0 = Date.now();
    for (let i = 0; i < 20; i++) {
      const w = await srv.sh(`echo ${i}`, { session_id: st.session_id });
      assert.equal(w.stdout, `${i}\n`);
    }
    const ours = Date.now() - t0;
    const used = spawns() - beforeRun;
    // run_command goes through the in-sandbox agent's kept stream, and its engine check
    // is a _ping on a kept-alive connection: no ssh process per command
    assert.equal(used, 0, `20 warm run_command started ${used} ssh processes`);
    // the docker CLI over the same endpoint, for comparison (reported, not asserted: the machine is shared)
    t0 = Date.now();
    for (let i = 0; i < 20; i++) {
      const d = spawnSync('docker', ['exec', st.container_id, 'echo', String(i)],
        { env: { ...process.env, ...sshEnv() }, encoding: 'utf8', timeout: 60000 });
      assert.equal(d.status, 0, d.stderr);
    }
    const cli = Date.now() - t0;
    t.diagnostic(`ssh: 20 run_command ${ours} ms (${used} ssh started), docker exec over the same ssh ${cli} ms; ` +
      `ratio ${(ours / cli).toFixed(2)}`);
    await srv.ok('session_close', { session_id: st.session_id });
    await srv.close();
  });

  test('figures: run_command and a 50 MiB upload beside the docker CLI over the same ssh endpoint', async (t) => {
    const hostDir = `${DIR}/host`;
    mkdirSync(hostDir, { recursive: true });
    const s = await Server.start('remote-ssh-bench', sshEnv({ SANDBOX_HOST_DIRS: hostDir, SANDBOX_MAX_UPLOAD_MB: 64 }));
    const st = await s.createSession({ name: 'bench' });
    const f = await compareWithCli(t, 'ssh', s, st.session_id, st.container_id, sshEnv(), hostDir);
    assert.ok(f.rss < (serverIsSanitized() ? 512 : 64) * 1024, `peak RSS ${f.rss} KiB stays far below the 50 MiB that went through`);
    await s.ok('session_close', { session_id: st.session_id });
    await s.close();
  });

  /** A server whose session_create must fail docker_unavailable; returns the message. */
  async function refused(label, env) {
    const s = await Server.start(label, env);
    const f = await s.fails('session_create', {}, 'docker_unavailable');
    await s.close();
    return f.error.message;
  }

  test('an unknown host key: docker_unavailable with ssh\'s reason and what to do', async () => {
    const m = await refused('ssh-hostkey', sshEnv({ SBX_SSH_CONFIG: `${DIR}/ssh_config.nohostkey` }));
    assert.match(m, /through ssh.*Host key verification failed.*known_hosts/, m);
  });

  test('a key the server does not accept: docker_unavailable with ssh\'s reason', async () => {
    const m = await refused('ssh-auth', sshEnv({ SBX_SSH_CONFIG: `${DIR}/ssh_config.wrongkey` }));
    assert.match(m, /Permission denied \(publickey\).*BatchMode.*IdentityFile/, m);
  });

  test('a port where no sshd listens: connection refused, said so', async () => {
    const m = await refused('ssh-port', sshEnv({ DOCKER_HOST: `ssh://root@127.0.0.1:${PORT + 1}` }));
    assert.match(m, /Connection refused.*sshd/, m);
  });
});
