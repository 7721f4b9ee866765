// The device login as people meet it: an agent starts it over the API, a person signs in at the
// dashboard in a real browser (through a real OpenID Connect provider, or with a local password)
// and approves or denies, and the agent's waiting poll gets its answer.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Svcd, startProvider, launchBrowser, freePort } from './lib.mjs';

const KEY_PATTERN = /^svc_mgmt_[0-9A-Za-z]{49}$/;
let browser;

before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

async function startDevice(svcd, clientId = 'browser test agent') {
  const r = await svcd.api('POST', '/api/auth/device/', { body: { client_id: clientId } });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

function waitForToken(svcd, deviceCode) {
  return svcd.api('POST', '/api/auth/device/token/', { body: { device_code: deviceCode, wait: true } });
}

async function signInLocally(page, email, password) {
  await page.fill('#email', email);
  await page.fill('#password', password);
  await Promise.all([page.waitForLoadState('load'), page.click('form[action$="/login"] button[type=submit]')]);
}

test('device login through an OpenID Connect provider, approved in the browser', async () => {
  // The dashboard's own port must be known before the provider is configured, for the redirect URI.
  let port;
  let base;
  const provider = await startProvider({ redirectUri: async () => {
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    return `${base}/dashboard/login/callback`;
  } });
  const svcd = await Svcd.start({ 'server.port': port, 'public.base_url': base,
    'auth.oidc.issuer': provider.issuer, 'auth.oidc.client_id': provider.clientId,
    'auth.oidc.client_secret': provider.clientSecret, 'auth.local_users': 'false' }).catch(async (e) => {
    await provider.close();
    throw e;
  });
  try {
    assert.equal(svcd.url, base);
    const device = await startDevice(svcd);
    assert.equal(device.verification_uri, `${base}/dashboard/device`);
    const poll = waitForToken(svcd, device.device_code);

    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(device.verification_uri_complete);
    // Not signed in: the sign-in page, which remembers where to return.
    assert.match(page.url(), /\/dashboard\/login\?next=/);
    assert.equal(await page.locator('#password').count(), 0, 'local sign-in is off');
    await page.click('#oidc');
    // The provider's own login and consent pages.
    await page.waitForSelector('input[name=login]');
    await page.fill('input[name=login]', 'ada');
    await page.fill('input[name=password]', 'anything');
    await page.click('button[type=submit]');
    await page.waitForURL((url) => url.href.startsWith(base) || /consent|interaction/.test(url.href));
    if (!page.url().startsWith(base)) await page.click('button[type=submit]');
    await page.waitForURL(`${base}/dashboard/device?**`);
    assert.equal(await page.textContent('#code'), device.user_code);
    assert.match(await page.textContent('main'), /browser test agent/);
    await page.click('#approve');
    assert.match(await page.textContent('#result'), /Approved/);

    const cookies = await context.cookies(base);
    const session = cookies.find((c) => c.name === 'svc_session');
    assert.ok(session, 'the dashboard set its session cookie');
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Lax');

    const answer = await poll;
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.json.management_key, KEY_PATTERN);
    assert.equal(answer.json.user.email, 'ada@example.org');
    assert.equal(answer.json.user.name, 'Person ada');
    assert.equal(answer.headers.get('cache-control'), 'no-store');
    const who = await svcd.api('GET', '/api/health/whoami/', { key: answer.json.management_key });
    assert.equal(who.status, 200);
    assert.equal(who.json.kind, 'management');
    assert.equal(who.json.user.email, 'ada@example.org');

    // The same browser session reads through the API with its cookie (as EventSource will)...
    const viaCookie = await page.evaluate(async () => (await fetch('/api/health/whoami/')).json());
    assert.equal(viaCookie.kind, 'user');
    assert.equal(viaCookie.account.id, who.json.account.id);
    // ...but cannot change anything with it alone.
    const post = await page.evaluate(async () => (await fetch('/api/auth/keys/', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"label":"x"}' })).status);
    assert.equal(post, 403);

    // A second approval by the same person signs in without a new account.
    const second = await startDevice(svcd);
    const poll2 = waitForToken(svcd, second.device_code);
    await page.goto(second.verification_uri_complete);
    await page.click('#approve');
    const answer2 = await poll2;
    assert.equal(answer2.status, 200);
    const who2 = await svcd.api('GET', '/api/health/whoami/', { key: answer2.json.management_key });
    assert.equal(who2.json.account.id, who.json.account.id);
    await context.close();
  } finally {
    await svcd.stop();
    await provider.close();
  }
});

test('local sign-in that denies a code, then approves another and manages keys', async () => {
  const svcd = await Svcd.start({ 'auth.local_users': 'true' });
  try {
    svcd.svcctl(['users', 'add', 'grace@example.com', '--password-stdin', '--name', 'Grace'],
      'correct horse battery\n');
    const device = await startDevice(svcd, 'denied agent');
    const context = await browser.newContext();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svcd.url });
    const page = await context.newPage();
    await page.goto(`${svcd.url}/dashboard/device`);
    assert.match(page.url(), /\/dashboard\/login\?next=/);
    assert.equal(await page.locator('#oidc').count(), 0, 'no provider configured');
    await signInLocally(page, 'grace@example.com', 'wrong password');
    assert.match(await page.textContent('[role=alert]'), /Wrong email or password/);
    await signInLocally(page, 'grace@example.com', 'correct horse battery');
    assert.equal(new URL(page.url()).pathname, '/dashboard/device');
    // Typed the way people type it: lower case, no hyphen.
    await page.fill('#user_code', device.user_code.replace('-', '').toLowerCase());
    await page.click('form[action$="/device"] button[type=submit]');
    assert.equal(await page.textContent('#code'), device.user_code);
    await page.click('#deny');
    assert.match(await page.textContent('#result'), /Denied/);
    const denied = await svcd.api('POST', '/api/auth/device/token/', { body: { device_code: device.device_code } });
    assert.equal(denied.status, 400);
    assert.equal(denied.json.error, 'access_denied');
    // Denying created nothing: still no account.
    await page.goto(`${svcd.url}/dashboard/keys`);
    assert.match(await page.textContent('main'), /No account yet/);

    // Approving another code creates the account and its first key.
    const device2 = await startDevice(svcd, 'approved agent');
    const poll = waitForToken(svcd, device2.device_code);
    await page.goto(device2.verification_uri_complete);
    await page.click('#approve');
    const answer = await poll;
    assert.equal(answer.status, 200, answer.text);

    await page.goto(`${svcd.url}/dashboard/keys`);
    assert.match(await page.textContent('#keys'), /device login: approved agent/);
    await page.fill('#label', 'made in the dashboard');
    await page.click('#create');
    const key = (await page.textContent('#new-key')).trim();
    assert.match(key, KEY_PATTERN);
    await page.click('#copy');
    await page.waitForFunction(() => document.getElementById('copy').textContent === 'Copied');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key);
    const who = await svcd.api('GET', '/api/health/whoami/', { key });
    assert.equal(who.status, 200);
    assert.equal(who.json.key.label, 'made in the dashboard');
    // The full key is never shown again.
    await page.goto(`${svcd.url}/dashboard/keys`);
    assert.ok(!(await page.content()).includes(key));
    const row = page.locator('tr', { hasText: 'made in the dashboard' });
    await row.locator('button', { hasText: 'Revoke' }).click();
    assert.match(await page.textContent('#flash'), /revoked/);
    assert.equal((await svcd.api('GET', '/api/health/whoami/', { key })).status, 401);
    assert.equal((await svcd.api('GET', '/api/health/whoami/', { key: answer.json.management_key })).status, 200);

    // Sign out ends the session on the server too.
    const session = (await context.cookies(svcd.url)).find((c) => c.name === 'svc_session').value;
    await page.click('header form button');
    assert.match(page.url(), /\/dashboard\/login$/);
    const stale = await svcd.api('GET', '/api/health/whoami/', { headers: { Cookie: `svc_session=${session}` } });
    assert.equal(stale.status, 401);
    await context.close();
  } finally {
    await svcd.stop();
  }
});

test('forms without a CSRF token, foreign return URLs and wrong codes are refused', async () => {
  const svcd = await Svcd.start({ 'auth.local_users': 'true' });
  try {
    svcd.svcctl(['users', 'add', 'lin@example.com', '--password-stdin'], 'long enough pw\n');
    const context = await browser.newContext();
    const page = await context.newPage();
    // A return URL that points elsewhere lands on the dashboard's home instead.
    for (const next of ['https://evil.example/', '//evil.example/x', '/dashboard/../api/auth/keys/',
      '/dashboard/%2e%2e/x', '/dashboard\\evil']) {
      await page.goto(`${svcd.url}/dashboard/login?next=${encodeURIComponent(next)}`);
      assert.equal(await page.inputValue('input[name=next]'), '/dashboard/', next);
    }
    await signInLocally(page, 'lin@example.com', 'long enough pw');
    assert.equal(new URL(page.url()).pathname, '/dashboard/');
    const cookie = (await context.cookies(svcd.url)).map((c) => `${c.name}=${c.value}`).join('; ');

    // A cross-site form post carries the cookie but not the token.
    const device = await startDevice(svcd);
    for (const body of [`user_code=${device.user_code}&decision=approve`,
      `user_code=${device.user_code}&decision=approve&csrf=forged`]) {
      const forged = await fetch(`${svcd.url}/dashboard/device`, { method: 'POST', redirect: 'manual',
        headers: { Cookie: cookie, 'Content-Type': 'application/x-www-form-urlencoded' }, body });
      assert.equal(forged.status, 403);
    }
    const fromElsewhere = await fetch(`${svcd.url}/dashboard/logout`, { method: 'POST', redirect: 'manual',
      headers: { Cookie: cookie, Origin: 'https://evil.example', 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'csrf=whatever' });
    assert.equal(fromElsewhere.status, 403);
    const pending = await svcd.api('POST', '/api/auth/device/token/', { body: { device_code: device.device_code } });
    assert.equal(pending.json.error, 'authorization_pending', 'nothing was approved');

    // RFC 8628 §5.1: five wrong codes, then the person is throttled, even for a right one.
    for (let i = 0; i < 5; i++) {
      await page.goto(`${svcd.url}/dashboard/device`);
      await page.fill('#user_code', 'BCDF-GHJK'.replace('K', 'LMNPQRSTVWXZ'[i]));
      await page.click('form[action$="/device"] button[type=submit]');
      assert.match(await page.textContent('[role=alert]'), /unknown or has expired/);
    }
    await page.goto(device.verification_uri_complete);
    assert.match(await page.textContent('[role=alert]'), /Too many wrong codes/);
    assert.equal(await page.locator('#approve').count(), 0);
    await context.close();
  } finally {
    await svcd.stop();
  }
});
