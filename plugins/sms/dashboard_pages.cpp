#include "dashboard_pages.h"

#include "sms_messages.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

namespace svc::plugins::sms {

namespace {

bool identityParam(std::map<std::string, std::string>& params) {
  std::string& identity = params["identity"];
  identity = Poco::toLower(identity);
  return sdk::isUuid(identity);
}

// A conversation id is not a UUID (`{phone_id}_{+number}`): it is checked as the API checks it.
bool conversationParams(std::map<std::string, std::string>& params) {
  if (!identityParam(params)) return false;
  auto parsed = parseConversationId(params["conversation"]);
  if (!parsed) return false;
  params["conversation"] = parsed->first + "_" + parsed->second;
  return true;
}

// SMS are someone else's text: content is built with textContent (svc.el) only. Reading changes
// nothing (the unread state is what an agent polls for its codes, so the dashboard leaves it
// alone, as it does for mail); the buttons and the form change something because the person asks.
constexpr const char* kConversationsScript = R"JS(
var identity = svc.params.identity, q = '?identity=' + encodeURIComponent(identity);
svc.back(svc.prefix + '/identities', 'Identities');
function number(d) {
  if (d.phone) return [svc.el('p', d.phone.number, { 'class': 'code', id: 'phone-number' })];
  var button = svc.el('button', 'Provision a number', { type: 'button', id: 'provision' });
  var said = svc.el('p', null, { role: 'status' });
  button.addEventListener('click', function () {
    button.disabled = true;
    said.className = 'muted';
    said.textContent = 'Provisioning…';
    svc.send('POST', '/api/identities/' + identity + '/provision-phone/', {}).then(render, function (e) {
      button.disabled = false;
      said.className = 'error';
      said.textContent = e.message;
    });
  });
  return [svc.el('p', 'This identity has no phone number.', { 'class': 'muted' }), button, said];
}
function render(d) {
  svc.title(d.name + ' · SMS');
  if (!d.phone) return svc.show(number(d));
  return svc.api('/api/sms-inbox/' + q + '&limit=100').then(function (inbox) {
    var list = inbox.results.length ? svc.table(['With', 'Messages', 'Latest'], inbox.results.map(function (c) {
      var row = svc.el('tr', null, { 'data-conversation': c.conversation_id });
      var with_ = svc.el('td');
      var link = svc.el('a', c.phone_number, { href: svc.prefix + '/identities/' + identity + '/sms/' + encodeURIComponent(c.conversation_id) });
      if (c.unread_count > 0) link.style.fontWeight = '700';
      with_.appendChild(link);
      with_.appendChild(svc.el('div', c.preview, { 'class': 'muted' }));
      row.appendChild(with_);
      row.appendChild(svc.el('td', c.message_count + (c.unread_count ? ' (' + c.unread_count + ' unread)' : '')));
      row.appendChild(svc.el('td', svc.when(c.latest_dt)));
      return row;
    })) : svc.el('p', 'No SMS yet.', { 'class': 'muted' });
    svc.show(number(d).concat([list]));
  });
}
svc.api('/api/identities/' + identity + '/').then(render).catch(svc.fail);
)JS";

constexpr const char* kConversationScript = R"JS(
var identity = svc.params.identity, q = '?identity=' + encodeURIComponent(identity);
svc.back(svc.prefix + '/identities/' + identity + '/sms', 'SMS');
function reply(other) {
  var form = svc.el('form', null, { id: 'reply' });
  form.appendChild(svc.el('label', 'Reply to ' + other, { 'for': 'reply-body' }));
  var body = svc.el('textarea', null, { id: 'reply-body', rows: '3', required: '' });
  body.style.width = '100%';
  form.appendChild(body);
  form.appendChild(svc.el('button', 'Send', { type: 'submit' }));
  var said = svc.el('p', null, { role: 'status' });
  form.appendChild(said);
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    form.querySelector('button').disabled = true;
    svc.send('POST', '/api/messages/send/' + q, { to_number: other, body: body.value }).then(load, function (e) {
      form.querySelector('button').disabled = false;
      said.className = 'error';
      said.textContent = e.message;
    });
  });
  return form;
}
// Marking read is the person's choice: the agent may be waiting for these very messages.
function markRead(unread) {
  var button = svc.el('button', 'Mark ' + unread.length + ' unread as read', { type: 'button', id: 'mark-read', 'class': 'secondary' });
  button.addEventListener('click', function () {
    button.disabled = true;
    Promise.all(unread.map(function (m) {
      return svc.send('PATCH', '/api/messages/' + m.id + '/' + q, { is_read: true });
    })).then(load).catch(svc.fail);
  });
  return button;
}
function load() {
  return svc.api('/api/sms-inbox/' + encodeURIComponent(svc.params.conversation) + '/' + q).then(function (d) {
    svc.title(d.phone_number);
    var unread = d.messages.filter(function (m) { return m.direction === 'incoming' && !m.is_read; });
    svc.show((unread.length ? [markRead(unread)] : []).concat(d.messages.map(function (m) {
      var card = svc.el('div', null, { 'class': 'message', 'data-message': m.id });
      var meta = (m.direction === 'outgoing' ? 'Sent' : 'Received') + ' · ' + svc.when(m.created_dt);
      if (m.direction === 'outgoing') meta += ' · ' + m.status + (m.error_message ? ': ' + m.error_message : '');
      card.appendChild(svc.el('p', meta, { 'class': 'muted' }));
      card.appendChild(svc.el('pre', m.body, { 'class': 'body' }));
      if (unread.indexOf(m) >= 0) card.appendChild(svc.el('p', 'Unread', { 'class': 'muted unread' }));
      return card;
    })).concat([reply(d.phone_number)]));
  });
}
load().catch(svc.fail);
)JS";

}  // namespace

std::vector<sdk::DashboardPage> dashboardPages() {
  sdk::DashboardPage conversations;
  conversations.path = "/identities/{identity}/sms";
  conversations.title = "SMS";
  conversations.script = kConversationsScript;
  conversations.accept = identityParam;
  sdk::DashboardPage conversation;
  conversation.path = "/identities/{identity}/sms/{conversation}";
  conversation.title = "Conversation";
  conversation.script = kConversationScript;
  conversation.accept = conversationParams;
  return {conversations, conversation};
}

}  // namespace svc::plugins::sms
