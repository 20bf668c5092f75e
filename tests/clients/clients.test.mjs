// The real client programs drive sandbox-mcp: Claude Code, Gemini CLI and
// Codex CLI (pinned in package-lock.json) each run one scripted conversation
// against a fake model API on 127.0.0.1 (lib/fake-model.mjs) with our server
// as their MCP server. The assertions are on what each client SENT TO THE
// MODEL (the fake model's request log): every tool result arrived, images
// arrived as images, failed calls carry their output, and no client logged a
// protocol error. Each client gets a temp HOME; nothing leaves loopback.
//
// What each step guards (issue 15):
//  - Gemini adds wait_for_previous to every call's arguments (refusing it
//    failed every call);
//  - Claude Code (SDK 1.x) reported "unknown token" when a progress
//    notification came with the result (env_info's "done");
//  - Codex shows the model only structuredContent, so a failed run_python
//    lost its output;
//  - Claude Code shows a 2 KB preview of results over ~50 KB;
//  - each client ends its server in its own way (stdin closed, SIGTERM, or
//    the process left behind): the server must end with it and remove its
//    containers, warm pool members included, not leave them to the next
//    server's start-up scan.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeModel } from './lib/fake-model.mjs';
import { runClaude, runGemini, runCodex, runDir } from './lib/clients.mjs';
import { lastMain, toolResults } from './lib/transcript.mjs';

const RUN_MS = 240000;
const PROTOCOL_ERRORS = /unknown token|connection dropped|Received a progress notification|Received a response for an unknown message|invalid_argument: unknown argument|unknown argument 'arguments\./i;

const FIGURE = [
  'import matplotlib',
  "matplotlib.use('Agg')",
  'import matplotlib.pyplot as plt',
  'plt.plot([1, 4, 9, 16])',
  "plt.title('clients suite')",
  "plt.savefig('fig.png')",
  "print('plotted-ok')",
].join('\n');

/** The script's steps for one client; Gemini sends the file and its run in one turn. */
function steps(client, sessionName) {
  const s = (key, tool, args) => ({ key, tool, args });
  const write = s('write', 'file_write', { path: 'hello.py', content: "print('written-and-run')\n" });
  const runIt = s('run_written', 'run_command', { command: 'python3 hello.py' });
  const turns = [
    [s('env', 'env_info', {})],
    [s('run', 'run_command', { command: 'echo hello-from-run; echo warn-from-run >&2' })],
    [s('figure', 'run_python', { code: FIGURE })],
  ];
  if (client === 'gemini') {
    // what Gemini's model is told to do for a dependent call
    turns.push([{ ...write, args: { ...write.args, wait_for_previous: false } },
      { ...runIt, args: { ...runIt.args, wait_for_previous: true } }]);
  } else {
    turns.push([write], [runIt]);
  }
  turns.push(
    [s('read_png', 'file_read', { path: 'fig.png' })],
    [s('timeout', 'run_python', {
      code: "print('before-the-sleep', flush=True)\nimport time\ntime.sleep(60)", timeout_s: 2,
    })],
    [s('big', 'run_command', {
      command: 'seq 100000 140000; seq 100000 140000 >&2; echo stderr-last-line >&2; exit 3',
    })],
    [s('create', 'session_create', { name: sessionName })],
    [s('close', 'session_close', { session_id: sessionName })],
  );
  return turns;
}

/** Removes the containers of every session the conversation named (the server normally has). */
function removeSessions(log) {
  const text = JSON.stringify(log);
  const ids = new Set([...text.matchAll(/session_id[\\"]*:[\\" ]*([0-9a-f]{12})\b/g)].map((m) => m[1]));
  for (const sid of ids) {
    const ps = spawnSync('docker', ['ps', '-aq', '--filter', `label=io.sandbox-mcp.session=${sid}`], { encoding: 'utf8' });
    const cids = (ps.stdout ?? '').split('\n').filter(Boolean);
    if (cids.length) spawnSync('docker', ['rm', '-f', '-v', ...cids], { encoding: 'utf8', timeout: 60000 });
  }
}

/**
 * The containers, any state, whose lock label lies in the run's runtime
 * dir: made by that run's server (pool members, sessions), and nobody
 * else's. One "id lock state" line each.
 */
function runContainers(home) {
  const ps = spawnSync('docker', ['ps', '-a', '--filter', 'label=io.sandbox-mcp.lock',
    '--format', '{{.ID}} {{.Label "io.sandbox-mcp.lock"}} {{.State}}'], { encoding: 'utf8' });
  if (ps.status !== 0) throw new Error(`docker ps: ${ps.stderr}`);
  return ps.stdout.split('\n').filter((l) => l.split(' ')[1]?.startsWith(`${runDir(home)}/`));
}

const CLIENTS = [
  { name: 'claude', label: 'Claude Code', api: 'anthropic', run: runClaude },
  { name: 'gemini', label: 'Gemini CLI', api: 'gemini', run: runGemini },
  { name: 'codex', label: 'Codex CLI', api: 'responses', run: runCodex },
];

const only = process.env.CLIENTS_ONLY?.split(',');

// CLIENTS_DOCKER=1: each client starts the server image (image/server/build.sh
// of SANDBOX_MCP_BIN) the way `sandbox-mcp config CLIENT docker=TAG` prints
// it: Docker Desktop's install path (README), through a real client.
if (process.env.CLIENTS_DOCKER === '1') {
  const tag = `sandbox-mcp-clients:${process.pid}`;
  before(() => {
    const build = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'image', 'server', 'build.sh');
    const b = spawnSync(build, [process.env.SANDBOX_MCP_BIN, tag], { encoding: 'utf8' });
    assert.equal(b.status, 0, `image/server/build.sh: ${b.stderr}`);
    process.env.CLIENTS_DOCKER_TAG = tag;
  });
  after(() => spawnSync('docker', ['rmi', '-f', tag]));
}

for (const c of CLIENTS) {
  if (only && !only.includes(c.name)) continue;
  describe(c.label, { timeout: RUN_MS + 60000 }, () => {
    const sessionName = `clients-${c.name}-${process.pid}`;
    const turns = steps(c.name, sessionName);
    const keyOf = new Map();
    turns.forEach((t, i) => t.forEach((st, j) => keyOf.set(`call_t${String(i).padStart(2, '0')}_${j}`, st.key)));
    let model;
    let r;
    let got; // step key -> { text, images }
    let failed = false;
    // written only when a test failed (see after)
    const dumpFile = join(tmpdir(), `sandbox-mcp-clients-${c.name}-${process.pid}-requests.json`);
    const why = (msg) => `${c.label}: ${msg} (request log and client output: ${dumpFile})`;
    /** A test whose failure keeps the request log for a look. */
    const check = (name, opts, fn) => test(name, opts, async (t) => {
      try {
        await fn(t);
      } catch (e) {
        failed = true;
        throw e;
      }
    });

    after(async () => {
      if (failed && model) {
        writeFileSync(dumpFile, JSON.stringify({ log: model.log, stdout: r?.stdout, stderr: r?.stderr, logs: r?.logs }, null, 1));
      }
      if (model) removeSessions(model.log);
      const left = r?.home ? runContainers(r.home).map((l) => l.split(' ')[0]) : [];
      if (left.length) spawnSync('docker', ['rm', '-f', '-v', ...left], { encoding: 'utf8', timeout: 60000 });
      await model?.close();
      if (r?.home) rmSync(r.home, { recursive: true, force: true });
    });

    check('runs the scripted conversation to its end', { timeout: RUN_MS + 30000 }, async () => {
      model = await startFakeModel({ script: turns.map((t) => t.map(({ tool, args }) => ({ tool, args }))) });
      const prompt = 'Use the sandbox MCP tools as instructed, step by step.';
      r = await c.run(model.url, prompt, { timeoutMs: RUN_MS });
      got = new Map();
      for (const [id, v] of toolResults(c.api, lastMain(model.log))) if (keyOf.has(id)) got.set(keyOf.get(id), v);
      assert.ok(!r.timedOut, why(`ran past ${RUN_MS} ms; stderr: ${r.stderr.slice(-3000)}`));
      assert.equal(r.code, 0, why(`exit code ${r.code}; stderr: ${r.stderr.slice(-3000)}`));
      const errs = model.log.filter((e) => e.serverError);
      assert.deepEqual(errs.map((e) => e.serverError), [], why('the fake model failed to answer'));
      const turnsSeen = model.log.filter((e) => e.kind === 'main').map((e) => e.turn);
      assert.ok(turnsSeen.includes(turns.length),
        why(`the client came back after every turn (turns seen: ${turnsSeen.join(', ')})`));
      if (process.env.CLIENTS_DOCKER === '1') {
        // env_info names the container the server runs in only when it runs in one (structured
        // content where the client passes it on, the text where it passes only that: Gemini CLI)
        const env = got.get('env')?.text ?? '';
        assert.match(env, /"container":\s*"[0-9a-f]{12}"|running in container [0-9a-f]{12}/,
          why(`the server ran in its image: ${env.slice(0, 800)}`));
      }
    });

    check('every tool result reached the model', {}, () => {
      const missing = [...keyOf.values()].filter((k) => !got?.has(k));
      assert.deepEqual(missing, [], why(`no result sent to the model for: ${missing.join(', ')}`));
      for (const [k, v] of got) {
        assert.ok(!PROTOCOL_ERRORS.test(v.text), why(`${k}: ${v.text.slice(0, 1500)}`));
      }
    });

    check('the results say what happened', {}, () => {
      const t = (k) => got?.get(k)?.text ?? '';
      assert.match(t('env'), /sandbox-mcp/, why(`env_info: ${t('env').slice(0, 800)}`));
      assert.match(t('run'), /hello-from-run/, why(`run_command stdout: ${t('run').slice(0, 800)}`));
      assert.match(t('run'), /warn-from-run/, why(`run_command stderr: ${t('run').slice(0, 800)}`));
      assert.match(t('figure'), /plotted-ok/, why(`run_python: ${t('figure').slice(0, 800)}`));
      assert.match(t('run_written'), /written-and-run/,
        why(`the file written, then run (${c.name === 'gemini' ? 'with wait_for_previous' : 'next turn'}): ` +
          `${t('write').slice(0, 600)} / ${t('run_written').slice(0, 600)}`));
      assert.match(t('create'), new RegExp(sessionName), why(`session_create: ${t('create').slice(0, 800)}`));
      assert.ok(t('close') && !/error/i.test(t('close')), why(`session_close: ${t('close').slice(0, 800)}`));
    });

    check('images arrived as images', {}, () => {
      assert.ok(got?.get('figure')?.images >= 1,
        why(`run_python's figure: ${got?.get('figure')?.images} images; text ${got?.get('figure')?.text.slice(0, 800)}`));
      assert.ok(got?.get('read_png')?.images >= 1,
        why(`file_read of a PNG: ${got?.get('read_png')?.images} images; text ${got?.get('read_png')?.text.slice(0, 800)}`));
    });

    check('a failed call carries its output (the timeout)', {}, () => {
      const t = got?.get('timeout')?.text ?? '';
      assert.match(t, /timeout/i, why(`the timeout is named: ${t.slice(0, 1500)}`));
      assert.match(t, /before-the-sleep/, why(`what the code printed before it timed out: ${t.slice(0, 1500)}`));
      assert.match(t, /KeyboardInterrupt/, why(`the traceback: ${t.slice(0, 1500)}`));
    });

    check('a large result arrives whole, its facts first', {}, () => {
      const t = got?.get('big')?.text ?? '';
      assert.ok(t.length < 50000, why(`the big result is ${t.length} characters`));
      assert.match(t, /stderr-last-line/, why(`the end of stderr reached the model: ${t.slice(0, 2500)}`));
      assert.match(t, /exit code 3|"exit_code":\s*3/, why(`the exit code reached the model: ${t.slice(0, 2500)}`));
      assert.match(t, /truncated|"truncated":\s*true/, why(`truncation is said: ${t.slice(0, 2500)}`));
    });

    check('the server ends with the client and leaves no container', { timeout: 60000 }, async () => {
      assert.ok(r, why('the conversation did not run'));
      assert.equal(r.lingered, '', why(`still running 10 s after the client exited: ${r.lingered}`));
      // a server the client killed leaves the removals to its janitor, which needs a moment
      let left = runContainers(r.home);
      for (let i = 0; i < 60 && left.length; i++) {
        await new Promise((res) => setTimeout(res, 500));
        left = runContainers(r.home);
      }
      assert.deepEqual(left, [], why(`containers its server left, 30 s on: ${left.join('; ')}`));
    });

    check('the client logged no protocol error', {}, () => {
      const all = `${r?.stdout ?? ''}\n${r?.stderr ?? ''}\n${r?.logs ?? ''}`;
      const m = PROTOCOL_ERRORS.exec(all);
      assert.equal(m, null, why(`"${m?.[0]}" in: ${all.slice(Math.max(0, (m?.index ?? 0) - 600), (m?.index ?? 0) + 600)}`));
    });
  });
}
