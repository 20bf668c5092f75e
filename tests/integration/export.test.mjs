// session_export against the real engine: the Dockerfile a session's history
// gives, built offline by the server, starts a session whose pip freeze,
// workspace file hashes and modes and env equal the original's (a git clone
// included, at its commit); the same export written to an allowed host
// folder builds with the docker CLI; host folders outside SANDBOX_HOST_DIRS
// are refused; a build that cannot work offline reports the builder's error
// output; a pip freeze that fails fails the export.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, statSync, readdirSync, rmSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server, suite, requireEngine, cleanup, show, docker, serverIsSanitized, podmanCannot } from '../lib/harness.mjs';
import { writePackage } from '../lib/packages.mjs';

const REPO = 'sandbox-mcp-test-export';
const created = new Set();
const sessions = new Set();
const ENV_VALUE = 'a "quoted" $dollar \\back value';
// every workspace entry with its type, mode and (files) sha256, sorted
const LISTING = 'cd /workspace && find . -mindepth 1 -printf "%y %m %P\\n" | LC_ALL=C sort && ' +
  'find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum';
const FREEZE = 'cd / && python3 -m pip freeze --all';
const TMPWH = '/tmp/w h$x';

/** Untagged images (all: intermediate ones too) labelled with session s, newline-separated ids. */
async function labelled(s, all) {
  const r = await docker(['images', '-q', '--no-trunc', ...(all ? ['-a'] : []), '-f', 'dangling=true', '-f',
    `label=io.sandbox-mcp.commit.session=${s}`]);
  return [...new Set(r.stdout.split('\n').filter(Boolean))].join('\n');
}
// a workspace file large enough that holding the context in memory would show in the server's peak RSS
const BIG_MIB = 24;
const RSS_CAP_KIB = (serverIsSanitized() ? 160 : 20) * 1024;

describe('session_export', suite({ timeout: 900000 }), () => {
  let srv;
  let sid;
  let hostBase;
  let allowed;
  let outside;

  before(async () => {
    requireEngine();
    hostBase = mkdtempSync(join(tmpdir(), 'sbx-export-'));
    allowed = join(hostBase, 'allowed');
    outside = join(hostBase, 'outside');
    for (const d of [allowed, outside]) mkdirSync(d);
    srv = await Server.start('export', { SANDBOX_TIMEOUT_S: 120, SANDBOX_HOST_DIRS: allowed });
    sid = (await srv.createSession({ name: 'export', env: { EXPORT_VAR: ENV_VALUE } })).session_id;
    sessions.add(sid);

    await srv.ok('file_write', { session_id: sid, path: 'data/a.txt', content: 'alpha\n' });
    await srv.ok('file_write', { session_id: sid, path: 'data/deep/er/b.csv', content: 'x,y\n1,2\n' });
    await srv.ok('file_write', { session_id: sid, path: 'run.sh', content: '#!/bin/sh\necho run\n' });
    await srv.ok('file_write', { session_id: sid, path: 'private.txt', content: 'secret\n' });
    // a name starting with '-' must not pass for an option of the Dockerfile's chmod
    await srv.sh('chmod 755 run.sh && chmod 600 private.txt && mkdir -p locked && chmod 700 locked && ' +
      `echo dash > ./-dash && chmod 640 ./-dash && head -c ${BIG_MIB}M /dev/urandom > data/big.bin`, { session_id: sid });
    // one package from its source folder (freeze: name @ file://), one from a wheel via --find-links (name==version)
    await writePackage(srv, sid, 'src/exportpkg', 'exportpkg', '1.2.3', 'exported');
    await writePackage(srv, sid, 'src/wheelpkg', 'wheelpkg', '0.9', 'wheeled');
    await writePackage(srv, sid, 'src/tmppkg', 'tmppkg', '4.5', 'tmp');
    // the first two through pip_install (offline: --no-index --no-build-isolation, like a session without network)
    await srv.ok('pip_install', { session_id: sid, packages: ['./src/exportpkg'] }, { timeoutMs: 120000 });
    await srv.sh('python3 -m pip wheel --no-deps --no-index --no-build-isolation -w dist ./src/wheelpkg',
      { session_id: sid }, { timeoutMs: 120000 });
    await srv.ok('pip_install', { session_id: sid, packages: ['wheelpkg==0.9'], find_links: 'dist' }, { timeoutMs: 120000 });
    // and one from a wheel file outside the workspace (freeze: name @ file:///tmp/...), in a folder whose
    // name a Dockerfile would split (space) or substitute ($x) unless quoted
    await srv.sh(`python3 -m pip wheel --no-deps --no-index --no-build-isolation -w '${TMPWH}' ./src/tmppkg && ` +
      `python3 -m pip install --no-index '${TMPWH}/tmppkg-4.5-py3-none-any.whl'`, { session_id: sid }, { timeoutMs: 180000 });
  });

  after(async () => {
    await cleanup();
    for (const ref of created) await docker(['rmi', ref], { timeoutMs: 120000 });
    // anything a build of these sessions left untagged (every step's image carries the session label)
    for (const s of sessions) {
      for (const id of (await labelled(s, false)).split('\n').filter(Boolean)) await docker(['rmi', id], { timeoutMs: 120000 });
    }
    rmSync(hostBase, { recursive: true, force: true });
  });

  test('build: true rebuilds offline a session with the same pip freeze, files, modes and env', async () => {
    const t0 = Date.now();
    const res = await srv.call('session_export', { session_id: sid, build: true, repository: REPO },
      { timeoutMs: 600000 });
    assert.ok(!res.isError, show(res));
    const x = res.structuredContent;
    created.add(x.reference);
    if (process.env.SHOW_DOCKERFILE) console.log(x.dockerfile);
    console.log(`export + build took ${Date.now() - t0} ms (build ${x.build_ms} ms), context ${x.context_bytes} bytes, ` +
      `server peak RSS ${srv.peakRssKiB()} KiB`);
    assert.ok(x.context_bytes > BIG_MIB << 20, `the context carries the big file: ${x.context_bytes}`);
    assert.ok(srv.peakRssKiB() < RSS_CAP_KIB, `the context streams: server peak RSS ${srv.peakRssKiB()} KiB`);
    assert.match(x.image_id, /^sha256:[0-9a-f]{64}$/);
    assert.match(x.dockerfile, /^FROM sandbox-mcp-python:latest$/m);
    assert.match(x.dockerfile, /^COPY --chown=1000:1000 workspace\/ \/workspace\/$/m);
    assert.match(x.dockerfile, /--find-links '\/workspace\/dist' 'wheelpkg==0\.9'/);
    assert.match(x.dockerfile, /--no-build-isolation '\/workspace\/src\/exportpkg'/);
    assert.match(x.dockerfile, /^ENV EXPORT_VAR=/m);
    assert.ok(x.dockerfile.includes('\nCOPY --chown=1000:1000 ["files/tmp/w h\\\\$x/tmppkg-4.5-py3-none-any.whl", ' +
      '"/tmp/w h\\\\$x/tmppkg-4.5-py3-none-any.whl"]\n'), x.dockerfile);
    assert.match(x.dockerfile, /&& chmod 640 -- '-dash'/);
    assert.deepEqual(x.pip_needs_index, []);
    assert.ok(x.pip.includes('wheelpkg==0.9'), JSON.stringify(x.pip));
    assert.ok(res.content.some((b) => b.type === 'text' && b.text.includes(`session_create {image: "${x.reference}"}`)));
    const labels = (JSON.parse((await docker(['image', 'inspect', x.reference])).stdout)[0]).Config.Labels;
    assert.equal(labels['io.sandbox-mcp.commit.session'], sid);
    assert.equal(labels['io.sandbox-mcp.commit.ref'], x.reference, 'the tag it was built under (not in the Dockerfile)');
    assert.doesNotMatch(x.dockerfile, /commit\.ref/);

    const s2 = (await srv.createSession({ image: x.reference })).session_id;
    const [a, b] = await Promise.all([srv.sh(LISTING, { session_id: sid }), srv.sh(LISTING, { session_id: s2 })]);
    assert.ok(a.stdout.includes('-rwxr-xr-x') || a.stdout.includes('f 755 run.sh'), a.stdout);
    assert.match(a.stdout, /^f 600 private\.txt$/m);
    assert.match(a.stdout, /^d 700 locked$/m);
    assert.match(a.stdout, /^f 640 -dash$/m);
    assert.equal(b.stdout, a.stdout, 'the workspace files, their modes and hashes are identical');
    const [fa, fb] = [await srv.sh(FREEZE, { session_id: sid }), await srv.sh(FREEZE, { session_id: s2 })];
    assert.match(fa.stdout, /^exportpkg @ file:\/\/\/workspace\/src\/exportpkg$/m);
    assert.match(fa.stdout, /^wheelpkg==0\.9$/m);
    assert.match(fa.stdout, /^tmppkg @ file:\/\/\/tmp\/w%20h%24x\/tmppkg-4\.5-py3-none-any\.whl$/m);
    assert.equal(fb.stdout, fa.stdout, 'pip freeze is identical');
    const imp = await srv.sh('cd / && python3 -c "import exportpkg, wheelpkg, tmppkg; print(exportpkg.VALUE, wheelpkg.VALUE, tmppkg.VALUE)"' +
      ' && printf %s "$EXPORT_VAR" && echo && id -un && pwd', { session_id: s2 });
    assert.equal(imp.stdout, `exported wheeled tmp\n${ENV_VALUE}\nsandbox\n/\n`);
    const wd = await srv.sh('pwd', { session_id: s2 });
    assert.equal(wd.stdout, '/workspace\n');
    await srv.ok('session_close', { session_id: s2 });
  });

  test('host_dir: the Dockerfile and context land in a new folder that docker build accepts; outside dirs refused', async () => {
    const res = await srv.call('session_export', { session_id: sid, host_dir: allowed });
    assert.ok(!res.isError, show(res));
    const x = res.structuredContent;
    const dir = x.host_path;
    assert.ok(dir.startsWith(realpathSync(allowed) + '/sandbox-mcp-export-'), dir);
    assert.equal(readFileSync(join(dir, 'Dockerfile'), 'utf8'), x.dockerfile);
    assert.equal(readFileSync(join(dir, 'workspace/data/a.txt'), 'utf8'), 'alpha\n');
    assert.equal(readFileSync(join(dir, 'workspace/data/deep/er/b.csv'), 'utf8'), 'x,y\n1,2\n');
    for (const f of ['workspace/run.sh', 'workspace/private.txt', 'workspace/data/a.txt']) {
      assert.equal(statSync(join(dir, f)).mode & 0o111, 0, `${f} has no exec bits on the host`);
    }
    assert.ok(readdirSync(join(dir, 'workspace/dist')).some((n) => n.startsWith('wheelpkg-0.9-')));
    assert.match(x.dockerfile, /chmod 755 -- 'run\.sh'/);

    const tag = `${REPO}:cli-${process.pid}`;
    const t0 = Date.now();
    const b = await docker(['build', '--no-cache', '--network', 'none', '-q', '-t', tag, dir], { timeoutMs: 600000 });
    console.log(`docker build of the host folder took ${Date.now() - t0} ms`);
    assert.equal(b.code, 0, `docker build: ${b.stderr}`);
    created.add(tag);
    // built by hand from the folder: the session's labels, no reference, so an export never replaces it
    const cli = JSON.parse((await docker(['image', 'inspect', tag])).stdout)[0];
    assert.equal(cli.Config.Labels['io.sandbox-mcp.commit.session'], sid);
    assert.equal(cli.Config.Labels['io.sandbox-mcp.commit.ref'], undefined);
    const st = await srv.fails('session_export', { session_id: sid, build: true, repository: REPO, tag: `cli-${process.pid}` },
      'invalid_argument');
    assert.match(st.error.message, /already exists and was not made under that name/);
    assert.equal(JSON.parse((await docker(['image', 'inspect', tag])).stdout)[0].Id, cli.Id, 'the CLI build keeps its tag');
    const s3 = (await srv.createSession({ image: tag })).session_id;
    const [a, c] = await Promise.all([srv.sh(LISTING, { session_id: sid }), srv.sh(LISTING, { session_id: s3 })]);
    assert.equal(c.stdout, a.stdout, 'the CLI build of the host folder has the same files');
    await srv.ok('session_close', { session_id: s3 });

    for (const bad of [outside, '/etc', join(allowed, '..')]) {
      await srv.fails('session_export', { session_id: sid, host_dir: bad }, 'host_path_not_allowed');
    }
    assert.deepEqual(readdirSync(outside), [], 'nothing was written outside');
  });

  test('an image without python: files, env and user only; the build starts a session with the same files', async () => {
    const s = (await srv.createSession({ image: 'debian:bookworm-slim', name: 'export-slim', env: { SLIM: '1' } })).session_id;
    sessions.add(s);
    await srv.ok('file_write', { session_id: s, path: 'notes/n.txt', content: 'slim\n' });
    // with a progress token: stages and build output arrive as notifications/progress
    const progress = [];
    const res = await srv.client.callTool({ name: 'session_export', arguments: { session_id: s, build: true, repository: REPO } },
      undefined, { timeout: 300000, onprogress: (p) => progress.push(p) });
    assert.ok(!res.isError, show(res));
    const x = res.structuredContent;
    created.add(x.reference);
    assert.ok(progress.length >= 1, 'progress notifications were sent');
    assert.ok(progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress), JSON.stringify(progress));
    assert.match(progress[0].message, /reading pip freeze|reading the workspace|building|Step/, JSON.stringify(progress));
    assert.match(x.dockerfile, /^FROM debian:bookworm-slim$/m);
    assert.doesNotMatch(x.dockerfile, /pip/);
    assert.match(x.dockerfile, /^ENV SLIM="1"$/m);
    assert.deepEqual(x.pip, []);
    const s2 = (await srv.createSession({ image: x.reference })).session_id;
    const [a, b] = await Promise.all([srv.sh(LISTING, { session_id: s }), srv.sh(LISTING, { session_id: s2 })]);
    assert.equal(b.stdout, a.stdout);
    assert.equal((await srv.sh('echo $SLIM; id -u', { session_id: s2 })).stdout,
      (await srv.sh('echo $SLIM; id -u', { session_id: s })).stdout);
    await srv.ok('session_close', { session_id: s2 });
    await srv.ok('session_close', { session_id: s });
  });

  test('a git_clone in the workspace comes back at the same commit with a clean tree, noted in the Dockerfile', async () => {
    const s = (await srv.createSession({ name: 'export-git' })).session_id;
    sessions.add(s);
    await srv.sh('git init -q origin && cd origin && echo one > f.txt && mkdir sub && echo two > sub/g.txt && ' +
      'git add -A && git -c user.name=t -c user.email=t@localhost commit -qm first', { session_id: s });
    const c = await srv.ok('git_clone', { session_id: s, repo_url: '/workspace/origin', path: 'clone' });
    assert.match(c.commit, /^[0-9a-f]{40}$/);
    const head = (await srv.sh('git -C /workspace/origin rev-parse HEAD', { session_id: s })).stdout.trim();
    assert.equal(c.commit, head);
    const x = await srv.ok('session_export', { session_id: s, build: true, repository: REPO }, { timeoutMs: 300000 });
    created.add(x.reference);
    assert.match(x.dockerfile, /^# git clones \(their files and \.git are in the workspace copied above\)$/m);
    assert.ok(x.dockerfile.includes(`\n#   /workspace/origin at ${head} into /workspace/clone\n`), x.dockerfile);
    const s2 = (await srv.createSession({ image: x.reference })).session_id;
    const r = await srv.sh('git -C /workspace/clone rev-parse HEAD && git -C /workspace/clone status --porcelain && ' +
      'cat /workspace/clone/sub/g.txt', { session_id: s2 });
    assert.equal(r.stdout, `${head}\ntwo\n`, 'the same commit, nothing changed or untracked');
    await srv.ok('session_close', { session_id: s2 });
    await srv.ok('session_close', { session_id: s });
  });

  test('a pip freeze that fails fails the export with its error, not a Dockerfile without the packages', async () => {
    const s = (await srv.createSession({ name: 'export-nofreeze' })).session_id;
    // pip --version still works; only its freeze command is broken (the venv belongs to the sandbox user)
    await srv.sh('printf \'raise ImportError("freeze is corrupt")\\n\' > ' +
      '"$(python3 -c \'import os, pip; print(os.path.dirname(pip.__file__))\')/_internal/commands/freeze.py"',
    { session_id: s });
    const res = await srv.call('session_export', { session_id: s }, { timeoutMs: 120000 });
    assert.equal(res.isError, true, show(res));
    assert.equal(res.structuredContent.error.code, 'engine_error');
    assert.match(res.structuredContent.error.message, /pip freeze failed in session \w+ \(exit 1\)/);
    assert.match(res.structuredContent.error.message, /ImportError: freeze is corrupt/);
    await srv.ok('session_close', { session_id: s });
  });

  test('a cancelled build tags nothing and leaves the session usable', async () => {
    const tag = `cancel-${process.pid}`;
    // a new file: the builder cannot take the COPY and pip steps from its cache (the builds above
    // made them), so the build runs for seconds and the cancel lands in it
    await srv.sh('head -c 64 /dev/urandom > data/cancel.bin', { session_id: sid });
    const ac = new AbortController();
    const t0 = Date.now();
    const stages = [];
    const call = srv.client.callTool({ name: 'session_export', arguments: { session_id: sid, build: true, repository: REPO, tag } },
      undefined, {
        timeout: 300000, signal: ac.signal, onprogress: (p) => {
          stages.push(p.message);
          // cancel as the build starts: the stage is announced at once, whatever the progress rate limit
          if (/building the export/.test(p.message ?? '')) ac.abort();
        },
      });
    await assert.rejects(call, undefined, `the export ended before the build started: ${JSON.stringify(stages)}`);
    await srv.sh('rm data/cancel.bin', { session_id: sid });
    const after = await srv.sh('echo alive', { session_id: sid });
    assert.equal(after.stdout, 'alive\n');
    // the engine may finish a step it already started; give it a moment, then nothing may carry the tag
    await new Promise((r) => setTimeout(r, 3000));
    const img = await docker(['image', 'inspect', `${REPO}:${tag}`]);
    if (img.code === 0) created.add(`${REPO}:${tag}`);
    assert.notEqual(img.code, 0, `cancelled after ${Date.now() - t0} ms, yet ${REPO}:${tag} exists`);
    // steps the engine finished before it saw the cancel are build cache: removed here by their label
    for (const id of (await labelled(sid, false)).split('\n').filter(Boolean)) {
      await docker(['rmi', id], { timeoutMs: 120000 });
    }
  });

  test('build: true with a package that needs an index is refused at once, with the Dockerfile', async () => {
    const s = (await srv.createSession({ name: 'export-index' })).session_id;
    await writePackage(srv, s, 'src/gonepkg', 'gonepkg', '2.0', 'gone');
    // the wheel sits in /tmp (not exported): the freeze pins gonepkg==2.0 with nothing to install it from
    await srv.sh('python3 -m pip wheel --no-deps --no-index --no-build-isolation -w /tmp/wh ./src/gonepkg && ' +
      'python3 -m pip install --no-index --find-links /tmp/wh gonepkg', { session_id: s }, { timeoutMs: 180000 });
    const t0 = Date.now();
    const res = await srv.call('session_export', { session_id: s, build: true, repository: REPO, tag: `index-${process.pid}` },
      { timeoutMs: 300000 });
    assert.equal(res.isError, true, show(res));
    assert.equal(res.structuredContent.error.code, 'invalid_argument');
    assert.match(res.structuredContent.error.message, /builds offline, and 1 package came from an index or a URL \(gonepkg==2\.0\)/);
    const text = res.content.map((c) => c.text).join('\n');
    assert.match(text, /^RUN python3 -m pip install --no-deps 'gonepkg==2\.0'$/m, 'the Dockerfile comes with the refusal');
    assert.match(text, /needs network access/);
    assert.ok(Date.now() - t0 < 30000, 'refused without waiting for pip to give up on the index');
    assert.notEqual((await docker(['image', 'inspect', `${REPO}:index-${process.pid}`])).code, 0, 'nothing was tagged');
    // without build the same export is a Dockerfile to build elsewhere
    const ok = await srv.ok('session_export', { session_id: s });
    assert.deepEqual(ok.pip_needs_index, ['gonepkg==2.0']);
    await srv.ok('session_close', { session_id: s });
  });

  test('a build step that fails reports the step and the builder output; nothing is tagged', async () => {
    const s = (await srv.createSession({ name: 'export-broken' })).session_id;
    sessions.add(s);
    await writePackage(srv, s, 'src/brokenpkg', 'brokenpkg', '1.0', 'broken');
    // installed from its folder, which is then broken: reinstalling it from there cannot work
    await srv.sh('python3 -m pip install --no-index --no-build-isolation ./src/brokenpkg && ' +
      'rm -rf src/brokenpkg/build src/brokenpkg/*.egg-info && echo "[project" > src/brokenpkg/pyproject.toml',
    { session_id: s }, { timeoutMs: 180000 });
    const tag = `broken-${process.pid}`;
    const res = await srv.call('session_export', { session_id: s, build: true, repository: REPO, tag }, { timeoutMs: 300000 });
    assert.equal(res.isError, true, show(res));
    assert.equal(res.structuredContent.error.code, 'engine_error');
    const msg = res.structuredContent.error.message;
    assert.match(msg, /the build of the export failed at Step \d+\/\d+ : RUN python3 -m pip install --no-deps --no-index --no-build-isolation '\/workspace\/src\/brokenpkg'/);
    assert.match(msg, /returned a non-zero code/);
    assert.doesNotMatch(msg, /docker info/, 'a failed step is not blamed on the engine');
    const text = res.content.map((c) => c.text).join('\n');
    assert.match(text, /Build output \(last part\):/);
    assert.match(text, /pyproject\.toml|TOML|toml/, text.slice(-3000));
    assert.match(text, /^FROM sandbox-mcp-python:latest$/m, 'the Dockerfile comes with the failure');
    assert.notEqual((await docker(['image', 'inspect', `${REPO}:${tag}`])).code, 0, 'nothing was tagged');
    // the images of the steps that did finish (each carries the provenance LABEL that follows FROM) are
    // removed, as if the build never ran
    assert.match(text, /^FROM sandbox-mcp-python:latest\n\n.*\nLABEL "io\.sandbox-mcp\.commit\.session"="/m);
    assert.equal(await labelled(s, true), '', 'no image of the failed build is left');
    await srv.ok('session_close', { session_id: s });
  });

  test('a session whose base tag was removed rebuilds from the base image id', async () => {
    const baseTag = `sandbox-mcp-test/export-base:${process.pid}`;
    assert.equal((await docker(['tag', 'debian:bookworm-slim', baseTag])).code, 0);
    const s = (await srv.createSession({ image: baseTag })).session_id;
    await srv.ok('file_write', { session_id: s, path: 'kept.txt', content: 'kept\n' });
    assert.equal((await docker(['rmi', baseTag])).code, 0);
    const x = await srv.ok('session_export', { session_id: s, build: true, repository: REPO }, { timeoutMs: 300000 });
    created.add(x.reference);
    const slimId = JSON.parse((await docker(['image', 'inspect', 'debian:bookworm-slim'])).stdout)[0].Id;
    assert.match(x.dockerfile, new RegExp(`that tag is gone now, so this starts from its id\\.\nFROM ${slimId}\n`));
    const s2 = (await srv.createSession({ image: x.reference })).session_id;
    assert.equal((await srv.sh('cat kept.txt', { session_id: s2 })).stdout, 'kept\n');
    await srv.ok('session_close', { session_id: s2 });
    await srv.ok('session_close', { session_id: s });
  });
});

describe('session_export on a full server', suite({ timeout: 300000 }), () => {
  test('at SANDBOX_MAX_SESSIONS the export still compares with a fresh base container, which is gone after', async () => {
    requireEngine();
    const full = await Server.start('export-full', { SANDBOX_MAX_SESSIONS: 1 });
    try {
      const s = (await full.createSession({ name: 'only' })).session_id;
      await full.fails('session_create', { name: 'second' }, 'session_limit');
      // a new server has no base freeze remembered: this export needs its throwaway container
      const x = await full.ok('session_export', { session_id: s }, { timeoutMs: 300000 });
      assert.match(x.dockerfile, /^FROM sandbox-mcp-python:latest$/m);
      assert.deepEqual(x.pip, [], 'nothing installed: the same freeze as the base');
      assert.deepEqual((await full.ok('session_list')).sessions.map((y) => y.session_id), [s]);
      await full.fails('session_create', { name: 'second' }, 'session_limit');
    } finally {
      await full.close();
    }
  });
});

/** The image id a reference names, or null. */
async function imageId(ref) {
  const r = await docker(['image', 'inspect', '--format', '{{.Id}}', ref]);
  return r.code === 0 ? r.stdout.trim() : null;
}

// A package whose setup.py does what a hostile model's would: it runs whenever pip builds the package,
// here only once the file EXPORTING sits next to it (written after the session's own install, so only
// a rebuild of the export sees it). body: Python run then, with `here` (its folder) defined.
async function hostilePackage(srv, sid, dir, name, body) {
  await writePackage(srv, sid, dir, name, '1.0', name);
  await srv.ok('file_write', {
    session_id: sid, path: `${dir}/setup.py`,
    content: 'import json, os, sys, time\nfrom setuptools import setup\n' +
      'here = os.path.dirname(os.path.abspath(__file__))\n' +
      `if os.path.exists(os.path.join(here, 'EXPORTING')):\n${body.split('\n').map((l) => `    ${l}`).join('\n')}\n` +
      'setup()\n',
  });
  await srv.ok('pip_install', { session_id: sid, packages: [`./${dir}`] }, { timeoutMs: 180000 });
  await srv.sh(`touch ${dir}/EXPORTING`, { session_id: sid });
}

// what setup.py records of the process it runs in: ids, no-new-privileges, capabilities, cgroup limits
const PROBE = `st = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)
def first(*paths):
    for p in paths:
        try:
            return open(p).read().strip()
        except OSError:
            pass
    return None
rec = {k: st[k].strip() for k in ('NoNewPrivs', 'CapEff', 'CapPrm', 'CapBnd', 'CapAmb')}
rec.update(uid=os.getuid(), euid=os.geteuid(), gid=os.getgid(),
           memory=first('/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/memory.max'),
           pids=first('/sys/fs/cgroup/pids/pids.max', '/sys/fs/cgroup/pids.max'))
json.dump(rec, open(os.path.join(here, 'probe-record.json'), 'w'))`;

describe('session_export runs no session code outside the session\'s hardening', suite({ timeout: 900000 }), () => {
  const PIDS = 200;
  const MEMORY_MB = 320;
  let srv;
  const victims = [];
  const mine = new Set();
  const refs = new Set();

  before(async () => {
    requireEngine();
    srv = await Server.start('export-hard', { SANDBOX_TIMEOUT_S: 120, SANDBOX_PIDS: PIDS });
  });

  after(async () => {
    await cleanup();
    for (const ref of refs) await docker(['rmi', ref], { timeoutMs: 120000 });
    for (const s of mine) {
      for (const id of (await labelled(s, false)).split('\n').filter(Boolean)) await docker(['rmi', id], { timeoutMs: 120000 });
    }
    for (const id of victims) await docker(['rmi', id], { timeoutMs: 120000 });
  });

  test('a setup.py in the workspace runs, if at all, as the session: no-new-privileges, no capabilities, its limits', async () => {
    const s = (await srv.createSession({ name: 'export-probe', memory_mb: MEMORY_MB })).session_id;
    mine.add(s);
    await hostilePackage(srv, s, 'src/probe', 'probe', PROBE);
    const uid = Number((await srv.sh('id -u', { session_id: s })).stdout.trim());
    const res = await srv.call('session_export', { session_id: s, build: true, repository: REPO }, { timeoutMs: 600000 });
    assert.ok(!res.isError, show(res));
    const x = res.structuredContent;
    refs.add(x.reference);
    assert.match(x.dockerfile, /--no-build-isolation '\/workspace\/src\/probe'/);
    const s2 = (await srv.createSession({ image: x.reference })).session_id;
    const r = await srv.call('run_command', { session_id: s2, command: 'cat /workspace/src/probe/probe-record.json' });
    await srv.ok('session_close', { session_id: s2 });
    if (r.structuredContent.exit_code !== 0) {
      // the build never ran setup.py: that is safe too (e.g. prebuilt wheels)
      assert.match(r.structuredContent.stderr, /No such file/, show(r));
      return;
    }
    const rec = JSON.parse(r.structuredContent.stdout);
    console.log(`setup.py ran during the build with ${JSON.stringify(rec)}`);
    assert.equal(rec.uid, uid, 'as the session user');
    assert.equal(rec.euid, uid, 'never as root (no setuid helper can lift it)');
    assert.notEqual(rec.gid, 0);
    assert.equal(rec.NoNewPrivs, '1', 'with no-new-privileges');
    for (const k of ['CapEff', 'CapPrm', 'CapBnd', 'CapAmb']) assert.equal(BigInt(`0x${rec[k]}`), 0n, `${k} is empty: ${rec[k]}`);
    assert.equal(rec.memory, String(MEMORY_MB * 1024 * 1024), 'under the session\'s memory limit');
    assert.equal(rec.pids, String(PIDS), 'under the session\'s pids limit');
    await srv.ok('session_close', { session_id: s });
  });

  test('a failed build removes only its own images, whatever its output says', podmanCannot('take the '
    + "docker CLI's `docker commit` (no request body) the setup makes its victim image with: Decode(): EOF"), async () => {
    // an untagged image of the test's own: a RUN step that prints " ---> <its id>" must not get it removed
    const c = await docker(['create', '--label', `io.sandbox-mcp-test.victim=${process.pid}`, 'debian:bookworm-slim', 'true']);
    assert.equal(c.code, 0, c.stderr);
    const cm = await docker(['commit', c.stdout.trim()]);
    await docker(['rm', c.stdout.trim()]);
    assert.equal(cm.code, 0, cm.stderr);
    const victim = cm.stdout.trim();
    victims.push(victim);
    assert.match(victim, /^sha256:[0-9a-f]{64}$/);
    const s = (await srv.createSession({ name: 'export-liar' })).session_id;
    mine.add(s);
    await srv.ok('file_write', { session_id: s, path: 'src/liar/VICTIM', content: `${victim.slice(7, 19)}\n` });
    // pip captures setup.py's output: the builder's stream gets it through pip's own stdout
    await hostilePackage(srv, s, 'src/liar', 'liar', `line = (' ---> %s\\n' % open(os.path.join(here, 'VICTIM')).read().strip()).encode()
for t in ('/proc/%d/fd/1' % os.getppid(), '/proc/self/fd/1'):
    try:
        fd = os.open(t, os.O_WRONLY)
        for _ in range(3):
            time.sleep(0.5)
            os.write(fd, line)
        os.close(fd)
    except OSError:
        pass
time.sleep(0.5)
sys.exit('liar: failing the build on purpose')`);
    const res = await srv.call('session_export', { session_id: s, build: true, repository: REPO, tag: `liar-${process.pid}` },
      { timeoutMs: 600000 });
    assert.equal(res.isError, true, show(res));
    assert.equal(res.structuredContent.error.code, 'engine_error', show(res));
    assert.match(res.structuredContent.error.message, /the build of the export failed at Step \d+\/\d+ : RUN .*liar/);
    assert.equal((await docker(['image', 'inspect', victim])).code, 0, 'the untagged image the build output named is still there');
    assert.equal(await labelled(s, true), '', 'the failed build\'s own images are gone');
    await srv.ok('session_close', { session_id: s });
  });

  test('build: true refuses a repository outside SANDBOX_COMMIT_REPOS before it builds', async () => {
    const s = (await srv.createSession({ name: 'export-plant' })).session_id;
    mine.add(s);
    await srv.ok('file_write', { session_id: s, path: 'a.txt', content: 'a\n' });
    for (const [repository, tag] of [['postgres', '16'], ['Docker.io/library/debian', `sbx-${process.pid}`],
      ['ghcr.io/org/app', 'latest'], ['index.docker.io/library/redis', `sbx-${process.pid}`]]) {
      const ref = `${repository}:${tag}`;
      // the engine is shared: whatever the name holds before (usually nothing) it holds after
      const was = await imageId(ref);
      const res = await srv.call('session_export', { session_id: s, build: true, repository, tag }, { timeoutMs: 300000 });
      if (!res.isError && !was) refs.add(res.structuredContent.reference);
      assert.equal(res.isError, true, `${ref}: ${show(res)}`);
      assert.equal(res.structuredContent.error.code, 'invalid_argument', show(res));
      assert.match(res.structuredContent.error.message, /SANDBOX_COMMIT_REPOS/);
      assert.equal(await imageId(ref), was, `${ref} was not created or moved`);
    }
  });

  test('build: true refuses a base image with ONBUILD triggers, which FROM would run in the builder',
    podmanCannot('build the ONBUILD base the test needs: its builder writes OCI images, which drop ONBUILD'), async () => {
    const base = `sandbox-mcp-test/onbuild:${process.pid}`;
    const dir = mkdtempSync(join(tmpdir(), 'sbx-onbuild-'));
    try {
      writeFileSync(join(dir, 'Dockerfile'), 'FROM debian:bookworm-slim\nONBUILD RUN id > /onbuild-ran\n');
      const b = await docker(['build', '--network', 'none', '-q', '-t', base, dir], { timeoutMs: 120000 });
      assert.equal(b.code, 0, `docker build: ${b.stderr}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const s = (await srv.createSession({ image: base })).session_id;
    mine.add(s);
    const res = await srv.call('session_export', { session_id: s, build: true, repository: REPO, tag: `onbuild-${process.pid}` },
      { timeoutMs: 300000 });
    if (!res.isError) refs.add(res.structuredContent.reference);
    refs.add(base);
    assert.equal(res.isError, true, show(res));
    assert.equal(res.structuredContent.error.code, 'invalid_argument', show(res));
    assert.match(res.structuredContent.error.message, /ONBUILD triggers/);
    const x = await srv.ok('session_export', { session_id: s });
    assert.match(x.dockerfile, new RegExp(`^FROM ${base}$`, 'm'), 'without build the Dockerfile is still given');
    await srv.ok('session_close', { session_id: s });
  });

  test('the tag is set only after the build succeeded: one planted meanwhile is not replaced', async () => {
    const s = (await srv.createSession({ name: 'export-slow' })).session_id;
    mine.add(s);
    // the rebuild's setup.py takes 20 s: the tag is planted long before the build can end
    await hostilePackage(srv, s, 'src/slow', 'slow', 'time.sleep(20)');
    const tag = `planted-${process.pid}`;
    const ref = `${REPO}:${tag}`;
    refs.add(ref);
    let planted = null;
    const res = await srv.client.callTool({ name: 'session_export', arguments: { session_id: s, build: true, repository: REPO, tag } },
      undefined, {
        timeout: 600000, onprogress: (p) => {
          if (!planted && /building the export/.test(p.message ?? '')) {
            planted = docker(['tag', 'debian:bookworm-slim', ref]).then((r) => ({ ...r, at: Date.now() }));
          }
        },
      });
    const done = Date.now();
    assert.ok(planted, 'the build stage was announced');
    const p = await planted;
    assert.equal(p.code, 0, p.stderr);
    assert.ok(p.at < done, 'the tag was planted while the export ran');
    assert.equal(res.isError, true, show(res));
    assert.equal(res.structuredContent.error.code, 'invalid_argument', show(res));
    assert.match(res.structuredContent.error.message, /already exists/);
    const slim = JSON.parse((await docker(['image', 'inspect', 'debian:bookworm-slim'])).stdout)[0].Id;
    assert.equal(JSON.parse((await docker(['image', 'inspect', ref])).stdout)[0].Id, slim, 'the planted tag is kept');
    assert.equal(await labelled(s, true), '', 'the refused build\'s images are gone');
  });
});
