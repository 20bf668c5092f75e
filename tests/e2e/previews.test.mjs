// Previews over HTTP (docs/jobs.md): a web app run in a sandbox as a
// background job, forwarded with port_forward, opened by a real headless
// browser (Debian's chromium) through the forward and through the signed
// preview link, a WebSocket round trip included; the link is a capability
// (tampered, expired, re-pointed or another principal's: 403), a preview's
// host is checked (421), and a preview's origin cannot call /mcp.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { startServer, post, rawRequest, statusOf } from '../lib/httpserver.mjs';
import { sleep } from '../lib/rawpipe.mjs';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
const TA = 'alice-token-' + 'a'.repeat(20);
const TB = 'bob-token-' + 'b'.repeat(20);

// The app: a page whose script opens a WebSocket to its own origin and shows
// the echo, and the echo server. The page also loads an image, /hold, which
// the app answers only once the page has the echo: headless chromium dumps
// the DOM (or takes the screenshot) at the load event, which waits for it.
const APP = String.raw`
import base64, hashlib, http.server, struct, sys, threading
PAGE = b"""<!doctype html><html><head><title>preview</title></head>
<body style="margin:0;background:#1f7a4d;color:#fff;font:40px sans-serif">
<h1>from the sandbox</h1><p id="ws">ws:pending</p>
<script>
const round = String(Math.random()).slice(2);
document.write('<img alt="" width="1" height="1" src="/hold?' + round + '">');
const s = new WebSocket('ws://' + location.host + '/ws');
s.onopen = () => s.send('echo-ok');
s.onmessage = (e) => { document.getElementById('ws').textContent = 'ws:' + e.data; s.send(round); };
s.onerror = () => { document.getElementById('ws').textContent = 'ws:error'; };
</script></body></html>"""
got = threading.Condition()
done = set()
def frame(f):
    head = f.read(2)
    n = head[1] & 127
    if n == 126:
        n = struct.unpack('>H', f.read(2))[0]
    mask = f.read(4)
    return bytes(c ^ mask[i % 4] for i, c in enumerate(f.read(n)))
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == '/ws' and self.headers.get('Upgrade', '').lower() == 'websocket':
            key = self.headers['Sec-WebSocket-Key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
            self.send_response(101)
            self.send_header('Upgrade', 'websocket')
            self.send_header('Connection', 'Upgrade')
            self.send_header('Sec-WebSocket-Accept', base64.b64encode(hashlib.sha1(key.encode()).digest()).decode())
            self.end_headers()
            data = frame(self.rfile)
            self.wfile.write(bytes([0x81, len(data)]) + data)
            self.wfile.flush()
            round = frame(self.rfile).decode()
            with got:
                done.add(round)
                got.notify_all()
            return
        if self.path.startswith('/hold?'):
            with got:
                got.wait_for(lambda: self.path[6:] in done, 15)
        body = PAGE if self.path == '/' else b'cookie:' + self.headers.get('Cookie', '').encode()
        self.send_response(200)
        self.send_header('Content-Type', 'text/html' if self.path == '/' else 'text/plain')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
`;

/** Headless chromium: the DOM after scripts ran, or a screenshot into png. */
function chromium(url, { png, profile }) {
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', `--user-data-dir=${profile}`,
    '--window-size=800,600'];
  args.push(png ? `--screenshot=${png}` : '--dump-dom', url);
  const r = spawnSync('chromium', args, { encoding: 'utf8', timeout: 90000 });
  assert.equal(r.error, undefined, `chromium: ${r.error}`);
  if (png) assert.ok(existsSync(png), `no screenshot: ${r.stderr.slice(-2000)}`);
  return r.stdout;
}

/** How many different colours a PNG (8-bit RGB or RGBA, not interlaced) shows, up to 64: 1 for a blank page. */
function pngColours(file) {
  const b = readFileSync(file);
  assert.equal(b.toString('latin1', 1, 4), 'PNG');
  const idat = [];
  let width = 0;
  let bpp = 4;
  for (let off = 8; off < b.length;) {
    const len = b.readUInt32BE(off);
    const type = b.toString('latin1', off + 4, off + 8);
    if (type === 'IHDR') {
      width = b.readUInt32BE(off + 8);
      assert.equal(b[off + 16], 8, '8 bits per sample');
      bpp = b[off + 17] === 2 ? 3 : 4;
    }
    if (type === 'IDAT') idat.push(b.subarray(off + 8, off + 8 + len));
    off += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * bpp;
  let prev = Buffer.alloc(stride);
  const seen = new Set();
  for (let at = 0; at + 1 + stride <= raw.length; at += 1 + stride) {
    const filter = raw[at];
    const row = Buffer.from(raw.subarray(at + 1, at + 1 + stride));
    for (let i = 0; i < stride; i++) {
      const left = i >= bpp ? row[i - bpp] : 0;
      const up = prev[i];
      const ul = i >= bpp ? prev[i - bpp] : 0;
      const p = left + up - ul;
      const [pa, pb, pc] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - ul)];
      const paeth = pa <= pb && pa <= pc ? left : pb <= pc ? up : ul;
      row[i] = (row[i] + [0, left, up, (left + up) >> 1, paeth][filter]) & 255;
    }
    for (let x = 0; x < width && seen.size < 64; x += 5) seen.add(row.readUIntBE(x * bpp, 3));
    prev = row;
  }
  return seen.size;
}

describe('previews: a forwarded port in a browser, through a signed link', () => {
  let dir;
  let srv;
  let id = 1;
  const call = async (token, name, args) => {
    const r = await post(srv, { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: args, _meta: META } },
      { Authorization: `Bearer ${token}`, Accept: 'application/json' });
    assert.equal(r.status, 200, r.text);
    const res = JSON.parse(r.text).result;
    return res;
  };
  const ok = async (token, name, args) => {
    const res = await call(token, name, args);
    assert.ok(!res.isError, JSON.stringify(res));
    return res;
  };
  /** Starts the app on port in a new session of token's principal; the port_forward result. */
  const serve = async (token, port) => {
    const sid = (await ok(token, 'session_create', {})).structuredContent.session_id;
    await ok(token, 'file_write', { session_id: sid, path: 'app.py', content: APP });
    await ok(token, 'run_command', { session_id: sid, background: true, command: `exec python3 app.py ${port}` });
    await ok(token, 'job', { session_id: sid, action: 'ready', port });
    return ok(token, 'port_forward', { session_id: sid, action: 'open', port });
  };
  /** A raw GET on the preview server: Host and Cookie as given. */
  const get = (u, { host = u.host, cookie, path = u.pathname + u.search, origin } = {}) =>
    rawRequest(Number(u.port), `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${cookie ? `Cookie: ${cookie}\r\n` : ''}` +
      `${origin ? `Origin: ${origin}\r\n` : ''}Connection: close\r\n\r\n`);
  let alice;
  let bob;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-mcp-previews-'));
    writeFileSync(join(dir, 'tokens'), `alice:${TA}\nbob:${TB}\n`, { mode: 0o600 });
    srv = await startServer({ SANDBOX_HTTP_TOKEN_FILE: join(dir, 'tokens'), SANDBOX_POOL_SIZE: 0 });
    alice = await serve(TA, 8000);
    bob = await serve(TB, 8000);
  });
  after(async () => {
    const r = await srv?.stop();
    rmSync(dir, { recursive: true, force: true });
    assert.equal(r.code, 0, srv.stderr());
  });

  test('port_forward returns a preview link at a host of its own, also as a resource_link', () => {
    const a = alice.structuredContent;
    const u = new URL(a.preview_url);
    assert.equal(u.hostname, `8000-${a.session_id}.localhost`);
    assert.match(u.search, /^\?sbx_preview=\d+\.[0-9a-f]{64}$/);
    assert.notEqual(u.port, String(srv.port), 'previews are not served on the /mcp port');
    const link = alice.content.find((c) => c.type === 'resource_link');
    assert.equal(link?.uri, a.preview_url);
  });

  test('the link is traded for a host-only cookie, then the page is served', async () => {
    const u = new URL(alice.structuredContent.preview_url);
    const first = await get(u);
    assert.equal(statusOf(first), 303, first);
    assert.match(first, /\r\nLocation: \/\r\n/);
    const cookie = /\r\nSet-Cookie: (sbx_preview=[^;]+);([^\r]*)/.exec(first);
    assert.ok(cookie, first);
    assert.match(cookie[2], /HttpOnly/);
    assert.doesNotMatch(cookie[2], /Domain=/i, 'host-only: no other preview or the server gets it');
    const page = await get(u, { path: '/', cookie: cookie[1] });
    assert.equal(statusOf(page), 200, page);
    assert.match(page, /from the sandbox/);
    assert.equal(statusOf(await get(u, { path: '/' })), 403, 'no cookie, no page');
  });

  test('tampered, re-pointed, other principals\' and foreign-host requests are refused', async () => {
    const a = new URL(alice.structuredContent.preview_url);
    const b = new URL(bob.structuredContent.preview_url);
    const cred = (u) => u.search.slice('?sbx_preview='.length);
    const [exp, sig] = cred(a).split('.');
    const flip = (h) => (h[0] === '0' ? '1' : '0') + h.slice(1);
    const cases = {
      'sig changed': [a, `sbx_preview=${exp}.${flip(sig)}`],
      'exp + 1': [a, `sbx_preview=${Number(exp) + 1}.${sig}`],
      'exp with a leading zero': [a, `sbx_preview=0${exp}.${sig}`],
      'sig upper case': [a, `sbx_preview=${exp}.${sig.toUpperCase()}`],
      'bob\'s link on alice\'s host': [a, `sbx_preview=${cred(b)}`],
      'alice\'s link on bob\'s host': [b, `sbx_preview=${cred(a)}`],
    };
    for (const [what, [u, c]] of Object.entries(cases)) {
      const viaLink = await get(u, { path: `/?${c}` });
      assert.equal(statusOf(viaLink), 403, `${what} (link): ${viaLink}`);
      const viaCookie = await get(u, { path: '/', cookie: c });
      assert.equal(statusOf(viaCookie), 403, `${what} (cookie): ${viaCookie}`);
    }
    // a genuine cookie next to planted ones is found; a planted one alone is not enough
    assert.equal(statusOf(await get(a, { path: '/', cookie: `sbx_preview=${cred(b)}; sbx_preview=${cred(a)}` })), 200);
    // alice's link with the host changed to another port of her session: not forwarded
    assert.equal(statusOf(await get(a, { host: a.host.replace('8000-', '8001-') })), 404);
    // hosts that are not a preview's: DNS rebinding, the bare domain, another port, junk
    // two Host headers: which one would the app believe?
    const two = await rawRequest(Number(a.port), `GET / HTTP/1.1\r\nHost: ${a.host}\r\nHost: evil.example\r\n` +
      `Cookie: sbx_preview=${cred(a)}\r\nConnection: close\r\n\r\n`);
    assert.equal(statusOf(two), 421, two);
    for (const host of ['evil.example', 'localhost:' + a.port, a.hostname + ':1', `x${a.host}`, a.host.toUpperCase() + '.evil',
      `08000-${alice.structuredContent.session_id}.localhost:${a.port}`]) {
      const r = await get(a, { host, cookie: `sbx_preview=${cred(a)}` });
      assert.equal(statusOf(r), 421, `Host ${host}: ${r}`);
    }
    // the app gets its own cookies, never the preview's credential (it could send it out through the browser)
    const echoed = await get(a, { path: '/cookie', cookie: `theme=dark; sbx_preview=${cred(a)}; lang=en` });
    assert.equal(statusOf(echoed), 200, echoed);
    assert.match(echoed, /\r\n\r\ncookie:theme=dark; lang=en$/);
    // one request per connection: a second one pipelined behind a judged one (a pooling proxy's) never reaches the app
    const piped = await rawRequest(Number(a.port), `GET /cookie HTTP/1.1\r\nHost: ${a.host}\r\nCookie: sbx_preview=${cred(a)}\r\n\r\n` +
      `GET /cookie HTTP/1.1\r\nHost: ${b.host}\r\nCookie: x=from-bob\r\n\r\n`);
    assert.equal(piped.match(/HTTP\/1\.[01] \d{3}/g).length, 1, piped);
    assert.doesNotMatch(piped, /from-bob/);
    // the link's 303 goes back only to a path of this host, and one that fits
    for (const [path, want] of [['/a/b', '/a/b'], ['//evil.example/x', '/'], ['/\\evil.example', '/'],
      [`/${'x'.repeat(600)}`, '/']]) {
      const r = await get(a, { path: `${path}?sbx_preview=${cred(a)}` });
      assert.equal(statusOf(r), 303, r);
      assert.equal(/\r\nLocation: ([^\r]*)\r\n/.exec(r)?.[1], want, path.slice(0, 40));
      assert.match(r, /\r\nSet-Cookie: sbx_preview=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax\r\n/);
    }
    // request framing the app could read two ways is refused before it reaches the app
    const framing = {
      'a chunked body': [`Transfer-Encoding: chunked\r\n`, 411],
      'two different lengths': [`Content-Length: 1\r\nContent-Length: 2\r\n`, 400],
      'a length that is not a number': [`Content-Length: 1e3\r\n`, 400],
    };
    for (const [what, [hdr, want]] of Object.entries(framing)) {
      const r = await rawRequest(Number(a.port), `POST /cookie HTTP/1.1\r\nHost: ${a.host}\r\n` +
        `Cookie: sbx_preview=${cred(a)}\r\n${hdr}Connection: close\r\n\r\n0\r\n\r\n`);
      assert.equal(statusOf(r), want, `${what}: ${r}`);
    }
    // a head past 16 KiB: 400, never relayed
    const huge = await rawRequest(Number(a.port), `GET / HTTP/1.1\r\nHost: ${a.host}\r\nX-Pad: ${'p'.repeat(17000)}\r\n\r\n`);
    assert.equal(statusOf(huge), 400, huge.slice(0, 200));
    // an absolute-form target goes to this preview's app, as its Host says: it names no other place
    const abs = await get(a, { path: 'http://evil.example/cookie', cookie: `sbx_preview=${cred(a)}` });
    assert.match(abs, /^HTTP\/1\.0 \d{3} /, abs);
  });

  test('a preview\'s origin cannot call /mcp, with or without a token', async () => {
    const origin = `http://${new URL(alice.structuredContent.preview_url).host}`;
    const list = { jsonrpc: '2.0', id: 99, method: 'tools/list', params: { _meta: META } };
    assert.equal((await post(srv, list, { Origin: origin, Authorization: `Bearer ${TA}` })).status, 403);
    assert.equal((await post(srv, list, { Origin: origin })).status, 403);
  });

  test('chromium opens the app through the forward and through the preview, WebSocket included', { timeout: 240000 }, async () => {
    const profile = mkdtempSync(join(dir, 'chromium-'));
    const direct = chromium(alice.structuredContent.url, { profile });
    assert.match(direct, /from the sandbox/, 'through the forward');
    const dom = chromium(alice.structuredContent.preview_url, { profile });
    assert.match(dom, /from the sandbox/, dom.slice(0, 500));
    assert.match(dom, /ws:echo-ok/, `the WebSocket round trip through the preview: ${dom.slice(0, 800)}`);
    const png = join(dir, 'preview.png');
    chromium(alice.structuredContent.preview_url, { profile: mkdtempSync(join(dir, 'chromium-')), png });
    assert.ok(pngColours(png) > 2, 'the screenshot is not blank');
  });

  test('another principal cannot forward, list, signal or read the jobs of alice\'s session', async () => {
    const sid = alice.structuredContent.session_id;
    const tries = [
      ['port_forward', { session_id: sid, action: 'list' }],
      ['port_forward', { session_id: sid, action: 'open', port: 8000 }],
      ['port_forward', { session_id: sid, action: 'close', port: 8000 }],
      ['job', { session_id: sid, action: 'list' }],
      ['job', { session_id: sid, action: 'output', job_id: '1' }],
      ['job', { session_id: sid, action: 'signal', job_id: '1', signal: 'KILL' }],
      ['run_command', { session_id: sid, background: true, command: 'true' }],
    ];
    for (const [name, args] of tries) {
      const res = await call(TB, name, args);
      assert.ok(res.isError, `${name} ${JSON.stringify(args)}`);
      assert.equal(res.structuredContent?.error?.code, 'session_not_found', `${name} ${JSON.stringify(args)}`);
    }
    // and alice's job and forward are untouched
    const jobs = (await ok(TA, 'job', { session_id: sid, action: 'list' })).structuredContent.jobs;
    assert.ok(jobs.some((j) => j.state === 'running'), JSON.stringify(jobs));
    const u = new URL(alice.structuredContent.preview_url);
    assert.equal(statusOf(await get(u, { path: '/', cookie: u.search.slice(1) })), 200);
  });

  test('one principal holds at most 64 preview connections; the next is 503, and others still get in', { timeout: 120000 }, async () => {
    const a = alice.structuredContent;
    const sid = a.session_id;
    await ok(TA, 'run_command', { session_id: sid, background: true, command: 'exec python3 app.py 8001' });
    await ok(TA, 'job', { session_id: sid, action: 'ready', port: 8001 });
    const second = (await ok(TA, 'port_forward', { session_id: sid, action: 'open', port: 8001 })).structuredContent;
    // a WebSocket held open: each a connection the app keeps (64 per forward at most, so two forwards)
    const hold = (u) => new Promise((resolve, reject) => {
      const sock = net.connect(Number(u.port), '127.0.0.1');
      let got = '';
      sock.on('data', (d) => { got += d; if (/\r\n\r\n/.test(got)) resolve({ sock, status: statusOf(got) }); });
      sock.on('error', reject);
      sock.on('close', () => resolve({ sock, status: statusOf(got) }));
      sock.write(`GET /ws HTTP/1.1\r\nHost: ${u.host}\r\nCookie: ${u.search.slice(1)}\r\nUpgrade: websocket\r\n` +
        'Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
    });
    const u1 = new URL(a.preview_url);
    const u2 = new URL(second.preview_url);
    const held = [];
    for (let i = 0; i < 64; i++) held.push(await hold(i < 40 ? u1 : u2));
    try {
      assert.deepEqual([...new Set(held.map((h) => h.status))], [101]);
      const over = await hold(u2);
      over.sock.destroy();
      assert.equal(over.status, 503, 'the 65th of one principal');
      const b = new URL(bob.structuredContent.preview_url);
      const bobs = await hold(b);
      bobs.sock.destroy();
      assert.equal(bobs.status, 101, 'bob still gets in');
    } finally {
      for (const h of held) h.sock.destroy();
    }
    // 64 connections end through 64 execs of the agent: the engine takes a few seconds for them
    // (judged by the answer's head: under that load a close can lag the answer by seconds)
    for (let i = 0; i < 300; i++) {
      const again = await hold(u1);
      again.sock.destroy();
      if (again.status === 101) return;
      await sleep(100);
    }
    assert.fail('alice\'s preview did not come back after her connections ended');
  });

  test('a closed forward\'s preview is 404, at once', async () => {
    const u = new URL(bob.structuredContent.preview_url);
    const cookie = `sbx_preview=${u.search.slice('?sbx_preview='.length)}`;
    assert.equal(statusOf(await get(u, { path: '/', cookie })), 200);
    await ok(TB, 'port_forward', { session_id: bob.structuredContent.session_id, action: 'close', port: 8000 });
    assert.equal(statusOf(await get(u, { path: '/', cookie })), 404);
  });
});

describe('previews: an expired link or cookie is 403', () => {
  let srv;
  before(async () => { srv = await startServer({ SANDBOX_HTTP_LINK_TTL_S: 2, SANDBOX_POOL_SIZE: 0 }); });
  after(async () => { assert.equal((await srv?.stop()).code, 0, srv.stderr()); });

  test('past SANDBOX_HTTP_LINK_TTL_S the same link is refused, with a way to a fresh one', { timeout: 120000 }, async () => {
    let id = 1;
    const ok = async (name, args) => {
      const r = await post(srv, { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: args, _meta: META } },
        { Accept: 'application/json' });
      const res = JSON.parse(r.text).result;
      assert.ok(!res.isError, JSON.stringify(res));
      return res.structuredContent;
    };
    const sid = (await ok('session_create', {})).session_id;
    await ok('run_command', { session_id: sid, background: true, command: 'exec python3 -m http.server 8000 --bind 127.0.0.1' });
    await ok('job', { session_id: sid, action: 'ready', port: 8000 });
    const u = new URL((await ok('port_forward', { session_id: sid, action: 'open', port: 8000 })).preview_url);
    const cookie = u.search.slice(1);
    const req = (path, c) => rawRequest(Number(u.port),
      `GET ${path} HTTP/1.1\r\nHost: ${u.host}\r\n${c ? `Cookie: ${c}\r\n` : ''}Connection: close\r\n\r\n`);
    assert.equal(statusOf(await req('/', cookie)), 200);
    await sleep(3500);
    const late = await req(u.pathname + u.search);
    assert.equal(statusOf(late), 403, late);
    assert.match(late, /expired/);
    assert.equal(statusOf(await req('/', cookie)), 403);
    const fresh = new URL((await ok('port_forward', { session_id: sid, action: 'list' })).forwards[0].preview_url);
    assert.equal(statusOf(await req('/', fresh.search.slice(1))), 200, 'list gives a fresh link');
  });
});
