// What no argument may do (docs/design.md §4), driven as a hostile model would:
// network modes that share the host's or another container's namespace,
// images whose USER is root under another name or number, a sandbox that
// rewrites /etc/passwd, the reserved name 'default', concurrent creates
// racing the limit, and servers that must leave each other's containers
// alone: a live server's persistent sessions are not adopted, and a server
// whose lock directory differs (another XDG_RUNTIME_DIR) still sees the
// other one alive; a killed server's lock file goes, a held one stays.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, existsSync, utimesSync, readdirSync } from 'node:fs';
import { tmpdir, hostname } from 'node:os';
import { join } from 'node:path';
import {
  Server, suite, requireEngine, cleanup, inspectContainer, containerExists, trackContainer, docker, podmanCannot,
} from '../lib/harness.mjs';
import { serverBin } from '../lib/rawpipe.mjs';

const TAG = `sandbox-mcp-test/security-${process.pid}`;
const MiB = 1024 * 1024;

/** Builds FROM debian:bookworm-slim with these Dockerfile lines, offline; returns the reference. */
async function buildImage(name, lines) {
  const dir = mkdtempSync(join(tmpdir(), 'sbx-sec-img-'));
  try {
    writeFileSync(join(dir, 'Dockerfile'), ['FROM debian:bookworm-slim', ...lines, ''].join('\n'));
    const ref = `${TAG}:${name}`;
    const b = await docker(['build', '--network', 'none', '-q', '-t', ref, dir], { timeoutMs: 120000 });
    assert.equal(b.code, 0, `docker build ${name}: ${b.stderr}`);
    return ref;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A private XDG_RUNTIME_DIR (0700, ours), removed at the end. */
const xdgDirs = [];
function privateXdg() {
  const d = mkdtempSync(join(tmpdir(), 'sbx-sec-xdg-'));
  xdgDirs.push(d);
  return d;
}

describe('network: no namespace sharing, only what the operator allows', suite({ timeout: 120000 }), () => {
  const net = `sbx-sec-net-${process.pid}`;
  let srv;

  before(async () => {
    requireEngine();
    const c = await docker(['network', 'create', '--internal', net]);
    assert.equal(c.code, 0, `docker network create: ${c.stderr}`);
    srv = await Server.start('network', { SANDBOX_NETWORKS: net, SANDBOX_TIMEOUT_S: 30 });
  });

  after(async () => {
    await cleanup();
    await docker(['network', 'rm', net]);
  });

  test('host, container:<id> and look-alikes are refused, whatever the allowlist', async () => {
    const victim = await srv.createSession();
    for (const network of ['host', 'HOST', `container:${victim.container_id.slice(0, 12)}`, `container:${victim.session_id}`,
      'ns:/proc/1/ns/net', 'bridge', 'default', `${net}:x`, `../${net}`]) {
      const st = await srv.fails('session_create', { network }, 'invalid_argument');
      assert.match(st.error.message, /SANDBOX_NETWORKS/, `${network}: the message names the setting`);
    }
    const { sessions } = await srv.ok('session_list');
    assert.equal(sessions.length, 1, `only the victim session exists: ${JSON.stringify(sessions)}`);
  });

  test('a listed network is joined, and the engine applied it', podmanCannot('join a named network without '
    + 'its CNI plugins adding a bridge and iptables chains on the host it shares with dockerd'), async () => {
    const s = await srv.createSession({ network: net });
    assert.equal(s.network, net);
    const { stdout } = await srv.sh('ls /sys/class/net', { session_id: s.session_id });
    assert.ok(stdout.split(/\s+/).includes('eth0'), `an interface on ${net}: ${stdout}`);
    const info = await inspectContainer(s.container_id);
    assert.equal(info.HostConfig.NetworkMode, net);
  });

  test('the setting itself refuses host and container: at start', () => {
    for (const bad of ['host', `${net},host`, 'container:abc', 'none']) {
      const r = spawnSync(serverBin(), [], {
        env: { ...process.env, SANDBOX_NETWORKS: bad }, input: '', encoding: 'utf8', timeout: 10000,
      });
      assert.equal(r.status, 2, `SANDBOX_NETWORKS=${bad}: exit 2; stderr ${r.stderr}`);
      assert.match(r.stderr, /networks: .* cannot be allowed/, `SANDBOX_NETWORKS=${bad}: ${r.stderr}`);
    }
  });
});

describe('the image policy judges what the engine runs', suite({ timeout: 120000 }), () => {
  let srv;
  let refused;

  before(async () => {
    requireEngine();
    // official images only: one of our own (not under library/) is refused by name, so no spelling
    // of its id may start it, though a bare hex name parses as docker.io/library/<hex>
    refused = await buildImage('refused', [`LABEL sbx.test.refused=${process.pid}`]);
    srv = await Server.start('image-ids', { SANDBOX_IMAGES: 'docker.io/library/*', SANDBOX_TIMEOUT_S: 30 });
  });

  after(async () => {
    await cleanup();
    if (refused) await docker(['rmi', refused]);
  });

  test('ids, id prefixes and sha256: prefixes of a refused image are refused', async () => {
    const id = (await docker(['image', 'inspect', '-f', '{{.Id}}', refused])).stdout.trim();
    const hex = id.replace(/^sha256:/, '');
    assert.match(hex, /^[0-9a-f]{64}$/);
    await srv.fails('session_create', { image: refused }, 'invalid_argument');
    for (const name of [id, hex, hex.slice(0, 12), hex.slice(0, 6), hex.slice(0, 2), `sha256:${hex.slice(0, 8)}`,
      `sha256:${hex.slice(0, 12)}`, `docker.io/library/${hex.slice(0, 12)}`, `${hex.slice(0, 12)}:latest`]) {
      const r = await srv.call('session_create', { image: name });
      if (!r.isError) trackContainer(r.structuredContent.container_id ?? '');
      assert.ok(r.isError, `${name} started a session: ${JSON.stringify(r.structuredContent)}`);
      // refused by the policy, or not found at all: never a session of the refused image
      assert.ok(['invalid_argument', 'image_not_found'].includes(r.structuredContent.error.code), JSON.stringify(r));
    }
    // what the policy allows still runs, named as the policy names it
    const ok = await srv.ok('session_create', { image: 'debian:bookworm-slim' });
    await srv.ok('session_close', { session_id: ok.session_id });
  });
});

describe('users: root by any name or number never runs', suite({ timeout: 300000 }), () => {
  const images = {};
  let srv;

  before(async () => {
    requireEngine();
    images.zeros = await buildImage('user-00', ['USER 00']);
    images.plus = await buildImage('user-plus0', ['USER +0']);
    images.rootgroup = await buildImage('user-1000-0', ['USER 1000:0']);
    images.alias = await buildImage('user-toor', ["RUN echo 'toor:x:0:0::/root:/bin/sh' >> /etc/passwd", 'USER toor']);
    images.writable = await buildImage('user-writable-passwd', [
      "RUN echo 'sandbox:x:1000:1000::/tmp:/bin/sh' >> /etc/passwd && echo 'sandbox:x:1000:' >> /etc/group && " +
      'chmod 666 /etc/passwd /etc/group',
      'USER sandbox',
    ]);
    images.missing = await buildImage('user-missing', ['USER nosuchuser']);
    srv = await Server.start('users', { SANDBOX_TIMEOUT_S: 30 });
  });

  after(async () => {
    await cleanup();
    await docker(['rmi', '-f', ...Object.values(images)]);
  });

  for (const [key, want] of [['zeros', '1000 1000'], ['plus', '1000 1000'], ['rootgroup', '1000 1000'],
    ['alias', '1000 1000']]) {
    test(`USER of image ${key}: runs as ${want}, no root group`, async () => {
      const s = await srv.createSession({ image: images[key] });
      const st = await srv.sh('echo "$(id -u) $(id -g)"; id -G', { session_id: s.session_id });
      const [ids, groups] = st.stdout.trim().split('\n');
      assert.equal(ids, want, `id -u, id -g in ${images[key]}`);
      assert.ok(!groups.split(' ').includes('0'), `no supplementary group 0: ${groups}`);
      const info = await inspectContainer(s.container_id);
      assert.match(info.Config.User, /^[1-9]\d*:[1-9]\d*$/, `Config.User is numeric: ${info.Config.User}`);
      await srv.ok('session_close', { session_id: s.session_id });
    });
  }

  test('a sandbox that rewrites /etc/passwd stays uid 1000', async () => {
    const s = await srv.createSession({ image: images.writable });
    let st = await srv.sh('id -u', { session_id: s.session_id });
    assert.equal(st.stdout.trim(), '1000');
    // /etc is not writable, the files are: rewrite them in place
    await srv.sh("p=$(sed 's/^sandbox:x:1000:1000:/sandbox:x:0:0:/' /etc/passwd) && printf '%s\\n' \"$p\" > /etc/passwd && " +
      "g=$(sed 's/^root:x:0:$/root:x:0:sandbox/' /etc/group) && printf '%s\\n' \"$g\" > /etc/group && " +
      "grep -c '^sandbox:x:0:0' /etc/passwd && grep -c '^root:x:0:sandbox' /etc/group",
    { session_id: s.session_id });
    st = await srv.sh('echo "$(id -u) $(id -g)"; id -G', { session_id: s.session_id });
    assert.equal(st.stdout, '1000 1000\n1000\n', 'the next exec is still 1000:1000 with no other group');
  });

  test('a USER the image does not define is a clear error', async () => {
    const st = await srv.fails('session_create', { image: images.missing }, 'invalid_argument');
    assert.match(st.error.message, /nosuchuser.*\/etc\/passwd.*another image/);
  });
});

describe('names and the limit under concurrent creates', suite({ timeout: 120000 }), () => {
  after(async () => {
    await cleanup();
  });

  test("'default' and id-like names are reserved", async () => {
    requireEngine();
    const srv = await Server.start('names', { SANDBOX_TIMEOUT_S: 30 });
    for (const name of ['default', '0123456789ab']) {
      const st = await srv.fails('session_create', { name }, 'invalid_argument');
      assert.match(st.error.message, /reserved/);
    }
    // the default session is still the implicit one, and named 'default'
    const st = await srv.sh('true');
    const { sessions } = await srv.ok('session_list');
    assert.deepEqual(sessions.map((s) => [s.session_id, s.name]), [[st.session_id, 'default']]);
  });

  test('parallel creates never pass SANDBOX_MAX_SESSIONS nor share a name', async () => {
    requireEngine();
    const srv = await Server.start('race', { SANDBOX_MAX_SESSIONS: 2, SANDBOX_TIMEOUT_S: 30 });
    const named = await Promise.all([1, 2, 3].map(() => srv.call('session_create', { name: 'twin' })));
    assert.equal(named.filter((r) => !r.isError).length, 1, `one 'twin': ${named.map((r) => r.structuredContent?.error?.code)}`);
    for (const r of named.filter((x) => x.isError)) assert.equal(r.structuredContent.error.code, 'invalid_argument');
    const more = await Promise.all([1, 2, 3].map(() => srv.call('session_create', {})));
    assert.equal(more.filter((r) => !r.isError).length, 1, 'one more place under the limit of 2');
    for (const r of more.filter((x) => x.isError)) assert.equal(r.structuredContent.error.code, 'session_limit');
    const { sessions } = await srv.ok('session_list');
    assert.equal(sessions.length, 2, `two sessions: ${JSON.stringify(sessions)}`);
  });
});

describe('servers leave each other alone', suite({ timeout: 240000 }), () => {
  after(async () => {
    await cleanup();
    for (const d of xdgDirs) rmSync(d, { recursive: true, force: true });
  });

  test('another XDG_RUNTIME_DIR: a live server\'s containers survive the start-up sweep', async () => {
    requireEngine();
    const A = await Server.start('xdg-a', { XDG_RUNTIME_DIR: privateXdg(), SANDBOX_TIMEOUT_S: 30 });
    const a = await A.createSession();
    const B = await Server.start('xdg-b', { XDG_RUNTIME_DIR: privateXdg(), SANDBOX_TIMEOUT_S: 30 });
    await B.ok('session_list'); // answers once the start-up sweep is done
    assert.ok(await containerExists(a.container_id), `B left live A's container; B stderr: ${B.stderrTail}`);
    await A.sh('true', { session_id: a.session_id });
  });

  test('a live server\'s persistent session is not adopted; a dead one\'s passes to one server', async () => {
    requireEngine();
    const A = await Server.start('own-a', { SANDBOX_MEMORY_MB: 300, SANDBOX_TIMEOUT_S: 30 });
    const p = await A.createSession({ persistent: true, name: 'keep' });
    const B = await Server.start('own-b', { XDG_RUNTIME_DIR: privateXdg(), SANDBOX_TIMEOUT_S: 30 });
    let { sessions } = await B.ok('session_list');
    assert.ok(!sessions.some((s) => s.session_id === p.session_id), `B does not list live A's P: ${JSON.stringify(sessions)}`);
    for (const ref of [p.session_id, 'keep']) {
      await B.fails('run_command', { command: 'true', session_id: ref }, 'session_not_found');
      await B.fails('session_close', { session_id: ref }, 'session_not_found');
    }
    assert.ok(await containerExists(p.container_id), 'P is still there');

    await A.kill();
    const C = await Server.start('own-c', { XDG_RUNTIME_DIR: privateXdg(), SANDBOX_MAX_SESSIONS: 1, SANDBOX_TIMEOUT_S: 30 });
    ({ sessions } = await C.ok('session_list'));
    const adopted = sessions.find((s) => s.session_id === p.session_id);
    assert.ok(adopted, `C adopted dead A's P: ${JSON.stringify(sessions)}; C stderr ${C.stderrTail}`);
    assert.equal(adopted.memory_mb, 300, 'the adopted session reports its real memory limit');
    assert.ok(adopted.cpus > 0 && adopted.pids > 0, `real cpus and pids: ${JSON.stringify(adopted)}`);
    await C.sh('true', { session_id: 'keep' });
    // adopted sessions do not take the places of new ones
    const fresh = await C.createSession();
    await C.ok('session_close', { session_id: fresh.session_id });

    const D = await Server.start('own-d', { XDG_RUNTIME_DIR: privateXdg(), SANDBOX_TIMEOUT_S: 30 });
    ({ sessions } = await D.ok('session_list'));
    assert.ok(!sessions.some((s) => s.session_id === p.session_id), 'D does not take P from live C');
    await C.ok('session_close', { session_id: 'keep' });
    assert.equal(await containerExists(p.container_id), false, 'closed by its owner');
  });

  test('a live server whose lock file was removed keeps its sessions; once it is gone they pass on', async () => {
    requireEngine();
    const xdg = privateXdg();
    const A = await Server.start('lostlock-a', { XDG_RUNTIME_DIR: xdg, SANDBOX_TIMEOUT_S: 30 });
    const p = await A.createSession({ persistent: true, name: 'lostlock' });
    // a tmp cleaner, a logout or rm takes the lock file from under the live server
    const lockDir = join(xdg, 'sandbox-mcp');
    const locks = readdirSync(lockDir).filter((n) => n.endsWith('.lock'));
    assert.ok(locks.length >= 1, `A's lock is there: ${locks}`);
    for (const n of locks) rmSync(join(lockDir, n));
    for (const name of ['lostlock-b', 'lostlock-b2']) {
      const B = await Server.start(name, { XDG_RUNTIME_DIR: privateXdg(), SANDBOX_TIMEOUT_S: 30 });
      const { sessions } = await B.ok('session_list');
      assert.ok(!sessions.some((s) => s.session_id === p.session_id), `${name} took live A's session: ${B.stderrTail}`);
      await B.close();
    }
    assert.ok(await containerExists(p.container_id), 'A\'s container is there');
    await A.sh('true', { session_id: p.session_id });
    // A dies: its process proves nothing now, and the next server adopts the session
    await A.kill();
    const C = await Server.start('lostlock-c', { XDG_RUNTIME_DIR: privateXdg(), SANDBOX_TIMEOUT_S: 30 });
    const { sessions } = await C.ok('session_list');
    assert.ok(sessions.some((s) => s.session_id === p.session_id), `C adopted dead A's session: ${C.stderrTail}`);
    await C.ok('session_close', { session_id: p.session_id });
  });

  test('a killed server\'s lock file goes at the next start; held, new and other files stay', async () => {
    const xdg = privateXdg();
    const lockDir = join(xdg, 'sandbox-mcp');
    mkdirSync(lockDir, { mode: 0o700 });
    const hourAgo = new Date(Date.now() - 3600 * 1000);
    const file = (name, aged) => {
      const p = join(lockDir, name);
      writeFileSync(p, '', { mode: 0o600 });
      if (aged) utimesSync(p, hourAgo, hourAgo);
      return p;
    };
    const killed = file('0123456789abcdef.lock', true);
    const starting = file('1123456789abcdef.lock', false);
    const held = file('2123456789abcdef.lock', true);
    const other = file('notes.lock', true);
    const holder = spawn('flock', ['-x', held, 'sleep', '120'], { stdio: 'ignore' });
    try {
      for (let i = 0; i < 100 && spawnSync('flock', ['-n', held, 'true']).status === 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      assert.notEqual(spawnSync('flock', ['-n', held, 'true']).status, 0, 'the holder took its lock');
      const S = await Server.start('locks', { XDG_RUNTIME_DIR: xdg, SANDBOX_TIMEOUT_S: 30 });
      await S.ok('session_list'); // answers once the start-up scan is done
      assert.equal(existsSync(killed), false, `the killed server's lock is removed; stderr: ${S.stderrTail}`);
      assert.ok(existsSync(starting), 'a lock a starting server may not have taken yet stays');
      assert.ok(existsSync(held), 'a held lock stays');
      assert.ok(existsSync(other), 'a name no server makes stays');
    } finally {
      holder.kill();
    }
  });

  test('a container that is not hardened is never adopted, nor removed', async () => {
    requireEngine();
    const xdg = privateXdg();
    const lockDir = join(xdg, 'sandbox-mcp');
    mkdirSync(lockDir, { mode: 0o700 });
    const inst = 'feedfacefeedface';
    const c = await docker(['create', '--network', 'none', '--user', '1000:1000',
      '--label', 'io.sandbox-mcp=1', '--label', `io.sandbox-mcp.instance=${inst}`,
      '--label', `io.sandbox-mcp.host=${hostname()}`, '--label', `io.sandbox-mcp.lock=${lockDir}/${inst}.lock`,
      '--label', 'io.sandbox-mcp.persistent=true', '--label', 'io.sandbox-mcp.session=abcdefabcdef',
      '--memory', `${300 * MiB}`, '--pids-limit', '100', '--cpus', '1',
      'debian:bookworm-slim', 'sleep', '600']);
    assert.equal(c.code, 0, c.stderr);
    const forged = c.stdout.trim();
    trackContainer(forged);
    const S = await Server.start('forged', { XDG_RUNTIME_DIR: xdg, SANDBOX_TIMEOUT_S: 30 });
    const { sessions } = await S.ok('session_list');
    assert.ok(!sessions.some((s) => s.session_id === 'abcdefabcdef'), `not adopted: ${JSON.stringify(sessions)}`);
    assert.match(S.stderrTail, /not adopting persistent container .*capabilities/);
    assert.ok(await containerExists(forged), 'left alone');
  });
});
