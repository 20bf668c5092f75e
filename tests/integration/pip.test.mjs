// pip_* against the real engine, offline: a package written with file_write is
// built into a wheel in the sandbox, installed by path (foreground with
// progress, and in the background followed by pip_status), imported, listed,
// frozen and uninstalled; an install that needs an index fails fast with
// network_disabled; option and shell injection are refused by argcheck (its
// own wording) with nothing run; a failed pip is pip_failed with its last
// lines; pip_status follows what is installed now, by name or by path.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, suite, requireEngine, cleanup, show, sleep } from '../lib/harness.mjs';
import { writePackage } from '../lib/packages.mjs';

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
    // by the path it was installed from (no background job involved): the distribution pip installed from it
    const byPath = await srv.ok('pip_status', { package: './dist/pipdemo-1.2.3-py3-none-any.whl', session_id: sid });
    assert.equal(byPath.state, 'installed', show(byPath));
    assert.equal(byPath.version, '1.2.3');
    assert.equal(byPath.name, 'pipdemo');
    assert.equal((await srv.ok('pip_status', { package: '/workspace/dist/pipdemo-1.2.3-py3-none-any.whl', session_id: sid })).state, 'installed');
    assert.equal((await srv.ok('pip_status', { package: './dist/other-1.0-py3-none-any.whl', session_id: sid })).state, 'not_installed');
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
    // at once, before the detached pip may have written anything: installing, never an error
    const first = await srv.call('pip_status', { package: './src/slowpkg', session_id: sid });
    assert.ok(!first.isError, show(first));
    assert.equal(first.structuredContent.state, 'installing', show(first));
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

    // again and again, each followed at once by pip_status: installing or failed, never an error
    for (let i = 0; i < 5; i++) {
      await srv.ok('pip_install', { packages: ['./src/broken'], background: true, session_id: sid });
      const now = await srv.call('pip_status', { package: './src/broken', session_id: sid });
      assert.ok(!now.isError, show(now));
      assert.ok(['installing', 'failed'].includes(now.structuredContent.state), show(now));
    }
    // the job's files gone (a cleaned /tmp): no job, so what is installed decides; still never an error
    for (let i = 0; i < 60; i++) {
      const st2 = await srv.ok('pip_status', { package: './src/broken', session_id: sid });
      if (st2.state !== 'installing') break;
      await sleep(500);
    }
    await srv.sh('rm -rf /tmp/.sandbox-mcp-pip', { session_id: sid });
    const gone = await srv.call('pip_status', { package: './src/broken', session_id: sid });
    assert.ok(!gone.isError, show(gone));
    assert.equal(gone.structuredContent.state, 'not_installed', show(gone));
  });

  test('a failed foreground install is pip_failed; its last lines (pip\'s final error) reach the caller', async () => {
    // a build that prints a lot, then fails with a marker: pip's verdict is at the very end of its output
    await srv.ok('file_write', { session_id: sid, path: 'src/loud/setup.py', content:
      'for i in range(80):\n    print("noise line %d padding padding padding padding" % i)\n' +
      'raise SystemExit("MARKER-loud-build-broke")\n' });
    const r = await srv.fails('pip_install', { packages: ['./src/loud'], session_id: sid }, 'pip_failed',
      { timeoutMs: 120000 });
    assert.match(r.error.message, /^pip install failed \(exit 1\)/);
    // pip's last lines, kept in the message itself; the start of the output is what gives way
    assert.match(r.error.message, /metadata-generation-failed[\s\S]*See above for (output|details)\.?$/);
    assert.doesNotMatch(r.error.message, /noise line 0 /);
    assert.match(r.error.output, /MARKER-loud-build-broke/);
    const res = await srv.call('pip_install', { packages: ['./src/loud'], session_id: sid }, { timeoutMs: 120000 });
    assert.equal(res.isError, true);
    const text = res.content.map((c) => c.text).join('\n');
    assert.match(text, /pip's output \(last part\):\n[\s\S]*MARKER-loud-build-broke[\s\S]*metadata-generation-failed/);

    // no matching distribution in a local folder of wheels: pip ran, so pip_failed, with pip's ERROR line
    const none = await srv.fails('pip_install', { packages: ['nosuchpkg'], find_links: 'dist', session_id: sid },
      'pip_failed', { timeoutMs: 120000 });
    assert.match(none.error.message, /ERROR: No matching distribution found for nosuchpkg$/);
  });

  test('pip_status follows what is installed now: a failed background install, then a foreground one, then uninstall', async () => {
    await srv.ok('file_write', { session_id: sid, path: 'src/flaky/setup.py', content: 'raise SystemExit("flaky fails first")\n' });
    await srv.ok('pip_install', { packages: ['./src/flaky'], background: true, session_id: sid });
    let st;
    for (let i = 0; i < 120; i++) {
      st = await srv.ok('pip_status', { package: './src/flaky', session_id: sid });
      if (st.state !== 'installing') break;
      await sleep(500);
    }
    assert.equal(st.state, 'failed', show(st));
    assert.match(st.log_tail, /flaky fails first/);

    await writePackage(srv, sid, 'src/flaky', 'flaky', '2.0', 'fixed');
    await srv.ok('file_write', { session_id: sid, path: 'src/flaky/setup.py', content: 'from setuptools import setup\nsetup()\n' });
    await srv.ok('pip_install', { packages: ['./src/flaky'], session_id: sid }, { timeoutMs: 120000 });
    for (const pkg of ['./src/flaky', 'flaky']) {
      st = await srv.ok('pip_status', { package: pkg, session_id: sid });
      assert.equal(st.state, 'installed', `${pkg}: ${show(st)}`);
      assert.equal(st.version, '2.0');
      assert.equal(st.log_tail, undefined, 'the old job\'s log is not the news');
    }

    await srv.ok('pip_uninstall', { packages: ['flaky'], session_id: sid });
    for (const pkg of ['./src/flaky', 'flaky']) {
      st = await srv.ok('pip_status', { package: pkg, session_id: sid });
      assert.equal(st.state, 'not_installed', `${pkg}: ${show(st)}`);
    }
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

  test('option and shell injection is refused by argcheck with invalid_argument, and nothing runs', async () => {
    // argcheck's own words, so a pip that ran and failed on the value (pip_failed, pip's words) cannot pass
    const option = /^package '.*' looks like a pip option: options are not accepted/s;
    const notReq = /^package '.*' is not a requirement: use a name/s;
    for (const [pkg, why] of [['x; touch /workspace/pwned', notReq], ['--index-url=http://evil.example/', option],
      ['-e .', option], ['pkg\n--pre', notReq], ['$(touch /workspace/pwned)', notReq],
      ['`touch /workspace/pwned`', notReq], ['a b', notReq], ['x|touch /workspace/pwned', notReq],
      ['', /^an empty or over-long package$/]]) {
      const r = await srv.fails('pip_install', { packages: [pkg], session_id: sid }, 'invalid_argument');
      assert.match(r.error.message, why, show(r));
    }
    let r = await srv.fails('pip_install', { packages: ['ok'], find_links: '--pre', session_id: sid }, 'invalid_argument');
    assert.match(r.error.message, /^find_links '--pre' is not a usable path: no leading '-'/);
    r = await srv.fails('pip_install', { packages: ['ok'], index_url: 'ftp://x', session_id: sid }, 'invalid_argument');
    assert.match(r.error.message, /^index_url 'ftp:\/\/x' must be an http:\/\/ or https:\/\/ URL/);
    for (const pkg of ['-y', './dist/x.whl']) {
      r = await srv.fails('pip_uninstall', { packages: [pkg], session_id: sid }, 'invalid_argument');
      assert.match(r.error.message, /^'.*' is not a package name \(letters, digits/);
    }
    r = await srv.fails('pip_status', { package: '--version', session_id: sid }, 'invalid_argument');
    assert.match(r.error.message, option);
    const pwned = await srv.sh('test -e /workspace/pwned && echo yes || echo no', { session_id: sid });
    assert.equal(pwned.stdout.trim(), 'no');
  });

  test('an image without python says so', async () => {
    const slim = (await srv.createSession({ image: 'debian:bookworm-slim' })).session_id;
    const r = await srv.fails('pip_list', { session_id: slim }, 'python_not_found');
    assert.match(r.error.message, /no python3/);
    await srv.fails('pip_install', { packages: ['./x.whl'], session_id: slim }, 'python_not_found');
  });
});
