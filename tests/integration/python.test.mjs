// run_python through the 1.x SDK client against the real engine: state that
// survives between calls, pandas and matplotlib, timeouts that keep or lose
// the interpreter's state, output that tries to break the driver's framing,
// progress while code runs, cancellation, fresh interpreters, and an image
// without python3.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Server, suite, requireEngine, cleanup, docker, show, sleep } from '../lib/harness.mjs';

/** The text blocks of a result, joined. */
function text(res) {
  return (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

/** The value a cell returned (its Out[n] block), or undefined. */
function outValue(res) {
  for (const c of res.content ?? []) {
    const m = c.type === 'text' && /^Out\[\d+\]: ([\s\S]*)$/.exec(c.text);
    if (m) return m[1];
  }
  return undefined;
}

/** The stdout block of a result ('' when there is none). */
function stdoutOf(res) {
  for (const c of res.content ?? []) {
    if (c.type === 'text' && c.text.startsWith('stdout:\n')) return c.text.slice(8);
  }
  return '';
}

/** Width and height from a PNG's IHDR chunk; throws when buf is not a PNG. */
function pngSize(buf) {
  assert.ok(buf.length > 33, `a PNG is longer than ${buf.length} bytes`);
  assert.deepEqual([...buf.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  assert.equal(buf.subarray(12, 16).toString('latin1'), 'IHDR', 'the first chunk is IHDR');
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

describe('run_python', suite({ timeout: 300000 }), () => {
  let srv;
  let sid;

  /** run_python that must not be a tool error; returns the raw result. */
  async function py(code, args = {}, opts = {}) {
    const res = await srv.call('run_python', { code, session_id: sid, ...args }, opts);
    assert.ok(!res.isError, `run_python ${JSON.stringify(code).slice(0, 200)} failed: ${show(res)}\n` +
      `stderr tail: ${srv.stderrTail.slice(-2000)}`);
    assert.equal(res.structuredContent, undefined, 'no structuredContent (it would hide images in Claude Code)');
    return res;
  }

  before(async () => {
    requireEngine();
    // the 10 MB output test checks that all of it can be saved: allow that much
    srv = await Server.start('python', { SANDBOX_TIMEOUT_S: 30, SANDBOX_OUTPUT_SAVE_MB: 16 });
    sid = (await srv.createSession({ name: 'python' })).session_id;
  });

  after(async () => {
    await cleanup();
  });

  test('tools/list shows run_python with an input schema and no outputSchema', async () => {
    const { tools } = await srv.client.listTools();
    const t = tools.find((x) => x.name === 'run_python');
    assert.ok(t, `run_python is listed: ${tools.map((x) => x.name)}`);
    assert.equal(t.outputSchema, undefined, 'no outputSchema: the tool returns images');
    assert.deepEqual(t.inputSchema.required, ['code']);
    for (const p of ['code', 'session_id', 'timeout_s', 'fresh']) assert.ok(t.inputSchema.properties[p], p);
  });

  test('variables, functions and imports survive between calls', async () => {
    await py('x = 41');
    assert.equal(outValue(await py('x + 1')), '42');
    await py('def double(v):\n    return v * 2\n');
    assert.equal(outValue(await py('double(21)')), '42');
    await py('import json as jj\nfrom fractions import Fraction');
    assert.equal(outValue(await py('jj.dumps([Fraction(1, 3).denominator])')), "'[3]'");
    const none = await py('None');
    assert.equal(outValue(none), undefined, 'a None value is not shown');
    const stmt = await py('y = 1\nprint("printed", y)');
    assert.equal(stdoutOf(stmt), 'printed 1\n');
    assert.equal(outValue(stmt), undefined, 'a cell ending in a statement has no value');
  });

  test('an exception shows its traceback with the cell\'s own lines, and state is kept', async () => {
    const res = await py('z = 7\ndef boom():\n    return 1 / 0\nboom()');
    const t = text(res);
    assert.match(t, /Traceback \(most recent call last\)/, t);
    assert.match(t, /File "<cell-\d+>", line 4/, `the traceback names the cell line: ${t}`);
    assert.match(t, /return 1 \/ 0/, `the source line is shown: ${t}`);
    assert.match(t, /ZeroDivisionError: division by zero/, t);
    assert.doesNotMatch(t, /File "<string>"/, `no driver frames in the traceback: ${t}`);
    assert.equal(outValue(await py('z')), '7', 'lines before the exception ran');
    const later = text(await py('boom()'));
    assert.match(later, /File "<cell-\d+>", line 3, in boom\n +return 1 \/ 0/,
      `a function from an earlier cell shows its own source line: ${later}`);
    const src = await py('import inspect\ninspect.getsource(double)');
    assert.match(outValue(src), /return v \* 2/, `inspect finds the source of an earlier cell: ${show(src)}`);
    const syn = text(await py('x = (\n'));
    assert.match(syn, /SyntaxError/, syn);
  });

  test('a pandas analysis of a CSV written with run_command returns the right numbers', async () => {
    const rows = [['east', 10], ['west', 20], ['east', 30], ['north', 5], ['west', 40], ['east', 60]];
    const csv = 'region,amount\n' + rows.map((r) => r.join(',')).join('\n') + '\n';
    await srv.sh(`printf '%s' '${csv}' > sales.csv`, { session_id: sid });
    const res = await py([
      'import pandas as pd',
      "df = pd.read_csv('sales.csv')",
      "g = df.groupby('region')['amount'].sum()",
      "d = df['amount'].describe()",
      "print(g.to_json())",
      "print(d.to_json())",
      'len(df)',
    ].join('\n'), { timeout_s: 60 });
    assert.equal(outValue(res), '6');
    const [sums, desc] = stdoutOf(res).trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(sums, { east: 100, north: 5, west: 60 });
    const amounts = rows.map((r) => r[1]);
    const mean = amounts.reduce((a, b) => a + b, 0) / amounts.length;
    const std = Math.sqrt(amounts.reduce((a, b) => a + (b - mean) ** 2, 0) / (amounts.length - 1));
    assert.equal(desc.count, 6);
    assert.ok(Math.abs(desc.mean - mean) < 1e-9, `mean ${desc.mean} vs ${mean}`);
    assert.ok(Math.abs(desc.std - std) < 1e-9, `std ${desc.std} vs ${std}`);
    assert.equal(desc.min, 5);
    assert.equal(desc.max, 60);
    assert.equal(desc['50%'], 25);
  });

  test('a matplotlib chart comes back as a PNG image block, downscaled past 1600 px', async () => {
    const res = await py([
      'import matplotlib.pyplot as plt',
      'fig = plt.figure(figsize=(20, 10))',
      'plt.plot([1, 2, 3], [4, 1, 9])',
      "plt.title('wide')",
      'plt.show()',
      'small = plt.figure(figsize=(4, 3), dpi=100)',
      'plt.bar(["a", "b"], [1, 2])',
    ].join('\n'), { timeout_s: 60 });
    const images = res.content.filter((c) => c.type === 'image');
    assert.equal(images.length, 2, `two figures: ${show(res)}`);
    for (const img of images) assert.equal(img.mimeType, 'image/png');
    const big = pngSize(Buffer.from(images[0].data, 'base64'));
    assert.deepEqual(big, { width: 1600, height: 800 }, 'the 20x10 in figure is scaled to a 1600 px long side');
    const small = pngSize(Buffer.from(images[1].data, 'base64'));
    assert.deepEqual(small, { width: 400, height: 300 }, 'a small figure keeps its size');
    const again = await py('import matplotlib.pyplot as plt\nlen(plt.get_fignums())');
    assert.equal(outValue(again), '0', 'returned figures were closed');
    assert.equal(again.content.filter((c) => c.type === 'image').length, 0);
  });

  test('files the code creates or changes are listed', async () => {
    const res = await py("open('made.txt', 'w').write('hello')\nopen('sales.csv', 'a').write('south,1\\n')");
    const t = text(res);
    assert.match(t, /created made\.txt \(5 bytes\)/, t);
    assert.match(t, /modified sales\.csv/, t);
    const links = res.content.filter((c) => c.type === 'resource_link').map((c) => c.uri).sort();
    assert.deepEqual(links, [`sandbox://${sid}/workspace/made.txt`, `sandbox://${sid}/workspace/sales.csv`],
      'created and modified files are linked as resources');
    const back = await srv.client.readResource({ uri: links[0] });
    assert.equal(back.contents[0].text, 'hello', 'the link reads back the file');
  });

  test('`while True: pass` with timeout_s 2 is interrupted in < 4 s and the state is kept', async () => {
    await py('kept = "still here"');
    const t0 = Date.now();
    const res = await srv.call('run_python', { code: 'while True: pass', session_id: sid, timeout_s: 2 });
    const secs = (Date.now() - t0) / 1000;
    assert.ok(secs < 4, `returned after ${secs.toFixed(2)} s`);
    assert.equal(res.isError, true, show(res));
    assert.equal(res.structuredContent?.error?.code, 'timeout', show(res));
    assert.match(text(res), /KeyboardInterrupt/, show(res));
    assert.match(text(res), /state was kept/, show(res));
    assert.equal(outValue(await py('kept')), "'still here'");
  });

  test('code that blocks SIGINT is killed after the grace period: state lost, the next call works', async () => {
    await py('doomed = 1');
    const t0 = Date.now();
    const res = await srv.call('run_python', {
      code: 'import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\ntime.sleep(60)',
      session_id: sid,
      timeout_s: 2,
    });
    const secs = (Date.now() - t0) / 1000;
    assert.ok(secs < 15, `returned after ${secs.toFixed(1)} s`);
    assert.equal(res.isError, true, show(res));
    assert.equal(res.structuredContent?.error?.code, 'timeout', show(res));
    assert.match(text(res), /state was lost/, show(res));
    const next = await py('doomed');
    assert.match(text(next), /NameError: name 'doomed' is not defined/, `a new interpreter: ${show(next)}`);
    assert.match(text(next), /new interpreter started/, show(next));
    assert.equal(outValue(await py('40 + 2')), '42');
    const ps = await srv.sh('ps -eo args', { session_id: sid });
    assert.equal(ps.stdout.split('\n').filter((l) => l.startsWith('python3 -c')).length, 1,
      `one interpreter runs, the killed one is gone:\n${ps.stdout}`);
  });

  test('output with framing bytes, NUL, invalid UTF-8 and 10 MB of text does not break the protocol', async () => {
    await py('marker = 99');
    const frames = "b'h\\x00\\x00\\x00\\x02{}r\\x00\\x00\\x00\\x0a{\"cell\":1}o\\xff\\xff\\xff\\xff'";
    const res = await py([
      'import sys, os',
      `sys.stdout.buffer.write(${frames} + b'\\x00\\x00 nul \\xc3\\x28 \\xff\\xfe bad utf-8\\n')`,
      'sys.stdout.flush()',
      `os.write(1, ${frames})`,
      `os.write(2, ${frames} + b'\\n')`,
      "os.system('printf \"\\\\000\\\\001r\\\\000\\\\000\\\\000\\\\001x\\\\n\"')",
      "print('\\udcff lone surrogate')",
      "'end'",
    ].join('\n'));
    assert.equal(outValue(res), "'end'");
    const out = stdoutOf(res);
    assert.match(out, /\0\0 nul/, `NUL bytes and the text after them arrived: ${JSON.stringify(out)}`);
    assert.ok(out.startsWith('h\0\0\0\x02{}r\0\0\0\n{"cell":1}o'), `the fake frames are plain output: ${JSON.stringify(out.slice(0, 40))}`);
    assert.match(out, /bad utf-8/, JSON.stringify(out));
    assert.match(out, /lone surrogate/, JSON.stringify(out));
    assert.match(text(res), /stderr:\n/, 'the stderr block is there');

    const t0 = Date.now();
    const big = await py("import sys\nsys.stdout.write('y' * 10_000_000 + '\\n')\nprint('tail line')\n'done'",
      { timeout_s: 60 }, { timeoutMs: 90000 });
    const secs = (Date.now() - t0) / 1000;
    assert.equal(outValue(big), "'done'");
    const bigOut = stdoutOf(big);
    assert.ok(bigOut.length < 40000, `stdout is capped: ${bigOut.length} chars`);
    assert.match(bigOut, /bytes? (left out|omitted|elided)|\d{6,} bytes/, `a marker says what was cut: ${bigOut.slice(16000, 16600)}`);
    assert.ok(bigOut.endsWith('tail line\n'), 'the tail is kept');
    const saved = /The full stdout \((\d+) bytes\) is saved at (\S+)/.exec(text(big));
    assert.ok(saved, `the full stdout is saved in the workspace: ${text(big).slice(-600)}`);
    assert.equal(Number(saved[1]), 10000011, 'every byte was counted');
    const wc = await srv.sh(`wc -c < '${saved[2]}'; tail -c 10 '${saved[2]}'`, { session_id: sid });
    assert.equal(wc.stdout, '10000011\ntail line\n', 'the saved file holds all of it');
    console.log(`# 10 MB of output through run_python: ${secs.toFixed(2)} s`);
    assert.equal(outValue(await py('marker')), '99', 'the same interpreter answers the next call');
  });

  test('a call with a progressToken gets progress notifications carrying its output while it runs', async () => {
    const seen = [];
    const t0 = Date.now();
    const res = await srv.client.callTool(
      {
        name: 'run_python',
        arguments: { code: 'import time\nfor i in range(5):\n    print(f"line {i}", flush=True)\n    time.sleep(1)', session_id: sid },
      },
      undefined,
      { timeout: 60000, onprogress: (p) => seen.push({ ...p, at: Date.now() - t0 }) },
    );
    assert.ok(!res.isError, show(res));
    assert.equal(stdoutOf(res), 'line 0\nline 1\nline 2\nline 3\nline 4\n');
    assert.ok(seen.length >= 3, `at least 3 progress notifications in 5 s: ${JSON.stringify(seen)}`);
    assert.ok(seen.some((p) => /line [0-3]/.test(p.message ?? '')), `messages carry output lines: ${JSON.stringify(seen)}`);
    assert.ok(seen[0].at < 3000, `the first came while the code ran (${seen[0].at} ms)`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress, 'progress grows');
  });

  test('cancelling a running run_python stops it; the server answers and the session still works', async () => {
    await py('before_cancel = "kept"');
    const ac = new AbortController();
    const t0 = Date.now();
    const pending = srv.call('run_python', { code: 'import time\ntime.sleep(30)', session_id: sid },
      { signal: ac.signal, timeoutMs: 60000 });
    await sleep(1000);
    ac.abort('test cancels');
    await assert.rejects(pending, 'the aborted call rejects');
    await srv.client.ping({ timeout: 5000 });
    const next = await py('before_cancel', {}, { timeoutMs: 20000 });
    const secs = (Date.now() - t0) / 1000;
    assert.equal(outValue(next), "'kept'", 'interrupted, not killed: the state is kept');
    assert.ok(secs < 10, `the next call answered ${secs.toFixed(1)} s after the start, not after the sleep`);
  });

  test('fresh: true runs in a one-off interpreter and leaves the persistent one alone', async () => {
    await py('persistent_var = 5');
    const f = await py("fresh_var = 1\n'persistent_var' in globals()", { fresh: true });
    assert.equal(outValue(f), 'False', 'the fresh interpreter does not see the persistent state');
    assert.match(text(f), /fresh interpreter/, text(f));
    const back = await py("persistent_var, 'fresh_var' in globals()");
    assert.equal(outValue(back), '(5, False)');
  });

  test('the closing line carries the cell\'s cpu and max rss, as run_command\'s does', async () => {
    const usage = (res) => {
      const m = /, (\d+) ms, cpu (\d+) ms, max rss (\d+) KiB[,\]]/.exec(text(res));
      assert.ok(m, `usage in the closing line: ${text(res)}`);
      return { ms: Number(m[1]), cpu: Number(m[2]), rss: Number(m[3]) };
    };
    // 300 ms of CPU and a 200 MiB buffer touched page by page in the interpreter itself
    const big = usage(await py('import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n' +
      'b = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\ndel b'));
    assert.ok(big.cpu >= 250 && big.cpu <= big.ms + 100, `cpu ${big.cpu} ms of ${big.ms} ms`);
    assert.ok(big.rss >= 200 * 1024, `max rss ${big.rss} KiB >= 200 MiB`);
    // the peak is the cell's own: the next small cell does not inherit the 200 MiB
    const small = usage(await py('1+1'));
    assert.ok(small.rss < 150 * 1024, `a small cell's max rss ${small.rss} KiB is its own`);
    assert.ok(small.cpu < 200, `1+1 cpu ${small.cpu} ms`);
    // a child the cell waits for: its CPU and its peak count
    const child = usage(await py('import subprocess\nsubprocess.run(["python3", "-c", ' +
      '"import time\\nb = bytearray(300 << 20)\\nfor i in range(0, len(b), 4096): b[i] = 1\\n' +
      't = time.process_time()\\nwhile time.process_time() - t < 0.2: pass"], check=True)'));
    assert.ok(child.rss >= 300 * 1024, `the child's max rss counts: ${child.rss} KiB`);
    assert.ok(child.cpu >= 150, `the child's cpu counts: ${child.cpu} ms`);
  });

  test('1+1 warm latency', async () => {
    await py('1+1');
    const ms = [];
    for (let i = 0; i < 30; i++) {
      const t0 = process.hrtime.bigint();
      const res = await py('1+1');
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
      assert.equal(outValue(res), '2');
    }
    ms.sort((a, b) => a - b);
    console.log(`# run_python 1+1 through the SDK: median ${ms[15].toFixed(2)} ms, max ${ms[29].toFixed(2)} ms`);
    assert.ok(ms[15] < 50, `median ${ms[15].toFixed(2)} ms`);
  });

  test('an image without python3: python_not_found naming an image to use; run_command still works', async () => {
    const probe = await docker(['image', 'inspect', 'debian:bookworm-slim']);
    if (probe.code !== 0) {
      console.log('# debian:bookworm-slim is not on this engine; skipped');
      return;
    }
    const bare = (await srv.createSession({ image: 'debian:bookworm-slim', name: 'bare' })).session_id;
    const t0 = Date.now();
    const st = await srv.fails('run_python', { code: '1+1', session_id: bare }, 'python_not_found');
    assert.ok(Date.now() - t0 < 20000, 'answered without hanging');
    assert.match(st.error.message, /sandbox-mcp-python/, `the message names an image with Python: ${st.error.message}`);
    assert.match(st.error.message, /python3/, st.error.message);
    const sh = await srv.sh('echo ok', { session_id: bare });
    assert.equal(sh.stdout, 'ok\n');
    await srv.ok('session_close', { session_id: bare });
  });
});

describe('run_python with SANDBOX_OUTBOX', suite({ timeout: 120000 }), () => {
  let base;
  before(() => {
    requireEngine();
    base = mkdtempSync(join(tmpdir(), 'sandbox-mcp-outbox-'));
    mkdirSync(join(base, 'allowed', 'outbox'), { recursive: true });
  });
  after(async () => {
    await cleanup();
    rmSync(base, { recursive: true, force: true });
  });

  const plot = 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()';

  test('figures are also written to the outbox, named in the text, without exec bits', async () => {
    const allowed = join(base, 'allowed');
    const srv = await Server.start('outbox', { SANDBOX_HOST_DIRS: allowed, SANDBOX_OUTBOX: join(allowed, 'outbox') });
    const res = await srv.call('run_python', { code: plot });
    assert.ok(!res.isError, show(res));
    const t = text(res);
    const m = /Figure 1 is also saved on the host: (\S+\.png)/.exec(t);
    assert.ok(m, `the text names the host file: ${t}`);
    assert.equal(dirname(m[1]), realpathSync(join(allowed, 'outbox')));
    const png = readFileSync(m[1]);
    const img = res.content.find((c) => c.type === 'image');
    assert.ok(img && Buffer.from(img.data, 'base64').equals(png), 'the same PNG as the image block');
    assert.equal(statSync(m[1]).mode & 0o111, 0, 'no exec bits');
    await srv.close();
  });

  test('an outbox outside SANDBOX_HOST_DIRS is not used, and says so on stderr', async () => {
    const srv = await Server.start('outbox-outside', {
      SANDBOX_HOST_DIRS: join(base, 'allowed'), SANDBOX_OUTBOX: base,
    });
    const res = await srv.call('run_python', { code: plot });
    assert.ok(!res.isError, show(res));
    assert.doesNotMatch(text(res), /saved on the host/);
    assert.equal(res.content.filter((c) => c.type === 'image').length, 1, 'the figure still comes back');
    assert.deepEqual(readdirSync(base).sort(), ['allowed'], 'nothing written outside the allowed folder');
    assert.match(srv.stderrTail, /SANDBOX_OUTBOX: .*outside the allowed host directories/);
    await srv.close();
  });
});
