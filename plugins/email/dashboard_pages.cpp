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

constexpr const char* kThreadScript = R"JS(
var identity = svc.params.identity, q = '?identity=' + encodeURIComponent(identity);
svc.back(svc.prefix + '/identities/' + identity + '/inbox', 'Inbox');
svc.api('/api/email-inbox/' + svc.params.thread + '/' + q).then(function (d) {
  svc.title(d.subject || '(no subject)');
  svc.show(d.messages.map(function (m) {
    var card = svc.el('div', null, { 'class': 'message', 'data-message': m.id });
    card.appendChild(svc.el('p', (m.direction === 'outgoing' ? 'To ' + m.to_email.join(', ') : 'From ' + m.from_email) + ' · ' + svc.when(m.created_dt), { 'class': 'muted' }));
    if (m.cc.length) card.appendChild(svc.el('p', 'Cc ' + m.cc.join(', '), { 'class': 'muted' }));
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
