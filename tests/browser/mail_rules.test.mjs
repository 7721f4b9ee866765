// The sender-rule pages in a real browser: an identity's page adds and deletes its own rules and
// shows the account's defaults read-only; the account's page adds a default; the rules made in
// the page are the ones SMTP applies (550 5.7.1 at RCPT).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Svcd, launchBrowser } from './lib.mjs';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

// The answer to RCPT TO for one envelope.
function rcpt(port, from, to) {
  return new Promise((resolve, reject) => {
    let said = '';
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`EHLO browser.test\r\nMAIL FROM:<${from}>\r\nRCPT TO:<${to}>\r\nQUIT\r\n`);
    });
    socket.on('data', (chunk) => { said += chunk; });
    socket.on('end', () => resolve(said.split('\r\n').find((l) => /^(250 2\.1\.5|550 )/.test(l))));
    socket.on('error', reject);
  });
}

test('sender rules: an identity\'s own and the account\'s defaults, as the signed-in person keeps them', async () => {
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  try {
    const smtpPort = Number(/SMTP listener on port (\d+)/.exec(svcd.log)[1]);
    const key = await svcd.managementKey('ria@example.com');
    const created = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Ria', email_identifier: 'ria' } });
    assert.equal(created.status, 201, created.text);
    const uuid = created.json.uuid;
    const made = await svcd.api('POST', '/api/email-rules/', { key, body: { kind: 'block', pattern: '<b>x</b>.example' } });
    assert.equal(made.status, 400, 'markup is no pattern');
    const dflt = await svcd.api('POST', '/api/email-rules/', { key, body: { kind: 'block', pattern: 'spam.example' } });
    assert.equal(dflt.status, 201, dflt.text);

    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${svcd.url}/dashboard/identities/${uuid}/rules`);
    await page.fill('#email', 'ria@example.com');
    await page.fill('#password', 'correct horse battery');
    await Promise.all([page.waitForURL(/\/rules$/), page.click('form[action$="/login"] button[type=submit]')]);

    // The default is there, read-only.
    const defaultRow = page.locator(`tr[data-rule="${dflt.json.id}"]`);
    await defaultRow.waitFor();
    assert.match(await defaultRow.textContent(), /spam\.example.*account default/);
    assert.equal(await defaultRow.locator('button').count(), 0);
    assert.match(await page.locator('#view-title').textContent(), /Sender rules · Ria/);

    // Add an allow rule: from then on only github.com (and nothing the default blocks) gets in.
    await page.selectOption('.rule-form select', 'allow');
    await page.fill('.rule-form input[name=pattern]', 'GitHub.com');
    await page.click('.rule-form button[type=submit]');
    const allowRow = page.locator('tr[data-rule]', { hasText: 'github.com' });
    await allowRow.waitFor();
    assert.match(await allowRow.textContent(), /allow.*github\.com.*this identity/);
    assert.match(await rcpt(smtpPort, 'noreply@github.com', 'ria@agents.test'), /^250 2\.1\.5/);
    assert.match(await rcpt(smtpPort, 'a@elsewhere.example', 'ria@agents.test'), /^550 5\.7\.1/);

    // A bad pattern is told in the form, nothing added.
    await page.fill('.rule-form input[name=pattern]', 'not a pattern');
    await page.click('.rule-form button[type=submit]');
    await page.locator('.rule-form .error', { hasText: /./ }).waitFor();
    assert.match(await page.locator('.rule-form .error').textContent(), /invalid|pattern|valid/i);
    assert.equal(await page.locator('tr[data-rule]').count(), 2);

    // Delete it: everyone but the default's domain gets in again.
    await allowRow.locator('button.delete').click();
    await allowRow.waitFor({ state: 'detached' });
    assert.match(await rcpt(smtpPort, 'a@elsewhere.example', 'ria@agents.test'), /^250 2\.1\.5/);
    assert.match(await rcpt(smtpPort, 'a@spam.example', 'ria@agents.test'), /^550 5\.7\.1/);

    // The account's page, from the navigation: a new default, for every identity.
    await page.goto(`${svcd.url}/dashboard/email-rules`);
    await page.locator(`tr[data-rule="${dflt.json.id}"]`).waitFor();
    await page.fill('.rule-form input[name=pattern]', 'mallory@evil.example');
    await page.click('.rule-form button[type=submit]');
    await page.locator('tr[data-rule]', { hasText: 'mallory@evil.example' }).waitFor();
    assert.match(await rcpt(smtpPort, 'mallory@evil.example', 'ria@agents.test'), /^550 5\.7\.1/);
    const listed = await svcd.api('GET', '/api/email-rules/', { key });
    assert.equal(listed.json.count, 2);
    assert.ok(listed.json.results.every((r) => r.identity === null));
    await context.close();
  } finally {
    await svcd.stop();
  }
});
