// The passwords and secrets plugins' dashboard pages in a real browser: an identity's entries and
// secrets are listed by name, and no value reaches the page: none is shown, and none crosses the
// network (every API answer the page receives is recorded and searched).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Svcd, launchBrowser } from './lib.mjs';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

test('password entries and secrets are listed by name, never by value', async () => {
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  try {
    const key = await svcd.managementKey('vera@example.com');
    const ann = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Ann' } });
    assert.equal(ann.status, 201, ann.text);
    const uuid = ann.json.uuid;
    const p = await svcd.api('POST', `/api/passwords/?identity=${uuid}`, {
      key, body: { domain: 'shop.example', username: 'user-visible-not', password: 'pw-3c1f9e', notes: 'note-77aa' },
    });
    assert.equal(p.status, 201, p.text);
    const s = await svcd.api('POST', `/api/secrets/?identity=${uuid}`, {
      key, body: { key: 'STRIPE_KEY', value: 'sk-live-9d8e7f', notes: 'note-5b6c' },
    });
    assert.equal(s.status, 201, s.text);

    const context = await browser.newContext();
    const page = await context.newPage();
    const answers = [];
    page.on('response', async (r) => {
      if (r.url().includes('/api/')) answers.push(await r.text().catch(() => ''));
    });
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${svcd.url}/dashboard/identities`);
    await page.fill('#email', 'vera@example.com');
    await page.fill('#password', 'correct horse battery');
    await Promise.all([page.waitForURL(/\/dashboard\/identities$/), page.click('form[action$="/login"] button[type=submit]')]);

    await page.goto(`${svcd.url}/dashboard/identities/${uuid}/passwords`);
    await page.locator('tr[data-entry]').first().waitFor();
    assert.equal(await page.locator('#view-title').textContent(), 'Ann · Passwords');
    assert.equal(await page.locator('tr[data-entry] td').first().textContent(), 'shop.example');

    await page.goto(`${svcd.url}/dashboard/identities/${uuid}/secrets`);
    await page.locator('tr[data-secret]').first().waitFor();
    assert.equal(await page.locator('#view-title').textContent(), 'Ann · Secrets');
    assert.equal(await page.locator('tr[data-secret] td').first().textContent(), 'STRIPE_KEY');

    const seen = answers.join('\n') + (await page.content());
    for (const value of ['user-visible-not', 'pw-3c1f9e', 'note-77aa', 'sk-live-9d8e7f', 'note-5b6c']) {
      assert.equal(seen.includes(value), false, `${value} reached the page`);
    }
    assert.ok(answers.some((a) => a.includes('STRIPE_KEY')), 'the secrets list was recorded');
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await svcd.stop();
  }
});
