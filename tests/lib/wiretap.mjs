#!/usr/bin/env node
// A transparent stdio wrapper around the server binary that records the wire.
//
// Run it in place of the server: `node lib/wiretap.mjs`. It spawns
// SANDBOX_MCP_BIN with the same environment, copies stdin to the server and
// the server's stdout back, and appends every line that passes, in either
// direction, to the file named by E2E_WIRE_LOG as one JSON record:
// {"pid": <wrapper pid>, "dir": "c2s" | "s2c", "line": "<the raw line>"}.
// Used to show what a client library actually sends (e.g. whether it probes
// server/discover and with which _meta).

import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';

const bin = process.env.SANDBOX_MCP_BIN;
const log = process.env.E2E_WIRE_LOG;
if (!bin || !log) {
  process.stderr.write('wiretap: SANDBOX_MCP_BIN and E2E_WIRE_LOG must be set\n');
  process.exit(2);
}

const child = spawn(bin, process.argv.slice(2), { stdio: ['pipe', 'pipe', 'inherit'] });

function tap(dir) {
  let pending = '';
  return (chunk) => {
    pending += chunk.toString('utf8');
    let nl;
    while ((nl = pending.indexOf('\n')) !== -1) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      appendFileSync(log, JSON.stringify({ pid: process.pid, dir, line }) + '\n');
    }
  };
}

const c2s = tap('c2s');
const s2c = tap('s2c');
process.stdin.on('data', (chunk) => {
  c2s(chunk);
  if (!child.stdin.destroyed) child.stdin.write(chunk);
});
process.stdin.on('end', () => child.stdin.end());
child.stdin.on('error', () => {});
child.stdout.on('data', (chunk) => {
  s2c(chunk);
  process.stdout.write(chunk);
});
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  process.on(sig, () => child.kill(sig));
}
child.on('exit', (code, signal) => {
  process.exitCode = code ?? (signal ? 128 : 1);
  // Let stdout drain, then go.
  process.stdout.end(() => process.exit());
});
