// How each client program is run against the fake model and our server: a
// temp HOME per run (no real config read or written), telemetry and update
// checks off, every model URL on 127.0.0.1, and a hard timeout.

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const bin = (name) => join(here, '..', 'node_modules', '.bin', name);

/**
 * The server's command, arguments and the environment it needs (DOCKER_HOST,
 * SANDBOX_*). Its XDG_RUNTIME_DIR is the run's own (runDir), so the lock it
 * names in its containers' labels tells that run's containers from any
 * other's. With CLIENTS_DOCKER_TAG, the server image of that tag started as
 * `sandbox-mcp config CLIENT docker=TAG` prints it, given that environment
 * (-e NAME: docker passes the value the client sets) and the run dir at the
 * same path.
 */
export function serverSpec(home) {
  const server = process.env.SANDBOX_MCP_BIN;
  if (!server) throw new Error('SANDBOX_MCP_BIN is not set: point it at the built server');
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('SANDBOX_') || ['DOCKER_HOST', 'ASAN_OPTIONS', 'UBSAN_OPTIONS'].includes(k)) env[k] = v;
  }
  env.SANDBOX_LOG_LEVEL = 'debug';
  env.XDG_RUNTIME_DIR = runDir(home);
  const tag = process.env.CLIENTS_DOCKER_TAG;
  if (!tag) return { command: server, args: [], env };
  const printed = JSON.parse(execFileSync(server, ['config', 'claude-desktop', `docker=${tag}`], { encoding: 'utf8' }))
    .mcpServers.sandbox;
  const args = [...printed.args];
  const extra = Object.keys(env).filter((k) => k !== 'SANDBOX_MCP_BIN').flatMap((k) => ['-e', k]);
  args.splice(args.lastIndexOf(tag), 0, ...extra, '-v', `${runDir(home)}:${runDir(home)}`);
  return { command: printed.command, args, env };
}

/** The server's XDG_RUNTIME_DIR in a run's temp HOME: its lock file is under sandbox-mcp/ there. */
export function runDir(home) {
  return join(home, 'run');
}

/** Environment shared by all clients: a private HOME, nothing phoning home. */
function baseEnv(home, extra) {
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    USERPROFILE: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    TMPDIR: process.env.TMPDIR ?? '/tmp',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    CI: '1',
    // no proxies: every URL the clients may use is on loopback
    NO_PROXY: '*',
    no_proxy: '*',
    ...extra,
  };
  for (const [k, v] of Object.entries(serverSpec(home).env)) env[k] = v;
  return env;
}

/**
 * Runs argv with env in cwd, killed after timeoutMs; resolves { code, signal,
 * stdout, stderr, timedOut, lingered }. lingered lists what of the client's
 * process group (its MCP server among it) still ran 10 s after the client
 * exited, before it was killed: '' when everything ended on its own.
 */
export function run(argv, { env, cwd, timeoutMs, input = '' }) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { env, cwd, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const killAll = () => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } };
    const timer = setTimeout(() => { timedOut = true; killAll(); }, timeoutMs);
    child.on('close', async (code, signal) => {
      clearTimeout(timer);
      // give the client's MCP server a few seconds to remove its containers, then end what is left
      for (let i = 0; i < 50 && groupAlive(child.pid); i++) await new Promise((res) => setTimeout(res, 200));
      const lingered = groupAlive(child.pid) ? groupList(child.pid) : '';
      killAll();
      resolve({ code, signal, stdout, stderr, timedOut, lingered });
    });
    child.stdin.end(input);
  });
}

function groupAlive(pgid) {
  try { process.kill(-pgid, 0); return true; } catch { return false; }
}

/** The processes of group pgid, one "pid command" a line (procps' ps). */
function groupList(pgid) {
  const ps = spawnSync('ps', ['-o', 'pid=,args=', '-g', String(pgid)], { encoding: 'utf8' });
  return (ps.stdout ?? '').trim() || '(some process, which ps did not list)';
}

function tempHome(client) {
  const home = mkdtempSync(join(tmpdir(), `sandbox-mcp-clients-${client}-`));
  const work = join(home, 'project');
  mkdirSync(work, { recursive: true });
  mkdirSync(runDir(home), { mode: 0o700 });
  return { home, work };
}

/** Every file under dir (recursively, bounded) whose name matches re, concatenated. */
export function readLogs(dir, re, limit = 200) {
  let out = '';
  let n = 0;
  const walk = (d, depth) => {
    if (depth > 6 || !existsSync(d)) return;
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      let st;
      try { st = statSync(p); } catch { continue; }
      if (st.isDirectory()) walk(p, depth + 1);
      else if (re.test(name) && n++ < limit && st.size < 50e6) out += `\n==> ${p}\n${readFileSync(p, 'utf8')}`;
    }
  };
  walk(dir, 0);
  return out;
}

export async function runClaude(modelUrl, prompt, { timeoutMs }) {
  const { home, work } = tempHome('claude');
  const server = serverSpec(home);
  const mcpConfig = join(home, 'mcp.json');
  writeFileSync(mcpConfig, JSON.stringify({
    mcpServers: { sandbox: { type: 'stdio', command: server.command, args: server.args, env: server.env } },
  }));
  const debugFile = join(home, 'claude-debug.log');
  const env = baseEnv(home, {
    ANTHROPIC_BASE_URL: modelUrl,
    ANTHROPIC_API_KEY: 'sk-ant-fake-key-for-tests',
    CLAUDE_CONFIG_DIR: join(home, '.claude'),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_BUG_COMMAND: '1',
    DISABLE_NON_ESSENTIAL_MODEL_CALLS: '1',
    CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
    CLAUDE_CODE_DISABLE_TERMINAL_TITLE: '1',
    DISABLE_GROWTHBOOK: '1',
    DISABLE_UPDATES: '1',
    DISABLE_INSTALLATION_CHECKS: '1',
    // every MCP tool in the request (no ToolSearch indirection), and connected before the first turn
    ENABLE_TOOL_SEARCH: 'false',
    MCP_CONNECTION_NONBLOCKING: 'false',
    MCP_TIMEOUT: '60000',
    MCP_TOOL_TIMEOUT: '120000',
  });
  const r = await run([bin('claude'), '-p', prompt, '--mcp-config', mcpConfig, '--strict-mcp-config',
    '--allowedTools', 'mcp__sandbox', '--output-format', 'json', '--model', 'claude-sonnet-4-5',
    '--debug-file', debugFile], { env, cwd: work, timeoutMs });
  r.logs = (existsSync(debugFile) ? readFileSync(debugFile, 'utf8') : '') + readLogs(join(home, '.claude'), /\.(log|txt)$/);
  r.home = home;
  return r;
}

export async function runGemini(modelUrl, prompt, { timeoutMs }) {
  const { home, work } = tempHome('gemini');
  const server = serverSpec(home);
  const settingsDir = join(home, '.gemini');
  mkdirSync(settingsDir, { recursive: true });
  writeFileSync(join(settingsDir, 'settings.json'), JSON.stringify({
    mcpServers: { sandbox: { command: server.command, args: server.args, env: server.env, trust: true, timeout: 600000 } },
    security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { disableAutoUpdate: true, disableUpdateNag: true, enableAutoUpdate: false, enableAutoUpdateNotification: false },
    ui: { hideBanner: true, hideTips: true },
    model: { name: 'gemini-2.5-flash' },
  }));
  writeFileSync(join(settingsDir, 'trustedFolders.json'), JSON.stringify({ [work]: 'TRUST_FOLDER' }));
  const env = baseEnv(home, {
    GEMINI_API_KEY: 'fake-gemini-key-for-tests',
    GOOGLE_GEMINI_BASE_URL: modelUrl,
    GEMINI_CLI_NO_RELAUNCH: 'true',
    GEMINI_TELEMETRY_ENABLED: 'false',
    GEMINI_CLI_TRUST_WORKSPACE: 'true',
  });
  const r = await run([bin('gemini'), '-p', prompt, '--output-format', 'json', '--yolo', '--skip-trust',
    '--model', 'gemini-2.5-flash', '--allowed-mcp-server-names', 'sandbox'], { env, cwd: work, timeoutMs });
  r.logs = readLogs(settingsDir, /\.(log|txt|json)$/);
  r.home = home;
  return r;
}

export async function runCodex(modelUrl, prompt, { timeoutMs }) {
  const { home, work } = tempHome('codex');
  const server = serverSpec(home);
  const codexHome = join(home, '.codex');
  mkdirSync(codexHome, { recursive: true });
  const toml = (s) => JSON.stringify(s); // a TOML basic string is a JSON string for what we write
  const envTable = Object.entries(server.env).map(([k, v]) => `${k} = ${toml(v)}`).join('\n');
  writeFileSync(join(codexHome, 'config.toml'), `model = "gpt-5-codex"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

web_search = "disabled"

# nothing that reaches beyond loopback: plugin and app catalogs, model discovery, updates
[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
api_key_model_discovery = false
browser_use = false
browser_use_external = false
computer_use = false
daemon_auto_start = false
in_app_updates = false
skill_mcp_dependency_install = false
skill_search = false
guardian_approval = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[model_providers.fake]
name = "fake"
base_url = ${toml(`${modelUrl}/v1`)}
wire_api = "responses"
env_key = "FAKE_MODEL_KEY"
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.sandbox]
command = ${toml(server.command)}
args = ${JSON.stringify(server.args)}
startup_timeout_sec = 60
tool_timeout_sec = 600
# the script's calls run without asking (exec has nobody to ask)
default_tools_approval_mode = "approve"

[mcp_servers.sandbox.env]
${envTable}
`);
  const env = baseEnv(home, {
    CODEX_HOME: codexHome,
    FAKE_MODEL_KEY: 'fake-openai-key-for-tests',
    RUST_LOG: 'warn,codex_rmcp_client=debug,rmcp=warn',
  });
  const r = await run([bin('codex'), 'exec', '--skip-git-repo-check', '--json', prompt],
    { env, cwd: work, timeoutMs });
  r.logs = readLogs(codexHome, /\.(log|txt)$/);
  r.home = home;
  return r;
}
