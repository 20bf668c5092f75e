// The faulty fake engine (tests/fault/fake-engine.c) from node: spawn it on a
// fresh socket, read its request log, switch or heal its fault, and start the
// real server against it through the official 1.x SDK client.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server } from './harness.mjs';

/** Engine read timeout the servers under test get (SANDBOX_ENGINE_TIMEOUT_S). */
export const ENGINE_TIMEOUT_S = 2;

export function fakeBin() {
  const bin = process.env.FAKE_ENGINE_BIN;
  if (!bin) {
    throw new Error('FAKE_ENGINE_BIN is not set: point it at the built fake engine, e.g. ' +
      'FAKE_ENGINE_BIN=$PWD/build/tests/fault/fake-engine (meson test --suite fault sets it)');
  }
  return bin;
}

const live = new Set();
process.on('exit', () => {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* gone */ }
  }
});

export class FakeEngine {
  /** Use FakeEngine.start(). */
  constructor(fault, pattern, { count, lifetimeS = 240 } = {}) {
    this.dir = mkdtempSync(join(tmpdir(), 'sandbox-fault-'));
    this.sock = join(this.dir, 'engine.sock');
    this.lines = [];
    this.stderr = '';
    this._waiters = [];
    this._partial = '';
    const args = ['-w', '-t', String(lifetimeS)];
    if (count !== undefined) args.push('-n', String(count));
    args.push(this.sock, fault);
    if (pattern) args.push(pattern);
    this.child = spawn(fakeBin(), args, { stdio: ['pipe', 'pipe', 'pipe'] });
    live.add(this.child);
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (d) => {
      const parts = (this._partial + d).split('\n');
      this._partial = parts.pop();
      for (const l of parts) this.lines.push(l);
      this._settle();
    });
    this.child.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-4000); });
    this.child.stdin.on('error', () => {});
    this.child.on('exit', (code, signal) => {
      this.exit = { code, signal };
      live.delete(this.child);
      this._settle();
    });
  }

  static async start(fault = 'none', pattern, opts) {
    const f = new FakeEngine(fault, pattern, opts);
    await f.waitLine((l) => l.startsWith('READY'), 5000, 'READY');
    return f;
  }

  get dockerHost() {
    return `unix://${this.sock}`;
  }

  _settle() {
    this._waiters = this._waiters.filter((w) => !w());
  }

  /** Resolves with the first log line (from index `from`) that satisfies pred. */
  waitLine(pred, timeoutMs = 5000, what = 'a log line', from = 0) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this._waiters = this._waiters.filter((w) => w !== check);
        reject(new Error(`fake engine: no ${what} within ${timeoutMs} ms; log tail: ` +
          `${this.lines.slice(-15).join(' | ')}; stderr: ${this.stderr}; exit: ${JSON.stringify(this.exit)}`));
      }, timeoutMs);
      const check = () => {
        for (let i = from; i < this.lines.length; i++) {
          if (pred(this.lines[i])) {
            clearTimeout(timer);
            resolve(this.lines[i]);
            return true;
          }
        }
        if (this.exit) {
          clearTimeout(timer);
          reject(new Error(`fake engine exited (${JSON.stringify(this.exit)}) before ${what}; stderr: ${this.stderr}`));
          return true;
        }
        return false;
      };
      if (!check()) this._waiters.push(check);
    });
  }

  /** Ends the fault; resolves once the fake engine says so. */
  async heal() {
    const from = this.lines.length;
    this.child.stdin.write('heal\n');
    await this.waitLine((l) => l === 'HEALED', 5000, 'HEALED', from);
  }

  /** Switches to another fault. */
  async setFault(name, pattern = '*', count = -1) {
    const from = this.lines.length;
    this.child.stdin.write(`fault ${name} ${count} ${pattern}\n`);
    const l = await this.waitLine((x) => x.startsWith('OK fault') || x.startsWith('ERROR'), 5000, 'OK fault', from);
    if (l.startsWith('ERROR')) throw new Error(`fake engine: ${l}`);
  }

  /** Resolves once every request answered so far is in this.lines. */
  async sync() {
    const from = this.lines.length;
    this.child.stdin.write('sync\n');
    await this.waitLine((l) => l === 'SYNC', 5000, 'SYNC', from);
  }

  /** Ids the engine created and ids it removed (call sync() first). */
  containers() {
    const created = this.lines.filter((l) => l.startsWith('CREATED ')).map((l) => l.slice(8));
    const removed = new Set(this.lines.filter((l) => l.startsWith('REMOVED ')).map((l) => l.slice(8)));
    return { created, removed, leaked: created.filter((id) => !removed.has(id)) };
  }

  faults() {
    return this.lines.filter((l) => l.startsWith('FAULT '));
  }

  requests() {
    return this.lines.filter((l) => l.startsWith('REQ '));
  }

  async stop() {
    if (!this.exit) {
      this.child.stdin.end();
      await new Promise((resolve) => {
        const t = setTimeout(() => { this.child.kill('SIGKILL'); resolve(); }, 3000);
        this.child.once('exit', () => { clearTimeout(t); resolve(); });
        if (this.exit) { clearTimeout(t); resolve(); }
      });
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A real server whose engine is `fake`, with a short engine timeout. */
export function startServer(label, fake, env = {}) {
  return Server.start(label, {
    DOCKER_HOST: fake.dockerHost,
    SANDBOX_ENGINE_TIMEOUT_S: ENGINE_TIMEOUT_S,
    SANDBOX_IDLE_TTL_S: 0,
    // each case injects its fault into one tool call's path: a warm pool filling in the background would
    // meet (or, with a count, use up) the fault instead and hand the call a ready container; the pool
    // under faults has cases of its own (faults.test.mjs, 'the warm pool under engine faults')
    SANDBOX_POOL_SIZE: 0,
    ...env,
  });
}

/** VmHWM and VmRSS of a process in KiB ({} once it is gone). */
export function memKiB(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    return {
      hwm: Number(/VmHWM:\s+(\d+)/.exec(s)?.[1]),
      rss: Number(/VmRSS:\s+(\d+)/.exec(s)?.[1]),
    };
  } catch {
    return {};
  }
}
