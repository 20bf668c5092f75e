// Background jobs against the real engine (docs/jobs.md): run_command
// {background: true} returns at once; the job keeps running between calls;
// its output is read by offset and tail, waiting for more; ready waits for
// a port or a URL; a signal ends its whole process group; the cap on
// running jobs; output kept to SANDBOX_OUTPUT_SAVE_MB without blocking the
// job; jobs end with their session and after a rollback they show as lost.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, suite, requireEngine, cleanup, show, sleep } from '../lib/harness.mjs';

const textOf = (res) => res.content.filter((b) => b.type === 'text').map((b) => b.text).join('\n');

describe('background jobs', suite({ timeout: 600000 }), () => {
  let srv;
  let sid;

  before(async () => {
    requireEngine();
    srv = await Server.start('jobs', { SANDBOX_POOL_SIZE: 0, SANDBOX_OUTPUT_SAVE_MB: 1 });
    sid = (await srv.createSession({ name: 'jobs' })).session_id;
  });
  after(cleanup);

  test('a web server as a job: started at once, ready on its port, answering, stopped by a signal', async () => {
    await srv.ok('file_write', { session_id: sid, path: 'site/index.html', content: '<h1>hello from a job</h1>\n' });
    const t0 = Date.now();
    const st = await srv.ok('run_command', { session_id: sid, background: true,
      command: 'cd site && exec python3 -u -m http.server 8000 --bind 127.0.0.1' });
    assert.ok(Date.now() - t0 < 5000, 'returned at once');
    assert.match(st.job_id, /^\d+$/);
    assert.equal(st.state, 'running');
    const ready = await srv.ok('job', { session_id: sid, action: 'ready', port: 8000, timeout_s: 20 });
    assert.equal(ready.ready, true);
    const page = await srv.sh('python3 -c "import urllib.request; print(urllib.request.urlopen(\'http://127.0.0.1:8000/\').read().decode())"',
      { session_id: sid });
    assert.match(page.stdout, /hello from a job/);
    await srv.ok('job', { session_id: sid, action: 'ready', url: 'http://127.0.0.1:8000/index.html' });
    // its output: the request it served
    const out = await srv.ok('job', { session_id: sid, action: 'output', job_id: st.job_id, wait_s: 5 });
    assert.match(out.output, /GET \/ HTTP/);
    assert.equal(out.state, 'running');
    const list = await srv.ok('job', { session_id: sid });
    const mine = list.jobs.find((j) => j.job_id === st.job_id);
    assert.equal(mine.state, 'running');
    assert.match(mine.command, /http\.server 8000/);
    assert.ok(mine.rss_kb > 1000, JSON.stringify(mine));
    const sig = await srv.ok('job', { session_id: sid, action: 'signal', job_id: st.job_id });
    assert.equal(sig.sent, true);
    const end = await srv.ok('job', { session_id: sid, action: 'wait', job_id: st.job_id, wait_s: 20 });
    assert.equal(end.state, 'exited', JSON.stringify(end));
    assert.equal(end.exit_code, 143, 'ended by SIGTERM, as a shell reports it');
    const gone = await srv.call('job', { session_id: sid, action: 'ready', port: 8000, timeout_s: 1 });
    assert.equal(gone.structuredContent?.error?.code, 'timeout', show(gone));
    // a url that is not the sandbox's own is refused
    await srv.fails('job', { session_id: sid, action: 'ready', url: 'http://127.0.0.1.example.com/' }, 'invalid_argument');
  });

  test('output by offset and tail, waiting for more; exit codes; the whole process group ends', async () => {
    const st = await srv.ok('run_command', { session_id: sid, background: true,
      command: 'for i in 1 2 3; do echo line$i; sleep 1; done; (sleep 300 &) ; exit 7' });
    const first = await srv.ok('job', { session_id: sid, action: 'output', job_id: st.job_id, wait_s: 10 });
    assert.match(first.output, /^line1\n/);
    const rest = await srv.ok('job', { session_id: sid, action: 'wait', job_id: st.job_id, wait_s: 30 });
    assert.equal(rest.exit_code, 7);
    const all = await srv.ok('job', { session_id: sid, action: 'output', job_id: st.job_id, offset: 0 });
    assert.equal(all.output, 'line1\nline2\nline3\n');
    assert.equal(all.next_offset, all.size);
    const tail = await srv.ok('job', { session_id: sid, action: 'output', job_id: st.job_id, tail: 6 });
    assert.equal(tail.output, 'line3\n');
    // its leader exited, but a child it left lives on: a signal still reaches the group
    const late = await srv.ok('job', { session_id: sid, action: 'signal', job_id: st.job_id, signal: 'KILL' });
    assert.equal(late.sent, true);
    await sleep(300);
    assert.equal((await srv.sh('ps -eo args | grep -c "^sleep 300" || true', { session_id: sid })).stdout.trim(), '0');
    // output with a NUL byte is read past it
    const nul = await srv.ok('run_command', { session_id: sid, background: true, command: 'printf "a\\000b\\n"' });
    const nout = await srv.ok('job', { session_id: sid, action: 'wait', job_id: nul.job_id, wait_s: 10 });
    const whole = await srv.ok('job', { session_id: sid, action: 'output', job_id: nul.job_id, offset: 0 });
    assert.equal(whole.next_offset, 4, JSON.stringify(whole));
    assert.equal(nout.exit_code, 0);
    // a group signal reaches children that left their parent
    const g = await srv.ok('run_command', { session_id: sid, background: true, command: 'sleep 301 & sleep 302 & wait' });
    await srv.ok('job', { session_id: sid, action: 'signal', job_id: g.job_id, signal: 'KILL' });
    await sleep(500);
    const ps = await srv.sh('ps -eo args | grep -c "^sleep 30[12]" || true', { session_id: sid });
    assert.equal(ps.stdout.trim(), '0', 'both children were killed with the group');
    await srv.fails('job', { session_id: sid, action: 'output', job_id: '999' }, 'invalid_argument');
  });

  test('a chatty job keeps running past the output cap, which holds', async () => {
    const st = await srv.ok('run_command', { session_id: sid, background: true,
      command: 'head -c 3000000 /dev/zero | tr "\\0" x; echo; echo done > chatty.flag' });
    const end = await srv.ok('job', { session_id: sid, action: 'wait', job_id: st.job_id, wait_s: 60 });
    assert.equal(end.exit_code, 0);
    assert.equal(end.size, 1048576, 'kept to SANDBOX_OUTPUT_SAVE_MB=1');
    assert.equal((await srv.sh('cat chatty.flag', { session_id: sid })).stdout, 'done\n', 'the job did not block');
  });

  test('at most 16 running jobs; jobs end with a rollback (lost) and with their session', async () => {
    const s2 = (await srv.createSession({ name: 'many' })).session_id;
    for (let i = 0; i < 16; i++) await srv.ok('run_command', { session_id: s2, background: true, command: 'sleep 600' });
    const over = await srv.call('run_command', { session_id: s2, background: true, command: 'sleep 600' });
    assert.equal(over.structuredContent?.error?.code, 'too_many_processes', show(over));
    await srv.ok('session_checkpoint', { session_id: s2, name: 'busy' });
    await srv.ok('session_checkpoint', { session_id: s2, action: 'rollback', checkpoint: 'busy' });
    const list = await srv.ok('job', { session_id: s2 });
    assert.equal(list.jobs.length, 16);
    assert.ok(list.jobs.every((j) => j.state === 'lost'), JSON.stringify(list.jobs.map((j) => j.state)));
    // a lost job's recorded pid is another process now, or none: a signal reaches nothing
    const stale = await srv.ok('job', { session_id: s2, action: 'signal', job_id: '1', signal: 'KILL' });
    assert.equal(stale.sent, false);
    await srv.ok('run_command', { session_id: s2, background: true, command: 'sleep 600' });
    await srv.ok('session_close', { session_id: s2 });
    // background takes a shell line alone
    const bad = await srv.call('run_command', { session_id: sid, background: true, argv: ['sleep', '1'] });
    assert.equal(bad.structuredContent?.error?.code, 'invalid_argument', show(bad));
    assert.match(textOf(bad), /background takes a shell command/);
  });
});
