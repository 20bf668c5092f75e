// pip_* against the real engine, offline: a package written with file_write is
// built into a wheel in the sandbox, installed by path (foreground with
// progress, and in the background followed by pip_status), imported, listed,
// frozen and uninstalled; an install that needs an index fails fast with
// network_disabled; option and shell injection are refused with nothing run.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, suite, requireEngine, cleanup, show, sleep } from './lib/harness.mjs';
import { writePackage } from './lib/packages.mjs';

describe('pip tools', suite({ timeout: 600000 }), () => {
  let srv;
  let sid;

  before(async () => {
    requireEngine();
    srv = await Server.start('pip', { SANDBOX_TIMEOUT_S: 120 });
    sid = (await srv.createSession({ name: 'pip' })).session_id;
    await writePackage(srv, sid, 'src/pipdemo', 'pipdemo', '1.2.3', 'from a wheel');
    const w = await srv.sh('python3 -m pip wheel --no-index --no-build-isolation --no-deps -w dist ./src/pipdemo',
      { session_id: sid }, { timeoutMs: 120000 });
    assert.equal(w.exit_code, 0, show(w));
  });

  after(async () => {
    await cleanup();
  });

  test('a wheel built in the sandbox installs by path, with progress; run_python imports it; list and freeze show it', async () => {
    const seen = [];
    const res = await srv.client.callTool(
      { name: 'pip_install', arguments: { packages: ['./dist/pipdemo-1.2.3-py3-none-any.whl'], session_id: sid } },
      undefined, { timeout: 120000, onprogress: (p) => seen.push(p) });
    assert.ok(!res.isError, show(res));
    assert.deepEqual(res.structuredContent.installed, ['pipdemo-1.2.3']);
    assert.ok(seen.length >= 1 && seen.some((p) => /s: /.test(p.message ?? '')), `progress with pip's lines: ${JSON.stringify(seen)}`);

    const py = await srv.call('run_python', { code: 'import pipdemo; pipdemo.VALUE', session_id: sid });
    assert.ok(!py.isError, show(py));
    assert.match(JSON.stringify(py.content), /from a wheel/);

    const list = await srv.ok('pip_list', { session_id: sid });
    assert.deepEqual(list.packages.find((p) => p.name === 'pipdemo'), { name: 'pipdemo', version: '1.2.3' });
    assert.ok(list.packages.some((p) => p.name === 'numpy'), 'the image\'s packages are listed too');
    const freeze = await srv.ok('pip_freeze', { session_id: sid });
    assert.match(freeze.requirements, /^pipdemo @ file:\/\/\/workspace\/dist\/pipdemo-1\.2\.3-py3-none-any\.whl$|^pipdemo==1\.2\.3$/m);
    const st = await srv.ok('pip_status', { package: 'pipdemo', session_id: sid });
    assert.equal(st.state, 'installed');
    assert.equal(st.version, '1.2.3');
  });

  test('pip_uninstall removes it: a new interpreter cannot import it, pip_status says not_installed', async () => {
    const u = await srv.ok('pip_uninstall', { packages: ['pipdemo'], session_id: sid });
    assert.match(u.output, /Successfully uninstalled pipdemo-1\.2\.3/);
    const r = await srv.ok('run_command', { command: 'python3 -c "import pipdemo"', session_id: sid });
    assert.notEqual(r.exit_code, 0);
    assert.match(r.stderr, /No module named 'pipdemo'/);
    const st = await srv.ok('pip_status', { package: 'pipdemo', session_id: sid });
    assert.equal(st.state, 'not_installed');
  });

  test('a source folder installs offline (no build isolation), with a version specifier and find_links too', async () => {
    await srv.ok('pip_install', { packages: ['./src/pipdemo'], session_id: sid }, { timeoutMs: 120000 });
    assert.equal((await srv.ok('pip_status', { package: 'pipdemo', session_id: sid })).version, '1.2.3');
    await srv.ok('pip_uninstall', { packages: ['pipdemo'], session_id: sid });
    const r = await srv.ok('pip_install', { packages: ['pipdemo==1.2.3'], find_links: 'dist', session_id: sid },
      { timeoutMs: 120000 });
    assert.deepEqual(r.installed, ['pipdemo-1.2.3']);
  });

  test('background: returns at once, pip_status goes installing -> installed; a broken package ends failed with its log', async () => {
    await srv.ok('pip_uninstall', { packages: ['pipdemo'], session_id: sid });
    await writePackage(srv, sid, 'src/slowpkg', 'slowpkg', '0.9', 'slow');
    // a setup.py that takes a few seconds, so the install is seen running
    await srv.ok('file_write', { session_id: sid, path: 'src/slowpkg/setup.py', content: 'import time\ntime.sleep(4)\nfrom setuptools import setup\nsetup()\n' });
    const t0 = Date.now();
    const bg = await srv.ok('pip_install', { packages: ['./src/slowpkg'], background: true, session_id: sid });
    assert.ok(Date.now() - t0 < 3000, `returned at once (${Date.now() - t0} ms)`);
    assert.equal(bg.state, 'installing');
    const states = [];
    for (let i = 0; i < 120; i++) {
      const st = await srv.ok('pip_status', { package: './src/slowpkg', session_id: sid });
      states.push(st.state);
      if (st.state !== 'installing') break;
      await sleep(500);
    }
    assert.equal(states[0], 'installing', states.join(','));
    assert.equal(states.at(-1), 'installed', states.join(','));
    assert.equal((await srv.ok('pip_status', { package: 'slowpkg', session_id: sid })).version, '0.9');

    await srv.ok('file_write', { session_id: sid, path: 'src/broken/setup.py', content: 'raise SystemExit("this package is broken on purpose")\n' });
    await srv.ok('pip_install', { packages: ['./src/broken'], background: true, session_id: sid });
    let st;
    for (let i = 0; i < 120; i++) {
      st = await srv.ok('pip_status', { package: './src/broken', session_id: sid });
      if (st.state !== 'installing') break;
      await sleep(500);
    }
    assert.equal(st.state, 'failed', show(st));
    assert.match(st.log_tail, /broken on purpose/);
  });

  test('no network: an install that needs an index fails at once with network_disabled, naming what to do', async () => {
    const t0 = Date.now();
    for (const args of [{ packages: ['requests'] }, { packages: ['./dist/x.whl'], index_url: 'https://pypi.org/simple' },
      { packages: ['https://example.com/x.whl'] }]) {
      const r = await srv.fails('pip_install', { ...args, session_id: sid }, 'network_disabled');
      assert.match(r.error.message, /session_create/);
      assert.match(r.error.message, /find_links/);
    }
    assert.ok(Date.now() - t0 < 3000, `fast: ${Date.now() - t0} ms`);
    assert.equal((await srv.ok('pip_status', { package: 'requests', session_id: sid })).state, 'not_installed');
  });

  test('option and shell injection is refused with invalid_argument, and nothing runs', async () => {
    for (const pkg of ['x; touch /workspace/pwned', '--index-url=http://evil.example/', '-e .', 'pkg\n--pre',
      '$(touch /workspace/pwned)', '`touch /workspace/pwned`', 'a b', 'x|touch /workspace/pwned', '']) {
      const r = await srv.fails('pip_install', { packages: [pkg], session_id: sid }, 'invalid_argument');
      assert.ok(r.error.message.length > 20, show(r));
    }
    await srv.fails('pip_install', { packages: ['ok'], find_links: '--pre', session_id: sid }, 'invalid_argument');
    await srv.fails('pip_install', { packages: ['ok'], index_url: 'ftp://x', session_id: sid }, 'invalid_argument');
    await srv.fails('pip_uninstall', { packages: ['-y'], session_id: sid }, 'invalid_argument');
    await srv.fails('pip_uninstall', { packages: ['./dist/x.whl'], session_id: sid }, 'invalid_argument');
    await srv.fails('pip_status', { package: '--version', session_id: sid }, 'invalid_argument');
    const r = await srv.sh('test -e /workspace/pwned && echo yes || echo no', { session_id: sid });
    assert.equal(r.stdout.trim(), 'no');
  });

  test('an image without python says so', async () => {
    const slim = (await srv.createSession({ image: 'debian:bookworm-slim' })).session_id;
    const r = await srv.fails('pip_list', { session_id: slim }, 'python_not_found');
    assert.match(r.error.message, /no python3/);
    await srv.fails('pip_install', { packages: ['./x.whl'], session_id: slim }, 'python_not_found');
  });
});
