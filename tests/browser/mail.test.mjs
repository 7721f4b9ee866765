// The dashboard's identities and mail pages in a real browser: mail that arrived over SMTP is
// listed in the identity's inbox, a thread reads in full, its attachment downloads, and another
// account's identity shows nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Svcd, launchBrowser } from './lib.mjs';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

// One SMTP session, pipelined, to svcd's listener. @return everything the server said.
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

test('an identity\'s inbox and a thread with its attachment, as the signed-in person sees them', async () => {
  const svcd = await Svcd.start({ 'email.domains': 'agents.test' });
  try {
    const smtpPort = Number(/SMTP listener on port (\d+)/.exec(svcd.log)[1]);
    const key = await svcd.managementKey('mia@example.com');
    const created = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Mia\'s <b>Bot</b>', email_identifier: 'mia' } });
    assert.equal(created.status, 201, created.text);
    const uuid = created.json.uuid;
    const said = await smtp(smtpPort, 'ann@example.com', 'mia@agents.test', [
      'From: Ann <ann@example.com>', 'To: mia@agents.test', 'Subject: Your code <script>alert(1)</script>',
      'MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary=b', '',
      '--b', 'Content-Type: text/plain; charset=utf-8', '', 'The code is 482913.', '',
      '--b', 'Content-Type: text/plain', 'Content-Disposition: attachment; filename="terms.txt"', '',
      'Terms and conditions.', '--b--'].join('\r\n'));
    assert.match(said, /250 2\.0\.0 Ok: stored/);

    const other = await svcd.managementKey('zed@example.com');
    const foreign = await svcd.api('POST', '/api/identities/', { key: other, body: { name: 'Zed', email_identifier: 'zed' } });

    const context = await browser.newContext({ acceptDownloads: true });
    const page = await context.newPage();
    await page.goto(`${svcd.url}/dashboard/identities`);
    assert.match(page.url(), /\/dashboard\/login\?next=/);
    await page.fill('#email', 'mia@example.com');
    await page.fill('#password', 'correct horse battery');
    await Promise.all([page.waitForURL(/\/dashboard\/identities$/), page.click('form[action$="/login"] button[type=submit]')]);

    const row = page.locator(`tr[data-identity="${uuid}"]`);
    await row.waitFor();
    assert.equal(await row.locator('td').nth(1).textContent(), 'mia@agents.test');
    assert.equal(await row.locator('a').first().textContent(), 'Mia\'s <b>Bot</b>', 'names are text, never markup');
    assert.equal(await page.locator(`tr[data-identity="${foreign.json.uuid}"]`).count(), 0);

    await Promise.all([page.waitForURL(/\/inbox$/), row.locator('a').first().click()]);
    const thread = page.locator('tr[data-thread]');
    await thread.waitFor();
    assert.equal(await page.locator('#view-title').textContent(), 'Mia\'s <b>Bot</b> · mia@agents.test');
    const subject = thread.locator('a');
    assert.equal(await subject.textContent(), 'Your code <script>alert(1)</script>');
    assert.match(await thread.textContent(), /ann@example\.com/);
    assert.match(await thread.textContent(), /terms\.txt/);
    assert.match(await thread.textContent(), /1 \(1 unread\)/);

    await Promise.all([page.waitForURL(/\/threads\//), subject.click()]);
    await page.locator('.message pre').waitFor();
    assert.match(await page.locator('.message pre').textContent(), /The code is 482913\./);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('a.attachment')]);
    assert.equal(download.suggestedFilename(), 'terms.txt');
    const stream = await download.createReadStream();
    let bytes = '';
    for await (const chunk of stream) bytes += chunk;
    assert.equal(bytes, 'Terms and conditions.');

    // Another account's identity: the page loads, the data does not.
    await page.goto(`${svcd.url}/dashboard/identities/${foreign.json.uuid}/inbox`);
    await page.locator('#view .error').waitFor();
    assert.match(await page.locator('#view .error').textContent(), /Not found/);
    // Reading in the dashboard leaves the agent's unread state alone.
    const listed = await svcd.api('GET', `/api/email-messages/?identity=${uuid}`, { key });
    assert.equal(listed.json.results[0].is_read, false);
    await context.close();
  } finally {
    await svcd.stop();
  }
});
