#include "html.h"

#include <Poco/URI.h>

namespace svc::plugins::dashboard {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string urlEncode(std::string_view text) {
  std::string out;
  Poco::URI::encode(std::string(text), "!#$&'()*+,/:;=?@[]~%\"<>{}|\\^`", out);
  return out;
}

namespace {

// Small, legible on a phone, no external assets (the CSP allows none).
constexpr const char* kStyle = R"CSS(
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330;background:#f5f6f8}
header{display:flex;align-items:center;gap:1rem;padding:.75rem 1rem;background:#1d2330;color:#fff}
header a{color:#fff;text-decoration:none;font-weight:600}
header .who{margin-left:auto;font-size:.9rem;display:flex;gap:.5rem;align-items:center;flex-wrap:wrap}
header form{margin:0}
main{max-width:40rem;margin:1.5rem auto;padding:0 1rem}
.card{background:#fff;border-radius:.5rem;padding:1.25rem;box-shadow:0 1px 3px rgba(0,0,0,.1);margin-bottom:1rem}
h1{font-size:1.4rem;margin:0 0 1rem}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input[type=text],input[type=email],input[type=password]{width:100%;padding:.6rem;font-size:1rem;border:1px solid #b8bfcc;border-radius:.35rem}
button,.button{display:inline-block;padding:.6rem 1.1rem;font-size:1rem;border:0;border-radius:.35rem;background:#2f5bd3;color:#fff;cursor:pointer;text-decoration:none;margin-top:.75rem}
button.secondary,.button.secondary{background:#e3e7ef;color:#1d2330}
button.danger{background:#c0392b}
button.small{padding:.3rem .7rem;font-size:.85rem;margin:0}
.code{font:600 1.8rem/1.2 ui-monospace,monospace;letter-spacing:.15em;text-align:center;padding:.5rem;background:#eef1f7;border-radius:.35rem}
.error{background:#fde8e6;color:#8a1c12;padding:.6rem .8rem;border-radius:.35rem}
.note{background:#e8f3ea;color:#1c5a2a;padding:.6rem .8rem;border-radius:.35rem}
.key{font:.95rem ui-monospace,monospace;word-break:break-all;padding:.6rem;background:#eef1f7;border-radius:.35rem}
table{width:100%;border-collapse:collapse;font-size:.9rem}
td,th{text-align:left;padding:.4rem .3rem;border-bottom:1px solid #e3e7ef;vertical-align:top}
.muted{color:#5c6578;font-size:.9rem}
.row{display:flex;gap:.5rem;flex-wrap:wrap}
.message{border-top:1px solid #e3e7ef;padding-top:.6rem;margin-top:.6rem}
pre.body{white-space:pre-wrap;word-break:break-word;font:inherit;margin:.4rem 0}
)CSS";

// The copy button of the new-key page, and the mail pages, which read the API with the session
// cookie and build their content with textContent only (mail is someone else's text: never HTML).
constexpr const char* kScript = R"JS(
(function () {
  var box = document.getElementById('view');
  if (!box) return;
  var view = box.dataset.view, prefix = box.dataset.prefix;
  var identity = box.dataset.identity, thread = box.dataset.thread;
  function el(tag, text, attrs) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = text;
    for (var k in (attrs || {})) e.setAttribute(k, attrs[k]);
    return e;
  }
  function api(path) {
    return fetch(path, { credentials: 'same-origin', headers: { Accept: 'application/json' } })
      .then(function (r) {
        if (!r.ok) throw new Error(r.status === 404 ? 'Not found.' : 'The server answered ' + r.status + '.');
        return r.json();
      });
  }
  function show(nodes) { box.replaceChildren.apply(box, nodes); }
  function fail(e) { show([el('p', e.message, { 'class': 'error', role: 'alert' })]); }
  function when(iso) { return iso ? iso.replace('T', ' ').slice(0, 16) + ' UTC' : ''; }
  function table(headers, rows) {
    var t = el('table');
    var head = el('tr');
    headers.forEach(function (h) { head.appendChild(el('th', h)); });
    t.appendChild(head);
    rows.forEach(function (r) { t.appendChild(r); });
    return t;
  }
  var q = '?identity=' + encodeURIComponent(identity);
  if (view === 'identities') {
    api('/api/identities/?limit=200').then(function (d) {
      if (!d.results.length) return show([el('p', 'No identities yet. Agents create them with POST /api/identities/.', { 'class': 'muted' })]);
      show([table(['Name', 'Email'], d.results.map(function (i) {
        var row = el('tr', null, { 'data-identity': i.uuid });
        var name = el('td');
        name.appendChild(el('a', i.name, { href: prefix + '/identities/' + i.uuid + '/inbox' }));
        row.appendChild(name);
        row.appendChild(el('td', i.email ? i.email.address : '—'));
        return row;
      }))]);
    }).catch(fail);
  } else if (view === 'inbox') {
    Promise.all([api('/api/identities/' + identity + '/'), api('/api/email-inbox/' + q + '&limit=100')]).then(function (r) {
      document.getElementById('view-title').textContent = r[0].name + (r[0].email ? ' · ' + r[0].email.address : '');
      if (!r[1].results.length) return show([el('p', 'No mail yet.', { 'class': 'muted' })]);
      show([table(['Subject', 'With', 'Messages', 'Latest'], r[1].results.map(function (t) {
        var row = el('tr', null, { 'data-thread': t.thread_id });
        var subject = el('td');
        var link = el('a', t.subject || '(no subject)', { href: prefix + '/identities/' + identity + '/threads/' + t.thread_id });
        if (t.unread_count > 0) link.style.fontWeight = '700';
        subject.appendChild(link);
        subject.appendChild(el('div', t.preview, { 'class': 'muted' }));
        if (t.attachment_names.length) subject.appendChild(el('div', '📎 ' + t.attachment_names.join(', '), { 'class': 'muted' }));
        row.appendChild(subject);
        row.appendChild(el('td', t.participants.join(', ')));
        row.appendChild(el('td', t.message_count + (t.unread_count ? ' (' + t.unread_count + ' unread)' : '')));
        row.appendChild(el('td', when(t.latest_dt)));
        return row;
      }))]);
    }).catch(fail);
  } else if (view === 'thread') {
    api('/api/email-inbox/' + thread + '/' + q).then(function (d) {
      document.getElementById('view-title').textContent = d.subject || '(no subject)';
      show(d.messages.map(function (m) {
        var card = el('div', null, { 'class': 'message', 'data-message': m.id });
        card.appendChild(el('p', (m.direction === 'outgoing' ? 'To ' + m.to_email.join(', ') : 'From ' + m.from_email) + ' · ' + when(m.created_dt), { 'class': 'muted' }));
        if (m.cc.length) card.appendChild(el('p', 'Cc ' + m.cc.join(', '), { 'class': 'muted' }));
        card.appendChild(el('pre', m.content, { 'class': 'body' }));
        m.attachments.forEach(function (a) {
          var p = el('p');
          p.appendChild(el('a', a.filename, { href: '/api/email-attachments/' + a.uuid + '/download/' + q, download: a.filename, 'class': 'attachment' }));
          p.appendChild(el('span', ' ' + a.content_type + ', ' + a.size + ' bytes', { 'class': 'muted' }));
          card.appendChild(p);
        });
        return card;
      }));
    }).catch(fail);
  }
})();

document.querySelectorAll('[data-copy]').forEach(function (button) {
  button.addEventListener('click', function () {
    var text = document.getElementById(button.getAttribute('data-copy')).textContent;
    var done = function () { button.textContent = 'Copied'; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { button.textContent = 'Select and copy'; });
    } else {
      var range = document.createRange();
      range.selectNodeContents(document.getElementById(button.getAttribute('data-copy')));
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      if (document.execCommand('copy')) done();
    }
  });
});
)JS";

}  // namespace

std::string page(const PageFrame& f, const std::string& content) {
  std::string out;
  out.reserve(4096 + content.size());
  out +=
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<meta name=\"referrer\" content=\"no-referrer\"><title>";
  out += escape(f.title);
  out += " · svc</title><style nonce=\"" + f.nonce + "\">";
  out += kStyle;
  out += "</style></head><body><header><a href=\"" + escape(f.prefix) + "/\">svc</a>";
  if (!f.user_email.empty()) {
    out += "<a href=\"" + escape(f.prefix) + "/device\">Approve a device</a>";
    out += "<a href=\"" + escape(f.prefix) + "/keys\">Keys</a>";
    out += "<a href=\"" + escape(f.prefix) + "/identities\">Identities</a>";
    out += "<span class=\"who\"><span>" + escape(f.user_email) +
           "</span><form method=\"post\" action=\"" + escape(f.prefix) +
           "/logout\"><input type=\"hidden\" name=\"csrf\" value=\"" + escape(f.csrf) +
           "\"><button class=\"small secondary\" type=\"submit\">Sign out</button></form></span>";
  }
  out += "</header><main>";
  out += content;
  out += "</main><script nonce=\"" + f.nonce + "\">";
  out += kScript;
  out += "</script></body></html>\n";
  return out;
}

}  // namespace svc::plugins::dashboard
