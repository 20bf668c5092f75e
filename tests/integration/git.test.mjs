// git_* against the real engine, all inside a sandbox with no network: a repo
// made with git init gets files, status, diffs (unstaged and staged) and
// commits; it is cloned by path and by file:// URL (branch, depth) and pushed
// to a bare repository; bad URLs, refs and options (and a forced "+branch")
// are refused by argcheck, in its words, with nothing run; a git that ran and
// failed is git_failed; branch names with dots survive git_status; a folder
// that is no repository (for every tool) and an image without git say so.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, suite, requireEngine, cleanup, show } from '../lib/harness.mjs';

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

  test('bad URLs, refs and options are refused by argcheck with invalid_argument, and nothing runs', async () => {
    // argcheck's own words, so a git that ran and failed on the value (git_failed, git's words) cannot pass
    for (const repo_url of ['--upload-pack=touch /workspace/pwned', 'ext::sh -c touch% /workspace/pwned',
      'fd::7', '-u touch', 'file:///x;touch /workspace/pwned', 'a\nb']) {
      const r = await srv.fails('git_clone', { repo_url, session_id: sid }, 'invalid_argument');
      assert.match(r.error.message, /^repo_url '.*' is not accepted: use https:\/\//s, show(r));
    }
    let r = await srv.fails('git_clone', { repo_url: '/workspace/proj', branch: '--upload-pack=touch /workspace/pwned', session_id: sid }, 'invalid_argument');
    assert.match(r.error.message, /^branch '--upload-pack=touch \/workspace\/pwned' is not a valid name: /);
    r = await srv.fails('git_clone', { repo_url: '/workspace/proj', path: '--template=/tmp', session_id: sid }, 'invalid_argument');
    assert.match(r.error.message, /^path '--template=\/tmp' is not a usable path: no leading '-'/);
    r = await srv.fails('git_push', { path: 'copy', remote: '--receive-pack=touch /workspace/pwned', session_id: sid }, 'invalid_argument');
    assert.match(r.error.message, /^remote '--receive-pack=touch \/workspace\/pwned' is not a valid name: /);
    r = await srv.fails('git_push', { path: 'copy', branch: 'a..b', session_id: sid }, 'invalid_argument');
    assert.match(r.error.message, /^branch 'a\.\.b' is not a valid name: /);
    r = await srv.fails('git_commit', { path: 'copy', message: 'x', author: '--exec=x', session_id: sid }, 'invalid_argument');
    assert.match(r.error.message, /^author '--exec=x' must look like "Name <email@example\.com>"/);

    // "+main" would be a forced push (git_push is not destructive): refused, and the remote keeps its history
    await srv.sh('git -C copy switch -q main', { session_id: sid });
    const before = (await srv.sh('git --git-dir=/workspace/remote.git rev-parse main', { session_id: sid })).stdout.trim();
    await srv.sh('git -C copy reset -q --hard HEAD~1', { session_id: sid });
    r = await srv.fails('git_push', { path: 'copy', remote: 'bare', branch: '+main', session_id: sid }, 'invalid_argument');
    assert.match(r.error.message, /^branch '\+main' starts with '\+', which makes git force the update/);
    const after = (await srv.sh('git --git-dir=/workspace/remote.git rev-parse main', { session_id: sid })).stdout.trim();
    assert.equal(after, before);
    // without the '+', git itself refuses the non-fast-forward: git_failed, with git's own last lines
    r = await srv.fails('git_push', { path: 'copy', remote: 'bare', branch: 'main', session_id: sid }, 'git_failed');
    assert.match(r.error.message, /^git push failed \(exit 1\); its last lines:\n[\s\S]*rejected/);
    await srv.sh('git -C copy reset -q --hard ' + before, { session_id: sid });

    const pwned = await srv.sh('test -e /workspace/pwned && echo yes || echo no', { session_id: sid });
    assert.equal(pwned.stdout.trim(), 'no');
  });

  test('git_failed: git ran and failed, its last lines in the message', async () => {
    let r = await srv.fails('git_push', { path: 'copy', remote: 'nosuchremote', session_id: sid }, 'git_failed');
    assert.match(r.error.message, /^git push failed \(exit 128\); its last lines:\n[\s\S]*'nosuchremote' does not appear to be a git repository/);
    r = await srv.fails('git_clone', { repo_url: '/workspace/nowhere', path: 'nowhere-copy', session_id: sid }, 'git_failed');
    assert.match(r.error.message, /^git clone failed \(exit 128\); its last lines:\n[\s\S]*does not exist/);
  });

  test('git_status: branch names with dots, with and without commits or an upstream; ahead counts', async () => {
    await srv.sh('git init -q -b release-1.2 rel', { session_id: sid });
    let st = await srv.ok('git_status', { path: 'rel', session_id: sid });
    assert.equal(st.branch, 'release-1.2', 'no commits yet');
    await srv.ok('file_write', { path: 'rel/a.txt', content: 'a\n', session_id: sid });
    await srv.ok('git_commit', { path: 'rel', message: 'a', session_id: sid });
    st = await srv.ok('git_status', { path: 'rel', session_id: sid });
    assert.equal(st.branch, 'release-1.2', 'commits, no upstream');
    assert.equal(st.clean, true);

    // with an upstream: "## v2.0.x...origin/v2.0.x [ahead 1]"
    await srv.sh('git -C rel branch v2.0.x', { session_id: sid });
    await srv.ok('git_clone', { repo_url: '/workspace/rel', branch: 'v2.0.x', path: 'rel-copy', session_id: sid });
    await srv.ok('file_write', { path: 'rel-copy/b.txt', content: 'b\n', session_id: sid });
    await srv.ok('git_commit', { path: 'rel-copy', message: 'b', session_id: sid });
    st = await srv.ok('git_status', { path: 'rel-copy', session_id: sid });
    assert.equal(st.branch, 'v2.0.x', show(st));
    assert.equal(st.ahead, 1);
    assert.equal(st.behind, 0);

    // detached: no branch
    await srv.sh('git -C rel-copy switch -q --detach HEAD~1', { session_id: sid });
    st = await srv.ok('git_status', { path: 'rel-copy', session_id: sid });
    assert.equal(st.branch, '');
  });

  test('a folder that is no repository, and an image without git, get clear errors', async () => {
    await srv.sh('mkdir -p plain', { session_id: sid });
    // every tool the same advice, whatever git's own words (diff says "Not a git repository", diff --cached
    // only complains about --cached)
    for (const [tool, args] of [['git_status', {}], ['git_diff', {}], ['git_diff', { staged: true }],
      ['git_commit', { message: 'x' }], ['git_push', {}]]) {
      const r = await srv.fails(tool, { path: 'plain', ...args, session_id: sid }, 'invalid_argument');
      assert.match(r.error.message, /^\/workspace\/plain is not a git repository: git_clone one, or run `git init`/,
        `${tool} ${JSON.stringify(args)}: ${show(r)}`);
    }
    const slim = (await srv.createSession({ image: 'debian:bookworm-slim' })).session_id;
    const g = await srv.fails('git_status', { session_id: slim }, 'git_not_found');
    assert.match(g.error.message, /has no git/);
  });
});
