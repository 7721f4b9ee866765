// The contacts plugin's dashboard page in a real browser: the identities page links each identity
// to its contacts, which list newest first as text (never markup), and the search box narrows
// them; another account's identity shows nothing of this one's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Svcd, launchBrowser } from './lib.mjs';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

test('an identity\'s contacts, listed and searched', async () => {
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  try {
    const key = await svcd.managementKey('cora@example.com');
    const ann = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Ann' } });
    assert.equal(ann.status, 201, ann.text);
    const uuid = ann.json.uuid;
    for (const body of [
      { email: 'grace@navy.mil', display_name: 'Grace Hopper', nickname: 'Amazing Grace' },
      { phone_number: '+12025550177', display_name: '<b>Ada</b> Lovelace' },
    ]) {
      const r = await svcd.api('POST', `/api/contacts/?identity=${uuid}`, { key, body });
      assert.equal(r.status, 201, r.text);
    }

    const context = await browser.newContext();
    const page = await context.newPage();
    const errors = [];
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${svcd.url}/dashboard/identities`);
    await page.fill('#email', 'cora@example.com');
    await page.fill('#password', 'correct horse battery');
    await Promise.all([page.waitForURL(/\/dashboard\/identities$/), page.click('form[action$="/login"] button[type=submit]')]);

    const row = page.locator(`tr[data-identity="${uuid}"]`);
    await row.waitFor();
    await Promise.all([page.waitForURL(new RegExp(`/dashboard/identities/${uuid}/contacts$`)),
      row.locator('a', { hasText: 'Contacts' }).click()]);
    await page.locator('tr[data-contact]').first().waitFor();
    assert.equal(await page.locator('#view-title').textContent(), 'Ann · Contacts');
    assert.equal(await page.locator('#contact-count').textContent(), '2 contacts');
    const rows = page.locator('tr[data-contact]');
    assert.equal(await rows.count(), 2);
    // Newest first, someone else's text as text.
    assert.equal(await rows.nth(0).locator('td').nth(0).textContent(), '<b>Ada</b> Lovelace');
    assert.equal(await rows.nth(0).locator('td').nth(2).textContent(), '+12025550177');
    assert.equal(await rows.nth(1).locator('td').nth(1).textContent(), 'grace@navy.mil');
    assert.equal(await rows.nth(1).locator('.muted').textContent(), 'Amazing Grace');

    await page.fill('#contact-q', 'HOPPER');
    await page.click('#contact-search button[type=submit]');
    await page.locator('#contact-count', { hasText: '1 contact' }).waitFor();
    assert.equal(await page.locator('tr[data-contact]').count(), 1);
    assert.equal(await page.locator('tr[data-contact] td').nth(1).textContent(), 'grace@navy.mil');
    await page.fill('#contact-q', 'nobody');
    await page.click('#contact-search button[type=submit]');
    await page.locator('#view p.muted', { hasText: 'No contacts.' }).waitFor();

    // What is not an identity id is no page; another account's identity shows nothing.
    const bad = await page.goto(`${svcd.url}/dashboard/identities/not-a-uuid/contacts`);
    assert.equal(bad.status(), 404);
    const zedKey = await svcd.managementKey('zed@example.com');
    const zed = await svcd.api('POST', '/api/identities/', { key: zedKey, body: { name: 'Zed' } });
    await page.goto(`${svcd.url}/dashboard/identities/${zed.json.uuid}/contacts`);
    await page.locator('#view .error').waitFor();
    assert.match(await page.locator('#view .error').textContent(), /Not found/);
    assert.equal(await page.locator('tr[data-contact]').count(), 0);
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await svcd.stop();
  }
});
