// Remote engines over TLS: a second dockerd on loopback listening on
// tcp://127.0.0.1:PORT with --tlsverify and certificates made here with
// openssl (tests/lib/remote-engine.sh). A session, run_command
// (exec streams: hijacked connections, relayed through TLS) and file transfer
// work over it; a wrong CA, a missing client certificate, a refused client
// certificate and a name mismatch are docker_unavailable with a message that
// says which. The dockerd is started once for this file and removed after.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync, copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server, suite, requireEngine, cleanup, show, serverIsSanitized } from '../lib/harness.mjs';
import { compareWithCli } from '../lib/remote-bench.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const script = join(here, '..', 'lib', 'remote-engine.sh');
const PORT = 23000 + (process.pid % 2000);
const DIR = `/tmp/sandbox-mcp-remote-tls-${process.pid}`;
const IMAGE = 'debian:bookworm-slim';
const HOST = `tcp://127.0.0.1:${PORT}`;
const sha256 = (b) => createHash('sha256').update(b).digest('hex');

/** The environment of a server on the TLS engine (env overrides merged). */
function tlsEnv(extra = {}) {
  return {
    DOCKER_HOST: HOST, DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: `${DIR}/client`, SANDBOX_IMAGE: IMAGE,
    ...extra,
  };
}

function bin() {
  return process.env.SANDBOX_MCP_BIN;
}

describe('a remote engine over TLS', suite({ timeout: 300000 }), () => {
  let srv;

  before(() => {
    requireEngine();
    execFileSync(script, ['start', DIR, String(PORT)], { stdio: ['ignore', 'inherit', 'inherit'], timeout: 90000 });
    // the image goes into the second engine's own store (through its unix socket)
    execFileSync('sh', ['-c', `docker save ${IMAGE} | docker -H unix://${DIR}/sock load -q`],
      { stdio: ['ignore', 'ignore', 'inherit'], timeout: 180000 });
  });

  after(async () => {
    try {
      await cleanup();
    } finally {
      spawnSync(script, ['stop', DIR], { stdio: 'inherit', timeout: 90000 });
    }
  });

  test('session, run_command and file transfer through TLS with DOCKER_TLS_VERIFY/DOCKER_CERT_PATH', async () => {
    srv = await Server.start('remote-tls', tlsEnv());
    const st = await srv.createSession({ name: 'tls' });
    // the container is on the TLS engine, not the default one
    const onRemote = spawnSync('docker', ['-H', `unix://${DIR}/sock`, 'inspect', '-f', '{{.Id}}', st.container_id]);
    assert.equal(onRemote.status, 0, 'the session runs on the second engine');
    assert.notEqual(spawnSync('docker', ['inspect', st.container_id]).status, 0, 'and not on the default one');

    const r = await srv.sh('echo hello over tls; echo err >&2', { session_id: st.session_id });
    assert.equal(r.stdout, 'hello over tls\n');
    assert.equal(r.stderr, 'err\n');
    // stdin through the relay (shutdown(SHUT_WR) becomes a close_notify the engine reads as EOF)
    const c = await srv.sh('wc -c', { session_id: st.session_id, stdin: 'x'.repeat(100000) });
    assert.equal(c.stdout.trim(), '100000');
    // a large output stream (much more than the relay's buffers), counted inside
    const big = await srv.sh('head -c 30000000 /dev/zero | wc -c; head -c 3000000 /dev/urandom | od | tail -1',
      { session_id: st.session_id });
    assert.match(big.stdout, /^30000000\n/);

    const data = randomBytes(4 << 20);
    await srv.ok('file_write', { path: 'r.bin', content: data.toString('base64'), encoding: 'base64',
      session_id: st.session_id });
    const sum = await srv.sh('sha256sum r.bin', { session_id: st.session_id });
    assert.equal(sum.stdout.split(' ')[0], sha256(data), 'the bytes arrived intact');
    const back = await srv.call('file_read', { path: 'r.bin', offset: 1 << 20, length: 1 << 20,
      session_id: st.session_id });
    assert.ok(!back.isError, show(back));
    const blob = back.content.map((b) => b.blob ?? b.resource?.blob ?? b.data).find((x) => x && x.length > 1 << 20);
    assert.ok(blob, `a binary part came back: ${show(back)}`);
    assert.equal(sha256(Buffer.from(blob, 'base64')), sha256(data.subarray(1 << 20, 2 << 20)), 'and it is the right one');

    // 20 warm calls on kept-alive TLS connections
    for (let i = 0; i < 20; i++) {
      const w = await srv.sh(`echo ${i}`, { session_id: st.session_id });
      assert.equal(w.stdout, `${i}\n`);
    }
    await srv.ok('session_close', { session_id: st.session_id });
    await srv.close();
  });

  test('figures: run_command and a 50 MiB upload beside the docker CLI over the same TLS endpoint', async (t) => {
    const hostDir = `${DIR}/host`;
    mkdirSync(hostDir, { recursive: true });
    const s = await Server.start('remote-tls-bench', tlsEnv({ SANDBOX_HOST_DIRS: hostDir, SANDBOX_MAX_UPLOAD_MB: 64 }));
    const st = await s.createSession({ name: 'bench' });
    const f = await compareWithCli(t, 'TLS', s, st.session_id, st.container_id,
      { DOCKER_HOST: HOST, DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: `${DIR}/client` }, hostDir);
    // the relay holds 32 KiB per connection: a 50 MiB stream must not show in the server's memory
    assert.ok(f.rss < (serverIsSanitized() ? 512 : 64) * 1024, `peak RSS ${f.rss} KiB stays far below the 50 MiB that went through`);
    await s.ok('session_close', { session_id: st.session_id });
    await s.close();
  });

  test('--tlsverify, --tlsverify=true and --tlscacert/--tlscert/--tlskey as flags (doctor)', () => {
    for (const sw of ['--tlsverify', '--tlsverify=true']) {
      const r = spawnSync(bin(), ['doctor', sw, '--tlscacert', `${DIR}/client/ca.pem`, '--tlscert',
        `${DIR}/client/cert.pem`, '--tlskey', `${DIR}/client/key.pem`],
      { env: { ...process.env, DOCKER_HOST: HOST, DOCKER_TLS_VERIFY: '', DOCKER_CERT_PATH: '/nonexistent' },
        encoding: 'utf8', timeout: 60000 });
      assert.match(r.stdout, /^ok {4}engine 20\./m, `${sw}: ${r.stdout}${r.stderr}`);
    }
    // --tlsverify=false with the variable unset: plain HTTP to a TLS port, which the engine answers 400
    const off = spawnSync(bin(), ['doctor', '--tlsverify=false'],
      { env: { ...process.env, DOCKER_HOST: HOST, DOCKER_TLS_VERIFY: '' }, encoding: 'utf8', timeout: 60000 });
    assert.match(off.stdout, /FAIL {2}engine: .*HTTPS/, off.stdout);
    const bad = spawnSync(bin(), ['doctor', '--tlsverify=maybe'], { encoding: 'utf8', timeout: 60000 });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /--tlsverify=maybe: 'maybe' is not true or false/);
  });

  /** A server on the TLS engine whose session_create must fail docker_unavailable; returns the message. */
  async function refused(label, env) {
    const s = await Server.start(label, env);
    const f = await s.fails('session_create', {}, 'docker_unavailable');
    await s.close();
    return f.error.message;
  }

  test('a wrong CA is refused: unknown CA', async () => {
    const m = await refused('tls-wrong-ca', tlsEnv({ DOCKER_CERT_PATH: `${DIR}/other` }));
    assert.match(m, /unknown CA/, m);
    assert.match(m, /DOCKER_CERT_PATH or --tlscacert/, m);
  });

  test('no client certificate: the engine requires one, and the message says so', async () => {
    const m = await refused('tls-no-client', tlsEnv({ DOCKER_CERT_PATH: `${DIR}/noclient` }));
    assert.match(m, /requires a client certificate and none is configured/, m);
  });

  test('a client certificate from another CA: refused by the engine', async () => {
    const m = await refused('tls-bad-client', tlsEnv({
      DOCKER_CERT_PATH: '/nonexistent', SANDBOX_TLSCACERT: `${DIR}/ca.pem`,
      SANDBOX_TLSCERT: `${DIR}/other/cert.pem`, SANDBOX_TLSKEY: `${DIR}/other/key.pem`,
    }));
    assert.match(m, /refused the client certificate/, m);
  });

  test('an engine that closes without a word after the handshake: the likely refusal is named', async () => {
    // what a TLS 1.3 engine refusing the client certificate looks like when its alert is lost: the
    // handshake succeeds, the request is read, the connection ends with no alert and no answer
    const { createServer } = await import('node:tls');
    const { readFileSync } = await import('node:fs');
    const tlsSrv = createServer({
      key: readFileSync(`${DIR}/pki/server-key.pem`), cert: readFileSync(`${DIR}/pki/server-cert.pem`),
      requestCert: true, rejectUnauthorized: false,
    }, (sock) => sock.once('data', () => sock.destroy()));
    await new Promise((resolve) => tlsSrv.listen(0, '127.0.0.1', resolve));
    try {
      const m = await refused('tls-silent-close', tlsEnv({ DOCKER_HOST: `tcp://127.0.0.1:${tlsSrv.address().port}` }));
      assert.match(m, /refused the client certificate/, m);
      assert.match(m, /closed before any answer/, m);
    } finally {
      tlsSrv.close();
    }
  });

  /** A docker config dir holding context `name` (the CLI's layout, made by hand) pointing at the TLS engine. */
  function contextStore(dir, name, certs, { current = false } = {}) {
    const h = createHash('sha256').update(name).digest('hex');
    mkdirSync(`${dir}/contexts/meta/${h}`, { recursive: true });
    writeFileSync(`${dir}/contexts/meta/${h}/meta.json`, JSON.stringify({
      Name: name, Metadata: {}, Endpoints: { docker: { Host: HOST, SkipTLSVerify: false } },
    }));
    mkdirSync(`${dir}/contexts/tls/${h}/docker`, { recursive: true });
    for (const f of ['ca.pem', 'cert.pem', 'key.pem']) {
      copyFileSync(`${certs}/${f}`, `${dir}/contexts/tls/${h}/docker/${f}`);
    }
    if (current) writeFileSync(`${dir}/config.json`, JSON.stringify({ auths: {}, currentContext: name }));
    return dir;
  }

  test('Docker contexts: DOCKER_CONTEXT, --context and currentContext reach the TLS engine', async () => {
    const cfg = contextStore(`${DIR}/dockercfg`, 'tls-remote', `${DIR}/client`, { current: true });
    // the docker CLI reads the same files the same way (a check of the hand-made layout)
    const cli = spawnSync('docker', ['--context', 'tls-remote', 'version', '--format', '{{.Server.Version}}'],
      { env: { ...process.env, DOCKER_CONFIG: cfg, DOCKER_HOST: '' }, encoding: 'utf8', timeout: 60000 });
    assert.equal(cli.status, 0, `docker --context: ${cli.stderr}`);
    const base = { DOCKER_CONFIG: cfg, DOCKER_TLS_VERIFY: '', DOCKER_CERT_PATH: '/nonexistent', SANDBOX_IMAGE: IMAGE };
    const noHost = { ...process.env, ...base };
    delete noHost.DOCKER_HOST;
    // currentContext (no DOCKER_HOST, no DOCKER_CONTEXT)
    const cur = spawnSync(bin(), ['doctor'], { env: noHost, encoding: 'utf8', timeout: 60000 });
    assert.match(cur.stdout, new RegExp(`^ok {4}endpoint ${HOST}`, 'm'), cur.stdout + cur.stderr);
    assert.match(cur.stdout, /^ok {4}engine 20\./m, cur.stdout + cur.stderr);
    // --context wins over DOCKER_HOST, as for the CLI
    const flag = spawnSync(bin(), ['doctor', '--context', 'tls-remote'],
      { env: { ...noHost, DOCKER_HOST: 'unix:///nonexistent.sock' }, encoding: 'utf8', timeout: 60000 });
    assert.match(flag.stdout, /^ok {4}engine 20\./m, flag.stdout + flag.stderr);
    // an unknown context is a clear startup error
    const none = spawnSync(bin(), ['doctor', '--context', 'nosuch'], { env: noHost, encoding: 'utf8', timeout: 60000 });
    assert.notEqual(none.status, 0);
    assert.match(none.stdout + none.stderr, /context 'nosuch' is not found.*docker context ls/);
    // a server through DOCKER_CONTEXT: a session and a command
    const env = { ...base, DOCKER_CONTEXT: 'tls-remote', DOCKER_HOST: undefined };
    const s = await Server.start('remote-ctx', env);
    const st = await s.createSession({ name: 'ctx' });
    const r = await s.sh('echo via context', { session_id: st.session_id });
    assert.equal(r.stdout, 'via context\n');
    await s.ok('session_close', { session_id: st.session_id });
    await s.close();
  });

  test('a host name the certificate does not name: name mismatch', async () => {
    const m = await refused('tls-name', tlsEnv({ DOCKER_HOST: `tcp://localhost:${PORT}` }));
    assert.match(m, /name mismatch.*'localhost'/, m);
  });
});
