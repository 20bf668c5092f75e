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
    net = await new EgressNet().start();
    srv = await Server.start('egress', {
      SANDBOX_EGRESS_ALLOW: CEILING,
      SANDBOX_EGRESS_ADDRESSES: `${net.inet.base}.0/24`,
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
    const r = await srv.ok('git_clone', { session_id: sid, url: 'https://github.com/org/demo.git', dest: 'demo' },
      { timeoutMs: 120000 });
    assert.ok(r, show(r));
    const f = await srv.ok('file_read', { session_id: sid, path: 'demo/README.md' });
    assert.match(JSON.stringify(f), /a repository on the test forge/);
  });

  test('without egress the same calls fail clearly', async () => {
    const p = await srv.fails('pip_install', { session_id: bare, packages: ['numpy==99.0.0'] }, 'network_disabled');
    assert.match(p.error.message, /egress/);
    const g = await srv.fails('git_clone', { session_id: bare, url: 'https://github.com/org/demo.git', dest: 'demo' },
      'git_failed');
    assert.match(g.error.message, /no network/);
  });

  test('a host outside the policy gets a 403 naming it and the policy', async () => {
    const out = await srv.ok('run_command', {
      session_id: sid, command: 'curl -sS -o /dev/null -w "%{http_code}" https://evil.example/x/secret.txt; echo " rc=$?"; ' +
        'curl -sS http://evil.example/x/secret.txt',
    }, { timeoutMs: 60000 });
    assert.match(out.stdout, /403 rc=56|rc=56/, show(out));
    assert.match(out.stdout, /evil\.example:80 is not allowed by this session's egress policy \(allowed: pypi\.org/, show(out));
    assert.deepEqual(net.seen('evil'), []);
    const st = await srv.ok('session_egress', { session_id: sid });
    const refused = st.log.find((e) => e.host === 'evil.example' && e.verdict === 'refused');
    assert.ok(refused && refused.count >= 2, JSON.stringify(st.log));
    const allowed = st.log.find((e) => e.host === 'pypi.org' && e.verdict === 'allowed');
    assert.ok(allowed && allowed.bytes_in > 0, JSON.stringify(st.log));
  });
});
