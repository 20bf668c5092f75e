// Tool errors a model can act on: a missing image, an unknown session, a
// session whose container was removed behind the server's back, and an
// engine that is not there at all.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, suite, requireEngine, cleanup, docker, containerExists, show } from '../lib/harness.mjs';

describe('tool errors against a live engine', suite({ timeout: 120000 }), () => {
  let srv;

  before(async () => {
    requireEngine();
    srv = await Server.start('errors', { SANDBOX_TIMEOUT_S: 30 });
  });

  after(async () => {
    await cleanup();
  });

  test('session_create with a missing image: image_not_found, saying how to get it', async () => {
    const image = 'no-such-image:nope';
    const probe = await docker(['image', 'inspect', image]);
    assert.notEqual(probe.code, 0, `${image} must not exist on this engine`);
    const st = await srv.fails('session_create', { image }, 'image_not_found', { timeoutMs: 60000 });
    assert.ok(st.error.message.includes(image), `the message names the image: ${st.error.message}`);
    assert.match(st.error.message, /docker pull|docker build/, `the message says how to get it: ${st.error.message}`);
    const { sessions } = await srv.ok('session_list');
    assert.ok(!sessions.some((s) => s.image === image), 'no session was left behind');
  });

  test('run_command on an unknown session: session_not_found', async () => {
    const st = await srv.fails('run_command', { command: 'true', session_id: 'nope' }, 'session_not_found');
    assert.match(st.error.message, /nope/);
    assert.match(st.error.message, /session_list|session_create/, `the message says what to do: ${st.error.message}`);
    await srv.fails('session_close', { session_id: 'nope' }, 'session_not_found');
  });

  test('a session whose container was removed from outside: session_not_found, and it leaves the list', async () => {
    const s = await srv.createSession({ name: 'doomed' });
    await srv.sh('true', { session_id: s.session_id });
    const rm = await docker(['rm', '-f', s.container_id]);
    assert.equal(rm.code, 0, `docker rm -f: ${rm.stderr}`);
    assert.equal(await containerExists(s.container_id), false);

    const res = await srv.call('run_command', { command: 'echo hi', session_id: s.session_id });
    assert.equal(res.isError, true, `run_command on a removed container fails: ${show(res)}`);
    assert.equal(res.structuredContent?.error?.code, 'session_not_found', show(res));
    assert.match(res.structuredContent.error.message, /gone|removed|no longer/i,
      `the message says the container is gone: ${res.structuredContent.error.message}`);

    const { sessions } = await srv.ok('session_list');
    const listed = sessions.find((x) => x.session_id === s.session_id);
    assert.ok(!listed || listed.state === 'missing',
      `session_list no longer lists it, or shows it missing: ${JSON.stringify(listed)}`);
    // the name is free again, and the server still makes sessions
    const again = await srv.createSession({ name: 'doomed' });
    assert.equal((await srv.sh('echo back', { session_id: again.session_id })).stdout, 'back\n');
  });

  test('session_list shows a container removed from outside as missing before anything uses it', async () => {
    const s = await srv.createSession({ name: 'vanishing' });
    await docker(['rm', '-f', s.container_id]);
    const { sessions } = await srv.ok('session_list');
    const listed = sessions.find((x) => x.session_id === s.session_id);
    assert.ok(!listed || listed.state === 'missing',
      `a session without a container is not listed as usable: ${JSON.stringify(listed)}`);
  });
});

describe('no engine at DOCKER_HOST', suite({ timeout: 60000 }), () => {
  let srv;
  const SOCK = '/nonexistent.sock';

  before(async () => {
    requireEngine(); // the suite needs a working test environment, even though this server gets none
    srv = await Server.start('no-engine', { DOCKER_HOST: `unix://${SOCK}`, SANDBOX_TIMEOUT_S: 10 });
  });

  after(async () => {
    await cleanup();
  });

  test('the server starts and answers without an engine', async () => {
    await srv.client.ping({ timeout: 5000 });
    const { tools } = await srv.client.listTools();
    assert.ok(tools.some((t) => t.name === 'run_command'));
  });

  test('run_command: docker_unavailable with a hint', async () => {
    const t0 = Date.now();
    const st = await srv.fails('run_command', { command: 'echo hi' }, 'docker_unavailable', { timeoutMs: 30000 });
    const secs = (Date.now() - t0) / 1000;
    assert.ok(secs < 15, `answered in ${secs.toFixed(1)} s`);
    assert.ok(st.error.message.includes(SOCK), `the message names the endpoint: ${st.error.message}`);
    assert.match(st.error.message, /DOCKER_HOST|dockerd|start|running|doctor/i,
      `the message says what to do: ${st.error.message}`);
    await srv.fails('session_create', {}, 'docker_unavailable', { timeoutMs: 30000 });
  });

  test('env_info: engine.reachable false, with the reason', async () => {
    const st = await srv.ok('env_info', {}, { timeoutMs: 30000 });
    assert.equal(st.engine?.reachable, false, `env_info engine: ${JSON.stringify(st.engine)}`);
    assert.ok(st.engine.endpoint.includes(SOCK), `engine.endpoint: ${st.engine.endpoint}`);
    assert.equal(st.engine.error_code, 'docker_unavailable');
    assert.equal(typeof st.engine.error, 'string');
    assert.ok(st.engine.error.length > 10);
  });
});
