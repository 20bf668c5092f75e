// remote-bench.mjs - the same work through sandbox-mcp and through the docker
// CLI over the same remote endpoint, for the remote-engine tests' figures.
// Reported with t.diagnostic, not asserted: the machine is shared and timing
// under load is not something a test may race.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';

const MiB = 1 << 20;

/** 20 run_command beside 20 docker exec, one 50 MiB upload beside docker cp; cliEnv reaches the same engine. */
export async function compareWithCli(t, label, srv, sid, cid, cliEnv, hostDir) {
  const docker = (args) => {
    const r = spawnSync('docker', args, { env: { ...process.env, ...cliEnv }, encoding: 'utf8', timeout: 120000 });
    assert.equal(r.status, 0, `docker ${args.join(' ')}: ${r.stderr}`);
  };
  let t0 = Date.now();
  for (let i = 0; i < 20; i++) await srv.sh(`echo ${i}`, { session_id: sid });
  const runOurs = Date.now() - t0;
  t0 = Date.now();
  for (let i = 0; i < 20; i++) docker(['exec', cid, 'echo', String(i)]);
  const runCli = Date.now() - t0;

  writeFileSync(`${hostDir}/big.bin`, randomBytes(50 * MiB));
  t0 = Date.now();
  await srv.ok('file_upload', { host_path: `${hostDir}/big.bin`, path: 'big.bin', session_id: sid });
  const upOurs = Date.now() - t0;
  t0 = Date.now();
  docker(['cp', `${hostDir}/big.bin`, `${cid}:/workspace/big-cli.bin`]);
  const upCli = Date.now() - t0;
  const size = await srv.sh('stat -c %s big.bin big-cli.bin', { session_id: sid });
  assert.equal(size.stdout, `${50 * MiB}\n${50 * MiB}\n`, 'both copies arrived whole');
  const rss = srv.peakRssKiB();
  t.diagnostic(`${label}: 20 run_command ${runOurs} ms vs docker exec ${runCli} ms (ratio ` +
    `${(runOurs / runCli).toFixed(2)}); 50 MiB file_upload ${upOurs} ms vs docker cp ${upCli} ms (ratio ` +
    `${(upOurs / upCli).toFixed(2)}); server peak RSS ${rss} KiB`);
  return { runOurs, runCli, upOurs, upCli, rss };
}
