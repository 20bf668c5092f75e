// Images pulled by session_create from real registries on loopback (Debian's
// docker-registry): progress seen by the SDK client, htpasswd auth through a
// DOCKER_CONFIG the CLI wrote, wrong credentials, a reference outside the
// policy refused without a request reaching the registry, a missing tag, and a
// cancelled pull that leaves the engine able to pull again; a manifest list with
// no entry for the engine's platform; the default session's pull with progress
// and cancellation; credential helpers (credHelpers, credsStore) run from PATH;
// session_export and session_commit round trips from a pulled base under a policy.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync, rmSync, readFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Server, suite, requireEngine, cleanup, docker, show } from '../lib/harness.mjs';
import { sleep } from '../lib/rawpipe.mjs';

const haveRegistry = (() => {
  try { execFileSync('sh', ['-c', 'command -v docker-registry && command -v htpasswd'], { stdio: 'ignore' }); return true; } catch { return false; }
})();

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

/** A docker-registry on 127.0.0.1 with storage in a temp dir; htpasswd when user is given. */
async function startRegistry(user, password) {
  const dir = mkdtempSync(join(tmpdir(), 'sbx-registry-'));
  const port = await freePort();
  let auth = '';
  if (user) {
    execFileSync('htpasswd', ['-Bbc', join(dir, 'htpasswd'), user, password], { stdio: 'ignore' });
    auth = `auth:\n  htpasswd:\n    realm: sbx-test\n    path: ${join(dir, 'htpasswd')}\n`;
  }
  writeFileSync(join(dir, 'config.yml'), `version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n` +
    `    rootdirectory: ${join(dir, 'data')}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:${port}\n${auth}`);
  const child = spawn('docker-registry', ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'pipe', 'pipe'] });
  const reg = { dir, port, child, log: '', host: `127.0.0.1:${port}` };
  child.stdout.on('data', (d) => { reg.log += d; });
  child.stderr.on('data', (d) => { reg.log += d; });
  for (let i = 0; i < 100 && !/listening on/.test(reg.log); i++) await sleep(100);
  assert.match(reg.log, /listening on/, `registry started: ${reg.log.slice(-2000)}`);
  return reg;
}

/** Requests the registry has answered so far, from its own access log ("GET /v2/... HTTP/1.1"). */
function requestsSeen(reg) {
  return (reg.log.match(/"[A-Z]+ \/v2\/[^"]* HTTP\/1\.[01]"/g) ?? []).length;
}

const sha256 = (b) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const V2 = 'application/vnd.docker.distribution.manifest.v2+json';
const LIST = 'application/vnd.docker.distribution.manifest.list.v2+json';

/**
 * Pushes repo:tag through the registry's HTTP API as a manifest list whose
 * only entry is linux/s390x (an empty layer, a config saying s390x): an image
 * that exists, but not for this engine's platform.
 */
async function pushForeignPlatform(reg, repo, tag) {
  const base = `http://${reg.host}/v2/${repo}`;
  const tar = Buffer.alloc(1024); // an empty tar: two zero blocks
  const layer = gzipSync(tar);
  const config = Buffer.from(JSON.stringify({ architecture: 's390x', os: 'linux', config: {},
    rootfs: { type: 'layers', diff_ids: [sha256(tar)] } }));
  for (const blob of [layer, config]) {
    const start = await fetch(`${base}/blobs/uploads/`, { method: 'POST' });
    assert.equal(start.status, 202, await start.text());
    const loc = new URL(start.headers.get('location'), `http://${reg.host}`);
    loc.searchParams.set('digest', sha256(blob));
    const put = await fetch(loc, { method: 'PUT', body: blob, headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(put.status, 201, await put.text());
  }
  const manifest = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: V2,
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: sha256(config) },
    layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: layer.length, digest: sha256(layer) }] }));
  const list = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: LIST, manifests: [{ mediaType: V2,
    size: manifest.length, digest: sha256(manifest), platform: { architecture: 's390x', os: 'linux' } }] }));
  for (const [ref, body, type] of [[sha256(manifest), manifest, V2], [tag, list, LIST]]) {
    const put = await fetch(`${base}/manifests/${ref}`, { method: 'PUT', body, headers: { 'content-type': type } });
    assert.equal(put.status, 201, await put.text());
  }
}

function stopRegistry(reg) {
  if (!reg) return;
  reg.child.kill('SIGKILL');
  rmSync(reg.dir, { recursive: true, force: true });
}

async function dockerOk(args, opts) {
  const r = await docker(args, { timeoutMs: 300000, ...opts });
  assert.equal(r.code, 0, `docker ${args.join(' ')}: ${r.stderr}`);
  return r;
}

/** Builds a small image with a layer of its own (random bytes) and pushes it as ref (with CLI config dir cfg). */
async function pushImage(ref, mb, cfg) {
  const ctx = mkdtempSync(join(tmpdir(), 'sbx-img-'));
  writeFileSync(join(ctx, 'Dockerfile'), `FROM debian:bookworm-slim\nRUN head -c ${mb}000000 /dev/urandom > /blob\n` +
    'LABEL io.sandbox-mcp.test=images\n');
  try {
    await dockerOk(['build', '-q', '--network', 'none', '-t', ref, ctx]);
    await dockerOk([...(cfg ? ['--config', cfg] : []), 'push', ref]);
    await dockerOk(['rmi', ref]); // the only tag: the image (ours) goes, debian's layers stay
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
}

/** session_create through the SDK with a progress token; returns { res, progress }. */
async function createWithProgress(srv, args, opts = {}) {
  const progress = [];
  const res = await srv.client.callTool({ name: 'session_create', arguments: args }, undefined,
    { timeout: 300000, onprogress: (p) => { progress.push(p); opts.onprogress?.(p); }, signal: opts.signal });
  return { res, progress };
}

describe('session_create pulls from registries on loopback', suite({ timeout: 900000, skip: haveRegistry ? false : 'docker-registry or htpasswd not installed (.ci/prepare)' }), () => {
  let open, secured, srv;
  const refs = new Set();
  const cfgDirs = [];

  before(async () => {
    requireEngine();
    open = await startRegistry();
    secured = await startRegistry('sbx', 'right-pass');
  });

  after(async () => {
    try {
      await srv?.close();
      for (const r of refs) await docker(['rmi', r]);
      await cleanup();
    } finally {
      // the registries keep node's event loop alive: they go whatever cleanup() found
      stopRegistry(open);
      stopRegistry(secured);
      for (const d of cfgDirs) rmSync(d, { recursive: true, force: true });
    }
  });

  test('a missing image is pulled, with progress notifications, and the result says so', async () => {
    const ref = `${open.host}/sbx-test/base:1`;
    await pushImage(ref, 8);
    refs.add(ref);
    srv = await Server.start('images', { SANDBOX_IMAGES: `${open.host}/sbx-test/*`, SANDBOX_PULL: 'missing' });
    const { res, progress } = await createWithProgress(srv, { image: ref });
    assert.ok(!res.isError, show(res));
    const st = res.structuredContent;
    assert.equal(st.pulled, true, show(res));
    assert.ok(Number.isInteger(st.pull_ms) && st.pull_ms >= 0, show(res));
    assert.ok(progress.length >= 1, 'progress notifications were sent');
    assert.ok(progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress), JSON.stringify(progress));
    assert.ok(progress.some((p) => /layers/.test(p.message ?? '')), JSON.stringify(progress));
    assert.equal((await docker(['image', 'inspect', ref])).code, 0, 'the image is on the engine now');
    await srv.ok('run_command', { session_id: st.session_id, command: 'test -s /blob' });
    // a second create finds it: no pull
    const again = await srv.ok('session_create', { image: ref });
    assert.equal(again.pulled, false);
    const info = await srv.ok('env_info');
    assert.ok(info.images.local.includes(ref), `env_info lists it: ${JSON.stringify(info.images)}`);
    assert.ok(!info.images.local.includes('debian:bookworm-slim'), 'and not what the policy refuses');
    assert.match(info.images.policy, /SANDBOX_IMAGES/);
  });

  test('a reference outside the policy is refused without a request reaching the registry', async () => {
    const ref = `${open.host}/other/base:1`;
    await sleep(300); // the access log of earlier requests is written
    const before = open.log.length;
    const seen = requestsSeen(open);
    assert.ok(seen > 0, 'the access log counts the requests of the pull before');
    const st = await srv.fails('session_create', { image: ref }, 'invalid_argument');
    assert.match(st.error.message, /SANDBOX_IMAGES/, st.error.message);
    // the default policy pulls only official images: a loopback registry is refused too
    const dflt = await Server.start('images-default', { SANDBOX_PULL: 'missing' });
    try {
      const d = await dflt.fails('session_create', { image: `${open.host}/sbx-test/nothere:1` }, 'image_not_found');
      assert.match(d.error.message, /docker pull/, d.error.message);
      assert.match(d.error.message, /SANDBOX_IMAGES/, d.error.message);
    } finally {
      await dflt.close();
    }
    await sleep(300);
    assert.equal(requestsSeen(open), seen, `the registry answered no request: ${open.log.slice(before)}`);
    assert.doesNotMatch(open.log.slice(before), /other\/base|nothere/, 'the registry saw no request');
  });

  test('a missing tag is image_not_found with the registry\'s reason', async () => {
    const st = await srv.fails('session_create', { image: `${open.host}/sbx-test/base:nope` }, 'image_not_found',
      { timeoutMs: 120000 });
    assert.match(st.error.message, /has no .*sbx-test\/base:nope.*manifest unknown/, st.error.message);
    assert.doesNotMatch(st.error.message, /try again/, st.error.message);
  });

  test('a cancelled pull leaves the engine consistent: the next pull works', async () => {
    const ref = `${open.host}/sbx-test/big:1`;
    await pushImage(ref, 60);
    refs.add(ref);
    const ac = new AbortController();
    let aborted = false;
    await assert.rejects(createWithProgress(srv, { image: ref }, {
      signal: ac.signal,
      onprogress: () => { if (!aborted) { aborted = true; ac.abort(); } },
    }));
    assert.ok(aborted, 'the pull reported progress before it was cancelled');
    const rss0 = srv.peakRssKiB();
    const t0 = Date.now();
    const { res, progress } = await createWithProgress(srv, { image: ref });
    const secs = (Date.now() - t0) / 1000;
    assert.ok(!res.isError, show(res));
    assert.equal(res.structuredContent.pulled, true, 'the cancelled pull stopped: this one pulled');
    // rate-limited: every 250 ms at most, besides the start and one per finished layer (a few here)
    assert.ok(progress.length <= secs * 4 + 10, `${progress.length} notifications in ${secs} s`);
    assert.ok(progress.at(-1).total >= 60e6, `bytes in all: ${JSON.stringify(progress.at(-1))}`);
    // the progress stream is parsed line by line: a 60 MB pull does not grow the server
    const grew = srv.peakRssKiB() - rss0;
    assert.ok(grew < 8192, `peak RSS grew by ${grew} KiB during the pull`);
    await srv.ok('run_command', { session_id: res.structuredContent.session_id, command: 'test -s /blob' });
  });

  test('htpasswd auth: credentials from DOCKER_CONFIG pull; wrong ones are a clear error', async () => {
    const good = mkdtempSync(join(tmpdir(), 'sbx-dcfg-'));
    cfgDirs.push(good);
    execFileSync('docker', ['--config', good, 'login', '-u', 'sbx', '--password-stdin', secured.host],
      { input: 'right-pass\n', stdio: ['pipe', 'ignore', 'pipe'] });
    const ref = `${secured.host}/sbx-test/private:1`;
    await pushImage(ref, 2, good);
    refs.add(ref);

    const bad = mkdtempSync(join(tmpdir(), 'sbx-dcfg-'));
    cfgDirs.push(bad);
    writeFileSync(join(bad, 'config.json'), JSON.stringify({
      auths: { [secured.host]: { auth: Buffer.from('sbx:wrong-pass').toString('base64') } },
    }));
    const env = { SANDBOX_IMAGES: `${secured.host}/sbx-test/*`, SANDBOX_PULL: 'missing' };
    const wrong = await Server.start('images-wrong', { ...env, DOCKER_CONFIG: bad });
    try {
      const st = await wrong.fails('session_create', { image: ref }, 'image_not_found', { timeoutMs: 120000 });
      assert.match(st.error.message, /refused/, st.error.message);
      assert.match(st.error.message, /credentials/, st.error.message);
      assert.doesNotMatch(JSON.stringify(st), /wrong-pass/, 'the secret is never in a result');
    } finally {
      await wrong.close();
    }
    const right = await Server.start('images-auth', { ...env, DOCKER_CONFIG: good });
    try {
      const st = await right.ok('session_create', { image: ref }, { timeoutMs: 300000 });
      assert.equal(st.pulled, true);
      assert.doesNotMatch(right.stderrTail, /right-pass|c2J4OnJpZ2h0LXBhc3M/, 'the secret is never logged');
    } finally {
      await right.close();
    }
  });

  test('a manifest list with no entry for the engine\'s platform is a clear error', async () => {
    const ref = `${open.host}/sbx-test/foreign:1`;
    await pushForeignPlatform(open, 'sbx-test/foreign', '1');
    const st = await srv.fails('session_create', { image: ref }, 'image_not_found', { timeoutMs: 120000 });
    assert.match(st.error.message, /has no image for this Docker engine's platform/, st.error.message);
    assert.match(st.error.message, /env_info engine\.os\/arch/, st.error.message);
    assert.match(st.error.message, /no matching manifest/, 'with the registry\'s words: ' + st.error.message);
    assert.doesNotMatch(st.error.message, /try again|Docker engine error/, st.error.message);
    assert.notEqual((await docker(['image', 'inspect', ref])).code, 0, 'nothing was pulled');
  });

  test('the default session pulls its image with progress; a cancel stops the pull', async () => {
    const ref = `${open.host}/sbx-test/dflt:1`;
    await pushImage(ref, 40);
    refs.add(ref);
    const dflt = await Server.start('images-dflt', { SANDBOX_IMAGE: ref, SANDBOX_IMAGES: `${open.host}/sbx-test/*`,
      SANDBOX_PULL: 'missing' });
    try {
      const ac = new AbortController();
      let first;
      await assert.rejects(dflt.client.callTool({ name: 'run_command', arguments: { command: 'true' } }, undefined,
        { timeout: 300000, signal: ac.signal, onprogress: (p) => { first ??= p; ac.abort(); } }));
      assert.match(first?.message ?? '', /pulling/, `the pull reported progress: ${JSON.stringify(first)}`);
      await sleep(1000);
      assert.notEqual((await docker(['image', 'inspect', ref])).code, 0, 'the cancelled pull stopped');
      assert.doesNotMatch(dflt.stderrTail, /pulled .*dflt/, dflt.stderrTail.slice(-2000));

      const progress = [];
      const t0 = Date.now();
      const res = await dflt.client.callTool({ name: 'run_command', arguments: { command: 'test -s /blob && echo there' } },
        undefined, { timeout: 300000, onprogress: (p) => progress.push(p) });
      const secs = (Date.now() - t0) / 1000;
      assert.ok(!res.isError, show(res));
      assert.match(JSON.stringify(res.content), /there/, show(res));
      const pulls = progress.filter((p) => /pulling .*dflt.*layers, [\d.]+ of [\d.]+ MB/.test(p.message ?? ''));
      assert.ok(pulls.length >= 1, `layers and bytes in the progress: ${JSON.stringify(progress)}`);
      assert.ok(progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress), JSON.stringify(progress));
      // rate-limited: every 250 ms at most, besides one per finished layer (2 here) and the stages
      assert.ok(progress.length <= secs * 4 + 10, `${progress.length} notifications in ${secs} s`);
      assert.match(dflt.stderrTail, /pulled .*dflt:1 in \d+ ms/, dflt.stderrTail.slice(-2000));
    } finally {
      await dflt.close();
    }
  });

  test('credHelpers and credsStore: docker-credential-<name> get on PATH; the secret is never logged', async () => {
    const ref = `${secured.host}/sbx-test/helped:1`;
    const good = mkdtempSync(join(tmpdir(), 'sbx-dcfg-'));
    cfgDirs.push(good);
    execFileSync('docker', ['--config', good, 'login', '-u', 'sbx', '--password-stdin', secured.host],
      { input: 'right-pass\n', stdio: ['pipe', 'ignore', 'pipe'] });
    await pushImage(ref, 2, good);
    refs.add(ref);
    // the user's credential helper: answers for the secured registry only, and says it ran
    const bin = mkdtempSync(join(tmpdir(), 'sbx-credbin-'));
    cfgDirs.push(bin);
    const ran = join(bin, 'ran');
    writeFileSync(join(bin, 'docker-credential-sbxtest'), '#!/bin/sh\n' +
      `[ "$1" = get ] || exit 1\nread -r server\necho "$server" >> '${ran}'\n` +
      `[ "$server" = '${secured.host}' ] || { echo "credentials not found in native keychain"; exit 1; }\n` +
      `printf '{"ServerURL":"%s","Username":"sbx","Secret":"right-pass"}' "$server"\n`, { mode: 0o755 });
    for (const [kind, config] of [
      ['credHelpers', { credHelpers: { [secured.host]: 'sbxtest' } }],
      ['credsStore', { credsStore: 'sbxtest', auths: { [secured.host]: {} } }],
    ]) {
      await docker(['rmi', ref]);
      rmSync(ran, { force: true });
      const dir = mkdtempSync(join(tmpdir(), 'sbx-dcfg-'));
      cfgDirs.push(dir);
      writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
      const s = await Server.start(`images-${kind}`, { SANDBOX_IMAGES: `${secured.host}/sbx-test/*`, SANDBOX_PULL: 'missing',
        SANDBOX_LOG_LEVEL: 'debug', DOCKER_CONFIG: dir, PATH: `${bin}:${process.env.PATH}` });
      let stderr = '';
      s.transport.stderr.on('data', (d) => { stderr += d; });
      try {
        const res = await s.call('session_create', { image: ref }, { timeoutMs: 300000 });
        assert.ok(!res.isError, `${kind}: ${show(res)}\n${s.stderrTail.slice(-2000)}`);
        assert.equal(res.structuredContent.pulled, true, kind);
        assert.ok(existsSync(ran), `${kind}: the helper ran`);
        assert.equal(readFileSync(ran, 'utf8'), `${secured.host}\n`, `${kind}: asked for the registry`);
        assert.doesNotMatch(JSON.stringify(res), /right-pass|c2J4OnJpZ2h0LXBhc3M/, `${kind}: never in a result`);
        assert.doesNotMatch(stderr + s.stderrTail, /right-pass|c2J4OnJpZ2h0LXBhc3M|X-Registry-Auth: \S/i,
          `${kind}: never logged`);
      } finally {
        await s.close();
      }
    }
  });

  test('session_export and session_commit round trips from a pulled base under a policy', async () => {
    // the sandbox image pushed to the registry under a name of our own, removed locally, pulled back
    const ref = `${open.host}/sbx-test/python:1`;
    await dockerOk(['tag', 'sandbox-mcp-python:latest', ref]);
    await dockerOk(['push', ref]);
    await dockerOk(['rmi', ref]); // our tag only: sandbox-mcp-python:latest keeps the image
    refs.add(ref);
    const made = new Set();
    const s = await Server.start('images-export', { SANDBOX_IMAGES: `${open.host}/sbx-test/*,sandbox-mcp-*`,
      SANDBOX_PULL: 'missing' });
    try {
      const { res, progress } = await createWithProgress(s, { image: ref });
      assert.ok(!res.isError, show(res));
      const c = res.structuredContent;
      assert.equal(c.pulled, true);
      // the engine has every layer (sandbox-mcp-python:latest stays): the start is reported all the same
      assert.ok(progress.some((p) => /^pulling .*sbx-test\/python:1/.test(p.message ?? '')), JSON.stringify(progress));
      await s.ok('run_command', { session_id: c.session_id, command: 'echo kept > /workspace/note' });
      const tag = `imgtest-${process.pid}`;
      // the export reads pip freeze of a fresh container of the base (by id) and builds in throwaway sessions
      const x = await s.ok('session_export', { session_id: c.session_id, build: true, repository: 'sandbox-mcp-export',
        tag }, { timeoutMs: 600000 });
      made.add(x.reference);
      const fromExport = await s.ok('session_create', { image: x.reference });
      const cat = await s.ok('run_command', { session_id: fromExport.session_id, command: 'cat /workspace/note' });
      assert.match(cat.stdout, /kept/);
      const k = await s.ok('session_commit', { session_id: c.session_id, repository: 'sandbox-mcp-commit', tag },
        { timeoutMs: 300000 });
      made.add(k.reference);
      const fromCommit = await s.ok('session_create', { image: k.reference });
      assert.equal(fromCommit.pulled, false);
      const cat2 = await s.ok('run_command', { session_id: fromCommit.session_id, command: 'cat /workspace/note' });
      assert.match(cat2.stdout, /kept/);
    } finally {
      await s.close();
      for (const r of made) await docker(['rmi', r]);
    }
  });

  test('SANDBOX_PULL always pulls a present tag again, never asks no registry; doctor shows the policy', async () => {
    const ref = `${open.host}/sbx-test/base:1`;
    assert.equal((await docker(['image', 'inspect', ref])).code, 0, 'pulled by the first test');
    const env = { SANDBOX_IMAGES: `${open.host}/sbx-test/*` };
    const always = await Server.start('images-always', { ...env, SANDBOX_PULL: 'always' });
    try {
      const st = await always.ok('session_create', { image: ref }, { timeoutMs: 300000 });
      assert.equal(st.pulled, true, 'present, and pulled again');
    } finally {
      await always.close();
    }
    await sleep(300);
    const seen = requestsSeen(open);
    const never = await Server.start('images-never', { ...env, SANDBOX_PULL: 'never' });
    try {
      const st = await never.fails('session_create', { image: `${open.host}/sbx-test/base:2` }, 'image_not_found');
      assert.match(st.error.message, /SANDBOX_PULL is never/, st.error.message);
      assert.match(st.error.message, /docker pull/, st.error.message);
    } finally {
      await never.close();
    }
    await sleep(300);
    assert.equal(requestsSeen(open), seen, 'never asks no registry');
    const doc = await new Promise((resolve) => {
      const child = spawn(process.env.SANDBOX_MCP_BIN, ['doctor'], {
        env: { ...process.env, ...env, SANDBOX_PULL: 'missing' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d) => { out += d; });
      child.stderr.on('data', (d) => { out += d; });
      child.on('close', () => resolve(out));
    });
    assert.ok(doc.includes(`; SANDBOX_IMAGES '${open.host}/sbx-test/*'; pull missing`), doc);
  });

  test('a registry that never answers: the pull ends as timeout after the engine timeout', async () => {
    // a loopback port that accepts and says nothing: the engine waits, so the server hears nothing
    const held = [];
    const silent = createServer((sock) => { held.push(sock); sock.on('error', () => {}); });
    await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const host = `127.0.0.1:${silent.address().port}`;
    const s = await Server.start('images-stall', { SANDBOX_IMAGES: `${host}/**`, SANDBOX_PULL: 'missing',
      SANDBOX_ENGINE_TIMEOUT_S: '3' });
    try {
      const t0 = Date.now();
      const st = await s.fails('session_create', { image: `${host}/sbx-test/stall:1` }, 'timeout', { timeoutMs: 120000 });
      const secs = (Date.now() - t0) / 1000;
      assert.ok(secs >= 2.5 && secs < 60, `gave up after ${secs} s: ${st.error.message}`);
      assert.ok(held.length >= 1, 'the engine did reach the registry');
      // the engine still answers
      assert.equal((await s.ok('session_list')).sessions?.length ?? 0, 0);
    } finally {
      await s.close();
      for (const sock of held) sock.destroy();
      silent.close();
    }
  });
});
