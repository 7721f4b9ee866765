// The sms plugin's dashboard pages in a real browser: an identity's number and its conversations
// with their unread counts, a conversation read in full (which leaves the agent's unread state
// alone, as mail does) with a reply sent from the page, and an identity without a number
// provisioning one from its page, or told why it cannot.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Svcd, launchBrowser } from './lib.mjs';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

test('an identity\'s number and SMS conversations, a conversation with a reply, and provisioning from the page', async () => {
  // Three numbers: two for the identities created with one, the third for the button.
  const svcd = await Svcd.start({ 'sms.loopback.numbers': 'US:+12025550100-+12025550102' });
  try {
    const key = await svcd.managementKey('sol@example.com');
    const create = async (body) => {
      const r = await svcd.api('POST', '/api/identities/', { key, body });
      assert.equal(r.status, 201, r.text);
      return r.json;
    };
    const ann = await create({ name: 'Ann', provision_phone: true });
    const bob = await create({ name: 'Bob <b>bot</b>', provision_phone: true });
    const cid = await create({ name: 'Cid' });
    const dee = await create({ name: 'Dee' });
    assert.ok(ann.phone && bob.phone);
    assert.equal(cid.phone, null);

    const sent = await svcd.api('POST', `/api/messages/send/?identity=${bob.uuid}`, { key,
      body: { to_number: ann.phone.number, body: 'Your code is 482913 <script>alert(1)</script>' } });
    assert.equal(sent.status, 201, sent.text);
    const conversationId = `${ann.phone.id}_${bob.phone.number}`;
    const received = (await svcd.api('GET', `/api/messages/?identity=${ann.uuid}`, { key })).json.results;
    assert.deepEqual(received.map((m) => [m.direction, m.is_read]), [['incoming', false]]);

    const context = await browser.newContext();
    const page = await context.newPage();
    const errors = [];
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${svcd.url}/dashboard/identities`);
    await page.fill('#email', 'sol@example.com');
    await page.fill('#password', 'correct horse battery');
    await Promise.all([page.waitForURL(/\/dashboard\/identities$/), page.click('form[action$="/login"] button[type=submit]')]);

    // The identities page links each identity to its SMS page.
    const row = page.locator(`tr[data-identity="${ann.uuid}"]`);
    await row.waitFor();
    await Promise.all([page.waitForURL(new RegExp(`/dashboard/identities/${ann.uuid}/sms$`)),
      row.locator('a', { hasText: 'SMS' }).click()]);
    await page.locator('#phone-number').waitFor();
    assert.equal(await page.locator('#view-title').textContent(), 'Ann · SMS');
    assert.equal(await page.locator('#phone-number').textContent(), ann.phone.number);
    const conversation = page.locator(`tr[data-conversation="${conversationId}"]`);
    await conversation.waitFor();
    assert.equal(await conversation.locator('a').textContent(), bob.phone.number);
    assert.equal(await conversation.locator('td').nth(1).textContent(), '1 (1 unread)');
    assert.equal(await conversation.locator('.muted').textContent(), 'Your code is 482913 <script>alert(1)</script>');
    assert.equal(await page.locator('#provision').count(), 0);

    // The conversation reads in full; the message is text, never markup.
    await Promise.all([page.waitForURL(/\/sms\/[^/]+$/), conversation.locator('a').click()]);
    await page.locator('.message pre').waitFor();
    assert.equal(await page.locator('#view-title').textContent(), bob.phone.number);
    assert.equal(await page.locator('.message pre').textContent(), 'Your code is 482913 <script>alert(1)</script>');
    assert.equal(await page.locator('.message').getAttribute('data-message'), received[0].id);
    // Reading in the dashboard leaves the agent's unread state alone (the agent polls for it)...
    const unread = await svcd.api('GET', `/api/messages/?identity=${ann.uuid}&is_read=false`, { key });
    assert.deepEqual(unread.json.results.map((m) => m.id), [received[0].id]);
    assert.equal(await page.locator('.message .unread').count(), 1);
    // ...until the person marks it read.
    assert.equal(await page.locator('#mark-read').textContent(), 'Mark 1 unread as read');
    await page.click('#mark-read');
    await page.locator('.message pre').waitFor();
    await page.locator('#mark-read').waitFor({ state: 'detached' });
    assert.equal(await page.locator('.message .unread').count(), 0);
    const read = await svcd.api('GET', `/api/messages/${received[0].id}/?identity=${ann.uuid}`, { key });
    assert.equal(read.json.is_read, true);

    // A reply from the page goes out from Ann's number and reaches Bob.
    await page.fill('#reply-body', 'Thanks, got it.');
    await page.click('#reply button[type=submit]');
    await page.locator('.message pre', { hasText: 'Thanks, got it.' }).waitFor();
    assert.match(await page.locator('.message').nth(1).locator('p.muted').textContent(), /^Sent · .* · delivered$/);
    const bobs = await svcd.api('GET', `/api/messages/?identity=${bob.uuid}&direction=incoming`, { key });
    assert.deepEqual(bobs.json.results.map((m) => [m.from_number, m.body]), [[ann.phone.number, 'Thanks, got it.']]);
    // A bad reply is refused with the API's reason, and nothing is sent.
    await page.fill('#reply-body', 'x'.repeat(1601));
    await page.click('#reply button[type=submit]');
    await page.locator('#reply .error').waitFor();
    assert.match(await page.locator('#reply .error').textContent(), /body/);
    const after = await svcd.api('GET', `/api/messages/?identity=${ann.uuid}`, { key });
    assert.equal(after.json.results.length, 2);

    // The page's session changes things only with its own token: a forged one is refused.
    const forged = await page.evaluate(async (path) => (await fetch(path, { method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Svc-Csrf': 'forged' },
      body: JSON.stringify({ to_number: '+12025550100', body: 'forged' }) })).status,
    `/api/messages/send/?identity=${ann.uuid}`);
    assert.equal(forged, 403);

    // What is not a conversation id is no page.
    const bad = await page.goto(`${svcd.url}/dashboard/identities/${ann.uuid}/sms/not-a-conversation`);
    assert.equal(bad.status(), 404);

    // Another account's identity and conversation: the page loads, the data does not.
    const zedKey = await svcd.managementKey('zed@example.com');
    const zed = await svcd.api('POST', '/api/identities/', { key: zedKey, body: { name: 'Zed' } });
    await page.goto(`${svcd.url}/dashboard/identities/${zed.json.uuid}/sms`);
    await page.locator('#view .error').waitFor();
    assert.match(await page.locator('#view .error').textContent(), /Not found/);
    assert.equal(await page.locator('#provision').count(), 0);

    // Without a number, the page offers one; pressing the button shows it.
    await page.goto(`${svcd.url}/dashboard/identities/${cid.uuid}/sms`);
    await page.locator('#provision').waitFor();
    await page.click('#provision');
    await page.locator('#phone-number').waitFor();
    const number = await page.locator('#phone-number').textContent();
    const left = ['+12025550100', '+12025550101', '+12025550102'].filter((n) => n !== ann.phone.number && n !== bob.phone.number);
    assert.deepEqual([number], left);
    assert.equal(await page.locator('#view p.muted', { hasText: 'No SMS yet.' }).count(), 1);
    const cidNow = await svcd.api('GET', `/api/identities/${cid.uuid}/`, { key });
    assert.equal(cidNow.json.phone.number, number);

    // When no number can be had, the page says why and keeps the button.
    await page.goto(`${svcd.url}/dashboard/identities/${dee.uuid}/sms`);
    await page.locator('#provision').waitFor();
    await page.click('#provision');
    await page.locator('#view .error').waitFor();
    assert.match(await page.locator('#view .error').textContent(), /No phone number can be provisioned in US now/);
    assert.equal(await page.locator('#provision').isEnabled(), true);
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await svcd.stop();
  }
});
