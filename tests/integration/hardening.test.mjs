// Hardening of a session's container, seen from inside it and from the
// engine's side (docker inspect): non-root, no capabilities, no network,
// no_new_privs, the configured memory and pids limits in the cgroup, a
// writable /workspace as the working directory, and an image without a user
// of its own run as uid 1000.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Server, suite, requireEngine, cleanup, inspectContainer, trackContainer, CGROUP_LIMITS_SCRIPT,
  allCapsDropped,
} from '../lib/harness.mjs';

const PIDS = 200;
const MiB = 1024 * 1024;

/** The cgroup limits printed by CGROUP_LIMITS_SCRIPT: { version, memory, pids }. */
function parseLimits(stdout) {
  const m = /^(v[12]) (\S+) (\S+)\s*$/.exec(stdout);
  assert.ok(m, `cgroup limits line: ${JSON.stringify(stdout)}`);
  return { version: m[1], memory: m[2], pids: m[3] };
}

/** Field of /proc/self/status, e.g. CapEff. */
function statusField(status, name) {
  const m = new RegExp(`^${name}:\\s*(\\S+)`, 'm').exec(status);
  assert.ok(m, `${name} in /proc/self/status:\n${status}`);
  return m[1];
}

describe('hardening of the default session', suite({ timeout: 120000 }), () => {
  let srv;
  let sid; // the default session's id
  let container; // its container id
  let config; // env_info config

  before(async () => {
    requireEngine();
    srv = await Server.start('hardening', { SANDBOX_PIDS: PIDS, SANDBOX_TIMEOUT_S: 30 });
    // no session_id: the default session, created on first use
    const st = await srv.sh('true');
    sid = st.session_id;
    assert.match(sid ?? '', /\S/, 'run_command names the session it used');
    const { sessions } = await srv.ok('session_list');
    const mine = sessions.find((s) => s.session_id === sid);
    assert.ok(mine, `session_list lists the default session ${sid}: ${JSON.stringify(sessions)}`);
    container = mine.container_id;
    trackContainer(container);
    assert.equal(mine.state, 'running');
    ({ config } = await srv.ok('env_info'));
  });

  after(async () => {
    await cleanup();
  });

  test('runs as a non-root user', async () => {
    const st = await srv.sh('id -u; id -g');
    const [uid, gid] = st.stdout.trim().split('\n');
    assert.notEqual(uid, '0', `id -u inside the session: ${st.stdout}`);
    assert.match(uid, /^\d+$/);
    assert.notEqual(gid, '0', `id -g inside the session: ${st.stdout}`);
  });

  test('no capabilities and no_new_privs', async () => {
    const { stdout } = await srv.sh('cat /proc/self/status');
    assert.equal(statusField(stdout, 'CapEff'), '0000000000000000', 'effective capabilities are empty');
    assert.equal(statusField(stdout, 'CapPrm'), '0000000000000000', 'permitted capabilities are empty');
    assert.equal(statusField(stdout, 'CapBnd'), '0000000000000000', 'the bounding set is empty (CapDrop ALL)');
    assert.equal(statusField(stdout, 'NoNewPrivs'), '1', 'no_new_privs is set');
  });

  test('no network: only lo', async () => {
    const { stdout } = await srv.sh('ls /sys/class/net');
    assert.deepEqual(stdout.split(/\s+/).filter(Boolean), ['lo'], `network interfaces: ${stdout}`);
  });

  test('memory and pids limits in the cgroup are the configured ones', async () => {
    assert.equal(config.pids, PIDS, `env_info config.pids: ${JSON.stringify(config)}`);
    const { stdout } = await srv.sh(CGROUP_LIMITS_SCRIPT);
    const lim = parseLimits(stdout);
    assert.equal(lim.memory, String(config.memory_mb * MiB),
      `cgroup ${lim.version} memory limit is ${config.memory_mb} MB (env_info config.memory_mb)`);
    assert.equal(lim.pids, String(PIDS), `cgroup ${lim.version} pids limit is SANDBOX_PIDS=${PIDS}`);
  });

  test('docker inspect agrees: limits, CapDrop, no-new-privileges, no network, init, no logs', async () => {
    const info = await inspectContainer(container);
    assert.ok(info, `container ${container} exists`);
    const hc = info.HostConfig;
    assert.equal(hc.Memory, config.memory_mb * MiB, 'HostConfig.Memory');
    assert.equal(hc.MemorySwap, hc.Memory, 'HostConfig.MemorySwap equals Memory: no swap on top');
    assert.equal(hc.PidsLimit, PIDS, 'HostConfig.PidsLimit');
    assert.deepEqual(hc.CapDrop?.map((c) => c.toUpperCase()).sort(), allCapsDropped(),
      `HostConfig.CapDrop: ${JSON.stringify(hc.CapDrop)}`);
    assert.ok(!hc.CapAdd || hc.CapAdd.length === 0, `HostConfig.CapAdd is empty: ${JSON.stringify(hc.CapAdd)}`);
    assert.ok((hc.SecurityOpt ?? []).some((o) => /^no-new-privileges(:true)?$/.test(o)),
      `HostConfig.SecurityOpt has no-new-privileges: ${JSON.stringify(hc.SecurityOpt)}`);
    assert.equal(hc.NetworkMode, 'none', 'HostConfig.NetworkMode');
    assert.equal(hc.ReadonlyRootfs, false, 'HostConfig.ReadonlyRootfs (opt-in only)');
    assert.equal(hc.Init, true, 'HostConfig.Init (zombie reaping)');
    assert.equal(hc.LogConfig?.Type, 'none', `HostConfig.LogConfig: ${JSON.stringify(hc.LogConfig)}`);
    assert.equal(hc.Privileged, false, 'HostConfig.Privileged');
    assert.ok(info.Config.User && !/^(0|root)(:|$)/.test(info.Config.User), `Config.User is not root: ${info.Config.User}`);
    const labels = info.Config.Labels ?? {};
    assert.equal(labels['io.sandbox-mcp.instance'], srv.instance, 'labelled with the server instance');
    assert.equal(labels['io.sandbox-mcp.session'], sid, 'labelled with the session id');
    assert.equal(labels['io.sandbox-mcp.persistent'], 'false');
    assert.ok(labels['io.sandbox-mcp.host'], 'labelled with the host');
  });

  test('the working directory is /workspace and it is writable', async () => {
    const st = await srv.sh('pwd; echo data > probe.txt && cat /workspace/probe.txt && mkdir -p d/e && rm -r d probe.txt && echo done');
    assert.equal(st.stdout, '/workspace\ndata\ndone\n');
  });
});

describe('SANDBOX_MEMORY_MB=300', suite({ timeout: 60000 }), () => {
  after(async () => {
    await cleanup();
  });

  test('memory limit of 314572800 bytes in the cgroup and in docker inspect', async () => {
    requireEngine();
    const srv = await Server.start('memory-300', { SANDBOX_MEMORY_MB: 300, SANDBOX_TIMEOUT_S: 30 });
    const s = await srv.createSession();
    assert.equal(s.memory_mb, 300, 'session_create reports memory_mb 300');
    const { stdout } = await srv.sh(CGROUP_LIMITS_SCRIPT, { session_id: s.session_id });
    assert.equal(parseLimits(stdout).memory, '314572800', `cgroup limits: ${stdout}`);
    const info = await inspectContainer(s.container_id);
    assert.equal(info.HostConfig.Memory, 314572800);
    await srv.ok('session_close', { session_id: s.session_id });
    assert.equal(await inspectContainer(s.container_id), null, 'session_close removed the container');
  });
});

describe('an image without a user of its own (debian:bookworm-slim)', suite({ timeout: 60000 }), () => {
  after(async () => {
    await cleanup();
  });

  test('runs as uid 1000 with a /workspace it can write', async () => {
    requireEngine();
    const srv = await Server.start('debian', { SANDBOX_TIMEOUT_S: 30 });
    const s = await srv.createSession({ image: 'debian:bookworm-slim' });
    const st = await srv.sh('id -u; id -g; pwd; stat -c %u /workspace; echo hi > f && cat f; ' +
      "grep -E '^(CapEff|NoNewPrivs):' /proc/self/status | tr -s '\\t' ' '",
    { session_id: s.session_id });
    assert.equal(st.stdout, '1000\n1000\n/workspace\n1000\nhi\nCapEff: 0000000000000000\nNoNewPrivs: 1\n');
    const info = await inspectContainer(s.container_id);
    assert.deepEqual(info.HostConfig.CapDrop.map((c) => c.toUpperCase()).sort(), allCapsDropped());
    assert.equal(info.HostConfig.NetworkMode, 'none');
  });
});
