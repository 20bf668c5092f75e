// A small offline internet for the egress tests, made of real parts:
//
// - a test CA (openssl) and certificates for the hosts below;
// - a Docker network of our own ("inet"), with containers of the sandbox
//   image running tests/lib/inet-serve.py over HTTPS and HTTP:
//     pypi   pypi.org + files.pythonhosted.org: a PEP 503 index serving a
//            wheel built here (numpy 99.0.0, so it is not the image's);
//     forge  github.com: a git repository over dumb HTTP;
//     evil   evil.example: a canary whose log must stay empty;
// - a second network ("lan") with one canary container at a private address
//   that is not listed in SANDBOX_EGRESS_ADDRESSES;
// - dnsmasq (Debian's) on a loopback address of the host, resolving those
//   names (and private.test, metadata.test, loop.test to special addresses),
//   logging every query: the server under test resolves through it because
//   it runs in a mount namespace whose /etc/resolv.conf names it (wrap()).
//
// Traffic goes only to loopback and to the networks made here. stop()
// removes every container, network and file it made.
//
// Under Podman (.ci/podman) the hosts still run on the machine's dockerd: the
// server reaches them from the host's network namespace either way.

import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, mkdirSync, rmSync, existsSync, chmodSync, symlinkSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createServer } from 'node:net';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from './harness.mjs';

// The offline internet runs on the machine's dockerd even when the server under
// test talks to Podman (.ci/podman sets DOCKER_HOST): it is scenery, not the engine.
function docker(args) {
  return new Promise((res) => {
    const env = { ...process.env };
    delete env.DOCKER_HOST;
    execFile('docker', args, { env, timeout: 60000 }, (err, stdout, stderr) =>
      res({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout: String(stdout), stderr: String(stderr) }));
  });
}

const here = dirname(fileURLToPath(import.meta.url));
const IMAGE = 'sandbox-mcp-python:latest';

function run(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts }).toString();
}

function makeCA(dir, hosts) {
  const ca = join(dir, 'ca');
  run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=sandbox-mcp egress test CA',
    '-keyout', `${ca}.key`, '-out', `${ca}.pem`]);
  for (const [name, sans] of Object.entries(hosts)) {
    const base = join(dir, name);
    writeFileSync(`${base}.ext`, `subjectAltName=${sans.map((s) => `DNS:${s}`).join(',')}\n`);
    run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${sans[0]}`, '-keyout', `${base}.key`,
      '-out', `${base}.csr`]);
    run('openssl', ['x509', '-req', '-in', `${base}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`,
      '-CAcreateserial', '-days', '2', '-extfile', `${base}.ext`, '-out', `${base}.pem`]);
  }
  return `${ca}.pem`;
}

/** A wheel of a pure-Python package, written with zipfile (python3 on the host). */
function makeWheel(dir, name, version, value) {
  const py = `
import base64, hashlib, sys, zipfile
name, version, value, out = sys.argv[1:5]
files = {
  f"{name}/__init__.py": f"__version__ = {version!r}\\nVALUE = {value!r}\\n",
  f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n",
  f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: egressnet\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = []
with zipfile.ZipFile(out, "w") as z:
    for p, t in files.items():
        b = t.encode()
        z.writestr(p, b)
        h = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
        record.append(f"{p},sha256={h},{len(b)}")
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    z.writestr(f"{name}-{version}.dist-info/RECORD", "\\n".join(record) + "\\n")
`;
  const file = `${name}-${version}-py3-none-any.whl`;
  run('python3', ['-c', py, name, version, value, join(dir, file)]);
  return file;
}

function makeRepo(dir) {
  const work = join(dir, 'work');
  const bare = join(dir, 'root', 'org', 'demo.git');
  mkdirSync(work, { recursive: true });
  const git = (cwd, ...a) => run('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main', ...a], { cwd });
  git(work, 'init', '-q');
  writeFileSync(join(work, 'README.md'), 'a repository on the test forge\n');
  git(work, 'add', '.');
  git(work, 'commit', '-qm', 'first');
  mkdirSync(dirname(bare), { recursive: true });
  git(dir, 'clone', '-q', '--bare', work, bare);
  git(bare, 'update-server-info');
  git(bare, 'config', 'http.receivepack', 'true');
  // smart HTTP for clones and pushes: git http-backend as CGI (inet-serve.py)
  mkdirSync(join(dir, 'root', 'cgi-bin'));
  symlinkSync('/usr/lib/git-core/git-http-backend', join(dir, 'root', 'cgi-bin', 'git-http-backend'));
  return bare;
}

async function freeSubnet(prefix) {
  // 10.<a>.<b>.0/24 with a in 200..249: try a few, Docker refuses overlaps
  for (let i = 0; i < 20; i++) {
    const a = 200 + Math.floor(Math.random() * 50), b = Math.floor(Math.random() * 250);
    const name = `${prefix}-${process.pid}`;
    const r = await docker(['network', 'create', '--driver', 'bridge', '--subnet', `10.${a}.${b}.0/24`,
      '--label', 'io.sandbox-mcp.test=egress', name]);
    if (r.code === 0) return { name, base: `10.${a}.${b}` };
  }
  throw new Error(`no free 10.x.y.0/24 subnet for ${prefix}`);
}

export class EgressNet {
  async start() {
    this.dir = mkdtempSync('/tmp/sandbox-egress-');
    chmodSync(this.dir, 0o755);
    this.containers = [];
    this.networks = [];
    const certs = join(this.dir, 'certs');
    mkdirSync(certs);
    this.caFile = makeCA(certs, {
      pypi: ['pypi.org', 'files.pythonhosted.org'],
      forge: ['github.com', 'codeload.github.com'],
      evil: ['evil.example', 'private.test', 'metadata.test', 'loop.test'],
      lan: ['lan.test'],
    });
    this.caPem = readFileSync(this.caFile, 'utf8');
    // pypi: /simple/numpy/ links to the wheel on files.pythonhosted.org, as the real one does
    const pypi = join(this.dir, 'pypi');
    mkdirSync(join(pypi, 'simple', 'numpy'), { recursive: true });
    mkdirSync(join(pypi, 'packages'));
    const whl = makeWheel(join(pypi, 'packages'), 'numpy', '99.0.0', 'from the test index');
    const sha = createHash('sha256').update(readFileSync(join(pypi, 'packages', whl))).digest('hex');
    writeFileSync(join(pypi, 'simple', 'numpy', 'index.html'),
      `<!DOCTYPE html><html><body><a href="https://files.pythonhosted.org/packages/${whl}#sha256=${sha}">${whl}</a></body></html>\n`);
    writeFileSync(join(pypi, 'simple', 'index.html'), '<html><body><a href="numpy/">numpy</a></body></html>\n');
    // 100 MiB to download (sparse: no disk)
    run('truncate', ['-s', '100M', join(pypi, 'big')]);
    const forge = join(this.dir, 'forge');
    mkdirSync(forge);
    this.forgeRepo = makeRepo(forge);
    for (const d of ['evil', 'lan']) mkdirSync(join(this.dir, d, 'root', 'x'), { recursive: true });
    writeFileSync(join(this.dir, 'evil', 'root', 'x', 'secret.txt'), 'canary\n');
    for (const d of ['pypi', 'forge', 'evil', 'lan']) writeFileSync(join(this.dir, d, 'log'), '');
    run('chmod', ['-R', 'a+rX,a+w', this.dir]);

    const inet = await freeSubnet('smcp-inet');
    this.networks.push(inet.name);
    const lan = await freeSubnet('smcp-lan');
    this.networks.push(lan.name);
    this.inet = inet;
    this.ip = { pypi: `${inet.base}.10`, forge: `${inet.base}.11`, evil: `${inet.base}.12`, lan: `${lan.base}.10` };
    await this.host('pypi', inet.name, this.ip.pypi, join(this.dir, 'pypi'), 'pypi', pypi);
    await this.host('forge', inet.name, this.ip.forge, join(this.dir, 'forge'), 'forge', join(forge, 'root'));
    await this.host('evil', inet.name, this.ip.evil, join(this.dir, 'evil'), 'evil', join(this.dir, 'evil', 'root'));
    await this.host('lan', lan.name, this.ip.lan, join(this.dir, 'lan'), 'lan', join(this.dir, 'lan', 'root'));
    this.startDns();
    // a host service on 0.0.0.0: the sandbox must not reach it, also not at the bridge's gateway address
    this.hits = 0;
    this.listener = createServer((c) => { this.hits++; c.destroy(); });
    await new Promise((res) => this.listener.listen(0, '0.0.0.0', res));
    this.hostPort = this.listener.address().port;
    await this.waitReady();
    return this;
  }

  async host(name, net, ip, logDir, cert, root) {
    const cname = `smcp-egress-${name}-${process.pid}`;
    const r = await docker(['run', '-d', '--rm', '--name', cname, '--network', net, '--ip', ip, '--user', '0',
      '--label', 'io.sandbox-mcp.test=egress',
      // git http-backend (the forge): every repository, pushes too, whoever owns the files
      '-e', 'GIT_PROJECT_ROOT=/root-dir', '-e', 'GIT_HTTP_EXPORT_ALL=1', '-e', 'GIT_CONFIG_COUNT=1',
      '-e', 'GIT_CONFIG_KEY_0=safe.directory', '-e', 'GIT_CONFIG_VALUE_0=*',
      '-v', `${join(here, 'inet-serve.py')}:/serve.py:ro`, '-v', `${join(this.dir, 'certs')}:/certs:ro`,
      '-v', `${root}:/root-dir${name === 'forge' ? '' : ':ro'}`, '-v', `${logDir}:/logdir`,
      '--entrypoint', 'python3', IMAGE, '/serve.py', `/certs/${cert}.pem`, `/certs/${cert}.key`, '/root-dir',
      '/logdir/log']);
    if (r.code !== 0) throw new Error(`starting ${name}: ${r.stderr}`);
    this.containers.push(cname);
  }

  startDns() {
    // a loopback address of our own, so that two test processes never share a port
    this.dnsIp = `127.${53 + (process.pid % 150)}.${Math.floor(process.pid / 150) % 250}.${1 + (process.pid % 200)}`;
    this.dnsLog = join(this.dir, 'dns.log');
    const a = (n, ip) => `--address=/${n}/${ip}`;
    this.dns = spawn('dnsmasq', ['--keep-in-foreground', '--conf-file=/dev/null', '--no-resolv', '--no-hosts',
      `--listen-address=${this.dnsIp}`, '--bind-interfaces', '--port=53', '--log-queries', `--log-facility=${this.dnsLog}`,
      '--user=root', '--pid-file=',
      a('pypi.org', this.ip.pypi), a('files.pythonhosted.org', this.ip.pypi), a('github.com', this.ip.forge),
      a('evil.example', this.ip.evil), a('lan.test', this.ip.lan), a('private.test', this.ip.lan),
      a('metadata.test', '169.254.169.254'), a('loop.test', '127.0.0.1')], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.dnsErr = '';
    this.dns.stderr.on('data', (d) => { this.dnsErr += d; });
    this.resolvConf = join(this.dir, 'resolv.conf');
    writeFileSync(this.resolvConf, `nameserver ${this.dnsIp}\noptions timeout:1 attempts:1\n`);
  }

  async waitReady() {
    for (let i = 0; i < 100; i++) {
      const ok = ['pypi', 'forge', 'evil', 'lan'].every((d) => {
        try { return run('curl', ['-sk', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '2', `https://${this.ip[d]}/`]) !== '000'; } catch { return false; }
      });
      const dnsUp = existsSync(this.dnsLog) && readFileSync(this.dnsLog, 'utf8').includes('started');
      if (ok && dnsUp) {
        for (const d of ['pypi', 'forge', 'evil', 'lan']) writeFileSync(join(this.dir, d, 'log'), '');
        return;
      }
      await sleep(200);
    }
    throw new Error(`the offline internet did not come up; dnsmasq: ${this.dnsErr}`);
  }

  /** The server's wrap: a mount namespace where /etc/resolv.conf names our dnsmasq. */
  wrap() {
    return ['unshare', '-m', 'sh', '-c', `mount --bind ${this.resolvConf} /etc/resolv.conf && exec "$0" "$@"`];
  }

  /** Connections the host service on 0.0.0.0 accepted. */
  hostHits() {
    return this.hits;
  }

  /** Requests a canary host saw: an array of {sni, host, path, method}. */
  seen(name) {
    return readFileSync(join(this.dir, name, 'log'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  }

  /** The names dnsmasq was asked for. */
  queries() {
    const t = existsSync(this.dnsLog) ? readFileSync(this.dnsLog, 'utf8') : '';
    return [...t.matchAll(/query\[\w+\] (\S+) from/g)].map((m) => m[1]);
  }

  /** Environment for a session: trust the test CA where pip, git, curl, Python and Node look. */
  sessionEnv() {
    const f = '/workspace/.test-ca.pem';
    return { SSL_CERT_FILE: f, PIP_CERT: f, REQUESTS_CA_BUNDLE: f, GIT_SSL_CAINFO: f, CURL_CA_BUNDLE: f, NODE_EXTRA_CA_CERTS: f };
  }

  async stop() {
    if (this.dns) this.dns.kill('SIGKILL');
    if (this.listener) this.listener.close();
    for (const c of this.containers ?? []) await docker(['rm', '-f', c]);
    for (const n of this.networks ?? []) await docker(['network', 'rm', n]);
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}
