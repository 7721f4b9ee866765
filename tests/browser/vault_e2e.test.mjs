// End-to-end encryption in the dashboard, in a real browser against a real svcd: a person sets up
// the vault (passphrase twice; salt, key pair and verifier made in the page, values stored before
// sealed through the rekey lease), unlocks it (a wrong passphrase says so), reveals, copies, edits
// and adds passwords and secrets. Node's libsodium-wrappers-sumo, an independent libsodium, opens
// what the browser sealed and seals what the browser opens, and so does svcctl. Every request the
// browser sends is recorded: neither the passphrase nor the key nor any plaintext value crossed
// the network, and the server's own database holds none of them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Svcd, launchBrowser } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const web = path.resolve(here, '../../plugins/vault/web');
const sodium = require('libsodium-wrappers-sumo');

let browser;
before(async () => {
  await sodium.ready;
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); });

const b64 = (bytes) => sodium.to_base64(bytes, sodium.base64_variants.ORIGINAL);
const unb64 = (text) => sodium.from_base64(text, sodium.base64_variants.ORIGINAL);

// The contract's scheme, written here from its text with node's libsodium.
function derive(passphrase, meta) {
  const seed = sodium.crypto_pwhash(32, passphrase, unb64(meta.salt), meta.kdf.t, meta.kdf.m * 1024,
    sodium.crypto_pwhash_ALG_ARGON2ID13);
  return { seed, ...sodium.crypto_box_seed_keypair(seed) };
}
const seal = (publicKey, text) => `e2e::${b64(sodium.crypto_box_seal(text, publicKey))}`;
const openBox = (pair, box) => sodium.to_string(sodium.crypto_box_seal_open(unb64(box), pair.publicKey, pair.privateKey));
function open(pair, value) {
  assert.match(value, /^e2e::[A-Za-z0-9+/]+=*$/, 'a sealed value, standard base64');
  return openBox(pair, value.slice(5));
}

// Waits for locator; an alert the page shows meanwhile fails at once, with its text.
async function shown(page, locator, timeout = 30000) {
  const alert = page.locator('[role=alert]');
  await Promise.race([
    locator.waitFor({ timeout }),
    alert.first().waitFor({ timeout }).then(async () => {
      throw new Error(`the page says: ${await alert.first().textContent()}`);
    }, () => {}),
  ]);
}

test('the vendored libsodium.js is the npm package\'s, and svcd serves it with the vault\'s script', async () => {
  const files = [
    ['libsodium-sumo.js', 'libsodium-sumo/dist/modules-sumo/libsodium-sumo.js'],
    ['libsodium-wrappers.js', 'libsodium-wrappers-sumo/dist/modules-sumo/libsodium-wrappers.js'],
    ['LICENSE.libsodium', 'libsodium-sumo/LICENSE'],
    ['LICENSE.libsodium', 'libsodium-wrappers-sumo/LICENSE'],
  ];
  for (const [ours, npm] of files) {
    assert.ok(readFileSync(path.join(web, ours)).equals(readFileSync(path.join(here, 'node_modules', npm))),
      `plugins/vault/web/${ours} differs from node_modules/${npm}`);
  }
  for (const pkg of ['libsodium-sumo', 'libsodium-wrappers-sumo']) {
    const { version } = JSON.parse(readFileSync(path.join(here, 'node_modules', pkg, 'package.json'), 'utf8'));
    assert.match(readFileSync(path.join(web, 'README.md'), 'utf8'), new RegExp(`\`${pkg}\` ${version.replace(/\./g, '\\.')}`));
  }

  const svcd = await Svcd.start();
  try {
    const r = await fetch(`${svcd.url}/dashboard/scripts/vault/vault.js`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/javascript; charset=utf-8');
    const body = Buffer.from(await r.arrayBuffer());
    // The page's script is the vault's alone: libsodium runs in the worker only.
    const expected = Buffer.concat([readFileSync(path.join(web, 'vault.js')), Buffer.from('\n')]);
    assert.ok(body.equals(expected), 'svcd serves web/ byte for byte');
    // Pages ask for it under its content's hash, which a browser may keep for good.
    const version = createHash('sha256').update(expected).digest('hex').slice(0, 16);
    const pinned = await fetch(`${svcd.url}/dashboard/scripts/vault/vault.js?v=${version}`);
    assert.equal(pinned.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    await pinned.arrayBuffer();
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    // The worker: libsodium and its own code, under a policy that lets it compile WebAssembly
    // and load or fetch nothing.
    const w = await fetch(`${svcd.url}/dashboard/scripts/vault/vault-worker.js`);
    assert.equal(w.status, 200);
    const workerBody = Buffer.from(await w.arrayBuffer());
    assert.ok(workerBody.equals(Buffer.concat(['libsodium-sumo.js', 'libsodium-wrappers.js', 'vault-worker.js']
      .flatMap((f) => [readFileSync(path.join(web, f)), Buffer.from('\n')]))), 'the worker is served byte for byte');
    assert.equal(w.headers.get('content-security-policy'), "default-src 'none'; script-src 'wasm-unsafe-eval'");
    // Script names are each plugin's own: there is no global `vault.js` any more.
    for (const gone of ['/dashboard/scripts/vault.js', '/dashboard/scripts/nothing.js', '/dashboard/scripts/other/vault.js']) {
      assert.equal((await fetch(`${svcd.url}${gone}`)).status, 404, gone);
    }
  } finally {
    await svcd.stop();
  }
});

test('a person sets up, unlocks, reveals, copies, edits and adds; nothing plaintext leaves the page', async () => {
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  // Not ASCII only: the page and node must both derive from its UTF-8 bytes.
  const PASSPHRASE = 'tangerine kettle 41 orbit \u00e9t\u00e9 \u2602';
  const WRONG = 'tangerine kettle 41 orbit ete \u2602';
  // Every plaintext of the test: none may cross the network from the browser or be stored.
  const plain = {
    username: 'pia-user-4e1d', password: 'pw-before-8c2b', notes: 'note-before-1a9f',
    value: 'tok-before-77e3', secretNotes: 'n-before-5d2c', fromNode: 'from-node-3f7a',
    nodeNotes: 'node-note-9b1e', edited: 'pw-edited-6d0c', addedUser: 'u-added-2b8e',
    added: 'pw-added-5e3a', editedSecret: 'tok-edited-0c4d', addedSecret: 'tok-added-8a1f',
  };
  try {
    const key = await svcd.managementKey('pia@example.com');
    // A name beyond ASCII, stored as the server stores text (UTF-8): the database check below
    // must find it, which decoding the stored bytes as latin1 never could.
    const NAME = 'Ann \u00c5ngstr\u00f6m \u2602';
    const ann = await svcd.api('POST', '/api/identities/', { key, body: { name: NAME } });
    assert.equal(ann.status, 201, ann.text);
    const identity = ann.json.uuid;
    // Stored before end-to-end encryption: setting it up seals these through the rekey lease.
    const entry = await svcd.api('POST', `/api/passwords/?identity=${identity}`, { key, body: {
      domain: 'shop.example', username: plain.username, password: plain.password, notes: plain.notes } });
    assert.equal(entry.status, 201, entry.text);
    const secret = await svcd.api('POST', `/api/secrets/?identity=${identity}`, { key, body: {
      key: 'OLD_TOKEN', value: plain.value, notes: plain.secretNotes } });
    assert.equal(secret.status, 201, secret.text);

    const context = await browser.newContext();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svcd.url });
    const page = await context.newPage();
    const sent = [];
    page.on('request', (r) => sent.push(`${r.method()} ${r.url()}\n${JSON.stringify(r.headers())}\n${r.postData() || ''}`));
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      // A 404 (GET /api/encryption/ before setup) is logged by the browser itself.
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
    });
    await page.goto(`${svcd.url}/dashboard/identities`);
    await page.fill('#email', 'pia@example.com');
    await page.fill('#password', 'correct horse battery');
    await Promise.all([page.waitForURL(/\/dashboard\/identities$/), page.click('form[action$="/login"] button[type=submit]')]);
    const identitiesCsp = (await page.goto(`${svcd.url}/dashboard/identities`)).headers()['content-security-policy'];
    assert.doesNotMatch(identitiesCsp, /wasm-unsafe-eval/, 'no page compiles WebAssembly');

    // Without end-to-end encryption the page says so; a value is shown only when asked for.
    const passwordsUrl = `${svcd.url}/dashboard/identities/${identity}/passwords`;
    const passwordsCsp = (await page.goto(passwordsUrl)).headers()['content-security-policy'];
    // The page compiles no WebAssembly (its worker does, under its own policy) and may start the
    // worker.
    assert.match(passwordsCsp, /script-src 'nonce-[^']+'; worker-src 'self';/);
    assert.doesNotMatch(passwordsCsp, /wasm-unsafe-eval/);
    assert.doesNotMatch(identitiesCsp, /worker-src/, 'only pages that start the vault\'s worker may start workers');
    await page.locator('tr[data-entry]').first().waitFor();
    assert.match(await page.locator('#vault-state').textContent(), /not end-to-end encrypted/);
    assert.equal((await page.content()).includes(plain.password), false, 'the list shows no value');
    await page.click('tr[data-entry] button[data-action=reveal]');
    assert.equal(await page.locator('[data-value=password]').textContent(), plain.password);

    // Set up: the two passphrases must agree; then salt, key pair and verifier are made here.
    await page.click('#vault-state a');
    await page.waitForURL(/\/dashboard\/vault$/);
    await page.fill('#vault-new-passphrase', PASSPHRASE);
    await page.fill('#vault-new-passphrase-again', WRONG);
    await page.click('#vault-setup button[type=submit]');
    await page.locator('#vault-status', { hasText: 'The two passphrases differ.' }).waitFor();
    await page.fill('#vault-new-passphrase', PASSPHRASE);
    await page.fill('#vault-new-passphrase-again', PASSPHRASE);
    await page.click('#vault-setup button[type=submit]');
    await shown(page, page.locator('#vault-state', { hasText: 'End-to-end encryption is set up' }));

    // Node opens what the browser sealed: the metadata, and the values stored before.
    const meta = await svcd.api('GET', '/api/encryption/', { key });
    assert.equal(meta.status, 200, meta.text);
    assert.deepEqual(meta.json.kdf, { alg: 'argon2id', t: 3, m: 65536, p: 1 });
    assert.equal(unb64(meta.json.salt).length, 16);
    const pair = derive(PASSPHRASE, meta.json);
    assert.equal(b64(pair.publicKey), meta.json.public_key);
    assert.equal(openBox(pair, meta.json.verifier), 'svc-e2e-verify');
    const sealedEntry = (await svcd.api('GET', `/api/passwords/${entry.json.uuid}/`, { key })).json;
    assert.equal(open(pair, sealedEntry.username), plain.username);
    assert.equal(open(pair, sealedEntry.password), plain.password);
    assert.equal(open(pair, sealedEntry.notes), plain.notes);
    const sealedSecret = (await svcd.api('GET', `/api/secrets/${secret.json.uuid}/`, { key })).json;
    assert.equal(open(pair, sealedSecret.value), plain.value);
    assert.equal(open(pair, sealedSecret.notes), plain.secretNotes);
    // And the browser opens what node sealed.
    const fromNode = await svcd.api('POST', `/api/secrets/?identity=${identity}`, { key, body: {
      key: 'NODE_SEALED', value: seal(pair.publicKey, plain.fromNode), notes: seal(pair.publicKey, plain.nodeNotes) } });
    assert.equal(fromNode.status, 201, fromNode.text);

    // Locked until the passphrase is given; a wrong one says so.
    await page.goto(passwordsUrl);
    await page.locator('tr[data-entry]').first().waitFor();
    await page.click('tr[data-entry] button[data-action=reveal]');
    await page.locator('#vault-status', { hasText: 'Unlock the vault first' }).waitFor();
    assert.equal(await page.locator('tr.vault-detail').count(), 0);
    await page.fill('#vault-passphrase', WRONG);
    await page.click('#vault-unlock button[type=submit]');
    await page.locator('#vault-status', { hasText: 'Wrong passphrase' }).waitFor({ timeout: 30000 });
    await page.fill('#vault-passphrase', PASSPHRASE);
    await page.click('#vault-unlock button[type=submit]');
    await shown(page, page.locator('#vault-lock'));

    // Reveal and copy.
    await page.click('tr[data-entry] button[data-action=reveal]');
    assert.equal(await page.locator('[data-value=password]').textContent(), plain.password);
    assert.equal(await page.locator('[data-value=username]').textContent(), plain.username);
    assert.equal(await page.locator('[data-value=notes]').textContent(), plain.notes);
    await page.click('[data-copy-field=password]');
    await page.locator('[data-copy-field=password]', { hasText: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), plain.password);

    // Edit: sealed in the page, so only node (with the key) reads the new password.
    await page.click('tr[data-entry] button[data-action=edit]');
    assert.equal(await page.inputValue('#vault-field-password'), plain.password);
    await page.fill('#vault-field-password', plain.edited);
    await page.click('#vault-form button[type=submit]');
    await shown(page, page.locator('#vault-message', { hasText: 'Saved, sealed in this page.' }));
    const edited = (await svcd.api('GET', `/api/passwords/${entry.json.uuid}/`, { key })).json;
    assert.equal(open(pair, edited.password), plain.edited);
    assert.equal(open(pair, edited.username), plain.username);

    // Add.
    await page.click('#vault-add');
    await page.fill('#vault-field-domain', 'mail.example');
    await page.fill('#vault-field-username', plain.addedUser);
    await page.fill('#vault-field-password', plain.added);
    await page.click('#vault-form button[type=submit]');
    await shown(page, page.locator('tr[data-entry]', { hasText: 'mail.example' }));
    const listed = (await svcd.api('GET', `/api/passwords/?identity=${identity}&domain=mail.example`, { key })).json;
    assert.equal(listed.results.length, 1);
    assert.equal(open(pair, listed.results[0].password), plain.added);
    assert.equal(open(pair, listed.results[0].username), plain.addedUser);
    assert.equal(listed.results[0].notes ?? '', '');

    // Locking forgets the key (its worker is gone), takes away what was opened, and clears the
    // clipboard, which still holds the password the page copied.
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), plain.password);
    await page.click('tr[data-entry] button[data-action=reveal] >> nth=1');
    await page.locator('tr.vault-detail').first().waitFor();
    await page.click('#vault-lock');
    await page.locator('#vault-passphrase').waitFor();
    assert.equal(await page.locator('tr.vault-detail').count(), 0);
    let clipboard = null;
    for (let i = 0; i < 50 && clipboard !== ''; i++) {
      clipboard = await page.evaluate(() => navigator.clipboard.readText());
      if (clipboard !== '') await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(clipboard, '', 'the clipboard was cleared on lock');

    // The secrets page: what node sealed opens here; an edit and an add are sealed here.
    await page.goto(`${svcd.url}/dashboard/identities/${identity}/secrets`);
    await page.locator('tr[data-secret]').first().waitFor();
    await page.fill('#vault-passphrase', PASSPHRASE);
    await page.click('#vault-unlock button[type=submit]');
    await shown(page, page.locator('#vault-lock'));
    const nodeRow = page.locator(`tr[data-secret="${fromNode.json.uuid}"]`);
    await nodeRow.locator('button[data-action=reveal]').click();
    assert.equal(await page.locator('[data-value=value]').textContent(), plain.fromNode);
    assert.equal(await page.locator('[data-value=notes]').textContent(), plain.nodeNotes);
    await page.locator(`tr[data-secret="${secret.json.uuid}"] button[data-action=edit]`).click();
    assert.equal(await page.inputValue('#vault-field-value'), plain.value);
    await page.fill('#vault-field-value', plain.editedSecret);
    await page.click('#vault-form button[type=submit]');
    await shown(page, page.locator('#vault-message', { hasText: 'Saved' }));
    await page.click('#vault-add');
    await page.fill('#vault-field-key', 'NEW_KEY');
    await page.fill('#vault-field-value', plain.addedSecret);
    await page.click('#vault-form button[type=submit]');
    await shown(page, page.locator('tr[data-secret]', { hasText: 'NEW_KEY' }));
    const secrets = (await svcd.api('GET', `/api/secrets/?identity=${identity}`, { key })).json.results;
    const byKey = Object.fromEntries(secrets.map((s) => [s.key, s]));
    assert.equal(open(pair, byKey.OLD_TOKEN.value), plain.editedSecret);
    assert.equal(open(pair, byKey.OLD_TOKEN.notes), plain.secretNotes);
    assert.equal(open(pair, byKey.NEW_KEY.value), plain.addedSecret);
    assert.equal(open(pair, byKey.NODE_SEALED.value), plain.fromNode);
    assert.deepEqual(errors, []);
    await context.close();

    // What the browser sent: sealed values (so the recording saw the writes), and never the
    // passphrase, the seed, the secret key or a plaintext.
    const traffic = sent.join('\n\n');
    assert.ok(sent.some((s) => s.startsWith('PUT ') && s.includes('"rekey_token"') && s.includes('e2e::')),
      'the setup sealed the values stored before');
    assert.ok(sent.some((s) => s.startsWith('PATCH ') && s.includes('e2e::')), 'the edits were recorded');
    const never = { PASSPHRASE, WRONG, ...plain,
      seed: b64(pair.seed), seedHex: sodium.to_hex(pair.seed),
      secretKey: b64(pair.privateKey), secretKeyHex: sodium.to_hex(pair.privateKey),
      secretKeyUrl: sodium.to_base64(pair.privateKey, sodium.base64_variants.URLSAFE_NO_PADDING) };
    for (const [name, value] of Object.entries(never)) {
      assert.equal(traffic.includes(value), false, `the browser sent ${name}`);
      assert.equal(traffic.includes(encodeURIComponent(value)), false, `the browser sent ${name}, URL-encoded`);
    }
    // The server's own database: at rest nothing plaintext either; searched as UTF-8 and as
    // bytes (the seed and key as latin1 strings of their bytes too).
    const stored = svcd.databaseBytes();
    assert.ok(svcd.databaseHolds('shop.example', stored) && svcd.databaseHolds('NODE_SEALED', stored), 'the database was read');
    assert.ok(svcd.databaseHolds(NAME, stored), 'text beyond ASCII is found as the server stores it');
    assert.equal(stored.toString('latin1').includes(NAME), false, 'latin1 text cannot find it: the old check was blind');
    const bytes = { seedBytes: Buffer.from(pair.seed).toString('latin1'), secretKeyBytes: Buffer.from(pair.privateKey).toString('latin1') };
    for (const [name, value] of Object.entries({ ...never, ...bytes })) {
      assert.equal(svcd.databaseHolds(value, stored), false, `the database holds ${name}`);
    }
  } finally {
    await svcd.stop();
  }
});

test('an empty vault is set up with one PUT, and a password generated in the page is sealed there', async () => {
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  const PASSPHRASE = 'quiet lantern 7 meadow';
  try {
    const key = await svcd.managementKey('rui@example.com');
    const bot = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Bot' } });
    assert.equal(bot.status, 201, bot.text);
    const context = await browser.newContext();
    const page = await context.newPage();
    const sent = [];
    page.on('request', (r) => sent.push({ method: r.method(), url: r.url(), body: r.postData() || '' }));
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${svcd.url}/dashboard/vault`);
    await page.fill('#email', 'rui@example.com');
    await page.fill('#password', 'correct horse battery');
    await Promise.all([page.waitForURL(/\/dashboard\/vault$/), page.click('form[action$="/login"] button[type=submit]')]);
    await page.fill('#vault-new-passphrase', 'short');
    await page.fill('#vault-new-passphrase-again', 'short');
    await page.click('#vault-setup button[type=submit]');
    await page.locator('#vault-status', { hasText: 'at least 8 characters' }).waitFor();
    await page.fill('#vault-new-passphrase', PASSPHRASE);
    await page.fill('#vault-new-passphrase-again', PASSPHRASE);
    await page.click('#vault-setup button[type=submit]');
    await shown(page, page.locator('#vault-state', { hasText: 'End-to-end encryption is set up' }));
    const writes = sent.filter((s) => s.url.includes('/api/encryption/') && s.method !== 'GET');
    assert.deepEqual(writes.map((s) => s.method), ['PUT'], 'no lease for an empty vault');
    const setupBody = JSON.parse(writes[0].body);
    assert.deepEqual(Object.keys(setupBody).sort(), ['kdf', 'public_key', 'salt', 'verifier']);
    assert.deepEqual(setupBody.kdf, { alg: 'argon2id', t: 3, m: 65536, p: 1 }, 'the page sends the KDF it derived with');
    // The page says so when it is loaded again.
    await page.reload();
    await page.locator('#vault-state', { hasText: 'End-to-end encryption is set up' }).waitFor();
    assert.equal(await page.locator('#vault-setup').count(), 0);

    await page.goto(`${svcd.url}/dashboard/identities/${bot.json.uuid}/passwords`);
    await page.locator('#view p.muted', { hasText: 'No passwords yet.' }).waitFor();
    await page.click('#vault-add');
    await page.locator('#vault-status', { hasText: 'Unlock the vault first' }).waitFor();
    assert.equal(await page.locator('#vault-form').count(), 0);
    await page.fill('#vault-passphrase', PASSPHRASE);
    await page.click('#vault-unlock button[type=submit]');
    await shown(page, page.locator('#vault-lock'));
    await page.click('#vault-add');
    await page.fill('#vault-field-domain', 'Forum.Example');
    await page.click('#vault-form button:has-text("Generate")');
    const generated = await page.inputValue('#vault-field-password');
    assert.match(generated, /^[!-~]{20}$/);
    await page.click('#vault-form button[type=submit]');
    await shown(page, page.locator('tr[data-entry]', { hasText: 'forum.example' }));
    assert.equal(sent.some((s) => s.body.includes(generated) || s.url.includes(encodeURIComponent(generated))), false,
      'the generated password was sent as it is');
    assert.equal(sent.some((s) => s.url.includes('generate-password')), false, 'the server generated it');
    for (const value of [PASSPHRASE, encodeURIComponent(PASSPHRASE)]) {
      assert.equal(sent.some((s) => s.body.includes(value) || s.url.includes(value)), false, 'the browser sent the passphrase');
    }

    const meta = (await svcd.api('GET', '/api/encryption/', { key })).json;
    const pair = derive(PASSPHRASE, meta);
    const entry = (await svcd.api('GET', `/api/passwords/?identity=${bot.json.uuid}`, { key })).json.results[0];
    assert.equal(open(pair, entry.password), generated);
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await svcd.stop();
  }
});

test('svcctl and the browser open what the other sealed', async () => {
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  const PASSPHRASE = 'copper violin 12 harbour';
  const fromSvcctl = 'sealed-by-svcctl-4c1e', fromBrowser = 'sealed-in-browser-8d2a';
  try {
    const key = await svcd.managementKey('sol@example.com');
    const bot = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Sol' } });
    assert.equal(bot.status, 201, bot.text);
    const identity = bot.json.uuid;
    const file = path.join(svcd.dataDir, 'vault-passphrase');
    writeFileSync(file, `${PASSPHRASE}\n`, { mode: 0o600 });
    const svcctl = (args, input) => svcd.svcctl(['--key', key, ...args, '--passphrase-file', file], input);
    svcctl(['vault', 'init']);
    svcctl(['secrets', 'set', 'FROM_SVCCTL', '--identity', identity], `${fromSvcctl}\n`);
    const stored = await svcd.api('GET', `/api/secrets/?identity=${identity}&key=FROM_SVCCTL`, { key });
    assert.match(stored.json.results[0].value, /^e2e::/);

    const context = await browser.newContext();
    const page = await context.newPage();
    const sent = [];
    page.on('request', (r) => sent.push(`${r.url()}\n${r.postData() || ''}`));
    await page.goto(`${svcd.url}/dashboard/identities/${identity}/secrets`);
    await page.fill('#email', 'sol@example.com');
    await page.fill('#password', 'correct horse battery');
    await Promise.all([page.waitForURL(/\/secrets$/), page.click('form[action$="/login"] button[type=submit]')]);
    await page.locator('tr[data-secret]').first().waitFor();
    await page.fill('#vault-passphrase', PASSPHRASE);
    await page.click('#vault-unlock button[type=submit]');
    await shown(page, page.locator('#vault-lock'));
    await page.click('tr[data-secret] button[data-action=reveal]');
    assert.equal(await page.locator('[data-value=value]').textContent(), fromSvcctl);
    await page.click('#vault-add');
    await page.fill('#vault-field-key', 'FROM_BROWSER');
    await page.fill('#vault-field-value', fromBrowser);
    await page.click('#vault-form button[type=submit]');
    await shown(page, page.locator('tr[data-secret]', { hasText: 'FROM_BROWSER' }));
    await context.close();
    assert.equal(sent.some((s) => s.includes(fromBrowser) || s.includes(PASSPHRASE)), false);

    assert.equal(svcctl(['secrets', 'get', 'FROM_BROWSER', '--identity', identity, '--reveal']), `${fromBrowser}\n`);
  } finally {
    await svcd.stop();
  }
});

// Signs in on `url` (which sends to the sign-in page first) as `email`.
async function signIn(page, url, email, landing) {
  await page.goto(url);
  await page.fill('#email', email);
  await page.fill('#password', 'correct horse battery');
  await Promise.all([page.waitForURL(landing), page.click('form[action$="/login"] button[type=submit]')]);
}

// Writes `text` to a passphrase file in svcd's data directory. @return its path.
function passphraseFile(svcd, name, text) {
  const file = path.join(svcd.dataDir, name);
  writeFileSync(file, `${text}\n`, { mode: 0o600 });
  return file;
}

test('a passphrase changed elsewhere locks the page rather than seal to the old key', async () => {
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  try {
    const key = await svcd.managementKey('kai@example.com');
    const bot = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Kai' } });
    assert.equal(bot.status, 201, bot.text);
    const identity = bot.json.uuid;
    const one = passphraseFile(svcd, 'one', 'first passphrase 11');
    const two = passphraseFile(svcd, 'two', 'second passphrase 22');
    const three = passphraseFile(svcd, 'three', 'third passphrase 33');
    const svcctl = (args, input) => svcd.svcctl(['--key', key, ...args], input);
    svcctl(['vault', 'init', '--passphrase-file', one]);
    svcctl(['secrets', 'set', 'FIRST', '--identity', identity, '--passphrase-file', one], 'v1\n');

    const context = await browser.newContext();
    const page = await context.newPage();
    const sent = [];
    page.on('request', (r) => sent.push({ method: r.method(), url: r.url(), headers: r.headers(), body: r.postData() || '' }));
    await signIn(page, `${svcd.url}/dashboard/identities/${identity}/secrets`, 'kai@example.com', /\/secrets$/);
    await page.locator('tr[data-secret]').first().waitFor();
    await page.fill('#vault-passphrase', 'first passphrase 11');
    await page.click('#vault-unlock button[type=submit]');
    await shown(page, page.locator('#vault-lock'));

    // svcctl changes the passphrase while the page is unlocked: the page reads the key again
    // before sealing, sees it changed, locks and asks for the current passphrase; nothing is sent.
    svcctl(['vault', 'change-passphrase', '--passphrase-file', one, '--new-passphrase-file', two]);
    await page.click('#vault-add');
    await page.fill('#vault-field-key', 'SECOND');
    await page.fill('#vault-field-value', 'v2');
    await page.click('#vault-form button[type=submit]');
    await page.locator('#vault-status', { hasText: 'changed elsewhere' }).waitFor();
    await page.locator('#vault-passphrase').waitFor();
    assert.equal(sent.some((s) => s.method === 'POST' && s.url.includes('/api/secrets/')), false, 'nothing was sealed to the old key and sent');

    // Unlocked with the current passphrase, the page seals to the current key and says so.
    await page.fill('#vault-passphrase', 'second passphrase 22');
    await page.click('#vault-unlock button[type=submit]');
    await shown(page, page.locator('#vault-lock'));
    const two_meta = (await svcd.api('GET', '/api/encryption/', { key })).json;

    // The race the check cannot see: the passphrase changes between the page's check and its
    // write (here the page is shown the metadata from before). The write names the key it sealed
    // to; the server refuses it, and the page locks.
    svcctl(['vault', 'change-passphrase', '--passphrase-file', two, '--new-passphrase-file', three]);
    await page.route('**/api/encryption/', (route) => (route.request().method() === 'GET'
      ? route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(two_meta) })
      : route.continue()));
    await page.click('#vault-add');
    await page.fill('#vault-field-key', 'THIRD');
    await page.fill('#vault-field-value', 'v3');
    await page.click('#vault-form button[type=submit]');
    await page.locator('#vault-status', { hasText: 'changed elsewhere' }).waitFor();
    await page.locator('#vault-passphrase').waitFor();
    const raced = sent.filter((s) => s.method === 'POST' && s.url.includes('/api/secrets/'));
    assert.equal(raced.length, 1);
    assert.equal(raced[0].headers['x-svc-e2e-public-key'], two_meta.public_key, 'the write named the key it sealed to');
    const listed = (await svcd.api('GET', `/api/secrets/?identity=${identity}`, { key })).json.results.map((r) => r.key);
    assert.deepEqual(listed, ['FIRST'], 'the server stored nothing sealed to an old key');

    await page.unroute('**/api/encryption/');
    await page.fill('#vault-passphrase', 'third passphrase 33');
    await page.click('#vault-unlock button[type=submit]');
    await shown(page, page.locator('#vault-lock'));
    await page.click('#vault-add');
    await page.fill('#vault-field-key', 'FOURTH');
    await page.fill('#vault-field-value', 'v4');
    await page.click('#vault-form button[type=submit]');
    await shown(page, page.locator('tr[data-secret]', { hasText: 'FOURTH' }));
    assert.equal(svcctl(['secrets', 'get', 'FOURTH', '--identity', identity, '--reveal', '--passphrase-file', three]), 'v4\n');
    await context.close();
  } finally {
    await svcd.stop();
  }
});

test('setting up asks before deleting what the server cannot decrypt, and takes no lease another change holds', async () => {
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  const PASSPHRASE = 'amber falcon 5 river';
  try {
    const key = await svcd.managementKey('lea@example.com');
    const bot = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Lea' } });
    const identity = bot.json.uuid;
    const entry = await svcd.api('POST', `/api/passwords/?identity=${identity}`, { key, body: {
      domain: 'bank.example', username: 'lea-user', password: 'lost-password-1' } });
    assert.equal(entry.status, 201, entry.text);
    // The password's value no longer decrypts at rest (another field's ciphertext, bound to
    // another place), as with a svcd whose master key file lacks its key.
    svcd.sql(`UPDATE vault_values SET sealed = (SELECT s FROM (SELECT sealed AS s FROM vault_values
      WHERE record = '${entry.json.uuid}' AND field = 'username') AS t)
      WHERE record = '${entry.json.uuid}' AND field = 'password';`);

    const context = await browser.newContext();
    const page = await context.newPage();
    const sent = [];
    page.on('request', (r) => sent.push({ method: r.method(), url: r.url(), body: r.postData() || '' }));
    await signIn(page, `${svcd.url}/dashboard/vault`, 'lea@example.com', /\/dashboard\/vault$/);
    const setUp = async () => {
      await page.fill('#vault-new-passphrase', PASSPHRASE);
      await page.fill('#vault-new-passphrase-again', PASSPHRASE);
      await page.click('#vault-setup button[type=submit]');
    };
    const leaseCalls = () => sent.filter((s) => s.url.endsWith('/api/encryption/rekey/'));

    // Another client's change holds the vault: the page waits for it, taking no lease of its own.
    const other = await svcd.api('POST', '/api/encryption/rekey/', { key, body: {} });
    assert.equal(other.status, 201, other.text);
    await setUp();
    await page.locator('#vault-status', { hasText: 'being changed' }).waitFor({ timeout: 30000 });
    assert.deepEqual(leaseCalls(), [], 'the page took no lease and ended none');
    const ended = await svcd.api('DELETE', '/api/encryption/rekey/', { key, body: { rekey_token: other.json.rekey_token } });
    assert.equal(ended.status, 204, ended.text);

    // The page's own lease lists a value the server cannot decrypt: it refuses, ends its lease
    // with its token, and offers to delete it.
    await setUp();
    await page.locator('#vault-status', { hasText: '1 stored value does not decrypt' }).waitFor({ timeout: 30000 });
    const calls = leaseCalls();
    assert.deepEqual(calls.map((s) => s.method), ['POST', 'DELETE']);
    assert.match(JSON.parse(calls[1].body).rekey_token, /.{20,}/, 'the lease is ended with its own token');
    const after = await svcd.api('POST', `/api/secrets/?identity=${identity}`, { key, body: { key: 'STILL_WRITABLE', value: 'w' } });
    assert.equal(after.status, 201, 'the lease was given back, not left to lapse');
    assert.equal((await svcd.api('GET', '/api/encryption/', { key })).status, 404, 'nothing was set up');

    await page.check('#vault-drop-undecryptable');
    await setUp();
    await shown(page, page.locator('#vault-state', { hasText: 'End-to-end encryption is set up' }));
    const meta = (await svcd.api('GET', '/api/encryption/', { key })).json;
    const pair = derive(PASSPHRASE, meta);
    const sealedEntry = (await svcd.api('GET', `/api/passwords/${entry.json.uuid}/`, { key })).json;
    assert.equal(open(pair, sealedEntry.username), 'lea-user');
    assert.equal(sealedEntry.password ?? '', '', 'the value that did not decrypt was dropped, as the person chose');
    const put = sent.filter((s) => s.method === 'PUT' && s.body.includes('"records"'));
    assert.equal(put.length, 1);
    assert.deepEqual(JSON.parse(put[0].body).kdf, { alg: 'argon2id', t: 3, m: 65536, p: 1 });
    await context.close();
  } finally {
    await svcd.stop();
  }
});

test('a change whose answer is lost is read again, not called a failure', async () => {
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  const PASSPHRASE = 'silver comet 9 garden';
  try {
    const key = await svcd.managementKey('max@example.com');
    const bot = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Max' } });
    const identity = bot.json.uuid;
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, `${svcd.url}/dashboard/vault`, 'max@example.com', /\/dashboard\/vault$/);
    // The server gets the PUT and commits it; its answer never reaches the page.
    const lose = (method) => async (route) => {
      if (route.request().method() !== method) return route.continue();
      await route.fetch();
      await route.abort('connectionreset');
    };
    await page.route('**/api/encryption/', lose('PUT'));
    await page.fill('#vault-new-passphrase', PASSPHRASE);
    await page.fill('#vault-new-passphrase-again', PASSPHRASE);
    await page.click('#vault-setup button[type=submit]');
    await shown(page, page.locator('#vault-status', { hasText: 'answer was lost, but the change was made' }));
    assert.equal((await svcd.api('GET', '/api/encryption/', { key })).status, 200);
    await page.unroute('**/api/encryption/');

    const added = await svcd.api('POST', `/api/passwords/?identity=${identity}`, { key, body: {
      domain: 'lost.example', password: seal(unb64((await svcd.api('GET', '/api/encryption/', { key })).json.public_key), 'before') } });
    assert.equal(added.status, 201, added.text);
    await page.goto(`${svcd.url}/dashboard/identities/${identity}/passwords`);
    await page.locator('tr[data-entry]').first().waitFor();
    await page.fill('#vault-passphrase', PASSPHRASE);
    await page.click('#vault-unlock button[type=submit]');
    await shown(page, page.locator('#vault-lock'));
    await page.route('**/api/passwords/*/', lose('PATCH'));
    await page.click('tr[data-entry] button[data-action=edit]');
    await page.fill('#vault-field-password', 'after');
    await page.click('#vault-form button[type=submit]');
    await page.locator('#vault-message', { hasText: 'it may have been saved' }).waitFor();
    const pair = derive(PASSPHRASE, (await svcd.api('GET', '/api/encryption/', { key })).json);
    assert.equal(open(pair, (await svcd.api('GET', `/api/passwords/${added.json.uuid}/`, { key })).json.password), 'after',
      'it was saved, as the page said it may have been');
    await context.close();
  } finally {
    await svcd.stop();
  }
});

test('the server\'s KDF parameters are bounded, and the derivation leaves the page responsive', async () => {
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  try {
    const key = await svcd.managementKey('noa@example.com');
    const bot = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Noa' } });
    const file = passphraseFile(svcd, 'pp', 'bounded derivation 4');
    svcd.svcctl(['--key', key, 'vault', 'init', '--passphrase-file', file]);
    const meta = (await svcd.api('GET', '/api/encryption/', { key })).json;
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await signIn(page, `${svcd.url}/dashboard/identities/${bot.json.uuid}/secrets`, 'noa@example.com', /\/secrets$/);
    await page.locator('#vault-passphrase').waitFor();
    const serve = async (kdf) => {
      await page.unroute('**/api/encryption/');
      await page.route('**/api/encryption/', (route) => route.fulfill({ status: 200, contentType: 'application/json',
        body: JSON.stringify({ ...meta, kdf: { alg: 'argon2id', p: 1, ...kdf } }) }));
    };
    const unlock = async () => {
      await page.fill('#vault-passphrase', 'bounded derivation 4');
      await page.click('#vault-unlock button[type=submit]');
    };
    await serve({ t: 101, m: 65536 });
    await unlock();
    await page.locator('#vault-status', { hasText: 'outside what the contract allows' }).waitFor();
    await serve({ t: 3, m: 4194304 });  // 4 GiB: m * 1024 is 2^32
    await unlock();
    await page.locator('#vault-status', { hasText: 'more than a browser page can give' }).waitFor();
    await serve({ t: 3, m: 1024 });
    await unlock();
    await page.locator('#vault-status', { hasText: 'outside what the contract allows' }).waitFor();

    // Allowed but slow (t 12): the page says so and stays responsive while the worker derives;
    // the key it makes is not the account's, so the passphrase is then wrong for it.
    await serve({ t: 12, m: 65536 });
    await unlock();
    await page.locator('#vault-status', { hasText: 'raised above the defaults' }).waitFor();
    const started = Date.now();
    for (let i = 0; i < 5; i++) await page.evaluate(() => document.title);
    const responsive = Date.now() - started;
    await page.locator('#vault-status', { hasText: 'Wrong passphrase' }).waitFor({ timeout: 60000 });
    // A page blocked by the derivation would answer after it (t 12: many seconds); a loaded
    // machine may take a while to answer at all.
    assert.ok(responsive < 5000, `the page answered five times in ${responsive} ms while deriving`);

    await page.unroute('**/api/encryption/');
    await unlock();
    await shown(page, page.locator('#vault-lock'));
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await svcd.stop();
  }
});
