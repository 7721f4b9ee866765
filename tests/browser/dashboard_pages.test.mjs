// The pages plugins add to the dashboard: the navigation and the identities page are drawn from
// the plugins that are loaded. Without the email plugin there is no inbox (no link, no page) and
// the identities page still works; with it, each identity links to its inbox (and its sender
// rules).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Svcd, launchBrowser } from './lib.mjs';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

// Signs in with the local password at the identities page. @return the page, and the script
// errors and console errors it logged (a CSP violation shows there) but for the 404s the tests
// ask for.
async function signedInAtIdentities(svcd, email) {
  const page = await (await browser.newContext()).newPage();
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${svcd.url}/dashboard/identities`);
  await page.fill('#email', email);
  await page.fill('#password', 'correct horse battery');
  await Promise.all([page.waitForURL(/\/dashboard\/identities$/), page.click('form[action$="/login"] button[type=submit]')]);
  return { page, errors };
}

const navigation = (page) => page.locator('header > a').allTextContents();

test('without the email plugin the navigation has no inbox and the identities page still works', async () => {
  const svcd = await Svcd.start({ 'plugins.enabled': 'auth,identities,dashboard' });
  try {
    const key = await svcd.managementKey('ida@example.com');
    const created = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Ida\'s <i>bot</i>' } });
    assert.equal(created.status, 201, created.text);
    const uuid = created.json.uuid;

    const { page, errors } = await signedInAtIdentities(svcd, 'ida@example.com');
    const row = page.locator(`tr[data-identity="${uuid}"]`);
    await row.waitFor();
    assert.equal(await row.locator('td').first().textContent(), 'Ida\'s <i>bot</i>');
    assert.equal(await row.locator('td').nth(1).textContent(), '—');
    assert.equal(await row.locator('a').count(), 0, 'no page to link the identity to');
    assert.deepEqual(await navigation(page), ['svc', 'Approve a device', 'Keys', 'Identities']);

    await page.goto(`${svcd.url}/dashboard/`);
    assert.deepEqual(await page.locator('main a.button').allTextContents(), ['Approve a device', 'Keys', 'Identities']);
    assert.equal(await page.locator('a[href*="inbox"]').count(), 0);

    // The inbox is not there: answered as any path no route matches.
    const inbox = await page.goto(`${svcd.url}/dashboard/identities/${uuid}/inbox`);
    assert.equal(inbox.status(), 404);
    assert.equal((await inbox.json()).code, 'not_found');
    assert.deepEqual(errors, []);
  } finally {
    await svcd.stop();
  }
});

test('with the email plugin each identity links to its inbox, and the inbox and thread pages load', async () => {
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  try {
    const key = await svcd.managementKey('eve@example.com');
    const created = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Eve', email_identifier: 'eve' } });
    assert.equal(created.status, 201, created.text);
    const uuid = created.json.uuid;

    const { page, errors } = await signedInAtIdentities(svcd, 'eve@example.com');
    const row = page.locator(`tr[data-identity="${uuid}"]`);
    await row.waitFor();
    assert.equal(await row.locator('td').nth(1).textContent(), 'eve@agents.test');
    assert.deepEqual(await navigation(page), ['svc', 'Approve a device', 'Keys', 'Identities', 'Sender rules', 'Vault']);
    // The inbox first (the name links to it), then the identity's sender rules.
    assert.equal(await row.locator('a', { hasText: 'Sender rules' }).getAttribute('href'), `/dashboard/identities/${uuid}/rules`);

    await Promise.all([page.waitForURL(new RegExp(`/dashboard/identities/${uuid}/inbox$`)), row.locator('a').first().click()]);
    await page.locator('#view p.muted', { hasText: 'No mail yet.' }).waitFor();
    assert.equal(await page.locator('#view-title').textContent(), 'Eve · eve@agents.test');
    assert.equal(await page.locator('main a', { hasText: 'Identities' }).getAttribute('href'), '/dashboard/identities');

    // A UUID in capitals is the same identity; a thread that is not there says so in the page.
    await page.goto(`${svcd.url}/dashboard/identities/${uuid.toUpperCase()}/threads/${uuid}`);
    await page.locator('#view .error').waitFor();
    assert.match(await page.locator('#view .error').textContent(), /Not found/);
    assert.equal(await page.locator('main a', { hasText: 'Inbox' }).getAttribute('href'), `/dashboard/identities/${uuid}/inbox`);

    // What is not a UUID is no page of this identity.
    const bad = await page.goto(`${svcd.url}/dashboard/identities/not-a-uuid/inbox`);
    assert.equal(bad.status(), 404);
    assert.equal(await page.locator('main h1').textContent(), 'Not found');

    // Signed out, a contributed page sends the person to sign in and back.
    const anonymous = await (await browser.newContext()).newPage();
    await anonymous.goto(`${svcd.url}/dashboard/identities/${uuid}/inbox`);
    assert.match(anonymous.url(), new RegExp(`/dashboard/login\\?next=%2Fdashboard%2Fidentities%2F${uuid}%2Finbox$`));
    assert.deepEqual(errors, []);
  } finally {
    await svcd.stop();
  }
});
