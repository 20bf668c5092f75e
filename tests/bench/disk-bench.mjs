// disk-bench.mjs - what the disk cap's guard costs where the engine has no
// quota (src/sandbox/diskguard.c), each figure beside its anchor measured in
// the same run (never a timed test: it prints). Run as root from the top of
// the tree, after a build and `npm ci` in tests/:
//
//   node tests/bench/disk-bench.mjs [build/src/sandbox-mcp]
//
//   run_command `true`, median of 40      vs  the same with SANDBOX_WORKSPACE_MB=0 (no guard)
//   dockerd + server CPU, 8 idle sessions vs  the same with no guard, 10 s each
//   one look (GET ?size=1), 1k / 50k files  vs  a plain inspect of the same container

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Server, cleanup, sleep } from '../lib/harness.mjs';

const run = promisify(execFile);
process.env.SANDBOX_MCP_BIN = resolve(process.argv[2] ?? 'build/src/sandbox-mcp');
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const now = () => Number(process.hrtime.bigint()) / 1e6;
function row(what, v, anchor, a, unit = 'ms') {
  console.log(`${what.padEnd(44)} ${v.toFixed(2).padStart(8)} ${unit}  ${anchor.padEnd(36)} ${a.toFixed(2).padStart(8)} ${unit}` +
    `  ratio ${(v / a).toFixed(2)}`);
}
const ticks = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]); // utime + stime, in clock ticks (100 Hz)
};
const dockerdPid = Number((await run('pidof', ['dockerd'])).stdout.trim().split(' ')[0]);
const curl = (path) => run('curl', ['-s', '--unix-socket', '/var/run/docker.sock', `http://localhost${path}`],
  { maxBuffer: 16 << 20 });

async function measure(label, env) {
  const srv = await Server.start(label, { SANDBOX_POOL_SIZE: 0, SANDBOX_LOG_LEVEL: 'warning', ...env });
  try {
    const s = await srv.createSession({});
    const lat = [];
    for (let i = 0; i < 40; i++) {
      const t0 = now();
      await srv.sh('true', { session_id: s.session_id });
      lat.push(now() - t0);
    }
    for (let i = 0; i < 7; i++) await srv.createSession({});
    await sleep(2000);
    const d0 = ticks(dockerdPid), s0 = ticks(srv.pid);
    await sleep(10000);
    const cpu = (ticks(dockerdPid) - d0 + ticks(srv.pid) - s0) * 10 / 10; // 10 ms ticks over 10 s: ms per s
    return { lat: median(lat), cpu, srv, sid: s.session_id, cid: s.container_id };
  } catch (e) {
    await cleanup();
    throw e;
  }
}

try {
  const off = await measure('disk-bench-off', { SANDBOX_WORKSPACE_MB: 0 });
  await cleanup();
  const on = await measure('disk-bench-on', { SANDBOX_WORKSPACE_MB: 10240 });
  row('run_command true (guard on)', on.lat, 'SANDBOX_WORKSPACE_MB=0', off.lat);
  row('CPU ms/s, 8 idle sessions (guard on)', on.cpu, 'SANDBOX_WORKSPACE_MB=0', off.cpu, 'ms');
  for (const n of [1000, 50000]) {
    await on.srv.sh(`mkdir -p many && cd many && python3 -c "
for i in range(${n}): open('f%d' % i, 'w').write('x')"`, { session_id: on.sid, timeout_s: 120 });
    const look = [], plain = [];
    for (let i = 0; i < 5; i++) {
      let t0 = now();
      await curl(`/containers/${on.cid}/json?size=1`);
      look.push(now() - t0);
      t0 = now();
      await curl(`/containers/${on.cid}/json`);
      plain.push(now() - t0);
    }
    row(`one look, ${n} files in the layer`, median(look), 'inspect without size', median(plain));
    await on.srv.sh('rm -rf many', { session_id: on.sid, timeout_s: 120 });
  }
} finally {
  await cleanup();
}
