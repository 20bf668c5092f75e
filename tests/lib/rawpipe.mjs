// Shared helpers for the sandbox-mcp end-to-end tests.
//
// RawPipe spawns the server binary named by SANDBOX_MCP_BIN, writes lines to
// its stdin and collects every stdout line, parsed as JSON. Every wait has a
// deadline and every child is killed when the test ends (or, as a last
// resort, when the test process exits), so a misbehaving server can fail a
// test but never hang the suite.

import { spawn } from 'node:child_process';
import { accessSync, constants as fsc, statSync } from 'node:fs';

export const LEGACY_VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'];
export const NEWEST_LEGACY = '2025-11-25';
export const MODERN_VERSION = '2026-07-28';
export const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CAPS = 'io.modelcontextprotocol/clientCapabilities';
export const META_CLIENT = 'io.modelcontextprotocol/clientInfo';
export const META_LOGLEVEL = 'io.modelcontextprotocol/logLevel';
export const META_SERVERINFO = 'io.modelcontextprotocol/serverInfo';

/** Absolute path of the server binary, or a thrown Error that says what to do. */
export function serverBin() {
  const bin = process.env.SANDBOX_MCP_BIN;
  if (!bin) {
    throw new Error('SANDBOX_MCP_BIN is not set: point it at the built server, e.g. ' +
      'SANDBOX_MCP_BIN=$PWD/build/src/sandbox-mcp node --test tests/e2e/');
  }
  let st;
  try {
    st = statSync(bin);
  } catch (e) {
    throw new Error(`SANDBOX_MCP_BIN=${bin} does not exist (${e.code}); build it first ` +
      '(meson setup build && meson compile -C build)');
  }
  if (!st.isFile()) throw new Error(`SANDBOX_MCP_BIN=${bin} is not a regular file`);
  try {
    accessSync(bin, fsc.X_OK);
  } catch {
    throw new Error(`SANDBOX_MCP_BIN=${bin} is not executable`);
  }
  return bin;
}

/** Environment for a server child: the caller's environment plus overrides (undefined deletes). */
export function serverEnv(overrides = {}) {
  const env = { ...process.env };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) delete env[k];
    else env[k] = String(v);
  }
  return env;
}

const live = new Set();
process.on('exit', () => {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
});

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Params of a legacy initialize request. */
export function initializeParams(version = NEWEST_LEGACY) {
  return {
    protocolVersion: version,
    capabilities: {},
    clientInfo: { name: 'sandbox-mcp-e2e', version: '0.0.0' },
  };
}

/** The per-request `_meta` envelope of the modern era. */
export function modernMeta(extra = {}) {
  return {
    [META_VERSION]: MODERN_VERSION,
    [META_CAPS]: {},
    [META_CLIENT]: { name: 'sandbox-mcp-e2e', version: '0.0.0' },
    ...extra,
  };
}

export class RawPipe {
  /**
   * Spawn the server. Options: env (overrides merged over process.env),
   * args (extra argv), label (for messages).
   */
  constructor({ env = {}, args = [], label = 'server' } = {}) {
    this.bin = serverBin();
    this.label = label;
    this.messages = []; // every parsed stdout line, in order
    this.badLines = []; // stdout lines that did not parse as JSON
    this.stderr = '';
    this.exit = null; // { code, signal, at }
    this._waiters = [];
    this._exitWaiters = [];
    this._buf = [];
    this._bufLen = 0;
    this._nextId = 1000;
    this.spawnedAt = Date.now();
    this.child = spawn(this.bin, args, {
      env: serverEnv(env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    live.add(this.child);
    this.child.stdout.on('data', (chunk) => this._onData(chunk));
    this.child.stderr.on('data', (chunk) => {
      // Keep the tail only: a debug-level server may log a lot.
      this.stderr += chunk.toString('utf8');
      if (this.stderr.length > 256 * 1024) this.stderr = this.stderr.slice(-128 * 1024);
    });
    // A write after the child died raises EPIPE on stdin: record, do not crash the test process.
    this.child.stdin.on('error', (e) => { this.stdinError = e; });
    this.child.on('error', (e) => { this.spawnError = e; this._settle(); });
    this.child.on('exit', (code, signal) => {
      this.exit = { code, signal, at: Date.now() };
      live.delete(this.child);
      this._settle();
    });
  }

  _onData(chunk) {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl === -1) break;
      this._buf.push(chunk.subarray(start, nl));
      const line = Buffer.concat(this._buf).toString('utf8');
      this._buf = [];
      this._bufLen = 0;
      this._onLine(line);
      start = nl + 1;
    }
    if (start < chunk.length) {
      this._buf.push(chunk.subarray(start));
      this._bufLen += chunk.length - start;
    }
    this._settle();
  }

  _onLine(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      this.badLineCount = (this.badLineCount ?? 0) + 1;
      if (this.badLines.length < 100) this.badLines.push(line.slice(0, 4096));
      return;
    }
    this.messages.push(msg);
  }

  _settle() {
    this._waiters = this._waiters.filter((w) => !w.check());
    if (this.exit || this.spawnError) {
      for (const w of this._exitWaiters) w();
      this._exitWaiters = [];
    }
  }

  /** Write one line (an object is JSON-encoded; a string or Buffer goes as is) plus '\n'. */
  send(msg) {
    if (Buffer.isBuffer(msg)) return this.writeRaw(Buffer.concat([msg, Buffer.from('\n')]));
    const text = typeof msg === 'string' ? msg : JSON.stringify(msg);
    return this.writeRaw(text + '\n');
  }

  /** Write bytes as they are; resolves once the pipe accepted them (honours backpressure). */
  writeRaw(data) {
    return new Promise((resolve) => {
      if (this.exit || this.child.stdin.destroyed || this.child.stdin.writableEnded) {
        resolve(false);
        return;
      }
      this.child.stdin.write(data, (err) => resolve(!err));
    });
  }

  newId() {
    return this._nextId++;
  }

  /** Send a request and wait for the response with its id. */
  async request(method, params, { id = this.newId(), timeoutMs = 10000 } = {}) {
    const msg = { jsonrpc: '2.0', id, method };
    if (params !== undefined) msg.params = params;
    await this.send(msg);
    return this.waitForId(id, timeoutMs);
  }

  notify(method, params) {
    const msg = { jsonrpc: '2.0', method };
    if (params !== undefined) msg.params = params;
    return this.send(msg);
  }

  /** Legacy handshake: initialize + notifications/initialized. Returns the initialize response. */
  async initialize(version = NEWEST_LEGACY, timeoutMs = 10000) {
    const res = await this.request('initialize', initializeParams(version), { timeoutMs });
    if (!res.result) {
      throw new Error(`${this.label}: initialize failed: ${JSON.stringify(res)}`);
    }
    await this.notify('notifications/initialized');
    return res;
  }

  /** Wait for a message that satisfies pred (searching from index `from`). */
  waitFor(pred, timeoutMs = 10000, what = 'a matching message', from = 0) {
    return new Promise((resolve, reject) => {
      const deadline = setTimeout(() => {
        this._waiters = this._waiters.filter((w) => w !== waiter);
        reject(new Error(`${this.label}: timed out after ${timeoutMs} ms waiting for ${what}; ` +
          `got ${this.messages.length} messages, last: ${JSON.stringify(this.messages.slice(-3)).slice(0, 2000)}; ` +
          `exit: ${JSON.stringify(this.exit)}; stderr tail: ${this.stderr.slice(-1500)}`));
      }, timeoutMs);
      const waiter = {
        check: () => {
          for (let i = from; i < this.messages.length; i++) {
            if (pred(this.messages[i])) {
              clearTimeout(deadline);
              resolve(this.messages[i]);
              return true;
            }
          }
          if (this.exit || this.spawnError) {
            clearTimeout(deadline);
            reject(new Error(`${this.label}: server exited (${JSON.stringify(this.exit)}` +
              `${this.spawnError ? ', spawn error ' + this.spawnError.message : ''}) while waiting for ${what}; ` +
              `stderr tail: ${this.stderr.slice(-1500)}`));
            return true;
          }
          return false;
        },
      };
      if (!waiter.check()) this._waiters.push(waiter);
    });
  }

  /** Wait for the response (result or error) whose id is exactly `id` (same JSON type). */
  waitForId(id, timeoutMs = 10000) {
    return this.waitFor((m) => isResponse(m) && m.id === id, timeoutMs, `the response to id ${JSON.stringify(id)}`);
  }

  /** Wait until at least n messages arrived. */
  waitForCount(n, timeoutMs = 10000) {
    return this.waitFor(() => this.messages.length >= n, timeoutMs, `${n} messages`);
  }

  responses() {
    return this.messages.filter(isResponse);
  }

  notifications(method) {
    return this.messages.filter((m) => m && !Array.isArray(m) && m.method !== undefined && m.id === undefined &&
      (method === undefined || m.method === method));
  }

  /** Close stdin (EOF for the server). */
  closeStdin() {
    if (!this.child.stdin.destroyed) this.child.stdin.end();
  }

  /** Resolve with { code, signal, ms } once the child exited, or reject after timeoutMs. */
  waitExit(timeoutMs = 5000) {
    const t0 = Date.now();
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        resolve({ code: this.exit?.code, signal: this.exit?.signal, ms: (this.exit?.at ?? Date.now()) - t0 });
      };
      const timer = setTimeout(() => {
        this._exitWaiters = this._exitWaiters.filter((w) => w !== done);
        reject(new Error(`${this.label}: did not exit within ${timeoutMs} ms`));
      }, timeoutMs);
      if (this.exit || this.spawnError) done();
      else this._exitWaiters.push(done);
    });
  }

  get alive() {
    return !this.exit && !this.spawnError;
  }

  /** Kill the child (SIGKILL after a short SIGTERM grace) and wait for it. Safe to call twice. */
  async kill() {
    if (!this.alive) return;
    try { this.child.stdin.destroy(); } catch { /* ignore */ }
    this.child.kill('SIGTERM');
    try {
      await this.waitExit(1000);
    } catch {
      this.child.kill('SIGKILL');
      await this.waitExit(2000).catch(() => {});
    }
  }
}

export function isResponse(m) {
  return m !== null && typeof m === 'object' && !Array.isArray(m) && m.method === undefined &&
    ('result' in m || 'error' in m);
}

/** Spawn a RawPipe and register its kill with the test context `t` (node:test). */
export function openPipe(t, opts = {}) {
  const p = new RawPipe({ label: t?.name ?? 'server', ...opts });
  if (t) t.after(() => p.kill());
  return p;
}

/** Assert-style helper used by several files: a JSON-RPC error of a given code and id. */
export function describeMsg(m) {
  return JSON.stringify(m)?.slice(0, 600);
}
