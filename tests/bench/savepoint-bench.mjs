// savepoint-bench.mjs - what save points cost, each figure beside its anchor
// measured in the same run (never a timed test: it prints). Run as root from
// the top of the tree, after a build and `npm ci` in tests/:
//
//   node tests/bench/savepoint-bench.mjs [build/src/sandbox-mcp]
//
//   checkpoint, 10 MiB changed          vs  `docker commit` of the same container
//                                            (and the bare API call, for honesty)
//   rollback to ready (the call)         vs  session_create (no pool)
//   fork of 8, ready to run commands     vs  `docker commit` + 8 `docker run -d` at once

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { resolve } from 'node:path';
import { Server, cleanup } from '../lib/harness.mjs';

const run = promisify(execFile);
process.env.SANDBOX_MCP_BIN = resolve(process.argv[2] ?? 'build/src/sandbox-mcp');
const ROUNDS = 5;
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
function row(what, v, anchor, a) {
  console.log(`${what.padEnd(40)} ${v.toFixed(0).padStart(6)} ms  ${anchor.padEnd(40)} ${a.toFixed(0).padStart(6)} ms  ratio ${(v / a).toFixed(2)}`);
}
const docker = (...args) => run('docker', args, { maxBuffer: 1 << 20 });
const now = () => Number(process.hrtime.bigint() / 1000000n);

const srv = await Server.start('savepoint-bench', { SANDBOX_POOL_SIZE: 0, SANDBOX_MAX_SESSIONS: 40,
  SANDBOX_SESSION_CHECKPOINTS: 100, SANDBOX_MAX_CHECKPOINTS: 200, SANDBOX_LOG_LEVEL: 'warning' });
try {
  const s = await srv.createSession({ name: 'bench' });
  await srv.sh('head -c 10485760 /dev/urandom > blob.bin', { session_id: s.session_id });

  // checkpoint vs docker commit: a fresh session with 10 MiB written, each round; the anchors commit the same
  // container afterwards (its changes are the same 10 MiB)
  const ours = [], cli = [], api = [];
  const images = [];
  for (let i = 0; i < ROUNDS; i++) {
    const x = await srv.createSession({});
    await srv.sh('head -c 10485760 /dev/urandom > blob.bin', { session_id: x.session_id });
    const c = await srv.ok('session_checkpoint', { session_id: x.session_id });
    ours.push(c.ms);
    let t0 = now();
    images.push((await docker('commit', x.container_id)).stdout.trim());
    cli.push(now() - t0);
    t0 = now();
    const r = await run('curl', ['-s', '--unix-socket', '/var/run/docker.sock', '-X', 'POST',
      `http://localhost/commit?container=${x.container_id}&pause=1`]);
    api.push(now() - t0);
    images.push(JSON.parse(r.stdout).Id);
    await srv.ok('session_close', { session_id: x.session_id });
  }
  row('checkpoint (10 MiB changed)', median(ours), 'docker commit (CLI)', median(cli));
  row('checkpoint (10 MiB changed)', median(ours), 'POST /commit (API, curl)', median(api));

  // rollback to ready vs a plain session_create
  const rb = [], create = [];
  const ck = await srv.ok('session_checkpoint', { session_id: s.session_id, name: 'base' });
  for (let i = 0; i < ROUNDS; i++) {
    rb.push((await srv.ok('session_checkpoint', { session_id: s.session_id, action: 'rollback', checkpoint: 'base' })).ms);
    const t0 = now();
    const x = await srv.createSession({});
    create.push(now() - t0);
    await srv.ok('session_close', { session_id: x.session_id });
  }
  row('rollback to ready', median(rb), 'session_create (no pool)', median(create));

  // fork of 8 from the live session vs commit + 8 docker run -d at once
  const fk = [], cl = [];
  // the rollbacks gave the session a new container
  const cur = (await srv.ok('session_list', {})).sessions.find((x) => x.session_id === s.session_id).container_id;
  for (let i = 0; i < 3; i++) {
    let t0 = now();
    const f = await srv.ok('session_fork', { session_id: s.session_id, count: 8, name: `f${i}` });
    fk.push(now() - t0);
    for (const x of f.sessions) await srv.ok('session_close', { session_id: x.session_id });
    t0 = now();
    const img = (await docker('commit', cur)).stdout.trim();
    const ids = await Promise.all(Array.from({ length: 8 }, () =>
      docker('run', '-d', '--network', 'none', '--user', '1000:1000', img, 'sleep', 'infinity').then((r) => r.stdout.trim())));
    cl.push(now() - t0);
    await docker('rm', '-f', ...ids);
    images.push(img);
  }
  row('session_fork count 8 (from the live session)', median(fk), 'docker commit + 8 docker run -d', median(cl));
  void ck;
  for (const img of images) await docker('rmi', '-f', img).catch(() => {});
} finally {
  await srv.close();
  await cleanup();
}
