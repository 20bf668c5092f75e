// What real clients do with a result, held against ours:
// - Codex CLI gives the model only structuredContent when a result has it, so
//   a failed call must carry its output and traceback there (error.output);
// - Claude Code hands the model a 2 KB preview of a result over ~50 KB, so a
//   whole result stays under 50,000 bytes and its short facts (exit code,
//   truncation, saved files, stderr) come within the first 2 KB;
// - Gemini CLI adds wait_for_previous to every call's arguments.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, suite, requireEngine, cleanup, show } from '../lib/harness.mjs';

const PREVIEW_BYTES = 2000;
const CLAUDE_LIMIT = 50000;

/** The result as a client receives it, serialized. */
function wireSize(res) {
  const { content, structuredContent, isError } = res;
  return Buffer.byteLength(JSON.stringify({ content, structuredContent, isError }));
}

/** The content's text blocks joined, as a preview would show them. */
function textOf(res) {
  return res.content.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
}

describe('results as real clients see them', suite({ timeout: 240000 }), () => {
  let srv;
  let sid;

  before(async () => {
    requireEngine();
    srv = await Server.start('client-results');
    sid = (await srv.createSession({ name: 'client-results' })).session_id;
  });

  after(async () => {
    await cleanup();
  });

  test('a run_python timeout carries stdout and the traceback in structuredContent (Codex)', async () => {
    const res = await srv.call('run_python', {
      session_id: sid, timeout_s: 2,
      code: 'import sys, time\nprint("made it to step 3")\nprint("warning: slow", file=sys.stderr)\ntime.sleep(30)',
    });
    assert.equal(res.isError, true, `a timeout is a failed call: ${show(res)}`);
    const error = res.structuredContent?.error;
    assert.equal(error?.code, 'timeout', show(res));
    assert.equal(typeof error.output, 'string', `error.output holds the result's text: ${show(res)}`);
    assert.match(error.output, /made it to step 3/, 'stdout is in error.output');
    assert.match(error.output, /warning: slow/, 'stderr is in error.output');
    assert.match(error.output, /KeyboardInterrupt/, 'the traceback is in error.output');
    assert.ok(!error.output.includes('Error (timeout)'), 'the error message itself is not repeated');
  });

  test('both streams full: the whole result is under 50,000 bytes, the facts in its first 2 KB (Claude Code)', async () => {
    // 200 kB on each stream, lines of 7 bytes (escaping adds one byte per line)
    const res = await srv.call('run_command', {
      session_id: sid,
      command: 'seq 100000 130000 >&2; seq 100000 130000; echo "the last words on stderr" >&2; exit 3',
    });
    const size = wireSize(res);
    assert.ok(size < CLAUDE_LIMIT, `result is ${size} bytes, over ${CLAUDE_LIMIT}`);
    const head = textOf(res).slice(0, PREVIEW_BYTES);
    assert.match(head, /exit code 3/, `exit code in the first 2 KB: ${head}`);
    assert.match(head, /truncated/, `truncation in the first 2 KB: ${head}`);
    assert.match(head, /full stdout .* is saved at \S+/, `saved stdout in the first 2 KB: ${head}`);
    assert.match(head, /full stderr .* is saved at \S+/, `saved stderr in the first 2 KB: ${head}`);
    assert.match(head, /the last words on stderr/, `the end of stderr in the first 2 KB: ${head}`);
    // Claude Code passes on only structuredContent, as JSON: the facts lead there too
    const jhead = JSON.stringify(res.structuredContent).slice(0, PREVIEW_BYTES);
    for (const key of ['"exit_code":3', '"truncated":true', '"output_files":', '"stderr_bytes":']) {
      assert.ok(jhead.includes(key), `${key} in the first 2 KB of structuredContent: ${jhead}`);
    }
    const st = res.structuredContent;
    assert.equal(st.truncated, true);
    assert.match(st.stderr, /the last words on stderr\n$/, 'structuredContent keeps the tail of stderr');
  });

  test('output that escapes badly is still held under 50,000 bytes', async () => {
    // control bytes serialize as \u00XX: six bytes each in JSON
    const res = await srv.call('run_command', {
      session_id: sid,
      command: 'head -c 300000 /dev/zero | tr "\\0" "\\001"; head -c 300000 /dev/zero | tr "\\0" "\\002" >&2',
    });
    const size = wireSize(res);
    assert.ok(size < CLAUDE_LIMIT, `result is ${size} bytes, over ${CLAUDE_LIMIT}`);
    assert.match(textOf(res), /bytes cut to keep the result under/, 'the cut is marked');
    assert.match(textOf(res).slice(0, PREVIEW_BYTES), /exit code 0/, 'the facts still lead');
  });

  test('file_read of a long text without a length: a part that fits, ending on a line, naming the next offset', async () => {
    await srv.sh('seq -f "line %06g of a long text file" 1 4000 > long.txt', { session_id: sid }); // 104 kB
    const res = await srv.call('file_read', { session_id: sid, path: 'long.txt' });
    assert.ok(!res.isError, show(res));
    const size = wireSize(res);
    assert.ok(size < CLAUDE_LIMIT, `result is ${size} bytes, over ${CLAUDE_LIMIT}`);
    const texts = res.content.filter((b) => b.type === 'text').map((b) => b.text);
    const m = /bytes 0-(\d+) shown/.exec(texts[0]);
    assert.ok(m, `the first line says which bytes are shown: ${texts[0]}`);
    const part = texts.find((t) => t.startsWith('line 000001'));
    assert.ok(part?.endsWith('\n'), 'the part ends on a line');
    assert.equal(Buffer.byteLength(part), Number(m[1]), 'the part is the bytes it says');
    assert.ok(texts.some((t) => t.includes(`offset ${m[1]} reads the next part`)), `the next offset is named: ${texts.join(' | ').slice(-500)}`);
    const next = await srv.call('file_read', { session_id: sid, path: 'long.txt', offset: Number(m[1]), length: 40 });
    const last = Number(/^line (\d+)/.exec(part.trimEnd().split('\n').pop())[1]);
    assert.ok(next.content.some((b) => b.type === 'text' && b.text.startsWith(`line ${String(last + 1).padStart(6, '0')}`)),
      `the next part starts on the next line: ${show(next)}`);
  });

  test('an argument a client adds is ignored; a misspelled one is refused with a suggestion (Gemini)', async () => {
    const st = await srv.ok('run_command', { session_id: sid, command: 'echo hi', wait_for_previous: true });
    assert.equal(st.stdout, 'hi\n');
    const bad = await srv.fails('run_command', { session_id: sid, command: 'sleep 0', timeout: 5 }, 'invalid_argument');
    assert.match(bad.error.message, /did you mean 'timeout_s'\?/, JSON.stringify(bad));
  });
});
