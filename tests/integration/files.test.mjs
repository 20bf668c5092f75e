// The file tools against the real engine: bytes in and out of a sandbox as
// tar streams through a tar run by the sandbox user, byte-identical round
// trips (20 MiB of random bytes), awkward names and modes, all-or-nothing
// patches, and hostile containers that plant links, fifos and a lying tar.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import {
  mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync, lstatSync, statSync, symlinkSync, rmSync,
  existsSync, chmodSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Server, suite, requireEngine, cleanup, show, docker, serverIsSanitized,
} from '../lib/harness.mjs';

const sha256 = (b) => createHash('sha256').update(b).digest('hex');
const MiB = 1 << 20;
// server peak RSS bound while 20 MiB of base64 pass through: the bar is 3x the file.
// The content is lifted out of the line and held once (src/bulk.h): measured 1.7x writing,
// 1.85x reading in 6 MiB parts (was 2.8-3.3x when jansson held it twice); 2.5x leaves room
// for baseline without letting a second copy back in
const B64_RSS_CAP_KIB = serverIsSanitized() ? 10 * 20 * 1024 : Math.round(2.5 * 20 * 1024);
// host upload and download stream: 16 MiB whatever the size (the bar docs/TESTING.md sets)
const HOST_RSS_CAP_KIB = (serverIsSanitized() ? 64 : 16) * 1024;

/** The text blocks of a result, joined. */
function texts(res) {
  return res.content.filter((c) => c.type === 'text').map((c) => c.text);
}

describe('file tools inside a sandbox', suite({ timeout: 300000 }), () => {
  let srv;
  let sid;
  let cid;

  before(async () => {
    requireEngine();
    srv = await Server.start('files', { SANDBOX_TIMEOUT_S: 60 });
    const st = await srv.createSession({ name: 'files' });
    sid = st.session_id;
    cid = st.container_id;
  });

  after(async () => {
    await cleanup();
  });

  test('text round trip: file_write creates parent dirs, owned by the sandbox user; file_read returns it', async () => {
    const w = await srv.ok('file_write', { path: 'a/b/c/hello.txt', content: 'héllo\nwörld\n', session_id: sid });
    assert.equal(w.path, '/workspace/a/b/c/hello.txt');
    assert.equal(w.bytes, Buffer.byteLength('héllo\nwörld\n'));
    const r = await srv.call('file_read', { path: 'a/b/c/hello.txt', session_id: sid });
    assert.ok(!r.isError, show(r));
    assert.ok(texts(r).includes('héllo\nwörld\n'), `the text comes back: ${show(r)}`);
    const st = await srv.sh('stat -c "%U %a" a/b/c/hello.txt a/b/c', { session_id: sid });
    assert.deepEqual(st.stdout.trim().split('\n'), ['sandbox 644', 'sandbox 755']);
  });

  test('20 MiB of random bytes: file_write(base64) -> file_read in parts is byte-identical, RSS bounded', async () => {
    // a server of its own without MALLOC_PERTURB_ (which meson sets for tests): glibc then
    // writes every byte it hands out, so RSS would measure buffer capacity, not use
    const m = await Server.start('files-rss', { SANDBOX_TIMEOUT_S: 60, MALLOC_PERTURB_: undefined });
    const msid = (await m.createSession({ name: 'files-rss' })).session_id;
    const data = randomBytes(20 * MiB);
    const t0 = Date.now();
    const w = await m.ok('file_write', {
      path: 'bin/random.bin', content: data.toString('base64'), encoding: 'base64', session_id: msid,
    }, { timeoutMs: 120000 });
    const tw = Date.now() - t0;
    const rssWrite = m.peakRssKiB();
    assert.equal(w.bytes, data.length);
    const inside = await m.sh('sha256sum bin/random.bin', { session_id: msid });
    assert.equal(inside.stdout.split(/\s+/)[0], sha256(data), 'the file in the sandbox has the same sha256');

    // one result stays under the SDK's 10 MiB message cap: the whole file is refused, parts are not
    const big = await m.fails('file_read', { path: 'bin/random.bin', session_id: msid }, 'too_large');
    assert.match(big.error.message, /offset and length/);
    const t1 = Date.now();
    const parts = [];
    const PART = 6 * MiB;
    for (let off = 0; off < data.length; off += PART) {
      const r = await m.call('file_read', { path: 'bin/random.bin', offset: off, length: PART, session_id: msid },
        { timeoutMs: 120000 });
      assert.ok(!r.isError, show(r));
      const blob = r.content.find((c) => c.type === 'resource');
      assert.ok(blob, `binary comes back as an embedded resource: ${show(r)}`);
      assert.equal(blob.resource.mimeType, 'application/octet-stream');
      assert.equal(blob.resource.uri, `sandbox://${msid}/workspace/bin/random.bin`);
      parts.push(Buffer.from(blob.resource.blob, 'base64'));
    }
    const tr = Date.now() - t1;
    const back = Buffer.concat(parts);
    assert.equal(back.length, data.length);
    assert.equal(sha256(back), sha256(data), 'byte-identical');
    const rss = m.peakRssKiB();
    console.log(`# 20 MiB base64: write ${tw} ms (server VmHWM ${rssWrite} KiB), read in ${parts.length} parts ` +
      `${tr} ms, VmHWM after ${rss} KiB (cap ${B64_RSS_CAP_KIB})`);
    assert.ok(rss < B64_RSS_CAP_KIB, `peak RSS ${rss} KiB is under ${B64_RSS_CAP_KIB} KiB`);
    await m.close();
  });

  test('6 MiB of text full of escapes, quotes, accents and emoji arrive byte-identical', async () => {
    // a line this big has its content lifted out and decoded by sandbox-mcp itself, not jansson
    const unit = 'line "quoted" \\ back\tslash / é € 😀 \u0001\r\n';
    const text = unit.repeat(Math.ceil((6 * MiB) / Buffer.byteLength(unit)));
    const w = await srv.ok('file_write', { path: 'escapes.txt', content: text, session_id: sid }, { timeoutMs: 120000 });
    assert.equal(w.bytes, Buffer.byteLength(text));
    const inside = await srv.sh('sha256sum escapes.txt', { session_id: sid });
    assert.equal(inside.stdout.split(/\s+/)[0], sha256(Buffer.from(text, 'utf8')));
  });

  test('offset and length read part of a file', async () => {
    await srv.ok('file_write', { path: 'digits.txt', content: '0123456789', session_id: sid });
    const r = await srv.call('file_read', { path: 'digits.txt', offset: 3, length: 4, session_id: sid });
    assert.ok(texts(r).includes('3456'), show(r));
    assert.match(texts(r)[0], /10 bytes.*bytes 3-7 shown/);
  });

  test('images come back as image content', async () => {
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
    await srv.ok('file_write', { path: 'dot.png', content: png.toString('base64'), encoding: 'base64', session_id: sid });
    const r = await srv.call('file_read', { path: 'dot.png', session_id: sid });
    const img = r.content.find((c) => c.type === 'image');
    assert.ok(img, show(r));
    assert.equal(img.mimeType, 'image/png');
    assert.equal(img.data, png.toString('base64'));
  });

  test('names, empty files and modes survive', async () => {
    const names = ['ünïcödé ñame.txt', 'with  spaces .txt', '-dash.txt', 'x'.repeat(200)];
    for (const n of names) {
      await srv.ok('file_write', { path: `names/${n}`, content: `content of ${n}`, session_id: sid });
      const r = await srv.call('file_read', { path: `names/${n}`, session_id: sid });
      assert.ok(texts(r).includes(`content of ${n}`), `${n}: ${show(r)}`);
    }
    await srv.ok('file_write', { path: 'names/empty', content: '', session_id: sid });
    const e = await srv.call('file_read', { path: 'names/empty', session_id: sid });
    assert.ok(!e.isError && texts(e).includes(''), show(e));
    await srv.ok('file_write', { path: 'names/run.sh', content: '#!/bin/sh\necho hi\n', mode: '755', session_id: sid });
    const x = await srv.sh('./names/run.sh && stat -c %a names/run.sh', { session_id: sid });
    assert.equal(x.stdout, 'hi\n755\n');
    // replacing a file without mode keeps its mode
    await srv.ok('file_write', { path: 'names/run.sh', content: '#!/bin/sh\necho again\n', session_id: sid });
    assert.equal((await srv.sh('./names/run.sh && stat -c %a names/run.sh', { session_id: sid })).stdout, 'again\n755\n');
  });

  test('overwrite: false refuses an existing file; directories and missing files are clear errors', async () => {
    await srv.ok('file_write', { path: 'once.txt', content: 'one', session_id: sid });
    await srv.fails('file_write', { path: 'once.txt', content: 'two', overwrite: false, session_id: sid }, 'file_exists');
    assert.ok(texts(await srv.call('file_read', { path: 'once.txt', session_id: sid })).includes('one'));
    await srv.fails('file_read', { path: 'nope.txt', session_id: sid }, 'file_not_found');
    const d = await srv.fails('file_read', { path: 'a', session_id: sid }, 'invalid_argument');
    assert.match(d.error.message, /is a directory/);
    await srv.fails('file_write', { path: 'a/b', content: 'x', session_id: sid }, 'invalid_argument');
    await srv.fails('file_read', { path: '/etc/shadow', session_id: sid }, 'invalid_argument');
    await srv.fails('file_write', { path: '/usr/bin/python3', content: 'x', session_id: sid }, 'invalid_argument');
    await srv.fails('file_write', { path: 'x.bin', content: 'not base64!', encoding: 'base64', session_id: sid },
      'invalid_argument');
    await srv.fails('file_write', { path: 'x.bin', content: 'QQ==QQ==', encoding: 'base64', session_id: sid },
      'invalid_argument');
  });

  test('file_patch: all or nothing, the error names the patch that did not match', async () => {
    const orig = 'alpha\nbeta\ngamma\nbeta\n';
    await srv.ok('file_write', { path: 'p.txt', content: orig, session_id: sid });
    const f = await srv.fails('file_patch', {
      path: 'p.txt', session_id: sid,
      patches: [{ old: 'alpha', new: 'ALPHA' }, { old: 'delta', new: 'DELTA' }, { old: 'gamma', new: 'GAMMA' }],
    }, 'patch_no_match');
    assert.match(f.error.message, /patch 2 of 3/);
    assert.match(f.error.message, /delta/);
    assert.ok(texts(await srv.call('file_read', { path: 'p.txt', session_id: sid })).includes(orig), 'file unchanged');
    // "beta" occurs twice: without count it is ambiguous
    const amb = await srv.fails('file_patch', { path: 'p.txt', session_id: sid, patches: [{ old: 'beta', new: 'B' }] },
      'patch_no_match');
    assert.match(amb.error.message, /occurs 2 times/);
    const ok = await srv.ok('file_patch', {
      path: 'p.txt', session_id: sid,
      patches: [{ old: 'alpha', new: 'ALPHA' }, { old: 'beta', new: 'BETA', count: 2 }, { old: 'gamma\n', new: '' }],
    });
    assert.deepEqual(ok.patches, [{ patch: 1, replacements: 1 }, { patch: 2, replacements: 2 }, { patch: 3, replacements: 1 }]);
    assert.ok(texts(await srv.call('file_read', { path: 'p.txt', session_id: sid })).includes('ALPHA\nBETA\nBETA\n'));
  });

  test('file_delete: files, empty and non-empty directories', async () => {
    await srv.ok('file_write', { path: 'del/sub/f.txt', content: 'x', session_id: sid });
    const nr = await srv.fails('file_delete', { path: 'del', session_id: sid }, 'invalid_argument');
    assert.match(nr.error.message, /recursive/);
    assert.equal((await srv.ok('file_delete', { path: 'del/sub/f.txt', session_id: sid })).type, 'file');
    assert.equal((await srv.ok('file_delete', { path: 'del/sub', session_id: sid })).type, 'directory');
    await srv.ok('file_write', { path: 'del/sub/g.txt', content: 'x', session_id: sid });
    await srv.ok('file_delete', { path: 'del', recursive: true, session_id: sid });
    await srv.fails('file_delete', { path: 'del', session_id: sid }, 'file_not_found');
    await srv.fails('file_delete', { path: '.', session_id: sid }, 'invalid_argument');
  });

  test('resources: the template, the workspace files of live sessions (paged), reads, links in tool results', async () => {
    const tpl = await srv.client.listResourceTemplates();
    assert.deepEqual(tpl.resourceTemplates.map((t) => t.uriTemplate), ['sandbox://{session_id}/{path}', 'sandbox-egress://{session_id}']);
    const w = await srv.call('file_write', { path: 'res/notes.md', content: '# notes\n', session_id: sid });
    const link = w.content.find((c) => c.type === 'resource_link');
    assert.equal(link?.uri, `sandbox://${sid}/workspace/res/notes.md`, `a resource_link: ${show(w)}`);
    assert.equal(link.name, 'notes.md');
    for (let i = 0; i < 120; i++) {
      if (i % 40 === 0) await srv.sh(`for j in $(seq ${i} ${i + 39}); do echo $j > res/many-$j.txt; done`, { session_id: sid });
    }
    const seen = [];
    let cursor;
    let pages = 0;
    do {
      const page = await srv.client.listResources(cursor ? { cursor } : {});
      seen.push(...page.resources);
      cursor = page.nextCursor;
      pages++;
    } while (cursor && pages < 20);
    assert.ok(pages >= 2, `paged (${pages} pages)`);
    const uris = seen.map((r) => r.uri);
    assert.equal(new Set(uris).size, uris.length, 'no resource twice');
    const notes = seen.find((r) => r.uri === link.uri);
    assert.ok(notes, 'the written file is listed');
    assert.equal(notes.mimeType, 'text/markdown');
    assert.ok(uris.includes(`sandbox://${sid}/workspace/res/many-119.txt`));
    assert.ok(!uris.some((u) => u.includes('/.')), 'hidden files are not listed');

    const text = await srv.client.readResource({ uri: link.uri });
    assert.deepEqual(text.contents, [{ uri: link.uri, mimeType: 'text/markdown', text: '# notes\n' }]);
    const png = await srv.client.readResource({ uri: `sandbox://${sid}/workspace/dot.png` });
    assert.equal(png.contents[0].mimeType, 'image/png');
    assert.match(png.contents[0].blob, /^iVBORw0KGgo/);
    const spaced = await srv.client.readResource({ uri: `sandbox://${sid}/workspace/names/with%20%20spaces%20.txt` });
    assert.equal(spaced.contents[0].text, 'content of with  spaces .txt');
    for (const uri of [`sandbox://${sid}/workspace/res/missing.txt`, 'sandbox://000000000000/workspace/x',
      'file:///etc/passwd', `sandbox://${sid}/`]) {
      await assert.rejects(srv.client.readResource({ uri }), (e) => e.code === -32002, `${uri}: resource not found`);
    }
    await srv.sh('rm -rf res', { session_id: sid });
  });

  test('file_list: types, sizes, modes, depth, hidden entries, links shown as links', async () => {
    await srv.sh('mkdir -p ls/sub/deep && printf 12345 > ls/five && : > ls/.hidden && ln -s /etc ls/etc-link && ' +
      'mkfifo ls/fifo && printf x > "ls/sub/new\nline" && chmod 600 ls/five', { session_id: sid });
    const one = await srv.ok('file_list', { path: 'ls', session_id: sid });
    assert.equal(one.path, '/workspace/ls');
    const byPath = Object.fromEntries(one.entries.map((e) => [e.path, e]));
    assert.deepEqual(Object.keys(byPath), ['etc-link', 'fifo', 'five', 'sub'], 'sorted, hidden left out, depth 1');
    assert.equal(byPath.five.type, 'file');
    assert.equal(byPath.five.size, 5);
    assert.equal(byPath.five.mode, '0600');
    assert.match(byPath.five.mtime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(byPath.sub.type, 'directory');
    assert.equal(byPath['etc-link'].type, 'symlink');
    assert.equal(byPath['etc-link'].target, '/etc');
    assert.equal(byPath.fifo.type, 'fifo');
    const all = await srv.ok('file_list', { path: 'ls', depth: 3, hidden: true, session_id: sid });
    assert.deepEqual(all.entries.map((e) => e.path),
      ['.hidden', 'etc-link', 'fifo', 'five', 'sub', 'sub/deep', 'sub/new\nline']);
    const dflt = await srv.ok('file_list', { session_id: sid });
    assert.equal(dflt.path, '/workspace');
    assert.ok(dflt.entries.some((e) => e.path === 'ls' && e.type === 'directory'));
    await srv.fails('file_list', { path: 'no/such/dir', session_id: sid }, 'file_not_found');
  });

  test('file_search: regex, glob, ignore_case, max_results, path/line/text', async () => {
    await srv.ok('file_write', { path: 'src/a.py', content: 'def alpha():\n    return 1\n# TODO: beta\n', session_id: sid });
    await srv.ok('file_write', { path: 'src/b.txt', content: 'todo later\nalpha: x\n', session_id: sid });
    await srv.ok('file_write', { path: 'src/c d.py', content: 'x = "alpha"\n', session_id: sid });
    const all = await srv.ok('file_search', { pattern: 'alpha', path: 'src', session_id: sid });
    assert.equal(all.engine, 'rg', 'the image has ripgrep');
    const got = all.matches.map((m) => `${m.path}:${m.line}:${m.text}`).sort();
    assert.deepEqual(got, ['/workspace/src/a.py:1:def alpha():', '/workspace/src/b.txt:2:alpha: x',
      '/workspace/src/c d.py:1:x = "alpha"']);
    const py = await srv.ok('file_search', { pattern: 'al+pha', path: 'src', glob: '*.py', session_id: sid });
    assert.equal(py.matches.length, 2);
    const ic = await srv.ok('file_search', { pattern: 'todo', path: 'src', ignore_case: true, session_id: sid });
    assert.equal(ic.matches.length, 2);
    const one = await srv.ok('file_search', { pattern: 'a', path: 'src', max_results: 1, session_id: sid });
    assert.equal(one.matches.length, 1);
    assert.equal(one.truncated, true);
    const none = await srv.ok('file_search', { pattern: 'zzz_nothing', path: 'src', session_id: sid });
    assert.deepEqual(none.matches, []);
    await srv.fails('file_search', { pattern: '(unclosed', path: 'src', session_id: sid }, 'invalid_argument');
    await srv.fails('file_search', { pattern: 'x', path: 'nowhere', session_id: sid }, 'file_not_found');
  });

  test('file_search falls back to grep when the image has no ripgrep', async () => {
    const deb = (await srv.createSession({ image: 'debian:bookworm-slim' })).session_id;
    await srv.ok('file_write', { path: 'g/one.txt', content: 'needle here\nnothing\n', session_id: deb });
    const r = await srv.ok('file_search', { pattern: 'need+le', path: 'g', session_id: deb });
    assert.equal(r.engine, 'grep');
    assert.deepEqual(r.matches, [{ path: '/workspace/g/one.txt', line: 1, text: 'needle here' }]);
    const l = await srv.ok('file_list', { path: 'g', session_id: deb });
    assert.deepEqual(l.entries.map((e) => e.path), ['one.txt']);
  });
});

/** Whether the container is paused. */
async function inspectPaused(id) {
  const r = await docker(['inspect', '-f', '{{.State.Paused}}', id]);
  return r.stdout.trim() === 'true';
}

/** Every path below dir (relative), with lstat type and mode, sorted. */
function tree(dir) {
  const out = [];
  const walk = (rel) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, r));
      const type = st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
      out.push({ path: r, type, mode: st.mode & 0o7777, size: st.isFile() ? st.size : 0 });
      if (type === 'dir') walk(r);
    }
  };
  walk('');
  return out;
}

// A fake `tar` the sandbox user plants first in PATH (/opt/venv/bin is theirs): `tar -c` sends a
// hand-made hostile stream, anything else runs the real tar.
const LYING_TAR = String.raw`#!/usr/bin/python3
import sys, os, io, tarfile
if '-c' not in sys.argv[1:2] and not any(a.startswith('-c') for a in sys.argv[1:3]):
    os.execv('/usr/bin/tar', ['tar'] + sys.argv[1:])
mode = open('/workspace/.lying-mode').read().strip()
b = io.BytesIO()
t = tarfile.open(fileobj=b, mode='w', format=tarfile.GNU_FORMAT)
def f(name, data=b'x', **kw):
    i = tarfile.TarInfo(name); i.size = len(data); i.mode = 0o755
    for k, v in kw.items(): setattr(i, k, v)
    t.addfile(i, io.BytesIO(data) if i.isreg() else None)
if mode == 'big':
    i = tarfile.TarInfo('./huge'); i.size = 100 << 30
    b.write(i.tobuf(tarfile.GNU_FORMAT)); sys.stdout.buffer.write(b.getvalue()); sys.stdout.flush()
    sys.stdout.buffer.write(b'\0' * (1 << 20) * 64); sys.exit(0)
f('./', type=tarfile.DIRTYPE)
f('./ok.txt', b'fine\n')
f('../../escape', b'escaped')
f('./../../escape2', b'escaped')
f('/tmp/abs-escape', b'escaped')
f('./evil', type=tarfile.SYMTYPE, linkname='/etc/passwd')
f('./evil', b'through the link?')
f('./d', type=tarfile.SYMTYPE, linkname='/')
f('./d/tmp/pwned', b'pwned')
f('./shadow', type=tarfile.LNKTYPE, linkname='/etc/shadow')
f('./fifo', type=tarfile.FIFOTYPE)
f('./null', type=tarfile.CHRTYPE, devmajor=1, devminor=3)
f('./sub/x/../../../escape3', b'escaped')
f('./sub/deep.txt', b'deep')
t.close()
sys.stdout.buffer.write(b.getvalue())
`;

describe('host transfers: file_upload and file_download', suite({ timeout: 300000 }), () => {
  let srv;
  let sid;
  let cid;
  let base; // a private host folder for this run
  let allowed; // SANDBOX_HOST_DIRS
  let outside; // next to it, not allowed

  before(async () => {
    requireEngine();
    base = mkdtempSync(join(tmpdir(), 'sandbox-mcp-files-'));
    allowed = join(base, 'allowed');
    outside = join(base, 'outside');
    mkdirSync(allowed);
    mkdirSync(outside);
    mkdirSync(`${allowed}X`.replace(base, base)); // a sibling whose name starts like the allowed one
    writeFileSync(join(outside, 'secret.txt'), 'host secret\n');
    writeFileSync(join(`${allowed}X`, 'secret.txt'), 'host secret\n');
    // a per-file limit past the 100 GiB sparse file below (the default, 10 GiB, would stop truncate)
    srv = await Server.start('host-files', { SANDBOX_TIMEOUT_S: 60, SANDBOX_HOST_DIRS: allowed, SANDBOX_WORKSPACE_MB: 204800 });
    const st = await srv.createSession({ name: 'host-files' });
    sid = st.session_id;
    cid = st.container_id;
  });

  after(async () => {
    await cleanup();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  test('20 MiB of random bytes: file_upload -> file_download is byte-identical, server RSS bounded', async () => {
    const data = randomBytes(20 * MiB);
    writeFileSync(join(allowed, 'random.bin'), data);
    const up = await srv.ok('file_upload', { host_path: join(allowed, 'random.bin'), path: 'up/random.bin', session_id: sid },
      { timeoutMs: 120000 });
    assert.equal(up.path, '/workspace/up/random.bin');
    assert.equal(up.bytes, data.length);
    const inside = await srv.sh('sha256sum up/random.bin', { session_id: sid });
    assert.equal(inside.stdout.split(/\s+/)[0], sha256(data));
    mkdirSync(join(allowed, 'back'));
    const down = await srv.ok('file_download', { path: 'up/random.bin', host_dir: join(allowed, 'back'), session_id: sid },
      { timeoutMs: 120000 });
    assert.equal(down.host_path, join(allowed, 'back', 'random.bin'));
    assert.equal(down.bytes, data.length);
    assert.equal(sha256(readFileSync(join(allowed, 'back', 'random.bin'))), sha256(data), 'byte-identical');
    assert.deepEqual(readdirSync(join(allowed, 'back')), ['random.bin'], 'no temporary folder left behind');
    const rss = srv.peakRssKiB();
    console.log(`# 20 MiB up and down: server VmHWM ${rss} KiB (cap ${HOST_RSS_CAP_KIB})`);
    assert.ok(rss < HOST_RSS_CAP_KIB, `streamed: peak RSS ${rss} KiB is under ${HOST_RSS_CAP_KIB} KiB`);
  });

  test('a tree: non-ASCII names, spaces, an empty file, empty folders and modes survive both ways', async () => {
    const src = join(allowed, 'tree');
    mkdirSync(join(src, 'empty/deeper/deepest'), { recursive: true });
    mkdirSync(join(src, 'dir with spaces'));
    writeFileSync(join(src, 'ünïcödé naïve.txt'), 'unicode\n');
    writeFileSync(join(src, 'dir with spaces', 'file with spaces.txt'), 'spaces\n');
    writeFileSync(join(src, 'empty.txt'), '');
    writeFileSync(join(src, 'run.sh'), '#!/bin/sh\necho ran\n');
    chmodSync(join(src, 'run.sh'), 0o755);
    symlinkSync('/etc/passwd', join(src, 'link-out'));
    const up = await srv.ok('file_upload', { host_path: src, session_id: sid });
    assert.equal(up.path, '/workspace/tree');
    assert.equal(up.files, 4);
    assert.deepEqual(up.skipped.map((x) => x.name), ['link-out'], 'the symlink is not followed, and said so');
    const l = await srv.ok('file_list', { path: 'tree', depth: 5, session_id: sid });
    const got = l.entries.map((e) => `${e.path} ${e.type} ${e.mode} ${e.type === 'file' ? e.size : ''}`);
    assert.deepEqual(got, [
      'dir with spaces directory 0755 ', 'dir with spaces/file with spaces.txt file 0644 7',
      'empty directory 0755 ', 'empty.txt file 0644 0', 'empty/deeper directory 0755 ',
      'empty/deeper/deepest directory 0755 ', 'run.sh file 0755 19', 'ünïcödé naïve.txt file 0644 8',
    ].sort());
    assert.equal((await srv.sh('./tree/run.sh', { session_id: sid })).stdout, 'ran\n', 'the 0755 script runs');

    mkdirSync(join(allowed, 'tree-back'));
    const down = await srv.ok('file_download', { path: 'tree', host_dir: join(allowed, 'tree-back'), session_id: sid });
    assert.deepEqual(down.skipped, []);
    const back = tree(join(allowed, 'tree-back', 'tree'));
    const want = tree(src).filter((e) => e.type !== 'link');
    assert.deepEqual(back.map((e) => [e.path, e.type, e.size]), want.map((e) => [e.path, e.type, e.size]));
    for (const e of back.filter((x) => x.type === 'file')) {
      assert.equal(e.mode & 0o111, 0, `${e.path}: no exec bits on the host (mode ${e.mode.toString(8)})`);
      assert.deepEqual(readFileSync(join(allowed, 'tree-back', 'tree', e.path)), readFileSync(join(src, e.path)));
    }
  });

  test('downloads refuse to replace a host file unless overwrite, and then replace only their own', async () => {
    // a file the user made: never replaced, overwrite or not (hostwrite.test.mjs has the attacks)
    await srv.ok('file_write', { path: 'once.txt', content: 'new', session_id: sid });
    writeFileSync(join(allowed, 'once.txt'), 'old');
    await srv.fails('file_download', { path: 'once.txt', host_dir: allowed, session_id: sid }, 'file_exists');
    await srv.fails('file_download', { path: 'once.txt', host_dir: allowed, overwrite: true, session_id: sid },
      'host_path_not_allowed');
    assert.equal(readFileSync(join(allowed, 'once.txt'), 'utf8'), 'old');
    // one the server downloaded: replaced with overwrite only
    mkdirSync(join(allowed, 'own'));
    await srv.ok('file_download', { path: 'once.txt', host_dir: join(allowed, 'own'), session_id: sid });
    await srv.ok('file_write', { path: 'once.txt', content: 'newer', session_id: sid });
    await srv.fails('file_download', { path: 'once.txt', host_dir: join(allowed, 'own'), session_id: sid }, 'file_exists');
    assert.equal(readFileSync(join(allowed, 'own', 'once.txt'), 'utf8'), 'new');
    await srv.ok('file_download', { path: 'once.txt', host_dir: join(allowed, 'own'), overwrite: true, session_id: sid });
    assert.equal(readFileSync(join(allowed, 'own', 'once.txt'), 'utf8'), 'newer');
    // a folder over a folder: the user's is kept, the server's replaced
    await srv.ok('file_write', { path: 'dirx/a.txt', content: 'a', session_id: sid });
    mkdirSync(join(allowed, 'dirx'));
    writeFileSync(join(allowed, 'dirx', 'old.txt'), 'old');
    await srv.fails('file_download', { path: 'dirx', host_dir: allowed, session_id: sid }, 'file_exists');
    await srv.fails('file_download', { path: 'dirx', host_dir: allowed, overwrite: true, session_id: sid },
      'host_path_not_allowed');
    assert.deepEqual(readdirSync(join(allowed, 'dirx')), ['old.txt']);
    await srv.ok('file_download', { path: 'dirx', host_dir: join(allowed, 'own'), session_id: sid });
    await srv.ok('file_write', { path: 'dirx/b.txt', content: 'b', session_id: sid });
    await srv.ok('file_download', { path: 'dirx', host_dir: join(allowed, 'own'), overwrite: true, session_id: sid });
    assert.deepEqual(readdirSync(join(allowed, 'own', 'dirx')).sort(), ['a.txt', 'b.txt']);
    assert.ok(!readdirSync(allowed).some((n) => n.startsWith('.sandbox-mcp')), 'no temporary folder left');
    assert.ok(!readdirSync(join(allowed, 'own')).some((n) => n.startsWith('.sandbox-mcp')), 'no temporary folder left');
  });

  test('host paths outside the allowed folders, symlinks out and .. tricks are host_path_not_allowed', async () => {
    symlinkSync(join(outside, 'secret.txt'), join(allowed, 'link-to-secret'));
    symlinkSync(outside, join(allowed, 'link-to-outside'));
    const refused = [
      join(outside, 'secret.txt'),
      join(allowed, 'link-to-secret'),
      join(allowed, 'link-to-outside'),
      join(allowed, 'link-to-outside', 'secret.txt'),
      `${allowed}/../outside/secret.txt`,
      `${allowed}/./../outside`,
      join(`${allowed}X`, 'secret.txt'),
      'relative/path.txt',
      '/etc/passwd',
      '/',
    ];
    for (const host_path of refused) {
      const f = await srv.fails('file_upload', { host_path, session_id: sid }, 'host_path_not_allowed');
      assert.match(f.error.message, /SANDBOX_HOST_DIRS|absolute/, `${host_path}: the message names the setting`);
    }
    for (const host_dir of [outside, join(allowed, 'link-to-outside'), `${allowed}/..`, '/tmp']) {
      await srv.fails('file_download', { path: 'once.txt', host_dir, session_id: sid }, 'host_path_not_allowed');
    }
    assert.deepEqual(readdirSync(outside), ['secret.txt'], 'nothing written outside');
    const l = await srv.ok('file_list', { session_id: sid });
    assert.ok(!l.entries.some((e) => e.path === 'secret.txt'), 'nothing uploaded');
  });

  test('a planted link to /etc cannot make a download read what the sandbox user cannot', async () => {
    // the archive endpoint (used for plain readable files) acts as root: a symlink component or an
    // unreadable file must send the download through a tar run as the sandbox user instead
    await srv.sh('ln -sfn /etc e && cp /etc/hostname own-0600 && chmod 600 own-0600', { session_id: sid });
    mkdirSync(join(allowed, 'etc-out'));
    const f = await srv.fails('file_download', { path: 'e/shadow', host_dir: join(allowed, 'etc-out'), session_id: sid },
      'invalid_argument');
    assert.match(f.error.message, /permission denied/);
    assert.deepEqual(readdirSync(join(allowed, 'etc-out')), [], 'nothing written');
    const ok = await srv.ok('file_download', { path: 'e/passwd', host_dir: join(allowed, 'etc-out'), session_id: sid });
    assert.equal(ok.files, 1, 'a file the sandbox user can read comes through the link');
    await srv.ok('file_download', { path: 'own-0600', host_dir: join(allowed, 'etc-out'), session_id: sid });
    assert.equal(statSync(join(allowed, 'etc-out', 'own-0600')).mode & 0o777, 0o600);
    const st = await inspectPaused(cid);
    assert.equal(st, false, 'the container is not left paused');
  });

  test('a hostile sandbox: links, a fifo, hard links and unreadable files are skipped, nothing lands outside', async () => {
    await srv.sh('mkdir -p evil/sub && echo fine > evil/ok.txt && ln -s /etc/passwd evil/passwd-link && ' +
      'ln -s / evil/root && ln -s ../../../../../tmp evil/sub/up && mkfifo evil/fifo && echo h > evil/h1 && ' +
      'ln evil/h1 evil/h2 && chmod 777 evil', { session_id: sid });
    // root (with no capabilities) leaves a file the sandbox user cannot read
    const root = await docker(['exec', '-u', '0', cid, 'sh', '-c',
      'echo topsecret > /workspace/evil/secret && chmod 600 /workspace/evil/secret']);
    assert.equal(root.code, 0, root.stderr);
    const before = readdirSync(base).sort();
    const passwd = statSync('/etc/passwd').mtimeMs;
    mkdirSync(join(allowed, 'evil-out'));
    const down = await srv.ok('file_download', { path: 'evil', host_dir: join(allowed, 'evil-out'), session_id: sid });
    const got = tree(join(allowed, 'evil-out', 'evil'));
    // of two hard-linked names tar sends one as the file and the other as a link to it (skipped)
    const h = got.find((e) => /^h[12]$/.test(e.path))?.path;
    assert.deepEqual(got.map((e) => `${e.path} ${e.type}`), [`${h} file`, 'ok.txt file', 'sub dir'],
      `only plain files and folders: ${JSON.stringify(got)}`);
    const skipped = Object.fromEntries(down.skipped.map((x) => [x.name, x.reason]));
    assert.match(skipped['./passwd-link'], /symbolic link/);
    assert.match(skipped['./root'], /symbolic link/);
    assert.match(skipped['./sub/up'], /symbolic link/);
    assert.match(skipped['./fifo'], /fifo/);
    // the target as the caller names files, not as the engine's stream did (t/h1 through the drop)
    assert.equal(skipped[h === 'h1' ? './h2' : './h1'], `hard link to ./${h}`);
    assert.match(down.warnings ?? '', /secret.*Permission denied/, 'the unreadable file is reported');
    assert.deepEqual(readdirSync(base).sort(), before, 'nothing new next to the allowed folder');
    assert.equal(statSync('/etc/passwd').mtimeMs, passwd);
  });

  test('a real 100 GiB sparse file is refused at once, by file_read and by file_download', async () => {
    await srv.sh('mkdir -p sparse && truncate -s 100G sparse/huge.bin', { session_id: sid });
    try {
      let t0 = Date.now();
      await srv.fails('file_read', { path: 'sparse/huge.bin', session_id: sid }, 'too_large');
      assert.ok(Date.now() - t0 < 10000, `file_read refused quickly (${Date.now() - t0} ms)`);
      mkdirSync(join(allowed, 'sparse'));
      t0 = Date.now();
      await srv.fails('file_download', { path: 'sparse', host_dir: join(allowed, 'sparse'), session_id: sid }, 'too_large');
      assert.ok(Date.now() - t0 < 20000, `file_download refused quickly (${Date.now() - t0} ms)`);
      assert.deepEqual(readdirSync(join(allowed, 'sparse')), [], 'nothing written, no temporary folder left');
    } finally {
      await srv.sh('rm -rf sparse', { session_id: sid });
    }
  });

  test('a lying tar in the sandbox: escapes, absolute names and writes through links go nowhere', async () => {
    // the sandbox's own tar runs only on the exec path: a session whose drop fails the agent's
    // dropcheck (made group-writable before its first transfer) takes it (docs/agent.md)
    const ex = await srv.createSession({ name: 'host-files-exec' });
    const sid = ex.session_id;
    const chm = await docker(['exec', '-u', '0', ex.container_id, 'chmod', '777', '/.sandbox-mcp/drop']);
    assert.equal(chm.code, 0, chm.stderr);
    await srv.ok('file_write', { path: '/opt/venv/bin/tar', content: LYING_TAR, mode: '755', session_id: sid });
    try {
      await srv.ok('file_write', { path: '.lying-mode', content: 'lies', session_id: sid });
      const before = readdirSync(base).sort();
      mkdirSync(join(allowed, 'lies'));
      const down = await srv.ok('file_download', { path: 'whatever', host_dir: join(allowed, 'lies'), session_id: sid })
        .catch(async () => srv.ok('file_download', { path: '.', host_dir: join(allowed, 'lies'), session_id: sid }));
      const top = readdirSync(join(allowed, 'lies'));
      assert.equal(top.length, 1, `one entry in the target: ${top}`);
      const got = tree(join(allowed, 'lies', top[0]));
      assert.ok(got.every((e) => e.type === 'file' || e.type === 'dir'), `no links or special files: ${JSON.stringify(got)}`);
      const files = got.filter((e) => e.type === 'file').map((e) => e.path).sort();
      assert.deepEqual(files, ['d/tmp/pwned', 'evil', 'ok.txt', 'sub/deep.txt'],
        'only names that stay inside, written as plain files inside the target');
      const reasons = down.skipped.map((x) => `${x.name}: ${x.reason}`).join('\n');
      for (const n of ['../../escape', './../../escape2', '/tmp/abs-escape', './sub/x/../../../escape3']) {
        assert.ok(down.skipped.some((x) => x.name === n), `${n} is reported: ${reasons}`);
      }
      assert.match(reasons, /shadow: hard link to \/etc\/shadow/);
      assert.match(reasons, /fifo: fifo/);
      assert.match(reasons, /null: device/);
      assert.deepEqual(readdirSync(base).sort(), before, 'nothing new next to the allowed folder');
      assert.ok(!existsSync('/tmp/abs-escape') && !existsSync('/tmp/pwned'), 'nothing written outside');
      for (const e of got.filter((x) => x.type === 'file')) assert.equal(e.mode & 0o111, 0, `${e.path}: no exec bits`);

      // a stream claiming a 100 GiB file stops at its header: too_large, nothing left behind
      await srv.ok('file_write', { path: '.lying-mode', content: 'big', session_id: sid });
      mkdirSync(join(allowed, 'big'));
      const t0 = Date.now();
      const f = await srv.fails('file_download', { path: '.', host_dir: join(allowed, 'big'), session_id: sid }, 'too_large');
      assert.ok(Date.now() - t0 < 20000, `refused quickly (${Date.now() - t0} ms)`);
      assert.match(f.error.message, /huge/);
      assert.deepEqual(readdirSync(join(allowed, 'big')), [], 'nothing written, no temporary folder left');
      assert.equal((await srv.sh('echo alive', { session_id: sid })).stdout, 'alive\n', 'the session still works');
    } finally {
      await srv.call('file_delete', { path: '/opt/venv/bin/tar', session_id: sid });
    }
  });

  test('without SANDBOX_HOST_DIRS every host path is refused, naming the setting', async () => {
    const bare = await Server.start('no-host-dirs', { SANDBOX_HOST_DIRS: undefined });
    const f = await bare.fails('file_upload', { host_path: join(allowed, 'random.bin') }, 'host_path_not_allowed');
    assert.match(f.error.message, /SANDBOX_HOST_DIRS/);
    await bare.close();
  });
});
