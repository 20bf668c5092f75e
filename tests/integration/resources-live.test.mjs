// Resources that stay fresh: the server offers resources.listChanged and
// sends notifications/resources/list_changed after a call that may change
// workspace files (Claude Code and Gemini CLI list resources only at connect
// and when told); a resource URI takes a session name as well as its id;
// reading never creates the default session; an unnamed session has no name.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Server, suite, requireEngine, cleanup, sleep } from '../lib/harness.mjs';

const LIST_CHANGED = 'notifications/resources/list_changed';

describe('live resources', suite({ timeout: 180000 }), () => {
  let srv;
  const seen = []; // [method, time] of every notification the client got
  const name = `res-live-${process.pid}`;
  let named;

  before(async () => {
    requireEngine();
    srv = await Server.start('resources-live', { SANDBOX_IDLE_TTL_S: 0 });
    srv.client.fallbackNotificationHandler = async (n) => { seen.push([n.method, Date.now()]); };
    named = await srv.createSession({ name });
    await srv.ok('file_write', { path: 'fresh.txt', content: 'fresh\n', session_id: named.session_id });
  });

  after(async () => {
    await cleanup();
  });

  /** Waits (up to 20 s) for a list_changed that came after `since`. */
  async function listChangedAfter(since) {
    for (let i = 0; i < 200; i++) {
      if (seen.some(([m, at]) => m === LIST_CHANGED && at >= since)) return true;
      await sleep(100);
    }
    return false;
  }

  test('resources.listChanged is offered, and file_write is followed by list_changed', async () => {
    assert.equal(srv.client.getServerCapabilities()?.resources?.listChanged, true);
    await sleep(1200); // past the rate limit of what session_create sent
    const t0 = Date.now();
    await srv.ok('file_write', { path: 'fresh2.txt', content: 'fresh\n', session_id: named.session_id });
    assert.ok(await listChangedAfter(t0), `a list_changed after file_write; notifications: ${JSON.stringify(seen)}`);
    const list = await srv.client.listResources();
    assert.ok(list.resources.some((r) => r.uri === `sandbox://${named.session_id}/workspace/fresh2.txt`));
  });

  test('a burst of calls: list_changed rate-limited, and one after the last call', async () => {
    await sleep(1200);
    const t0 = Date.now();
    for (let i = 0; i < 6; i++) {
      await srv.ok('file_write', { path: `burst-${i}.txt`, content: `${i}\n`, session_id: named.session_id });
    }
    const tLast = Date.now();
    // the last write's change is announced even if it fell inside the interval
    for (let i = 0; i < 30 && !seen.some(([m, at]) => m === LIST_CHANGED && at >= tLast - 50); i++) await sleep(100);
    const burst = seen.filter(([m, at]) => m === LIST_CHANGED && at >= t0);
    assert.ok(burst.length >= 1, 'at least one list_changed for the burst');
    for (let i = 1; i < burst.length; i++) {
      assert.ok(burst[i][1] - burst[i - 1][1] >= 900, `at most one a second: ${JSON.stringify(burst)}`);
    }
  });

  test('read-only calls send no list_changed', async () => {
    await sleep(1500);
    const t0 = Date.now();
    assert.ok(!(await srv.call('file_read', { path: 'fresh.txt', session_id: named.session_id })).isError);
    await srv.ok('session_list');
    await sleep(1500);
    assert.deepEqual(seen.filter(([m, at]) => m === LIST_CHANGED && at >= t0), []);
  });

  test('resources/read takes a session name in place of its id', async () => {
    const byName = await srv.client.readResource({ uri: `sandbox://${name}/workspace/fresh.txt` });
    assert.deepEqual(byName.contents, [{ uri: `sandbox://${name}/workspace/fresh.txt`, mimeType: 'text/plain', text: 'fresh\n' }]);
    for (const uri of [`sandbox://${name}x/workspace/fresh.txt`, 'sandbox://bad name/workspace/fresh.txt',
      `sandbox://${"n".repeat(64)}/workspace/fresh.txt`, `sandbox://${name}%2F/workspace/fresh.txt`]) {
      await assert.rejects(srv.client.readResource({ uri }), (e) => e.code === -32002, `${uri}: resource not found`);
    }
  });

  test('reading sandbox://default/... does not create the default session', async () => {
    await assert.rejects(srv.client.readResource({ uri: 'sandbox://default/workspace/x' }), (e) => e.code === -32002);
    const list = await srv.ok('session_list');
    assert.ok(!list.sessions.some((s) => s.name === 'default'), `no default session: ${JSON.stringify(list)}`);
    // once it exists, its name reads
    await srv.ok('file_write', { path: 'd.txt', content: 'd\n' });
    const d = await srv.client.readResource({ uri: 'sandbox://default/workspace/d.txt' });
    assert.equal(d.contents[0].text, 'd\n');
  });

  test('a session created without a name has no "name" (not "")', async () => {
    const st = await srv.createSession({});
    assert.ok(!('name' in st), `no name key: ${JSON.stringify(st)}`);
    const list = await srv.ok('session_list');
    const entry = list.sessions.find((s) => s.session_id === st.session_id);
    assert.ok(entry && !('name' in entry), `session_list: ${JSON.stringify(entry)}`);
    assert.equal(list.sessions.find((s) => s.session_id === named.session_id)?.name, name);
    await srv.ok('session_close', { session_id: st.session_id });
  });
});
