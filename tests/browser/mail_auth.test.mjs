// The thread page shows each message's authentication verdict, and a warning that stands out on
// unauthenticated mail claiming a well-known sender's domain; authenticated mail between two
// identities here carries none. An outgoing message that bounced says so, with each recipient
// that did not get it, the status and the reason.
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

// A relay that refuses recipients whose address starts with "gone" (550 5.1.1) and takes the rest.
function refusingRelay() {
  const server = net.createServer((socket) => {
    let buffer = '';
    let data = false;
    socket.write('220 relay.test ESMTP\r\n');
    socket.on('data', (chunk) => {
      buffer += chunk;
      let eol;
      while ((eol = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, eol);
        buffer = buffer.slice(eol + 2);
        if (data) {
          if (line === '.') { data = false; socket.write('250 2.0.0 Ok: queued\r\n'); }
        } else if (/^RCPT TO:<gone/i.test(line)) {
          socket.write('550 5.1.1 <' + line.slice(9, -1) + '>: Recipient address rejected: User unknown\r\n');
        } else if (/^DATA/i.test(line)) {
          data = true;
          socket.write('354 go ahead\r\n');
        } else if (/^QUIT/i.test(line)) {
          socket.end('221 2.0.0 Bye\r\n');
        } else {
          socket.write('250 Ok\r\n');
        }
      }
    });
    socket.on('error', () => {});
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

test('a bounced outgoing message is marked with each recipient, status and reason', async () => {
  const relay = await refusingRelay();
  const svcd = await Svcd.start({
    'email.domains': 'agents.test', 'email.relay.host': '127.0.0.1',
    'email.relay.port': String(relay.address().port), 'email.relay.starttls': 'false',
  });
  try {
    const key = await svcd.managementKey('uma@example.com');
    const uma = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Uma', email_identifier: 'uma' } });
    assert.equal(uma.status, 201, uma.text);
    const sent = await svcd.api('POST', `/api/email-messages/compose/?identity=${uma.json.uuid}`,
      { key, body: { to_email: ['gone@remote.example', 'ok@remote.example'], subject: 'Quote', content: 'Ten.' } });
    assert.equal(sent.status, 201, sent.text);
    let message;
    for (let i = 0; i < 100; i++) {
      message = (await svcd.api('GET', `/api/email-messages/${sent.json.id}/`, { key })).json;
      if (message.status !== 'queued') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(message.status, 'bounced', JSON.stringify(message));
    const replied = await svcd.api('POST', `/api/email-messages/compose/?identity=${uma.json.uuid}`,
      { key, body: { to_email: 'ok@remote.example', subject: 'Fine', content: 'Got it.' } });
    assert.equal(replied.status, 201, replied.text);

    const page = await (await browser.newContext()).newPage();
    await signIn(page, svcd, 'uma@example.com');
    await page.goto(`${svcd.url}/dashboard/identities/${uma.json.uuid}/threads/${message.thread_id}`);
    const mark = page.locator(`.message[data-message="${sent.json.id}"] .bounce`);
    await mark.waitFor();
    assert.match(await mark.locator('.bounced').textContent(), /^Bounced: one recipient did not get this message/);
    const gone = mark.locator('.bounced-recipient[data-recipient="gone@remote.example"]');
    assert.match(await gone.textContent(),
      /gone@remote\.example · 5\.1\.1 · RCPT answered 550 5\.1\.1 <gone@remote\.example>: Recipient address rejected: User unknown/);
    assert.equal(await mark.locator('.bounced-recipient').count(), 1, 'ok@ got it');

    // A message that was sent carries no mark.
    await page.goto(`${svcd.url}/dashboard/identities/${uma.json.uuid}/threads/${replied.json.thread_id}`);
    await page.locator(`.message[data-message="${replied.json.id}"]`).waitFor();
    assert.equal(await page.locator('.message .bounce').count(), 0);
  } finally {
    await svcd.stop();
    relay.close();
  }
});
