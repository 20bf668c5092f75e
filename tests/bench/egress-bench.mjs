// egress-bench.mjs - what egress costs, each figure beside its anchor measured
// in the same run, on the offline internet of tests/lib/egressnet.mjs (never a
// timed test: it prints). Run as root from the top of the tree, after a build
// and `npm ci` in tests/:
//
//   node tests/bench/egress-bench.mjs [build/src/sandbox-mcp]
//
//   connection set-up through the proxy   vs  a direct TCP connect from a
//     (connect, CONNECT, 200)                 container on the same network
//   100 MiB over HTTP through the proxy   vs  the same download direct;
//     with the server's CPU per MiB
//   session_create with egress            vs  session_create without (no pool)
//   server RSS per session with egress    vs  per session without

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Server, cleanup } from '../lib/harness.mjs';
import { EgressNet } from '../lib/egressnet.mjs';

process.env.SANDBOX_MCP_BIN = resolve(process.argv[2] ?? 'build/src/sandbox-mcp');
const ROUNDS = 200;

const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
function row(what, v, unit, anchor, a) {
  console.log(`${what.padEnd(44)} ${v.toFixed(2).padStart(9)} ${unit.padEnd(5)}  ${anchor.padEnd(30)} ${a.toFixed(2).padStart(9)} ${unit}  ratio ${(v / a).toFixed(2)}`);
}
function procStat(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, ms (100 Hz)
}
function rssKb(pid) {
  return Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);
}

// Python that times n connection set-ups; "proxy": through 127.0.0.1:3128, else direct to ip:443
const CONNECT_PY = (mode, target, n) => `
import socket, time, json
ts = []
for i in range(${n}):
    t0 = time.perf_counter()
    if '${mode}' == 'proxy':
        s = socket.create_connection(('127.0.0.1', 3128))
        s.sendall(b'CONNECT ${target}:443 HTTP/1.1\\r\\n\\r\\n')
        assert s.recv(100).startswith(b'HTTP/1.1 200')
    else:
        s = socket.create_connection(('${target}', 443))
    ts.append((time.perf_counter() - t0) * 1000)
    s.close()
ts.sort()
print(json.dumps(ts[len(ts) // 2]))
`;
const DOWNLOAD_PY = (url, proxy) => `
import json, time, urllib.request
h = urllib.request.ProxyHandler(${proxy ? "{'http': 'http://127.0.0.1:3128'}" : '{}'})
o = urllib.request.build_opener(h)
best = 0
for i in range(3):
    t0 = time.perf_counter(); n = 0
    with o.open('${url}', timeout=60) as r:
        while True:
            b = r.read(1 << 20)
            if not b: break
            n += len(b)
    best = max(best, n / (time.perf_counter() - t0) / (1 << 20))
print(json.dumps(best))
`;

function direct(net, py) {
  const out = execFileSync('docker', ['run', '--rm', '--network', net.inet.name, '--entrypoint', 'python3',
    'sandbox-mcp-python:latest', '-c', py], { maxBuffer: 1 << 20 }).toString();
  return JSON.parse(out.trim().split('\n').pop());
}

async function inSandbox(srv, sid, py) {
  const r = await srv.ok('run_command', { session_id: sid, command: `python3 - <<'EOF'\n${py}\nEOF` }, { timeoutMs: 300000 });
  if (!r.stdout.trim()) throw new Error(`no output: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

const net = new EgressNet();
try {
  await net.start();
  const srv = await Server.start('egress-bench', {
    SANDBOX_EGRESS_ALLOW: 'pypi.org,files.pythonhosted.org', SANDBOX_EGRESS_ADDRESSES: `${net.inet.base}.0/24`,
    SANDBOX_POOL_SIZE: 0, SANDBOX_MAX_SESSIONS: 40, SANDBOX_TIMEOUT_S: 300,
  }, { wrap: net.wrap() });
  const sid = (await srv.ok('session_create', { egress: { presets: ['pypi'] } })).session_id;

  const viaProxy = await inSandbox(srv, sid, CONNECT_PY('proxy', 'pypi.org', ROUNDS));
  const plain = direct(net, CONNECT_PY('direct', net.ip.pypi, ROUNDS));
  row('connection set-up through the proxy, median', viaProxy, 'ms', 'direct TCP connect', plain);
  console.log(`${''.padEnd(44)} difference ${(viaProxy - plain).toFixed(2)} ms`);

  const cpu0 = procStat(srv.pid);
  const mbps = await inSandbox(srv, sid, DOWNLOAD_PY('http://files.pythonhosted.org/big', true));
  const cpu = procStat(srv.pid) - cpu0;
  const directMbps = direct(net, DOWNLOAD_PY(`http://${net.ip.pypi}/big`, false));
  row('100 MiB over HTTP through the proxy, best of 3', mbps, 'MiB/s', 'the same download direct', directMbps);
  console.log(`${''.padEnd(44)} server CPU ${(cpu / 300).toFixed(2)} ms per MiB (3 x 100 MiB)`);

  const withE = [], without = [];
  for (let i = 0; i < 5; i++) {
    for (const [list, args] of [[without, {}], [withE, { egress: { presets: ['pypi'] } }]]) {
      const t0 = performance.now();
      const s = await srv.ok('session_create', args);
      list.push(performance.now() - t0);
      await srv.ok('session_close', { session_id: s.session_id });
    }
  }
  row('session_create with egress, median of 5', median(withE), 'ms', 'session_create without', median(without));

  const rss0 = rssKb(srv.pid);
  const plainIds = [];
  for (let i = 0; i < 10; i++) plainIds.push((await srv.ok('session_create', {})).session_id);
  const rss1 = rssKb(srv.pid);
  for (let i = 0; i < 10; i++) await srv.ok('session_create', { egress: { presets: ['pypi'] } });
  const rss2 = rssKb(srv.pid);
  row('server RSS per session with egress', (rss2 - rss1) / 10 / 1024, 'MiB', 'per session without', (rss1 - rss0) / 10 / 1024);
} finally {
  await cleanup();
  await net.stop();
}
