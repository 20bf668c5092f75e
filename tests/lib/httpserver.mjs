// What the HTTP suites share: a free port, `serve --http` started and
// stopped, one POST to /mcp, and raw HTTP/1.1 over a socket (for headers
// fetch will not send, such as Host).

import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { serverBin, serverEnv, sleep } from './rawpipe.mjs';

export const ACCEPT_BOTH = 'application/json, text/event-stream';
const BIN = serverBin();

/** A free port on 127.0.0.1 (the kernel's pick, released for the server). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts `serve --http 127.0.0.1:PORT`; resolves once /health answers. */
export async function startServer(env = {}) {
  const port = await freePort();
  const child = spawn(BIN, ['serve', '--http', `127.0.0.1:${port}`],
    { env: serverEnv(env), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-8000); });
  const exited = new Promise((resolve) => child.on('exit', (code, sig) => resolve({ code, sig })));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20000;
  for (;;) {
    try {
      const r = await fetch(`${base}/health`);
      if (r.ok) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not answer /health in 20 s; stderr: ${stderr}`);
    }
    await sleep(100);
  }
  return {
    port, base, url: new URL(`${base}/mcp`), child, exited, stderr: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      // a server that does not end in 15 s: its threads' stacks go into
      // stderr() (where the failing assertion prints it), then SIGKILL
      const t = setTimeout(() => {
        const g = spawnSync('gdb', ['-p', String(child.pid), '-batch', '-ex', 'thread apply all bt'],
          { encoding: 'utf8', timeout: 20000 });
        stderr += `\n--- still running 15 s after SIGTERM; its threads:\n${g.stdout ?? g.error}`;
        child.kill('SIGKILL');
      }, 15000);
      const r = await exited;
      clearTimeout(t);
      return r;
    },
  };
}

/** POST one message; returns { status, headers, text }. */
export async function post(srv, msg, headers = {}) {
  const r = await fetch(srv.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: ACCEPT_BOTH, ...headers },
    body: typeof msg === 'string' ? msg : JSON.stringify(msg),
  });
  return { status: r.status, headers: r.headers, text: await r.text() };
}

/** Raw HTTP/1.1 over a socket: for headers fetch will not send (Host) and for hanging up. */
export function rawRequest(port, text, { timeoutMs = 10000 } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = '';
    const t = setTimeout(() => { sock.destroy(); reject(new Error(`no answer in ${timeoutMs} ms: ${data}`)); }, timeoutMs);
    sock.on('data', (d) => { data += d; });
    sock.on('error', (e) => { clearTimeout(t); reject(e); });
    sock.on('close', () => { clearTimeout(t); resolve(data); });
    sock.write(text);
  });
}

export function statusOf(raw) {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(raw);
  return m ? Number(m[1]) : 0;
}

