// session_commit against the real engine: a session's files and a package
// installed offline (with pip_install) survive into an image a new session
// starts from; the base tag, foreign tags, a user's image built FROM a commit
// and bad names are refused with nothing created, as is any repository
// outside SANDBOX_COMMIT_REPOS however spelled; a parent past
// SANDBOX_MAX_LAYERS is flattened to one layer.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server, suite, requireEngine, cleanup, show, docker } from '../lib/harness.mjs';
import { writePackage } from '../lib/packages.mjs';

const BASE = 'sandbox-mcp-python:latest';
const SLIM = 'debian:bookworm-slim';
const REPO = 'sandbox-mcp-test-commit';
const FOREIGN = `sandbox-mcp-test-foreign:${process.pid}`;
const created = new Set();

async function imageInspect(ref) {
  const r = await docker(['image', 'inspect', ref]);
  if (r.code !== 0) return null;
  return JSON.parse(r.stdout)[0];
}

/** The images session_commit made (other suites may add images meanwhile; they carry no such label). */
async function imageIds() {
  const r = await docker(['images', '-aq', '--no-trunc', '--filter', 'label=io.sandbox-mcp.commit.session']);
  return [...new Set(r.stdout.split('\n').filter(Boolean))].sort().join(',');
}

describe('session_commit', suite({ timeout: 600000 }), () => {
  let srv;
  let sid;
  let baseId;

  before(async () => {
    requireEngine();
    srv = await Server.start('commit', { SANDBOX_TIMEOUT_S: 120 });
    sid = (await srv.createSession({ name: 'commit' })).session_id;
    baseId = (await imageInspect(BASE)).Id;
  });

  after(async () => {
    await cleanup();
    for (const ref of created) await docker(['rmi', ref], { timeoutMs: 120000 });
    await docker(['rmi', FOREIGN]);
  });

  test('round trip: files and a package installed offline are in a new session started from the commit', async () => {
    await srv.ok('file_write', { session_id: sid, path: 'data/hello.txt', content: 'hello from the commit\n' });
    await writePackage(srv, sid, 'src/commitpkg', 'commitpkg', '0.3.1', 'committed');
    // through the tool: offline, it installs from the path with --no-index --no-build-isolation
    const pip = await srv.ok('pip_install', { session_id: sid, packages: ['./src/commitpkg'] }, { timeoutMs: 120000 });
    assert.ok(pip.installed.includes('commitpkg-0.3.1'), JSON.stringify(pip));

    const t0 = Date.now();
    const res = await srv.call('session_commit', { session_id: sid, repository: REPO, message: 'integration test' },
      { timeoutMs: 300000 });
    assert.ok(!res.isError, show(res));
    const c = res.structuredContent;
    created.add(c.reference);
    console.log(`commit took ${Date.now() - t0} ms: ${c.layers} layers, ${c.size} bytes`);
    assert.match(c.image_id, /^sha256:[0-9a-f]{64}$/);
    // the default tag is a time and a random part: never the session's name (a principal's own), here 'commit'
    assert.match(c.reference, new RegExp(`^${REPO}:\\d{14}-[0-9a-f]{8}$`));
    assert.equal(c.flattened, false);
    assert.ok(res.content.some((b) => b.type === 'text' && b.text.includes(`session_create {image: "${c.reference}"}`)),
      show(res));

    const img = await imageInspect(c.reference);
    assert.equal(img.Id, c.image_id);
    assert.equal(img.RootFS.Layers.length, c.layers);
    assert.equal(img.RootFS.Layers.length, (await imageInspect(BASE)).RootFS.Layers.length + 1);
    const labels = img.Config.Labels;
    assert.equal(labels['io.sandbox-mcp.commit.session'], sid);
    assert.equal(labels['io.sandbox-mcp.commit.parent'], baseId);
    assert.equal(labels['io.sandbox-mcp.commit.base'], BASE);
    assert.match(labels['io.sandbox-mcp.commit.created'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok(labels['io.sandbox-mcp.commit.version']);
    assert.equal(labels['io.sandbox-mcp.commit.ref'], c.reference, 'the tag it was made under');
    // the session container's labels do not make the image pass for a session
    assert.equal(labels['io.sandbox-mcp.instance'], '');
    assert.equal(labels['io.sandbox-mcp.persistent'], '');
    assert.equal(labels['io.sandbox-mcp.image'], 'python', 'the base image labels stay');
    // the base image's run settings, not the session container's keep-alive command
    assert.deepEqual(img.Config.Cmd, ['sleep', 'infinity']);
    assert.equal(img.Config.User, 'sandbox');
    assert.equal(img.Config.WorkingDir, '/workspace');
    assert.ok(!(img.Config.Entrypoint ?? []).includes('/bin/sh'), JSON.stringify(img.Config.Entrypoint));
    assert.equal(img.Comment, 'integration test');

    assert.equal((await imageInspect(BASE)).Id, baseId, 'the base tag still names the same image');

    const s2 = (await srv.createSession({ image: c.reference })).session_id;
    const cat = await srv.sh('cat data/hello.txt', { session_id: s2 });
    assert.equal(cat.stdout, 'hello from the commit\n');
    const imp = await srv.sh('cd / && python3 -c "import commitpkg; print(commitpkg.VALUE)" && python3 -m pip freeze',
      { session_id: s2 });
    assert.match(imp.stdout, /^committed\n/);
    assert.match(imp.stdout, /^commitpkg @ file:\/\/\/workspace\/src\/commitpkg$/m);

    // a tag sandbox-mcp made may be replaced
    const again = await srv.ok('session_commit', { session_id: sid, repository: REPO, tag: c.reference.split(':')[1] },
      { timeoutMs: 300000 });
    assert.equal(again.reference, c.reference);
    await srv.ok('session_close', { session_id: s2 });
    // the replaced image is left untagged (a session may still use it): remove it here
    if (again.image_id !== c.image_id) created.add(c.image_id);
  });

  test('refusals: the base tag, a foreign tag and bad names create nothing', async () => {
    const before = await imageIds();
    for (const args of [
      { repository: 'sandbox-mcp-python', tag: 'latest' },
      { repository: 'docker.io/library/sandbox-mcp-python', tag: 'latest' },
    ]) {
      const st = await srv.fails('session_commit', { session_id: sid, ...args }, 'invalid_argument');
      assert.match(st.error.message, /sandbox-mcp-python(:latest)? is the image session .* started from/);
      assert.match(st.error.message, /another tag/);
    }
    assert.equal((await imageInspect(BASE)).Id, baseId);

    assert.equal((await docker(['tag', SLIM, FOREIGN])).code, 0);
    const slimId = (await imageInspect(SLIM)).Id;
    const [frepo, ftag] = FOREIGN.split(':');
    const st = await srv.fails('session_commit', { session_id: sid, repository: frepo, tag: ftag }, 'invalid_argument');
    assert.match(st.error.message, /already exists and was not made under that name by session_commit/);
    assert.equal((await imageInspect(FOREIGN)).Id, slimId, 'the foreign tag is untouched');

    for (const args of [{ repository: 'UpperCase' }, { repository: 'a//b' }, { repository: '-lead' },
      { repository: 'a/b;rm' }, { repository: 'x', tag: '-t' }, { repository: 'x', tag: 'a b' },
      { repository: 'x', tag: 'a:b' }]) {
      const r = await srv.fails('session_commit', { session_id: sid, ...args }, 'invalid_argument');
      assert.match(r.error.message, /not a valid image (name|tag)/);
    }
    assert.equal(await imageIds(), before, 'no image was created or removed');
  });

  test('a repository outside SANDBOX_COMMIT_REPOS is refused in every spelling; nothing is tagged', async () => {
    const before = await imageIds();
    const t = `sbx-${process.pid}`;
    // names a later `docker run` or compose file would start: none may be planted, however spelled
    for (const [repository, tag] of [
      ['Docker.io/library/debian', 'bookworm-slim'], ['postgres', '16'], ['ghcr.io/org/app', 'latest'],
      ['docker.io/library/redis', t], ['index.docker.io/library/alpine', t], ['DOCKER.IO/library/nginx', t],
      ['registry-1.docker.io/library/postgres', t], ['library/busybox', t], ['localhost/other', t],
      ['localhost:5000/sandbox-mcp-x', t], ['sandbox/mcp-x', t],
      // a '*' matches within one path component, and the registry is explicit
      ['sandbox-mcp-x/y', t], ['sandbox-mcp-test/commit', t], ['docker.io/sandbox-mcp-x/app', t],
      ['registry-1.docker.io/library/sandbox-mcp-python', t], ['localhost/sandbox-mcp/a/b', t],
    ]) {
      const ref = `${repository}:${tag}`;
      // the engine is shared: whatever the name holds before (usually nothing) it holds after
      const was = (await imageInspect(ref))?.Id ?? null;
      const res = await srv.call('session_commit', { session_id: sid, repository, tag }, { timeoutMs: 300000 });
      if (!res.isError && !was) created.add(res.structuredContent.reference);
      assert.equal(res.isError, true, `${ref} must be refused: ${show(res)}`);
      assert.equal(res.structuredContent.error.code, 'invalid_argument', show(res));
      assert.match(res.structuredContent.error.message, /SANDBOX_COMMIT_REPOS/, 'names the setting that allows it');
      assert.equal((await imageInspect(ref))?.Id ?? null, was, `${ref} was not created or moved`);
    }
    assert.equal(await imageIds(), before, 'no image was created');
  });

  test('SANDBOX_COMMIT_REPOS widens the repositories; the image new sessions start from stays refused', async () => {
    const wide = await Server.start('commit-wide', { SANDBOX_COMMIT_REPOS: 'sandbox-mcp-*,sbx-widened/*' });
    try {
      const s = (await wide.createSession({ image: SLIM })).session_id;
      const tag = `w-${process.pid}`;
      const c = await wide.ok('session_commit', { session_id: s, repository: 'docker.io/sbx-widened/app', tag },
        { timeoutMs: 300000 });
      created.add(c.reference);
      assert.equal((await imageInspect(`sbx-widened/app:${tag}`))?.Id, c.image_id);
      const p = await wide.fails('session_commit', { session_id: s, repository: 'postgres', tag: '16' }, 'invalid_argument');
      assert.match(p.error.message, /SANDBOX_COMMIT_REPOS \(sandbox-mcp-\*,sbx-widened\/\*\)/);
      const d = await wide.fails('session_commit', { session_id: s, repository: 'docker.io/library/sandbox-mcp-python', tag: 'latest' },
        'invalid_argument');
      assert.match(d.error.message, /new sessions start from \(SANDBOX_IMAGE\)/);
    } finally {
      await wide.close();
    }
  });

  test("a user's image built FROM a commit (its labels inherited) is never replaced; the commit's own tag is", async () => {
    const own = `own-${process.pid}`;
    const c = await srv.ok('session_commit', { session_id: sid, repository: REPO, tag: own }, { timeoutMs: 300000 });
    created.add(c.reference);
    // the user's own image on top of the commit, in the commit's repository even
    const userTag = `${REPO}:user-${process.pid}`;
    const dir = mkdtempSync(join(tmpdir(), 'sbx-commit-user-'));
    try {
      writeFileSync(join(dir, 'Dockerfile'), `FROM ${c.reference}\nLABEL user.own=1\n`);
      const b = await docker(['build', '--network', 'none', '-q', '-t', userTag, dir], { timeoutMs: 120000 });
      assert.equal(b.code, 0, `docker build: ${b.stderr}`);
      created.add(userTag);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const user = await imageInspect(userTag);
    assert.notEqual(user.Id, c.image_id);
    assert.equal(user.Config.Labels['io.sandbox-mcp.commit.session'], sid, 'inherited from the commit');

    const st = await srv.fails('session_commit', { session_id: sid, repository: REPO, tag: `user-${process.pid}` },
      'invalid_argument');
    assert.match(st.error.message, /already exists and was not made under that name by session_commit/);
    assert.equal((await imageInspect(userTag)).Id, user.Id, "the user's image keeps its tag");

    const again = await srv.ok('session_commit', { session_id: sid, repository: REPO, tag: own }, { timeoutMs: 300000 });
    assert.equal(again.reference, c.reference);
    assert.equal((await imageInspect(c.reference)).Id, again.image_id, 'its own tag was replaced');
    if (again.image_id !== c.image_id) created.add(c.image_id);
    assert.equal((await imageInspect(userTag)).Id, user.Id);
  });

  test('a parent past SANDBOX_MAX_LAYERS is flattened to one layer that still starts a session', async () => {
    const flat = await Server.start('commit-flat', { SANDBOX_MAX_LAYERS: 1 });
    const s = (await flat.createSession({ image: SLIM })).session_id;
    await flat.ok('file_write', { session_id: s, path: 'flat.txt', content: 'flat\n' });
    const t0 = Date.now();
    const c = await flat.ok('session_commit', { session_id: s, repository: REPO, tag: `flat-${process.pid}` },
      { timeoutMs: 300000 });
    created.add(c.reference);
    console.log(`flattened commit took ${Date.now() - t0} ms, ${c.size} bytes`);
    assert.equal(c.flattened, true);
    assert.equal(c.layers, 1);
    const img = await imageInspect(c.reference);
    assert.equal(img.RootFS.Layers.length, 1);
    assert.equal(img.Config.Labels['io.sandbox-mcp.commit.session'], s);
    assert.equal(img.Config.Labels['io.sandbox-mcp.commit.ref'], c.reference);
    assert.deepEqual(img.Config.Cmd, (await imageInspect(SLIM)).Config.Cmd);
    const s2 = (await flat.createSession({ image: c.reference })).session_id;
    assert.equal((await flat.sh('cat flat.txt', { session_id: s2 })).stdout, 'flat\n');
    await flat.close();
  });
});
