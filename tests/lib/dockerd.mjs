// A private dockerd for the tests that restart or break the engine: its own
// socket, data root, exec root (so its own managed containerd) and pidfile
// under one temporary directory, no bridge, no iptables. The shared engine on
// /var/run/docker.sock is only read from (`docker save` of a small image);
// it is never restarted or changed.

import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, chmodSync, rmSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from './harness.mjs';

const live = new Set();
process.on('exit', () => {
  for (const d of live) {
    try { d.child?.kill('SIGKILL'); } catch { /* gone */ }
  }
});

/** Runs a command; resolves { code, stdout, stderr }, never rejects. */
function run(cmd, args, { timeoutMs = 60000, env } = {}) {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 16 << 20, env: env ?? process.env }, (err, stdout, stderr) => {
      resolve({
        code: err ? (typeof err.code === 'number' ? err.code : -1) : 0,
        stdout: String(stdout ?? ''),
        stderr: String(stderr ?? '') + (err && typeof err.code !== 'number' ? ` (${err.message})` : ''),
      });
    });
  });
}

/** Whether a private dockerd can be started here: dockerd on PATH and root. */
export async function canRunDockerd() {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'a private dockerd needs root' };
  const r = await run('dockerd', ['--version'], { timeoutMs: 10000 });
  if (r.code !== 0) return { ok: false, reason: `dockerd --version failed: ${r.stderr.trim().slice(0, 200)}` };
  return { ok: true };
}

export class PrivateDockerd {
  constructor() {
    this.dir = mkdtempSync('/tmp/sandbox-fault-dockerd-');
    // an unprivileged server must reach the socket inside it
    chmodSync(this.dir, 0o755);
    this.sock = join(this.dir, 'docker.sock');
    this.host = `unix://${this.sock}`;
    this.child = null;
    this.log = '';
  }

  /** Starts dockerd and waits until it answers. */
  async start(timeoutMs = 60000) {
    const d = this.dir;
    this.child = spawn('dockerd', [
      '--bridge=none', '--iptables=false', '--ip-masq=false',
      '--host', this.host,
      '--data-root', join(d, 'root'),
      '--exec-root', join(d, 'exec'),
      '--pidfile', join(d, 'pid'),
      // the sandboxes' containers ignore SIGTERM; do not wait long for them on stop
      '--shutdown-timeout', '2',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(this);
    const keep = (b) => { this.log = (this.log + b.toString()).slice(-20000); };
    this.child.stdout.on('data', keep);
    this.child.stderr.on('data', keep);
    const child = this.child;
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const t0 = Date.now();
    while (Date.now() - t0 < timeoutMs) {
      if (child.exitCode !== null || child.signalCode !== null) break;
      const r = await this.docker(['version', '--format', '{{.Server.Version}}'], { timeoutMs: 5000 });
      if (r.code === 0 && r.stdout.trim()) return;
      await sleep(250);
    }
    throw new Error(`private dockerd did not come up in ${timeoutMs} ms; log tail:\n${this.log.slice(-3000)}`);
  }

  /** Stops dockerd (SIGTERM: its containers are stopped too) and waits for the exit. */
  async stop(timeoutMs = 30000) {
    if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(t);
    live.delete(this);
  }

  async restart() {
    await this.stop();
    await this.start();
  }

  /** The docker CLI against this engine. */
  docker(args, opts = {}) {
    return run('docker', ['-H', this.host, ...args], opts);
  }

  /** Copies an image from the shared engine (docker save | docker load). */
  async loadImage(ref) {
    const r = await run('sh', ['-c', `docker save "$1" | docker -H "$2" load`, 'sh', ref, this.host], { timeoutMs: 180000 });
    if (r.code !== 0) throw new Error(`loading ${ref} into the private engine failed: ${r.stderr.slice(0, 1000)}`);
  }

  /** Ids of every container on this engine (any state). */
  async containers() {
    const r = await this.docker(['ps', '-aq', '--no-trunc']);
    if (r.code !== 0) throw new Error(`docker ps on the private engine failed: ${r.stderr}`);
    return r.stdout.split('\n').map((s) => s.trim()).filter(Boolean);
  }

  /** Removes every container, stops dockerd and deletes its directory. */
  async destroy() {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      const ids = await this.containers().catch(() => []);
      if (ids.length) await this.docker(['rm', '-f', '-v', ...ids], { timeoutMs: 60000 });
      await this.stop();
    }
    let pid = null;
    try { pid = Number(readFileSync(join(this.dir, 'pid'), 'utf8')); } catch { /* removed on exit */ }
    if (pid) {
      try { process.kill(pid, 0); return; } catch { /* not running: safe to remove */ }
    }
    try { rmSync(this.dir, { recursive: true, force: true }); } catch { /* a mount left behind: leave it */ }
  }
}
