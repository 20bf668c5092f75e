// services-bench.mjs - what background jobs and forwards cost, each beside
// its anchor measured in the same run (never a timed test: it prints). Run as
// root from the top of the tree, after a build and `npm ci` in tests/:
//
//   node tests/bench/services-bench.mjs [build/src/sandbox-mcp]
//
//   starting a background job          vs  a warm run_command (`true`)
//   one small HTTP request through     vs  the same request to the same kind
//     port_forward                         of server, in a container Docker
//                                          published with -p at create
//   a 100 MiB download, the same two ways

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import http from 'node:http';
import { resolve } from 'node:path';
import { Server, cleanup } from '../lib/harness.mjs';

const run = promisify(execFile);
process.env.SANDBOX_MCP_BIN = resolve(process.argv[2] ?? 'build/src/sandbox-mcp');
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
function row(what, v, unit, anchor, a) {
  console.log(`${what.padEnd(38)} ${v.toFixed(2).padStart(9)} ${unit.padEnd(6)} ${anchor.padEnd(38)} ${a.toFixed(2).padStart(9)} ${unit}  ratio ${(v / a).toFixed(2)}`);
}
const now = () => Number(process.hrtime.bigint()) / 1e6;
const agent = new http.Agent({ keepAlive: false });
function get(host, port, path) {
  return new Promise((res, rej) => {
    const t0 = now();
    let n = 0;
    http.get({ host, port, path, agent }, (r) => {
      r.on('data', (d) => { n += d.length; });
      r.on('end', () => res({ ms: now() - t0, bytes: n }));
    }).on('error', rej);
  });
}

const NET = `smcp-bench-${process.pid}`;
const srv = await Server.start('services-bench', { SANDBOX_POOL_SIZE: 0, SANDBOX_LOG_LEVEL: 'warning' });
let cid = null;
try {
  const s = (await srv.createSession({ name: 'bench' })).session_id;
  // job start vs a warm run_command
  await srv.sh('true', { session_id: s });
  const warm = [], start = [];
  for (let i = 0; i < 15; i++) {
    let t0 = now();
    await srv.sh('true', { session_id: s });
    warm.push(now() - t0);
    t0 = now();
    const j = await srv.ok('run_command', { session_id: s, background: true, command: 'sleep 1' });
    start.push(now() - t0);
    void j;
  }
  row('start a background job', median(start), 'ms', 'run_command `true` (warm)', median(warm));

  // the same server both ways: python3 -m http.server in the sandbox image
  await srv.sh('head -c 104857600 /dev/zero > big.bin && echo hi > small.txt', { session_id: s });
  await srv.ok('run_command', { session_id: s, background: true,
    command: 'exec python3 -m http.server 8000 --bind 127.0.0.1' });
  await srv.ok('job', { session_id: s, action: 'ready', port: 8000 });
  const f = await srv.ok('port_forward', { session_id: s, action: 'open', port: 8000 });
  await run('docker', ['network', 'create', NET]);
  cid = (await run('docker', ['run', '-d', '--network', NET, '-p', '127.0.0.1::8000', '-w', '/tmp',
    'sandbox-mcp-python:latest', 'sh', '-c',
    'head -c 104857600 /dev/zero > big.bin && echo hi > small.txt && exec python3 -m http.server 8000'])).stdout.trim();
  const pub = Number((await run('docker', ['port', cid, '8000/tcp'])).stdout.trim().split(':').pop());
  for (let i = 0; i < 100; i++) {
    try { await get('127.0.0.1', pub, '/small.txt'); break; } catch { await new Promise((r) => setTimeout(r, 100)); }
  }
  const fw = [], dp = [];
  for (let i = 0; i < 30; i++) {
    fw.push((await get(f.host, f.host_port, '/small.txt')).ms);
    dp.push((await get('127.0.0.1', pub, '/small.txt')).ms);
  }
  row('small request through port_forward', median(fw), 'ms', 'docker run -p (same server)', median(dp));
  const tf = [], td = [];
  for (let i = 0; i < 3; i++) {
    const a = await get(f.host, f.host_port, '/big.bin');
    tf.push(a.bytes / 1048576 / (a.ms / 1000));
    const b = await get('127.0.0.1', pub, '/big.bin');
    td.push(b.bytes / 1048576 / (b.ms / 1000));
  }
  row('100 MiB through port_forward', Math.max(...tf), 'MiB/s', 'docker run -p (same server)', Math.max(...td));
} finally {
  if (cid) await run('docker', ['rm', '-f', cid]).catch(() => {});
  await run('docker', ['network', 'rm', NET]).catch(() => {});
  await srv.close();
  await cleanup();
}
