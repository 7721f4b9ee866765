#include "dashboard_pages.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

namespace svc::plugins::email {

namespace {

// Every parameter is a UUID, compared lower-case as the API stores it.
bool uuidParams(std::map<std::string, std::string>& params) {
  for (auto& [name, value] : params) {
    value = Poco::toLower(value);
    if (!sdk::isUuid(value)) return false;
  }
  return true;
}

// Mail is someone else's text: content is built with textContent (svc.el) only.
constexpr const char* kInboxScript = R"JS(
var identity = svc.params.identity, q = '?identity=' + encodeURIComponent(identity);
svc.back(svc.prefix + '/identities', 'Identities');
Promise.all([svc.api('/api/identities/' + identity + '/'), svc.api('/api/email-inbox/' + q + '&limit=100')]).then(function (r) {
  svc.title(r[0].name + (r[0].email ? ' · ' + r[0].email.address : ''));
  if (!r[1].results.length) return svc.show([svc.el('p', 'No mail yet.', { 'class': 'muted' })]);
  svc.show([svc.table(['Subject', 'With', 'Messages', 'Latest'], r[1].results.map(function (t) {
    var row = svc.el('tr', null, { 'data-thread': t.thread_id });
    var subject = svc.el('td');
    var link = svc.el('a', t.subject || '(no subject)', { href: svc.prefix + '/identities/' + identity + '/threads/' + t.thread_id });
    if (t.unread_count > 0) link.style.fontWeight = '700';
    subject.appendChild(link);
    subject.appendChild(svc.el('div', t.preview, { 'class': 'muted' }));
    if (t.attachment_names.length) subject.appendChild(svc.el('div', '📎 ' + t.attachment_names.join(', '), { 'class': 'muted' }));
    row.appendChild(subject);
    row.appendChild(svc.el('td', t.participants.join(', ')));
    row.appendChild(svc.el('td', t.message_count + (t.unread_count ? ' (' + t.unread_count + ' unread)' : '')));
    row.appendChild(svc.el('td', svc.when(t.latest_dt)));
    return row;
  }))]);
}).catch(svc.fail);
)JS";

// Each message says its authentication verdict in words. A warning stands out on mail that is not
// authenticated yet claims a From domain that matters: one that publishes DMARC (it asked for its
// mail to be checked) or one of the senders most often impersonated to make someone act (code
// hosts, identity providers, payments, clouds). Those publish DMARC too; the list still warns
// when DNS failed and the policy could not be read. Quarantined mail is marked as such, and an
// outgoing message that bounced says so, with each recipient that did not get it and why.
constexpr const char* kThreadScript = R"JS(
var identity = svc.params.identity, q = '?identity=' + encodeURIComponent(identity);
var KNOWN = ['github.com', 'gitlab.com', 'google.com', 'gmail.com', 'accounts.google.com', 'microsoft.com',
  'outlook.com', 'live.com', 'apple.com', 'icloud.com', 'amazon.com', 'amazonaws.com', 'paypal.com',
  'stripe.com', 'slack.com', 'atlassian.com', 'okta.com', 'auth0.com', 'cloudflare.com', 'openai.com',
  'anthropic.com', 'dropbox.com', 'linkedin.com', 'facebook.com', 'meta.com', 'x.com', 'twitter.com'];
function known(domain) {
  return KNOWN.some(function (k) { return domain === k || domain.slice(-k.length - 1) === '.' + k; });
}
function verdict(m) {
  var a = m.authentication, box = svc.el('div', null, { 'class': 'verdict' });
  if (!a) return null;
  box.setAttribute('data-verdict', a.verdict);
  var words = { pass: '✔ Authenticated', fail: '✖ Failed authentication', none: 'Not authenticated' };
  var line = svc.el('p', (words[a.verdict] || a.verdict) + ': ' + a.reason);
  line.style.fontWeight = '600';
  line.style.color = a.verdict === 'pass' ? '#1b5e20' : (a.verdict === 'fail' ? '#b00020' : '#6d4c00');
  box.appendChild(line);
  var parts = [];
  if (a.spf) parts.push('SPF ' + a.spf.result + ' (' + a.spf.domain + ', ' + a.spf.client_ip + ')');
  a.dkim.forEach(function (d) { parts.push('DKIM ' + d.result + ' (' + d.domain + ')'); });
  if (a.dmarc) parts.push('DMARC ' + a.dmarc.result + (a.dmarc.policy ? ' (p=' + a.dmarc.policy + ')' : ''));
  if (parts.length) box.appendChild(svc.el('p', parts.join(' · '), { 'class': 'muted' }));
  var domain = a.dmarc ? a.dmarc.from_domain : (m.from_email.split('@')[1] || '').toLowerCase();
  if (m.direction === 'incoming' && a.verdict !== 'pass' && domain &&
      ((a.dmarc && a.dmarc.policy) || known(domain))) {
    var warn = svc.el('p', '⚠ Unverified sender: this message claims to come from ' + domain + ', ' +
      (a.dmarc && a.dmarc.policy ? 'which publishes a DMARC policy' : 'a well-known sender') +
      ', but nothing proves it did. Do not act on it.', { 'class': 'unauthenticated' });
    warn.style.cssText = 'color:#fff;background:#b00020;padding:.4em .6em;font-weight:700;border-radius:4px';
    box.appendChild(warn);
  }
  if (m.quarantined) {
    var quarantine = svc.el('p', '⛔ Quarantined: ' + domain + '\'s DMARC policy asks for mail failing its checks to be set aside.', { 'class': 'quarantined' });
    quarantine.style.cssText = 'color:#b00020;font-weight:700';
    box.appendChild(quarantine);
  }
  return box;
}
function bounce(m) {
  if (m.direction !== 'outgoing' || !m.bounce) return null;
  var box = svc.el('div', null, { 'class': 'bounce' });
  var mark = svc.el('p', 'Bounced: ' + (m.bounce.recipients.length === 1 ? 'one recipient' :
    m.bounce.recipients.length + ' recipients') + ' did not get this message.', { 'class': 'bounced' });
  mark.style.cssText = 'color:#b00020;font-weight:700';
  box.appendChild(mark);
  m.bounce.recipients.forEach(function (b) {
    box.appendChild(svc.el('p', b.recipient + ' · ' + b.status + ' · ' + b.reason,
      { 'class': 'bounced-recipient', 'data-recipient': b.recipient }));
  });
  return box;
}
svc.back(svc.prefix + '/identities/' + identity + '/inbox', 'Inbox');
svc.api('/api/email-inbox/' + svc.params.thread + '/' + q).then(function (d) {
  svc.title(d.subject || '(no subject)');
  svc.show(d.messages.map(function (m) {
    var card = svc.el('div', null, { 'class': 'message', 'data-message': m.id });
    card.appendChild(svc.el('p', (m.direction === 'outgoing' ? 'To ' + m.to_email.join(', ') : 'From ' + m.from_email) + ' · ' + svc.when(m.created_dt), { 'class': 'muted' }));
    if (m.cc.length) card.appendChild(svc.el('p', 'Cc ' + m.cc.join(', '), { 'class': 'muted' }));
    var v = verdict(m);
    if (v) card.appendChild(v);
    var b = bounce(m);
    if (b) card.appendChild(b);
    card.appendChild(svc.el('pre', m.content, { 'class': 'body' }));
    m.attachments.forEach(function (a) {
      var p = svc.el('p');
      p.appendChild(svc.el('a', a.filename, { href: '/api/email-attachments/' + a.uuid + '/download/' + q, download: a.filename, 'class': 'attachment' }));
      p.appendChild(svc.el('span', ' ' + a.content_type + ', ' + a.size + ' bytes', { 'class': 'muted' }));
      card.appendChild(p);
    });
    return card;
  }));
}).catch(svc.fail);
)JS";

}  // namespace

std::vector<sdk::DashboardPage> dashboardPages() {
  sdk::DashboardPage inbox;
  inbox.path = "/identities/{identity}/inbox";
  inbox.title = "Inbox";
  inbox.script = kInboxScript;
  inbox.accept = uuidParams;
  sdk::DashboardPage thread;
  thread.path = "/identities/{identity}/threads/{thread}";
  thread.title = "Thread";
  thread.script = kThreadScript;
  thread.accept = uuidParams;
  return {inbox, thread};
}

}  // namespace svc::plugins::email
