// git_* against the real engine, all inside a sandbox with no network: a repo
// made with git init gets files, status, diffs (unstaged and staged) and
// commits; it is cloned by path and by file:// URL (branch, depth) and pushed
// to a bare repository; bad URLs, refs and options are refused with nothing
// run; a folder that is no repository and an image without git say so.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, suite, requireEngine, cleanup, show } from './lib/harness.mjs';

describe('git tools', suite({ timeout: 600000 }), () => {
  let srv;
  let sid;

  before(async () => {
    requireEngine();
    srv = await Server.start('git', { SANDBOX_TIMEOUT_S: 120 });
    sid = (await srv.createSession({ name: 'git' })).session_id;
    await srv.sh('git init -q -b main proj', { session_id: sid });
  });

  after(async () => {
    await cleanup();
  });

  test('status, diff and commit in a new repository', async () => {
    await srv.ok('file_write', { path: 'proj/README.md', content: 'hello\n', session_id: sid });
    await srv.ok('file_write', { path: 'proj/src/a.py', content: 'print(1)\n', session_id: sid });
    let st = await srv.ok('git_status', { path: 'proj', session_id: sid });
    assert.equal(st.branch, 'main');
    assert.equal(st.clean, false);
    assert.deepEqual(st.entries.map((e) => `${e.status} ${e.path}`).sort(), ['?? README.md', '?? src/a.py']);

    const c1 = await srv.ok('git_commit', { path: 'proj', message: 'first commit', session_id: sid });
    assert.equal(c1.committed, true);
    assert.match(c1.commit, /^[0-9a-f]{40}$/);
    const head = await srv.sh('git -C proj rev-parse HEAD; git -C proj log -1 --format="%an <%ae>|%s"', { session_id: sid });
    assert.deepEqual(head.stdout.trim().split('\n'), [c1.commit, 'sandbox-mcp <sandbox@localhost>|first commit']);
    st = await srv.ok('git_status', { path: 'proj', session_id: sid });
    assert.equal(st.clean, true);
    assert.deepEqual(st.entries, []);

    await srv.ok('file_write', { path: 'proj/README.md', content: 'hello\nworld\n', session_id: sid });
    const d = await srv.ok('git_diff', { path: 'proj', session_id: sid });
    assert.match(d.diff, /^\+world$/m);
    assert.equal((await srv.ok('git_diff', { path: 'proj', staged: true, session_id: sid })).diff, '');
    await srv.sh('git -C proj add README.md', { session_id: sid });
    assert.equal((await srv.ok('git_diff', { path: 'proj', session_id: sid })).diff, '');
    assert.match((await srv.ok('git_diff', { path: 'proj', staged: true, session_id: sid })).diff, /^\+world$/m);
    st = await srv.ok('git_status', { path: 'proj', session_id: sid });
    assert.deepEqual(st.entries, [{ status: 'M ', path: 'README.md' }]);

    const c2 = await srv.ok('git_commit', { path: 'proj', message: '-m looks like an option but is a message',
      author: 'Ada Lovelace <ada@example.com>', session_id: sid });
    const log = await srv.sh('git -C proj log -1 --format="%H|%an <%ae>|%s"', { session_id: sid });
    assert.equal(log.stdout.trim(), `${c2.commit}|Ada Lovelace <ada@example.com>|-m looks like an option but is a message`);
    const again = await srv.ok('git_commit', { path: 'proj', message: 'nothing', session_id: sid });
    assert.equal(again.committed, false);
    assert.equal(again.commit, c2.commit);
  });

  test('clone by path and by file:// URL with branch and depth', async () => {
    const head = (await srv.sh('git -C proj rev-parse HEAD', { session_id: sid })).stdout.trim();
    const c = await srv.ok('git_clone', { repo_url: '/workspace/proj', path: 'copy', session_id: sid });
    assert.equal(c.path, '/workspace/copy');
    assert.equal(c.commit, head);
    assert.equal((await srv.sh('cat copy/README.md', { session_id: sid })).stdout, 'hello\nworld\n');

    await srv.sh('git -C proj branch feature', { session_id: sid });
    const shallow = await srv.ok('git_clone', { repo_url: 'file:///workspace/proj', branch: 'feature', depth: 1,
      path: 'shallow', session_id: sid });
    assert.equal(shallow.commit, head, show(shallow));
    const info = await srv.sh('git -C shallow rev-parse --abbrev-ref HEAD; git -C shallow rev-list --count HEAD',
      { session_id: sid });
    assert.deepEqual(info.stdout.trim().split('\n'), ['feature', '1']);
    // without path: the folder is named after the URL, as git does
    await srv.sh('git init -q --bare /workspace/named.git', { session_id: sid });
    const named = await srv.ok('git_clone', { repo_url: 'file:///workspace/named.git', session_id: sid });
    assert.equal(named.path, '/workspace/named');
    assert.equal(named.commit, '');
  });

  test('push to a bare repository in the sandbox', async () => {
    await srv.sh('git init -q --bare /workspace/remote.git && git -C copy remote add bare /workspace/remote.git', { session_id: sid });
    await srv.ok('file_write', { path: 'copy/new.txt', content: 'pushed\n', session_id: sid });
    const c = await srv.ok('git_commit', { path: 'copy', message: 'to push', session_id: sid });
    const p = await srv.ok('git_push', { path: 'copy', remote: 'bare', session_id: sid });
    assert.equal(p.remote, 'bare');
    const there = await srv.sh('git --git-dir=/workspace/remote.git log -1 --format=%H main', { session_id: sid });
    assert.equal(there.stdout.trim(), c.commit);
    // and a new branch to origin, by name
    await srv.sh('git -C copy switch -q -c topic', { session_id: sid });
    const p2 = await srv.ok('git_push', { path: 'copy', branch: 'topic', session_id: sid });
    assert.equal(p2.remote, 'origin');
    const topic = await srv.sh('git -C proj rev-parse topic', { session_id: sid });
    assert.equal(topic.stdout.trim(), c.commit);
  });

  test('bad URLs, refs and options are refused with invalid_argument, and nothing runs', async () => {
    for (const repo_url of ['--upload-pack=touch /workspace/pwned', 'ext::sh -c touch% /workspace/pwned',
      'fd::7', '-u touch', 'file:///x;touch /workspace/pwned', 'a\nb']) {
      await srv.fails('git_clone', { repo_url, session_id: sid }, 'invalid_argument');
    }
    await srv.fails('git_clone', { repo_url: '/workspace/proj', branch: '--upload-pack=touch /workspace/pwned', session_id: sid }, 'invalid_argument');
    await srv.fails('git_clone', { repo_url: '/workspace/proj', path: '--template=/tmp', session_id: sid }, 'invalid_argument');
    await srv.fails('git_push', { path: 'copy', remote: '--receive-pack=touch /workspace/pwned', session_id: sid }, 'invalid_argument');
    await srv.fails('git_push', { path: 'copy', branch: 'a..b', session_id: sid }, 'invalid_argument');
    await srv.fails('git_commit', { path: 'copy', message: 'x', author: '--exec=x', session_id: sid }, 'invalid_argument');
    const r = await srv.sh('test -e /workspace/pwned && echo yes || echo no', { session_id: sid });
    assert.equal(r.stdout.trim(), 'no');
  });

  test('a folder that is no repository, and an image without git, get clear errors', async () => {
    await srv.sh('mkdir -p plain', { session_id: sid });
    const r = await srv.fails('git_status', { path: 'plain', session_id: sid }, 'invalid_argument');
    assert.match(r.error.message, /not a git repository: git_clone one, or run `git init`/);
    const slim = (await srv.createSession({ image: 'debian:bookworm-slim' })).session_id;
    const g = await srv.fails('git_status', { session_id: slim }, 'git_not_found');
    assert.match(g.error.message, /has no git/);
  });
});
