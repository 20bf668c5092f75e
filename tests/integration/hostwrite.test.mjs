// What the server may write on the host (docs/design.md §4, "no host file overwritten
// that the server did not write"), against the real engine and a real host
// git: a download never replaces a host file or folder the server did not
// write (or that changed since), never writes a hidden name or version-control
// metadata (so a plain `git status` on the host never runs the sandbox's
// command), and still replaces what it wrote itself. And what it may read: a
// host file with a second name (a hard link, maybe to a file outside the
// allowed folders) is never uploaded.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync, rmSync, existsSync, linkSync, appendFileSync,
  realpathSync, symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server, suite, requireEngine, cleanup } from '../lib/harness.mjs';

describe('host writes: downloads replace only what the server wrote', suite({ timeout: 300000 }), () => {
  let srv;
  let sid;
  let base; // a private host folder for this run
  let allowed; // SANDBOX_HOST_DIRS
  let outside; // next to it, not allowed
  let repo; // a host git repository in the allowed folder
  let marker; // what the planted command would create
  let gitEnv; // a git on the host that reads no config of the machine's user

  /** git on the host, in dir: its exit status (the planted command would run here). */
  const hostGit = (dir, args = ['status']) => spawnSync('git', args, { cwd: dir, env: gitEnv, encoding: 'utf8' });

  /** A git config that runs `touch marker` on every `git status` (core.fsmonitor is a command). */
  const plantedConfig = () => '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n' +
    `\tfsmonitor = "touch ${marker}; false"\n`;

  before(async () => {
    requireEngine();
    base = realpathSync(mkdtempSync(join(tmpdir(), 'sandbox-mcp-hostwrite-')));
    allowed = join(base, 'allowed');
    outside = join(base, 'outside');
    mkdirSync(allowed);
    mkdirSync(outside);
    marker = join(base, 'PLANTED-COMMAND-RAN');
    gitEnv = { ...process.env, HOME: base, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
    repo = join(allowed, 'repo');
    mkdirSync(repo);
    execFileSync('git', ['init', '-q'], { cwd: repo, env: gitEnv });
    writeFileSync(join(repo, 'README'), 'host project\n');
    execFileSync('git', ['add', 'README'], { cwd: repo, env: gitEnv });
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-qm', 'first'],
      { cwd: repo, env: gitEnv });
    srv = await Server.start('host-write', { SANDBOX_TIMEOUT_S: 60, SANDBOX_HOST_DIRS: allowed });
    sid = (await srv.createSession({ name: 'host-write' })).session_id;
  });

  after(async () => {
    await cleanup();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  test('the .git/config attack: no overwrite of a host repository\'s config or .git, git status runs nothing', async () => {
    const config = readFileSync(join(repo, '.git', 'config'));
    await srv.ok('file_write', { path: 'attack/config', content: plantedConfig(), session_id: sid });
    // a whole planted .git: a real repository whose config runs the command
    await srv.sh(`git init -q plant && git -C plant config core.fsmonitor "touch ${marker}; false"`, { session_id: sid });
    assert.equal(hostGit(repo).status, 0);
    assert.ok(!existsSync(marker), 'git status runs nothing before');

    // the file itself, into .git
    let f = await srv.fails('file_download', { path: 'attack/config', host_dir: join(repo, '.git'), overwrite: true,
      session_id: sid }, 'host_path_not_allowed');
    assert.match(f.error.message, /hidden|\.git/);
    // the folder that holds it, over the host's
    f = await srv.fails('file_download', { path: 'plant/.git', host_dir: repo, overwrite: true, session_id: sid },
      'host_path_not_allowed');
    assert.match(f.error.message, /\.git/);
    // the whole repository folder, over the host's (which the server did not write)
    await srv.sh('mkdir -p dl && rm -rf dl/repo && cp -r plant dl/repo', { session_id: sid });
    f = await srv.fails('file_download', { path: 'dl/repo', host_dir: allowed, overwrite: true, session_id: sid },
      'host_path_not_allowed');
    assert.match(f.error.message, /not written by sandbox-mcp|did not write/);
    // its config through a host_dir spelled otherwise, or through a link the user made to it
    symlinkSync(join(repo, '.git'), join(allowed, 'git-link'));
    for (const host_dir of [`${repo}/./.git/`, `${repo}/../repo/.git`, join(allowed, 'git-link')]) {
      await srv.fails('file_download', { path: 'attack/config', host_dir, overwrite: true, session_id: sid },
        'host_path_not_allowed');
    }

    assert.deepEqual(readFileSync(join(repo, '.git', 'config')), config, '.git/config is unchanged');
    assert.deepEqual(readdirSync(repo).sort(), ['.git', 'README']);
    const st = hostGit(repo);
    assert.equal(st.status, 0, st.stderr);
    assert.ok(!existsSync(marker), 'git status on the host did not run the planted command');
  });

  test('a user\'s .bashrc, Makefile and .vscode are never replaced, hidden names never written', async () => {
    writeFileSync(join(allowed, '.bashrc'), 'user bashrc\n');
    writeFileSync(join(allowed, 'Makefile'), 'all:\n\techo user\n');
    mkdirSync(join(allowed, '.vscode'));
    writeFileSync(join(allowed, '.vscode', 'settings.json'), '{}\n');
    await srv.sh(`printf 'touch ${marker}\\n' > .bashrc && printf 'all:\\n\\ttouch ${marker}\\n' > Makefile && ` +
      `mkdir -p .vscode && echo '{"tasks":1}' > .vscode/tasks.json && echo 'touch ${marker}' > .envrc`,
    { session_id: sid });
    for (const overwrite of [true, false]) {
      const f = await srv.fails('file_download', { path: '.bashrc', host_dir: allowed, overwrite, session_id: sid },
        'host_path_not_allowed');
      assert.match(f.error.message, /hidden/);
      await srv.fails('file_download', { path: '.vscode', host_dir: allowed, overwrite, session_id: sid },
        'host_path_not_allowed');
    }
    // a user's Makefile: not with overwrite (the server did not write it), and without it as before
    const m = await srv.fails('file_download', { path: 'Makefile', host_dir: allowed, overwrite: true, session_id: sid },
      'host_path_not_allowed');
    assert.match(m.error.message, /Makefile/);
    await srv.fails('file_download', { path: 'Makefile', host_dir: allowed, session_id: sid }, 'file_exists');
    // a hidden name that does not exist yet is not written either
    await srv.fails('file_download', { path: '.envrc', host_dir: allowed, session_id: sid }, 'host_path_not_allowed');
    // nor a file into a hidden folder
    await srv.fails('file_download', { path: 'Makefile', host_dir: join(allowed, '.vscode'), session_id: sid },
      'host_path_not_allowed');
    assert.equal(readFileSync(join(allowed, '.bashrc'), 'utf8'), 'user bashrc\n');
    assert.equal(readFileSync(join(allowed, 'Makefile'), 'utf8'), 'all:\n\techo user\n');
    assert.deepEqual(readdirSync(join(allowed, '.vscode')), ['settings.json']);
    assert.ok(!existsSync(join(allowed, '.envrc')));
    assert.ok(!readdirSync(allowed).some((n) => n.startsWith('.sandbox-mcp')), 'no temporary folder left');
  });

  test('what the server downloaded it replaces with overwrite, until the user changed it', async () => {
    const out = join(allowed, 'out');
    mkdirSync(out);
    await srv.ok('file_write', { path: 'r/report.txt', content: 'v1\n', session_id: sid });
    await srv.ok('file_download', { path: 'r/report.txt', host_dir: out, session_id: sid });
    await srv.ok('file_write', { path: 'r/report.txt', content: 'v2\n', session_id: sid });
    await srv.fails('file_download', { path: 'r/report.txt', host_dir: out, session_id: sid }, 'file_exists');
    await srv.ok('file_download', { path: 'r/report.txt', host_dir: out, overwrite: true, session_id: sid });
    assert.equal(readFileSync(join(out, 'report.txt'), 'utf8'), 'v2\n');
    // a folder over the folder it wrote, twice
    await srv.ok('file_download', { path: 'r', host_dir: out, session_id: sid });
    await srv.ok('file_write', { path: 'r/more.txt', content: 'more\n', session_id: sid });
    await srv.ok('file_download', { path: 'r', host_dir: out, overwrite: true, session_id: sid });
    assert.deepEqual(readdirSync(join(out, 'r')).sort(), ['more.txt', 'report.txt']);
    await srv.ok('file_download', { path: 'r', host_dir: out, overwrite: true, session_id: sid });

    // the user edits the downloaded file: it is theirs now
    appendFileSync(join(out, 'report.txt'), 'my note\n');
    await srv.ok('file_write', { path: 'r/report.txt', content: 'v3\n', session_id: sid });
    const f = await srv.fails('file_download', { path: 'r/report.txt', host_dir: out, overwrite: true, session_id: sid },
      'host_path_not_allowed');
    assert.match(f.error.message, /changed/);
    assert.equal(readFileSync(join(out, 'report.txt'), 'utf8'), 'v2\nmy note\n');
    // a copy with its extended attributes is a new file, not the server's
    execFileSync('cp', ['--preserve=xattr', join(out, 'r', 'more.txt'), join(out, 'copied.txt')]);
    await srv.ok('file_write', { path: 'copied.txt', content: 'sandbox\n', session_id: sid });
    await srv.fails('file_download', { path: 'copied.txt', host_dir: out, overwrite: true, session_id: sid },
      'host_path_not_allowed');
    assert.equal(readFileSync(join(out, 'copied.txt'), 'utf8'), 'more\n');
    // the user adds a file of theirs to a downloaded folder: the folder is not replaced, their file stays
    writeFileSync(join(out, 'r', 'mine.txt'), 'mine\n');
    const g = await srv.fails('file_download', { path: 'r', host_dir: out, overwrite: true, session_id: sid },
      'host_path_not_allowed');
    assert.match(g.error.message, /mine\.txt/);
    assert.deepEqual(readdirSync(join(out, 'r')).sort(), ['mine.txt', 'more.txt', 'report.txt']);
    assert.ok(!readdirSync(out).some((n) => n.startsWith('.sandbox-mcp')), 'no temporary folder left');
  });

  test('a downloaded folder holds no .git, .hg or git HEAD: git in it runs nothing', async () => {
    // a repository with the planted config, and inside it a bare-layout folder that git would take
    // for a repository (core.worktree makes git status work there)
    await srv.sh(`rm -rf proj && git init -q proj && git -C proj config core.fsmonitor "touch ${marker}; false" && ` +
      'echo code > proj/main.py && git init -q --bare proj/inner && git -C proj/inner config core.bare false && ' +
      `git -C proj/inner config core.worktree .. && git -C proj/inner config core.fsmonitor "touch ${marker}; false" && ` +
      'mkdir -p proj/sub/.hg && echo "[hooks]" > proj/sub/.hg/hgrc && echo keep > proj/.gitignore', { session_id: sid });
    const dl = join(allowed, 'fresh');
    mkdirSync(dl);
    const down = await srv.ok('file_download', { path: 'proj', host_dir: dl, session_id: sid });
    const skipped = down.skipped.map((x) => x.name);
    assert.ok(skipped.includes('.git'), JSON.stringify(down.skipped));
    assert.ok(skipped.includes('inner/HEAD'), JSON.stringify(down.skipped));
    assert.ok(skipped.includes('sub/.hg'), JSON.stringify(down.skipped));
    assert.ok(down.skipped.every((x) => x.name.split('/').length <= 2), 'what is below a skipped folder is not listed');
    const host = join(dl, 'proj');
    assert.equal(readFileSync(join(host, 'main.py'), 'utf8'), 'code\n');
    assert.ok(skipped.includes('.gitignore') && !existsSync(join(host, '.gitignore')), 'no hidden name at any depth');
    assert.ok(!existsSync(join(host, '.git')) && !existsSync(join(host, 'inner', 'HEAD')) && !existsSync(join(host, 'sub', '.hg')));
    for (const dir of [host, join(host, 'inner')]) {
      const st = hostGit(dir);
      assert.notEqual(st.status, 0, `not a git repository: ${st.stdout}${st.stderr}`);
    }
    assert.ok(!existsSync(marker), 'git on the host did not run the planted command');
  });

  test('a downloaded folder holds no hidden name nor Python bytecode, at any depth; each is listed', async () => {
    // python3 main.py on the host would run a planted __pycache__/main.*.pyc in place of main.py
    await srv.sh('rm -rf app && mkdir -p app/pkg/deep && printf "print(\\"source\\")\\n" > app/main.py && ' +
      'cd app && python3 -m compileall -q . && cd .. && ' +
      `printf 'import os\\nos.system("touch ${marker}")\\n' > app/evil.py && python3 -m py_compile app/evil.py && ` +
      'cp app/__pycache__/evil.*.pyc app/__pycache__/main.$(python3 -c "import sys;print(sys.implementation.cache_tag)").pyc && ' +
      `echo 'touch ${marker}' > app/.envrc && echo x > app/pkg/deep/.env && mkdir app/pkg/.vscode && ` +
      'echo {} > app/pkg/.vscode/tasks.json && echo b > app/pkg/mod.pyc && echo c > app/pkg/deep/x.PYO && echo ok > app/pkg/deep/data.txt',
    { session_id: sid });
    const dl = join(allowed, 'bytecode');
    mkdirSync(dl);
    const down = await srv.ok('file_download', { path: 'app', host_dir: dl, session_id: sid });
    const skipped = down.skipped.map((x) => x.name).sort();
    for (const name of ['.envrc', '__pycache__', 'pkg/.vscode', 'pkg/deep/.env', 'pkg/mod.pyc', 'pkg/deep/x.PYO']) {
      assert.ok(skipped.includes(name), `${name} skipped: ${JSON.stringify(down.skipped)}`);
    }
    assert.ok(down.skipped.every((x) => /never written on the host/.test(x.reason)), JSON.stringify(down.skipped));
    const host = join(dl, 'app');
    assert.deepEqual(readdirSync(host).sort(), ['evil.py', 'main.py', 'pkg']);
    assert.deepEqual(readdirSync(join(host, 'pkg')).sort(), ['deep']);
    assert.deepEqual(readdirSync(join(host, 'pkg', 'deep')), ['data.txt']);
    const run = spawnSync('python3', ['-B', 'main.py'], { cwd: host, encoding: 'utf8' });
    assert.equal(run.stdout, 'source\n', 'the host runs the .py it sees');
    assert.ok(!existsSync(marker), 'nothing planted ran');
  });

  test('session_export does not write into a hidden or .git folder', async () => {
    const f = await srv.fails('session_export', { session_id: sid, host_dir: join(repo, '.git') }, 'host_path_not_allowed');
    assert.match(f.error.message, /hidden|\.git/);
    assert.ok(!readdirSync(join(repo, '.git')).some((n) => n.startsWith('sandbox-mcp')), 'nothing written into .git');
  });

  test('hard links: a host file with a second name is not uploaded, alone or in a folder', async () => {
    writeFileSync(join(outside, 'secret.txt'), 'host secret\n');
    const src = join(allowed, 'linked');
    mkdirSync(src);
    writeFileSync(join(src, 'plain.txt'), 'plain\n');
    linkSync(join(outside, 'secret.txt'), join(src, 'to-outside'));
    linkSync(join(outside, 'secret.txt'), join(allowed, 'alone-link'));
    const f = await srv.fails('file_upload', { host_path: join(allowed, 'alone-link'), session_id: sid },
      'host_path_not_allowed');
    assert.match(f.error.message, /hard link/);
    assert.match(f.error.message, /cp|copy/i);
    const up = await srv.ok('file_upload', { host_path: src, session_id: sid });
    assert.equal(up.files, 1);
    assert.deepEqual(up.skipped.map((x) => x.name), ['to-outside']);
    assert.match(up.skipped[0].reason, /hard link/);
    const inside = await srv.sh('ls -A linked; cat alone-link linked/to-outside 2>/dev/null; true', { session_id: sid });
    assert.equal(inside.stdout, 'plain.txt\n', 'the linked file\'s bytes did not reach the sandbox');
  });
});
