// Shared pieces of the browser and protocol tests: the real build/bin/svcd on a free port with a
// temporary data directory (and a fresh MariaDB database when SVC_TEST_DB=mariadb), svcctl,
// an OpenID Connect provider (node's oidc-provider) on loopback, and Debian's chromium driven by
// playwright-core.
import { spawn, execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const buildDir = process.env.SVC_BUILD_DIR || path.resolve(here, '../../build');
export const binDir = path.join(buildDir, 'bin');

// A port nothing listens on now. It is free only until someone binds it, so a listener the test
// owns binds port 0 itself (listenOnLoopback); this is for svcd, which is told its port. A port is
// handed out once per process: the kernel may offer a just-closed port again.
const handedOut = new Set();
export async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const server = createServer();
      server.unref();
      server.on('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const { port: p } = server.address();
        server.close(() => resolve(p));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

// Binds server to a port the kernel picks on 127.0.0.1. @return that port.
export function listenOnLoopback(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

export const dbKind = () => process.env.SVC_TEST_DB || 'sqlite';

// A fresh database for one svcd: SQLite under its data directory, or a new MariaDB database on
// the test server that tools/test.sh started (SVC_TEST_MYSQL_URL).
function freshDatabase(dataDir) {
  if (dbKind() !== 'mariadb') return { url: `sqlite:${dataDir}/svc.db`, drop() {} };
  const server = new URL(process.env.SVC_TEST_MYSQL_URL);
  const name = `svc_b_${randomBytes(6).toString('hex')}`;
  const args = ['-h', server.hostname, '-P', server.port, '-u', decodeURIComponent(server.username),
    `-p${decodeURIComponent(server.password)}`];
  execFileSync('mariadb', [...args, '-e', `CREATE DATABASE ${name} CHARACTER SET utf8mb4`]);
  return {
    url: `mysql://${server.username}:${server.password}@${server.hostname}:${server.port}/${name}`,
    drop() {
      try { execFileSync('mariadb', [...args, '-e', `DROP DATABASE IF EXISTS ${name}`]); } catch {}
    },
  };
}

export class Svcd {
  // settings: extra --set key=value pairs.
  static async start(settings = {}) {
    const s = new Svcd();
    s.dataDir = mkdtempSync(path.join(tmpdir(), 'svc-browser-'));
    const shared = settings._shared;
    delete settings._shared;
    s.db = shared ? { url: shared.db.url, drop() {} } : freshDatabase(s.dataDir);
    // Every svcd of a database holds the same vault key file (copied, as an operator does).
    const sharedKey = shared && path.join(shared.dataDir, 'vault', 'master.key');
    if (sharedKey && existsSync(sharedKey)) {
      mkdirSync(path.join(s.dataDir, 'vault'), { mode: 0o700 });
      copyFileSync(sharedKey, path.join(s.dataDir, 'vault', 'master.key'));
      chmodSync(path.join(s.dataDir, 'vault', 'master.key'), 0o600);
    }
    // A port freePort picked may be taken by another test's process before svcd binds it: then
    // svcd is started again on new ports (a port the caller named is its own to keep free).
    for (let attempt = 1; ; ++attempt) {
      s.port = settings['server.port'] ? Number(settings['server.port']) : await freePort();
      s.adminPort = await freePort();
      s.url = `http://127.0.0.1:${s.port}`;
      s.admin = `http://127.0.0.1:${s.adminPort}`;
      const sets = { 'db.url': s.db.url, 'admin.listen': `127.0.0.1:${s.adminPort}`,
        'email.smtp.listen': '127.0.0.1:0',
        // Inbound mail's checks ask no DNS server off this machine: nothing answers on port 9.
        'email.dns.server': '127.0.0.1:9',
        'public.base_url': s.url,
        // Every answer is checked against its route's declaration; stop() fails on a mismatch.
        'server.check_responses': 'true', ...settings };
      delete sets['server.port'];
      s.args = ['--port', String(s.port), '--data-dir', s.dataDir];
      for (const [k, v] of Object.entries(sets)) s.args.push('--set', `${k}=${v}`);
      try {
        await s.launch();
        break;
      } catch (e) {
        if (attempt === 5 || !s.log.includes('Address already in use')) throw e;
      }
    }
    s.adminToken = readFileSync(path.join(s.dataDir, 'admin.token'), 'utf8').trim();
    return s;
  }

  // A second svcd on the same database (and its own data directory and ports).
  static async beside(other, settings = {}) {
    return Svcd.start({ 'db.url': other.db.url, ...settings, _shared: other });
  }

  async launch() {
    this.proc = spawn(path.join(binDir, 'svcd'), this.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.log = '';
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`svcd did not start:\n${this.log}`)), 20000);
      const onData = (chunk) => {
        this.log += chunk;
        if (this.log.includes('svcd ready')) { clearTimeout(timer); resolve(); }
      };
      this.proc.stdout.on('data', onData);
      this.proc.stderr.on('data', onData);
      this.proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`svcd exited ${code}:\n${this.log}`)); });
    });
    this.proc.removeAllListeners('exit');
  }

  // Stops svcd (SIGTERM) and starts it again on the same port, data and database.
  async restart(between = async () => {}) {
    const exited = new Promise((resolve) => this.proc.on('exit', resolve));
    this.proc.kill('SIGTERM');
    await exited;
    await between();
    await this.launch();
  }

  // A management key through a device login approved by the operator for a new local user.
  async managementKey(email) {
    this.svcctl(['users', 'add', email, '--password-stdin'], 'correct horse battery\n');
    const d = await this.api('POST', '/api/auth/device/', { body: {} });
    this.svcctl(['device', 'approve', d.json.user_code, '--user', email]);
    const t = await this.api('POST', '/api/auth/device/token/', { body: { device_code: d.json.device_code } });
    if (t.status !== 200) throw new Error(t.text);
    return t.json.management_key;
  }

  // Runs build/bin/svcd's svcctl against this server. @return its stdout.
  svcctl(args, input) {
    return execFileSync(path.join(binDir, 'svcctl'),
      ['--admin', this.admin, '--admin-token', this.adminToken, '--url', this.url, ...args],
      { input, encoding: 'utf8' });
  }

  async api(method, route, { body, key, headers = {} } = {}) {
    const h = { ...headers };
    if (key) h.Authorization = `Bearer ${key}`;
    if (body !== undefined) h['Content-Type'] = 'application/json';
    const r = await fetch(this.url + route, { method, headers: h,
      body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual' });
    const text = await r.text();
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: r.status, json, text, headers: r.headers };
  }

  // Everything the database holds, byte for byte: the SQLite file and its write-ahead log, or a
  // dump of the MariaDB database (UTF-8, as the server stores text).
  databaseBytes() {
    if (!this.db.url.startsWith('mysql://')) {
      const file = this.db.url.slice('sqlite:'.length);
      return Buffer.concat([file, `${file}-wal`].map((f) => {
        try { return readFileSync(f); } catch { return Buffer.alloc(0); }
      }));
    }
    const u = new URL(this.db.url);
    return execFileSync('mariadb-dump', ['--skip-extended-insert', '--default-character-set=utf8mb4',
      '-h', u.hostname, '-P', u.port, '-u', decodeURIComponent(u.username),
      `-p${decodeURIComponent(u.password)}`, u.pathname.slice(1)], { maxBuffer: 256 * 1024 * 1024 });
  }

  // @return whether the database holds `text` anywhere: as its UTF-8 bytes (how the server
  // stores text), or, for a string of code points up to 255 (a byte string, such as a key or
  // seed as latin1), as those bytes themselves.
  databaseHolds(text, bytes = this.databaseBytes()) {
    if (bytes.includes(Buffer.from(text, 'utf8'))) return true;
    return /^[\u0000-\u00ff]*$/.test(text) && bytes.includes(Buffer.from(text, 'latin1'));
  }

  // Runs SQL statements on the server's database (SQLite's command line, or MariaDB's client).
  sql(statements) {
    if (!this.db.url.startsWith('mysql://')) {
      execFileSync('sqlite3', [this.db.url.slice('sqlite:'.length)], { input: statements });
      return;
    }
    const u = new URL(this.db.url);
    execFileSync('mariadb', ['-h', u.hostname, '-P', u.port, '-u', decodeURIComponent(u.username),
      `-p${decodeURIComponent(u.password)}`, u.pathname.slice(1)], { input: statements });
  }

  async stop() {
    if (this.proc && this.proc.exitCode === null) {
      const exited = new Promise((resolve) => this.proc.on('exit', resolve));
      this.proc.kill('SIGTERM');
      await exited;
    }
    this.db.drop();
    rmSync(this.dataDir, { recursive: true, force: true });
    const mismatches = this.log.split('\n').filter((l) => /response_mismatch|event_mismatch/.test(l));
    if (mismatches.length) throw new Error(`answers that do not fit their declaration:\n${mismatches.join('\n')}`);
  }
}

// An OpenID Connect provider on loopback: node's oidc-provider with its development login and
// consent pages (any login name signs in as that name), PKCE required, RS256 ID tokens. Its port is
// bound before anything else picks one; redirectUri is an async function called after that.
export async function startProvider({ redirectUri, clientId = 'svc-dashboard', clientSecret = 'provider-secret' }) {
  const { default: Provider } = await import('oidc-provider');
  const server = createHttpServer();
  const issuer = `http://127.0.0.1:${await listenOnLoopback(server)}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig', alg: 'RS256' };
  const provider = new Provider(issuer, {
    clients: [{ client_id: clientId, client_secret: clientSecret, redirect_uris: [await redirectUri()],
      response_types: ['code'], grant_types: ['authorization_code'] }],
    pkce: { required: () => true, methods: ['S256'] },
    jwks: { keys: [jwk] },
    cookies: { keys: ['browser-test-cookie-key'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    findAccount: async (ctx, id) => ({
      accountId: id,
      claims: async () => ({ sub: id, email: `${id}@example.org`, email_verified: true, name: `Person ${id}` }),
    }),
  });
  provider.on('server_error', (ctx, err) => console.error('oidc-provider error', err));
  server.on('request', provider.callback());
  return { issuer, clientId, clientSecret, close: () => new Promise((r) => server.close(r)) };
}

export async function launchBrowser() {
  const { chromium } = await import('playwright-core');
  // Flags from the machine notes: without the background-networking ones chromium keeps dialling
  // hosts this closed network refuses.
  return chromium.launch({
    executablePath: process.env.SVC_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage'],
  });
}
