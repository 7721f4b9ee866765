// The thread page shows each message's authentication verdict, and a warning that stands out on
// unauthenticated mail claiming a well-known sender's domain; authenticated mail between two
// identities here carries none.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Svcd, launchBrowser } from './lib.mjs';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

function smtp(port, from, to, data) {
  return new Promise((resolve, reject) => {
    let said = '';
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`EHLO browser.test\r\nMAIL FROM:<${from}>\r\nRCPT TO:<${to}>\r\nDATA\r\n` +
        `${data}\r\n.\r\nQUIT\r\n`);
    });
    socket.on('data', (chunk) => { said += chunk; });
    socket.on('end', () => resolve(said));
    socket.on('error', reject);
  });
}

async function signIn(page, svcd, email) {
  await page.goto(`${svcd.url}/dashboard/identities`);
  await page.fill('#email', email);
  await page.fill('#password', 'correct horse battery');
  await Promise.all([page.waitForURL(/\/dashboard\/identities$/), page.click('form[action$="/login"] button[type=submit]')]);
}

test('a forged well-known sender is marked; mail from a sibling identity is authenticated', async () => {
  // No DNS answers here (email.dns.server is a silent port): the forged mail's checks say
  // temperror, so its verdict is none, and github.com is a well-known sender.
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  try {
    const smtpPort = Number(/SMTP listener on port (\d+)/.exec(svcd.log)[1]);
    const key = await svcd.managementKey('mia@example.com');
    const mia = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Mia', email_identifier: 'mia' } });
    const sib = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Sib', email_identifier: 'sib' } });
    assert.equal(mia.status, 201, mia.text);
    const said = await smtp(smtpPort, 'noreply@github.com', 'mia@agents.test', [
      'From: GitHub <noreply@github.com>', 'To: mia@agents.test', 'Subject: Verify your device', '',
      'Your code is 482913.'].join('\r\n'));
    assert.match(said, /250 2\.0\.0 Ok: stored/);
    const sent = await svcd.api('POST', `/api/email-messages/compose/?identity=${sib.json.uuid}`,
      { key, body: { to_email: 'mia@agents.test', subject: 'From your sibling', content: 'hello' } });
    assert.equal(sent.status, 201, sent.text);

    const threads = await svcd.api('GET', `/api/email-inbox/?identity=${mia.json.uuid}`, { key });
    const bySubject = Object.fromEntries(threads.json.results.map((t) => [t.subject, t.thread_id]));

    const page = await (await browser.newContext()).newPage();
    await signIn(page, svcd, 'mia@example.com');

    await page.goto(`${svcd.url}/dashboard/identities/${mia.json.uuid}/threads/${bySubject['Verify your device']}`);
    const forged = page.locator('.message .verdict');
    await forged.waitFor();
    assert.equal(await forged.getAttribute('data-verdict'), 'none');
    const mark = page.locator('.message .unauthenticated');
    assert.ok(await mark.isVisible(), 'the warning is shown');
    assert.match(await mark.textContent(), /claims to come from github\.com/);
    assert.match(await forged.textContent(), /SPF temperror/);
    // It stands out: white on red, not the muted grey of the rest.
    assert.equal(await mark.evaluate((e) => getComputedStyle(e).backgroundColor), 'rgb(176, 0, 32)');

    await page.goto(`${svcd.url}/dashboard/identities/${mia.json.uuid}/threads/${bySubject['From your sibling']}`);
    const local = page.locator('.message .verdict');
    await local.waitFor();
    assert.equal(await local.getAttribute('data-verdict'), 'pass');
    assert.match(await local.textContent(), /Authenticated/);
    assert.equal(await page.locator('.message .unauthenticated').count(), 0);
  } finally {
    await svcd.stop();
  }
});
