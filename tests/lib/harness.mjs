// Shared helpers for the integration tests: the real server binary, driven by
// the official 1.x SDK client, against the real Docker engine.
//
// - engine: whether `docker info` answers; suite() turns that into a skip, or,
//   with SANDBOX_TEST_MUST_WORK=1, into a failure with a clear message.
// - Server: one spawned sandbox-mcp behind Client + StdioClientTransport, with
//   its pid, its instance id (read from the lock file it holds open), its
//   stderr tail and exit status.
// - Every Server is registered in a per-process list; cleanup() closes them
//   and removes every container labelled with one of their instance ids (and
//   any container id a test tracked), never anything else.

import { execFile } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import assert from 'node:assert/strict';
import { Client, StdioClientTransport } from './sdk1.mjs';
import { serverBin, serverEnv, sleep } from './rawpipe.mjs';

export { sleep };

export const LABEL = 'io.sandbox-mcp';
export const MUST_WORK = process.env.SANDBOX_TEST_MUST_WORK === '1';
/** Set by .ci/podman: DOCKER_HOST is Podman 4.3's Docker-compatible socket. */
export const PODMAN = process.env.SANDBOX_TEST_PODMAN === '1';
/** Test options that skip, on Podman only, what it cannot do (the reason is listed in docs/remote.md). */
export function podmanCannot(reason) {
  return PODMAN ? { skip: `Podman 4.3 cannot: ${reason}` } : {};
}
/** Docker's default capabilities: Podman's inspect lists these as dropped where Docker says ["ALL"]. */
const DEFAULT_CAPS = ['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD',
  'NET_BIND_SERVICE', 'NET_RAW', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT'];
/** HostConfig.CapDrop as each engine spells "all dropped": ["ALL"] on Docker, the default list on Podman. */
export function allCapsDropped() {
  return PODMAN ? DEFAULT_CAPS : ['ALL'];
}
/** Default per-call timeout of the SDK client in these tests (ms). */
export const CALL_MS = 60000;

/** Run the docker CLI; resolves { code, stdout, stderr } (never rejects on a non-zero exit). */
export function docker(args, { timeoutMs = 30000 } = {}) {
  return new Promise((resolve) => {
    execFile('docker', args, { timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({
        code: err ? (typeof err.code === 'number' ? err.code : -1) : 0,
        stdout: String(stdout ?? ''),
        stderr: String(stderr ?? '') + (err && typeof err.code !== 'number' ? ` (${err.message})` : ''),
      });
    });
  });
}

/** docker inspect of one container: the parsed object, or null when it does not exist. */
export async function inspectContainer(id) {
  const r = await docker(['container', 'inspect', id]);
  if (r.code !== 0) {
    if (/no such (container|object)/i.test(r.stderr)) return null;
    throw new Error(`docker container inspect ${id} failed (${r.code}): ${r.stderr}`);
  }
  return JSON.parse(r.stdout)[0];
}

/** True when a container with this id (or a prefix of it) exists, in any state. */
export async function containerExists(id) {
  return (await inspectContainer(id)) !== null;
}

/** Ids of every container (any state) carrying label io.sandbox-mcp.instance=<instance>. */
export async function containersOfInstance(instance) {
  const r = await docker(['ps', '-aq', '--no-trunc', '--filter', `label=${LABEL}.instance=${instance}`]);
  if (r.code !== 0) throw new Error(`docker ps failed: ${r.stderr}`);
  return r.stdout.split('\n').map((s) => s.trim()).filter(Boolean);
}

/**
 * Ids of the warm-pool members of a live server: its containers labelled
 * io.sandbox-mcp.pool=1 that are not (yet) a session. A member handed out
 * keeps the label (the engine cannot change labels), so the server's own
 * session_list tells the two apart.
 */
export async function poolMembersOf(srv) {
  const r = await docker(['ps', '-aq', '--no-trunc', '--filter', `label=${LABEL}.instance=${srv.instance}`,
    '--filter', `label=${LABEL}.pool=1`]);
  if (r.code !== 0) throw new Error(`docker ps failed: ${r.stderr}`);
  const res = await srv.client.callTool({ name: 'session_list', arguments: {} });
  const used = new Set((res.structuredContent?.sessions ?? []).map((s) => s.container_id));
  return r.stdout.split('\n').map((s) => s.trim()).filter((id) => id && !used.has(id));
}

/** Waits until a live server's pool holds n members (env_info's pool_ready and the engine agree); their ids. */
export async function poolFilled(srv, n, timeoutMs = 120000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const info = (await srv.client.callTool({ name: 'env_info', arguments: {} })).structuredContent;
    const ids = await poolMembersOf(srv);
    if (info?.pool_ready === n && ids.length === n) return ids;
    if (Date.now() > until) {
      throw new Error(`${srv.label}: the pool did not reach ${n} members in ${timeoutMs} ms ` +
        `(pool_ready ${info?.pool_ready}, containers ${ids.length}); stderr: ${srv.stderrTail.slice(-2000)}`);
    }
    await sleep(200);
  }
}

async function probeEngine() {
  const r = await docker(['info', '--format', '{{.ServerVersion}}'], { timeoutMs: 20000 });
  if (r.code === 0 && r.stdout.trim()) return { ok: true, version: r.stdout.trim() };
  return { ok: false, reason: `docker info failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().slice(0, 500)}` };
}

/** Whether the Docker engine answers, probed once when this module loads. */
export const engine = await probeEngine();

/**
 * Options for a describe() block that needs the engine: skipped (with the
 * reason) when it is down, unless SANDBOX_TEST_MUST_WORK=1 — then the block
 * runs and requireEngine() in its before() hook fails every test loudly.
 */
export function suite(extra = {}) {
  if (engine.ok || MUST_WORK) return extra;
  return { ...extra, skip: `no Docker engine (${engine.reason}); set SANDBOX_TEST_MUST_WORK=1 to fail instead` };
}

/** Throws a clear error when the engine is down (only reached with SANDBOX_TEST_MUST_WORK=1). */
export function requireEngine() {
  if (!engine.ok) {
    throw new Error(`SANDBOX_TEST_MUST_WORK=1 but the Docker engine is not usable: ${engine.reason}. ` +
      'Start dockerd (bash .ci/prepare) or point DOCKER_HOST at a running engine.');
  }
}

/** A transport that keeps its child process (the SDK drops it on close) and its stderr tail. */
class TrackedTransport extends StdioClientTransport {
  async start() {
    await super.start();
    this.child = this._process; // sdk 1.x internals, pinned in tests/package-lock.json
    this.exit = null;
    this.exited = new Promise((resolve) => {
      const done = (code, signal) => {
        if (!this.exit) this.exit = { code, signal, at: Date.now() };
        resolve(this.exit);
      };
      if (this.child.exitCode !== null || this.child.signalCode !== null) done(this.child.exitCode, this.child.signalCode);
      else this.child.once('exit', done);
    });
  }
}

const servers = new Set();
/*
 * How closed servers ended, when that was wrong: a sanitizer report (a leak
 * at exit, an invalid access, undefined behaviour) or a failed exit. The ASan
 * build's LeakSanitizer runs at exit, so without this a leak would pass
 * unseen. cleanup() fails the suite with them.
 */
const exitProblems = [];
const SANITIZER_REPORT = /ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer/;
// instance ids stay known after their server was closed (for cleanup)
const allInstances = new Set();
const trackedContainers = new Set();
process.on('exit', () => {
  for (const s of servers) {
    try { s.transport.child?.kill('SIGKILL'); } catch { /* gone */ }
  }
});

/** Remember a container id so cleanup() removes it even if its server is gone. */
export function trackContainer(id) {
  if (typeof id === 'string' && id) trackedContainers.add(id);
}

/** Reads the instance id from the lock file the server holds open (/proc/<pid>/fd). */
function instanceOf(pid) {
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target;
    try { target = readlinkSync(`/proc/${pid}/fd/${fd}`); } catch { continue; }
    const m = /\/sandbox-mcp[^/]*\/([0-9a-f]{16})\.lock$/.exec(target);
    if (m) return m[1];
  }
  return null;
}

/** The pid of the janitor (a process named sandbox-janitor) whose parent is serverPid, or null. */
export function janitorPidOf(serverPid) {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try { stat = readFileSync(`/proc/${name}/stat`, 'utf8'); } catch { continue; }
    // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis
    const m = /^\d+ \((.*)\) \S+ (\d+)/s.exec(stat);
    if (m && m[1] === 'sandbox-janitor' && Number(m[2]) === serverPid) return Number(name);
  }
  return null;
}

export class Server {
  /** Use Server.start(). */
  constructor(label, env, { wrap = [] } = {}) {
    this.label = label;
    this.stderrTail = '';
    this.instance = null;
    // wrap: a command that execs the server (e.g. setpriv to run it as another user)
    this.transport = new TrackedTransport({
      command: wrap.length ? wrap[0] : serverBin(),
      args: wrap.length ? [...wrap.slice(1), serverBin()] : [],
      // the SDK's default environment would drop DOCKER_HOST, XDG_RUNTIME_DIR and SANDBOX_*
      // tests never pull from the internet: a test that pulls sets SANDBOX_PULL itself
      env: serverEnv({ SANDBOX_LOG_LEVEL: 'info', SANDBOX_PULL: 'never', ...env }),
      stderr: 'pipe',
    });
    this.transport.stderr.on('data', (d) => {
      this.stderrTail = (this.stderrTail + d.toString()).slice(-16000);
    });
    this.client = new Client({ name: `sandbox-mcp-integration-${label}`, version: '0.0.0' }, { capabilities: {} });
    this.client.onerror = (e) => { this.lastError = e; };
  }

  /** Spawn and initialize a server; env overrides are merged over process.env; opts.wrap prefixes the command. */
  static async start(label, env = {}, opts = {}) {
    const s = new Server(label, env, opts);
    servers.add(s);
    await s.client.connect(s.transport, { timeout: 20000 });
    s.pid = s.transport.pid;
    // the lock is taken before stdin is read, so it is there once initialize answered
    s.instance = instanceOf(s.pid);
    if (s.instance) allInstances.add(s.instance);
    assert.ok(s.instance, `${label}: found the instance lock among the fds of pid ${s.pid}`);
    return s;
  }

  get exit() {
    return this.transport.exit;
  }

  get alive() {
    return !this.transport.exit;
  }

  /** tools/call; returns the raw result (isError included). */
  async call(name, args = {}, { timeoutMs = CALL_MS, signal } = {}) {
    const opts = { timeout: timeoutMs };
    if (signal) opts.signal = signal;
    let res;
    try {
      res = await this.client.callTool({ name, arguments: args }, undefined, opts);
    } catch (e) {
      if (signal?.aborted) throw e;
      // say why: a crashed server is the usual reason
      await Promise.race([this.transport.exited, sleep(500)]);
      e.message += ` [${this.label}: ${name} ${JSON.stringify(args).slice(0, 200)}; server exit: ` +
        `${JSON.stringify(this.exit)}; stderr tail: ${this.stderrTail.slice(-3000)}]`;
      throw e;
    }
    if (name === 'session_create' && res?.structuredContent?.container_id) {
      trackContainer(res.structuredContent.container_id);
    }
    return res;
  }

  /** tools/call that must succeed; returns structuredContent. */
  async ok(name, args = {}, opts = {}) {
    const res = await this.call(name, args, opts);
    assert.ok(!res.isError, `${this.label}: ${name} ${JSON.stringify(args).slice(0, 300)} failed: ` +
      `${show(res)}\nstderr tail: ${this.stderrTail.slice(-2000)}`);
    assert.ok(res.structuredContent, `${name} returned structuredContent`);
    return res.structuredContent;
  }

  /** tools/call that must be a tool error with this code; returns structuredContent. */
  async fails(name, args, code, opts = {}) {
    const res = await this.call(name, args, opts);
    assert.equal(res.isError, true, `${this.label}: ${name} ${JSON.stringify(args).slice(0, 300)} must fail ` +
      `with ${code}, got: ${show(res)}`);
    assert.equal(res.structuredContent?.error?.code, code,
      `${name}: error.code is ${code}; result: ${show(res)}`);
    assert.equal(typeof res.structuredContent.error.message, 'string');
    return res.structuredContent;
  }

  /** run_command that must succeed with exit code 0; returns structuredContent. */
  async sh(command, args = {}, opts = {}) {
    const st = await this.ok('run_command', { command, ...args }, opts);
    assert.equal(st.exit_code, 0, `${this.label}: \`${command.slice(0, 200)}\` exit code 0; stdout: ` +
      `${st.stdout?.slice(0, 1000)} stderr: ${st.stderr?.slice(0, 1000)}`);
    return st;
  }

  /** session_create that must succeed; returns structuredContent. */
  async createSession(args = {}, opts = {}) {
    const st = await this.ok('session_create', args, opts);
    assert.match(st.container_id ?? '', /^[0-9a-f]{64}$/, `container_id: ${JSON.stringify(st)}`);
    return st;
  }

  /** Peak RSS (VmHWM) of the server in KiB, or null once it is gone. */
  peakRssKiB() {
    try {
      const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${this.pid}/status`, 'utf8'));
      return m ? Number(m[1]) : null;
    } catch {
      return null;
    }
  }

  /**
   * The server's janitor (src/janitor.c): its child named sandbox-janitor,
   * which removes the server's containers if the server dies without its
   * exit. Its pid, or null.
   */
  janitorPid() {
    return janitorPidOf(this.pid);
  }

  /**
   * SIGKILL (or another signal) and wait for the exit. withJanitor: its
   * janitor is killed first, as when both die at once (the OOM killer, a
   * kill of every sandbox-mcp), so that what the server left stays for the
   * next server's start-up scan.
   */
  async kill(signal = 'SIGKILL', { withJanitor = false } = {}) {
    const deliberate = this.alive;
    if (withJanitor && this.alive) {
      const jpid = this.janitorPid();
      assert.ok(jpid, `${this.label}: its janitor runs beside it`);
      process.kill(jpid, 'SIGKILL');
    }
    if (this.alive) this.transport.child.kill(signal);
    await withTimeout(this.transport.exited, 10000, `${this.label} exit after ${signal}`);
    await this.client.close().catch(() => {});
    this.checkExit(deliberate ? signal : null);
  }

  /**
   * Notes in exitProblems a sanitizer report, a non-zero exit code, or death
   * by a signal that neither this harness (killedWith) nor the SDK's close
   * (SIGTERM, then SIGKILL) sent, e.g. SIGABRT or SIGSEGV. Once per server.
   */
  checkExit(killedWith = null) {
    if (this.exitChecked || !this.exit) return;
    this.exitChecked = true;
    const report = SANITIZER_REPORT.exec(this.stderrTail);
    const sent = [killedWith, 'SIGTERM', 'SIGKILL'];
    if (report) {
      exitProblems.push(`${this.label}: sanitizer report: ${this.stderrTail.slice(Math.max(0, report.index - 200), report.index + 4000)}`);
    } else if (this.exit.code !== 0 && !(this.exit.code === null && sent.includes(this.exit.signal))) {
      exitProblems.push(`${this.label}: exit ${JSON.stringify(this.exit)}; stderr tail: ${this.stderrTail.slice(-2000)}`);
    }
  }

  /** EOF on stdin only; resolves with the exit status, rejects after timeoutMs. */
  async endStdin(timeoutMs = 20000) {
    this.transport.child.stdin.end();
    return withTimeout(this.transport.exited, timeoutMs, `${this.label} exit after stdin EOF`);
  }

  /** Orderly close through the SDK (EOF, then SIGTERM, then SIGKILL); notes a wrong exit for cleanup(). */
  async close() {
    await this.client.close().catch(() => {});
    if (this.alive) await this.kill();
    // the SDK's SIGTERM (after 2 s) is part of an orderly close: the server exits 0 on it
    this.checkExit();
    servers.delete(this);
  }
}

/** Short description of a tool result for assertion messages. */
export function show(res) {
  return JSON.stringify(res)?.slice(0, 1500);
}

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]);
}

/**
 * Close every server this process started and remove every container that
 * one of their instances labelled, plus the tracked container ids. Returns
 * the ids removed here (a leak report for the caller, not an error).
 */
export async function cleanup() {
  const instances = new Set();
  for (const s of servers) if (s.instance) instances.add(s.instance);
  allInstances.forEach((i) => instances.add(i));
  await Promise.all([...servers].map((s) => s.close().catch(() => {})));
  const ids = new Set();
  for (const inst of instances) {
    for (const id of await containersOfInstance(inst).catch(() => [])) ids.add(id);
  }
  for (const id of trackedContainers) if (await containerExists(id).catch(() => false)) ids.add(id);
  if (ids.size) await docker(['rm', '-f', '-v', ...ids], { timeoutMs: 60000 });
  trackedContainers.clear();
  const problems = exitProblems.splice(0);
  assert.deepEqual(problems, [], 'every server ended cleanly (exit 0, no sanitizer report)');
  return [...ids];
}

/** The cgroup memory and pids limits as seen from inside a session (v2 or v1). */
export const CGROUP_LIMITS_SCRIPT =
  'if [ -f /sys/fs/cgroup/memory.max ]; then ' +
  'echo "v2 $(cat /sys/fs/cgroup/memory.max) $(cat /sys/fs/cgroup/pids.max)"; ' +
  'else echo "v1 $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes) $(cat /sys/fs/cgroup/pids/pids.max)"; fi';

/** Whether the server binary was built with AddressSanitizer (its memory use is not comparable). */
export function serverIsSanitized() {
  try {
    return readFileSync(serverBin()).includes('__asan_init');
  } catch {
    return false;
  }
}
