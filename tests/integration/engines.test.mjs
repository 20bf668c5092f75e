// Several engines in one server: the default engine (DOCKER_HOST's, named
// "default") and a second dockerd on loopback, named "b", over TCP with TLS
// (tests/lib/remote-engine.sh; its TLS material through
// DOCKER_TLS_VERIFY/DOCKER_CERT_PATH). A session on each: each container
// exists on its own engine only, and the tools (run_command, files,
// run_python, pip, env_info, session_commit) reach it there. env_info.engines,
// session_list's engine, doctor's check of each engine, the refusal of an
// unknown name, and killing engine b: only b's sessions fail, each saying
// which engine, and after b comes back new sessions work there again.
//
// The second dockerd needs the sandbox image: it is loaded once into a data
// root kept in /var/tmp (REMOTE_ENGINE_DATA) and only again when the image's
// id changed, since a `docker save | docker load` of it takes minutes here.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import { Server, suite, requireEngine, cleanup, show } from '../lib/harness.mjs';
import { Client, StreamableHTTPClientTransport } from '../lib/sdk1.mjs';
import { serverEnv } from '../lib/rawpipe.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const script = join(here, '..', 'lib', 'remote-engine.sh');
const PORT = 25000 + (process.pid % 2000);
const DIR = `/tmp/sandbox-mcp-engines-${process.pid}`;
const CACHE = '/var/tmp/sandbox-mcp-engines-data';
const IMAGE = process.env.SANDBOX_IMAGE || 'sandbox-mcp-python:latest';
const B = `tcp://127.0.0.1:${PORT}`;
const BSOCK = `unix://${DIR}/sock`;
const TLS = { DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: `${DIR}/client` };

function bin() {
  return process.env.SANDBOX_MCP_BIN;
}

/** Whether container (or image) id exists on the engine at host (null: the default one). */
function existsOn(host, kind, id) {
  const args = host ? ['-H', host, kind, 'inspect', id] : [kind, 'inspect', id];
  return spawnSync('docker', args, { stdio: 'ignore', timeout: 30000 }).status === 0;
}

function imageId(host) {
  const args = host ? ['-H', host, 'image', 'inspect', '-f', '{{.Id}}', IMAGE] : ['image', 'inspect', '-f', '{{.Id}}', IMAGE];
  const r = spawnSync('docker', args, { encoding: 'utf8', timeout: 30000 });
  return r.status === 0 ? r.stdout.trim() : null;
}

describe('several engines in one server', suite({ timeout: 900000 }), () => {
  let srv, onDefault, onB;

  before(() => {
    requireEngine();
    execFileSync(script, ['start', DIR, String(PORT)],
      { stdio: ['ignore', 'inherit', 'inherit'], timeout: 120000, env: { ...process.env, REMOTE_ENGINE_DATA: CACHE } });
    const want = imageId(null);
    assert.ok(want, `${IMAGE} is on the default engine`);
    if (imageId(BSOCK) !== want) {
      execFileSync('sh', ['-c', `docker save ${IMAGE} | docker -H ${BSOCK} load -q`],
        { stdio: ['ignore', 'ignore', 'inherit'], timeout: 900000 });
    }
    assert.equal(imageId(BSOCK), want, 'engine b has the same sandbox image');
  });

  after(async () => {
    try {
      await cleanup();
    } finally {
      spawnSync(script, ['stop', DIR], { stdio: 'inherit', timeout: 90000 });
    }
  });

  test('a session on each engine, each container on its own engine only', async () => {
    srv = await Server.start('engines', { SANDBOX_ENGINES: `b=${B}`, ...TLS });
    onDefault = await srv.createSession({ name: 'on-default' });
    onB = await srv.createSession({ name: 'on-b', engine: 'b' });
    assert.equal(onDefault.engine, 'default');
    assert.equal(onB.engine, 'b');
    assert.ok(existsOn(null, 'container', onDefault.container_id), 'the default session is on the default engine');
    assert.ok(!existsOn(BSOCK, 'container', onDefault.container_id), 'and not on b');
    assert.ok(existsOn(BSOCK, 'container', onB.container_id), 'the b session is on engine b');
    assert.ok(!existsOn(null, 'container', onB.container_id), 'and not on the default engine');

    // the tools reach each session on its engine
    const a = await srv.sh('echo on default', { session_id: onDefault.session_id });
    assert.equal(a.stdout, 'on default\n');
    const b = await srv.sh('echo on b; cat /etc/hostname', { session_id: onB.session_id });
    assert.match(b.stdout, /^on b\n/);
    await srv.ok('file_write', { path: 'b.txt', content: 'written on b\n', session_id: onB.session_id });
    const rd = await srv.call('file_read', { path: 'b.txt', session_id: onB.session_id });
    assert.ok(!rd.isError && show(rd).includes('written on b'), show(rd));
    // resources read the session's files on its engine
    const rlist = await srv.client.listResources();
    assert.ok(rlist.resources.some((r) => r.uri === `sandbox://${onB.session_id}/workspace/b.txt`), 'listed from b');
    const res = await srv.client.readResource({ uri: `sandbox://on-b/workspace/b.txt` });
    assert.equal(res.contents[0].text, 'written on b\n');
    const py = await srv.call('run_python', { code: 'print(6 * 7)', session_id: onB.session_id });
    assert.ok(!py.isError && show(py).includes('42'), show(py));
    const pip = await srv.call('pip_list', { session_id: onB.session_id });
    assert.ok(!pip.isError, show(pip));
    const info = await srv.ok('env_info', { session_id: onB.session_id });
    assert.equal(info.session.engine, 'b');
    assert.ok(info.session.python, `the probe ran in b's container: ${JSON.stringify(info.session)}`);

    // the default session (no session_id) is on the default engine
    await srv.sh('true');
    const list = await srv.ok('session_list');
    const byName = Object.fromEntries(list.sessions.map((s) => [s.name ?? s.session_id, s]));
    assert.equal(byName['on-default'].engine, 'default');
    assert.equal(byName['on-b'].engine, 'b');
    assert.equal(byName['on-b'].state, 'running');
    assert.equal(byName.default.engine, 'default');
  });

  test('env_info.engines names each engine with its endpoint and whether it answers', async () => {
    const info = await srv.ok('env_info');
    assert.deepEqual(Object.keys(info.engines).sort(), ['b', 'default']);
    assert.equal(info.engines.b.endpoint, B);
    assert.equal(info.engines.b.reachable, true);
    assert.equal(info.engines.default.reachable, true);
    assert.match(info.engines.default.endpoint, /^unix:\/\//);
    // one engine: env_info.engines is just the default one, from the same answer as env_info.engine
    const one = await Server.start('engines-one', {});
    const i1 = await one.ok('env_info');
    assert.deepEqual(i1.engines, { default: { endpoint: i1.engine.endpoint, reachable: true } });
    await one.close();
  });

  test('an unknown engine name, or an endpoint in its place, is refused with the configured names', async () => {
    for (const engine of ['nope', 'tcp://127.0.0.1:2375', 'unix:///run/docker.sock', 'B', 'default ', '']) {
      const f = await srv.fails('session_create', { engine }, 'invalid_argument');
      assert.match(f.error.message, /no engine named .*this server's engines are default, b/, f.error.message);
    }
    const list = await srv.ok('session_list');
    assert.equal(list.sessions.length, 3, 'nothing was created');
  });

  test('session_commit makes the image on the session\'s engine', async () => {
    const c = await srv.ok('session_commit', { session_id: onB.session_id, tag: `engines-${process.pid}` });
    try {
      assert.ok(existsOn(BSOCK, 'image', c.image_id), 'the image is on engine b');
      assert.ok(!existsOn(null, 'image', c.image_id), 'and not on the default engine');
    } finally {
      spawnSync('docker', ['-H', BSOCK, 'image', 'rm', '-f', c.reference], { stdio: 'ignore', timeout: 60000 });
    }
  });

  test('doctor checks each engine; --engine repeats; bad names and duplicates stop the start', () => {
    const env = { ...process.env, ...TLS };
    const d = spawnSync(bin(), ['doctor', '--engine', `b=${B}`, '--engine', `c=${BSOCK}`],
      { env, encoding: 'utf8', timeout: 120000 });
    assert.match(d.stdout, /^engine default:\nok {4}endpoint unix:\/\//m, d.stdout);
    assert.match(d.stdout, new RegExp(`^engine b:\\nok {4}endpoint ${B}$`, 'm'), d.stdout);
    assert.match(d.stdout, /^engine c:\n/m, d.stdout);
    assert.equal(d.stdout.match(/^ok {4}engine 20\./mg)?.length, 3, d.stdout);
    for (const [args, says] of [
      [['--engine', `b=${B}`, '--engine', `b=${BSOCK}`], /the name 'b' is given twice/],
      [['--engine', `default=${B}`], /'default' is DOCKER_HOST's engine/],
      [['--engine', `Big=${B}`], /a-z, 0-9/],
      [['--engine', 'b=http://127.0.0.1:1'], /not an endpoint/],
      [['--engine', 'b=context:nosuch'], /engine 'b': .*nosuch/],
    ]) {
      const r = spawnSync(bin(), args, { env, input: '', encoding: 'utf8', timeout: 60000 });
      assert.notEqual(r.status, 0, `${args.join(' ')} must not start`);
      assert.match(r.stderr, says, r.stderr);
    }
    // context:NAME: the context's endpoint and its own TLS files, with neither DOCKER_TLS_VERIFY nor DOCKER_CERT_PATH
    const cfg = `${DIR}/dockercfg`;
    const h = createHash('sha256').update('ctx-b').digest('hex');
    mkdirSync(`${cfg}/contexts/meta/${h}`, { recursive: true });
    writeFileSync(`${cfg}/contexts/meta/${h}/meta.json`, JSON.stringify({
      Name: 'ctx-b', Metadata: {}, Endpoints: { docker: { Host: B, SkipTLSVerify: false } },
    }));
    mkdirSync(`${cfg}/contexts/tls/${h}/docker`, { recursive: true });
    for (const f of ['ca.pem', 'cert.pem', 'key.pem']) copyFileSync(`${DIR}/client/${f}`, `${cfg}/contexts/tls/${h}/docker/${f}`);
    const cx = spawnSync(bin(), ['doctor', '--engine', 'viactx=context:ctx-b'], {
      env: { ...process.env, DOCKER_CONFIG: cfg, DOCKER_TLS_VERIFY: '', DOCKER_CERT_PATH: '/nonexistent' },
      encoding: 'utf8', timeout: 120000,
    });
    assert.match(cx.stdout, new RegExp(`^engine viactx:\\nok {4}endpoint ${B} \\(context ctx-b\\)$`, 'm'), cx.stdout);
    assert.equal(cx.stdout.match(/^ok {4}engine 20\./mg)?.length, 2, cx.stdout);
    // the same engine as plain tcp:// without the TLS variables: b fails under its own heading, default passes
    const plain = spawnSync(bin(), ['doctor', '--engine', `b=${B}`],
      { env: { ...process.env, DOCKER_TLS_VERIFY: '', DOCKER_CERT_PATH: '/nonexistent' }, encoding: 'utf8', timeout: 120000 });
    assert.notEqual(plain.status, 0);
    assert.match(plain.stdout, /^engine b:\nok {4}endpoint .*\n(.*\n)*?FAIL {2}engine: .*HTTPS/m, plain.stdout);
    assert.equal(plain.stdout.match(/^ok {4}engine 20\./mg)?.length, 1, plain.stdout);

    // SANDBOX_ENGINES as the variable, with a second entry
    const v = spawnSync(bin(), ['doctor'], { env: { ...env, SANDBOX_ENGINES: `b=${B}; c=${BSOCK}` }, encoding: 'utf8',
      timeout: 120000 });
    assert.equal(v.stdout.match(/^ok {4}engine 20\./mg)?.length, 3, v.stdout);
  });

  test('per engine: limits applied by b, and the start-up sweep and adoption on b', async () => {
    const env = { SANDBOX_ENGINES: `b=${B}`, ...TLS, SANDBOX_MAX_MEMORY_MB: 1024 };
    const s1 = await Server.start('engines-dying', env);
    const lim = await s1.createSession({ engine: 'b', memory_mb: 300, cpus: 0.5 });
    const hc = JSON.parse(execFileSync('docker', ['-H', BSOCK, 'inspect', '-f', '{{json .HostConfig}}', lim.container_id],
      { encoding: 'utf8' }));
    assert.equal(hc.Memory, 300 * 1024 * 1024, 'b applied the memory limit');
    assert.equal(hc.NanoCpus, 0.5e9, 'and the CPU limit');
    const over = await s1.call('session_create', { engine: 'b', memory_mb: 2048 });
    assert.ok(over.isError, 'a ceiling holds on b as on the default engine');
    const keep = await s1.createSession({ engine: 'b', persistent: true, name: 'keep-b' });
    await s1.sh('echo kept > k.txt', { session_id: keep.session_id });
    await s1.kill('SIGKILL', { withJanitor: true });
    assert.ok(existsOn(BSOCK, 'container', lim.container_id), 'the dead server left its container on b');

    // a new server sweeps b: the dead server's temporary session goes, its persistent one is adopted on b
    const s2 = await Server.start('engines-heir', env);
    const list = await s2.ok('session_list');
    const adopted = list.sessions.find((x) => x.session_id === keep.session_id);
    assert.ok(adopted, `the persistent session on b was adopted: ${JSON.stringify(list.sessions)}`);
    assert.equal(adopted.engine, 'b');
    const k = await s2.sh('cat k.txt', { session_id: 'keep-b' });
    assert.equal(k.stdout, 'kept\n');
    assert.ok(!existsOn(BSOCK, 'container', lim.container_id), 'the temporary one was removed from b');
    await s2.ok('session_close', { session_id: 'keep-b' });
    assert.ok(!existsOn(BSOCK, 'container', keep.container_id));
    await s2.close();
  });

  test('HTTP: run_python on b links its figure and a new file, fetched from b through signed links', async () => {
    const port = await new Promise((resolve, reject) => {
      const l = net.createServer();
      l.on('error', reject);
      l.listen(0, '127.0.0.1', () => { const p = l.address().port; l.close(() => resolve(p)); });
    });
    const child = spawn(bin(), ['serve', '--http', `127.0.0.1:${port}`],
      { env: serverEnv({ SANDBOX_ENGINES: `b=${B}`, ...TLS, SANDBOX_PULL: 'never' }), stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-8000); });
    const base = `http://127.0.0.1:${port}`;
    const client = new Client({ name: 'engines-http', version: '0' }, { capabilities: {} });
    try {
      for (let i = 0; i < 200; i++) {
        try { if ((await fetch(`${base}/health`)).ok) break; } catch { /* not yet */ }
        await new Promise((r) => setTimeout(r, 100));
      }
      await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
      const st = await client.callTool({ name: 'session_create', arguments: { engine: 'b' } }, undefined, { timeout: 110000 });
      assert.ok(!st.isError, show(st));
      const sid = st.structuredContent.session_id;
      assert.ok(existsOn(BSOCK, 'container', st.structuredContent.container_id));
      const code = 'import matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 1])\n' +
        'open("report.txt", "w").write("from b\\n")\nplt.show()';
      const res = await client.callTool({ name: 'run_python', arguments: { code, session_id: sid } }, undefined,
        { timeout: 110000 });
      assert.ok(!res.isError, show(res));
      const img = res.content.find((c) => c.type === 'image');
      const fig = res.content.find((c) => c.type === 'resource_link' && c.mimeType === 'image/png');
      const rep = res.content.find((c) => c.type === 'resource_link' && c.name === 'report.txt');
      assert.ok(img && fig && rep, `figure inlined and linked, file linked: ${JSON.stringify(res.content.filter((c) => c.type !== "image")).slice(0, 1500)}\n${stderr}`);
      const png = await fetch(fig._meta['io.sandbox-mcp/url']);
      assert.equal(png.status, 200);
      assert.deepEqual(Buffer.from(await png.arrayBuffer()), Buffer.from(img.data, 'base64'), 'the linked figure, from b');
      const txt = await fetch(rep._meta['io.sandbox-mcp/url']);
      assert.equal(await txt.text(), 'from b\n');
      await client.callTool({ name: 'session_close', arguments: { session_id: sid } });
    } finally {
      await client.close().catch(() => {});
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.on('exit', r)));
    }
  });

  test('killing engine b fails only its sessions, each saying which engine; after it returns, b works again', async (t) => {
    const pid = Number(readFileSync(`${DIR}/pid`, 'utf8'));
    // a command running on b when b goes away
    const running = srv.call('run_command', { command: 'echo started; sleep 60', session_id: onB.session_id });
    await new Promise((r) => setTimeout(r, 1500));
    process.kill(pid, 'SIGKILL');
    const mid = await running;
    assert.equal(mid.structuredContent?.error?.code, 'docker_unavailable', show(mid));
    assert.match(mid.structuredContent.error.message, /engine of session .* went away.*engine 'b'/, show(mid));
    assert.match(show(mid), /started/, 'with the output so far');
    for (let i = 0; i < 100 && spawnSync('kill', ['-0', String(pid)]).status === 0; i++) await new Promise((r) => setTimeout(r, 100));

    // b's session: docker_unavailable naming engine b
    const f = await srv.fails('run_command', { command: 'echo hi', session_id: onB.session_id }, 'docker_unavailable');
    assert.match(f.error.message, /engine 'b'/, f.error.message);
    const fc = await srv.fails('session_create', { engine: 'b' }, 'docker_unavailable');
    assert.match(fc.error.message, /engine 'b'/, fc.error.message);
    const ff = await srv.fails('file_read', { path: 'b.txt', session_id: onB.session_id }, 'docker_unavailable');
    assert.match(ff.error.message, /engine 'b'/, ff.error.message);

    // the default engine's sessions keep working, and new ones start there
    const a = await srv.sh('echo still here', { session_id: onDefault.session_id });
    assert.equal(a.stdout, 'still here\n');
    await srv.sh('echo default too');
    const fresh = await srv.createSession({ name: 'while-b-is-down' });
    assert.equal(fresh.engine, 'default');
    await srv.ok('session_close', { session_id: fresh.session_id });

    const info = await srv.ok('env_info');
    assert.equal(info.engines.b.reachable, false);
    assert.match(info.engines.b.error, /engine 'b'/);
    assert.equal(info.engines.default.reachable, true);
    const list = await srv.ok('session_list');
    const bs = list.sessions.find((s) => s.session_id === onB.session_id);
    assert.equal(bs.state, 'unknown', 'b\'s session is still listed, its state unknown');
    assert.equal(list.sessions.find((s) => s.session_id === onDefault.session_id).state, 'running');

    // b comes back: its old session either works again or says what happened; new sessions work there
    execFileSync(script, ['restart', DIR, String(PORT)], { stdio: ['ignore', 'inherit', 'inherit'], timeout: 120000 });
    const again = await srv.call('run_command', { command: 'cat b.txt', session_id: onB.session_id });
    t.diagnostic(`b's old session after b came back: ${show(again).slice(0, 400)}`);
    if (again.isError) {
      assert.match(again.structuredContent.error.message, /session .*(gone|stopped|restart)/i, show(again));
    } else {
      assert.equal(again.structuredContent.stdout, 'written on b\n', show(again));
    }
    const nb = await srv.createSession({ engine: 'b' });
    assert.ok(existsOn(BSOCK, 'container', nb.container_id));
    const r = await srv.sh('echo b is back', { session_id: nb.session_id });
    assert.equal(r.stdout, 'b is back\n');
    const info2 = await srv.ok('env_info');
    assert.equal(info2.engines.b.reachable, true);
    await srv.ok('session_close', { session_id: nb.session_id });
    await srv.close();
  });
});
