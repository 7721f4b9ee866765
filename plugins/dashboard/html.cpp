#include "html.h"

#include <Poco/URI.h>

namespace svc::plugins::dashboard {

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
input[type=text],input[type=email],input[type=password],textarea{width:100%;padding:.6rem;font-size:1rem;border:1px solid #b8bfcc;border-radius:.35rem}
textarea{font-family:inherit}
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

// The copy button of the new-key page, and `svc`, the client API of contributed pages
// (sdk/include/svc/sdk/dashboard.h documents it). Pages read the API with the session cookie and
// build their content with textContent only (mail is someone else's text: never HTML).
constexpr const char* kScript = R"JS(
var svc = (function () {
  var box = document.getElementById('view');
  if (!box) return null;
  var prefix = box.dataset.prefix, links = JSON.parse(box.dataset.links || '[]'), csrf = box.dataset.csrf;
  function el(tag, text, attrs) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = text;
    for (var k in (attrs || {})) e.setAttribute(k, attrs[k]);
    return e;
  }
  function show(nodes) { box.replaceChildren.apply(box, nodes); }
  return {
    prefix: prefix,
    params: JSON.parse(box.dataset.params || '{}'),
    workers: JSON.parse(box.dataset.workers || '{}'),
    el: el,
    show: show,
    api: function (path) {
      return fetch(path, { credentials: 'same-origin', headers: { Accept: 'application/json' } })
        .then(function (r) {
          if (!r.ok) {
            var e = new Error(r.status === 404 ? 'Not found.' : 'The server answered ' + r.status + '.');
            e.status = r.status;
            throw e;
          }
          return r.json();
        });
    },
    send: function (method, path, body, extra) {
      var headers = { Accept: 'application/json', 'Content-Type': 'application/json', 'X-Svc-Csrf': csrf };
      for (var h in (extra || {})) headers[h] = extra[h];
      return fetch(path, {
        method: method, credentials: 'same-origin', body: JSON.stringify(body || {}), headers: headers
      }).then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (d) {
          if (!r.ok) {
            var e = new Error(d.detail || 'The server answered ' + r.status + '.');
            e.status = r.status;
            e.code = d.code;
            throw e;
          }
          return d;
        });
      });
    },
    fail: function (e) { show([el('p', e.message, { 'class': 'error', role: 'alert' })]); },
    title: function (text) { document.getElementById('view-title').textContent = text; },
    back: function (href, text) {
      var p = el('p');
      p.appendChild(el('a', '\u2190 ' + text, { href: href }));
      var title = document.getElementById('view-title');
      title.parentNode.insertBefore(p, title);
    },
    when: function (iso) { return iso ? iso.replace('T', ' ').slice(0, 16) + ' UTC' : ''; },
    table: function (headers, rows) {
      var t = el('table');
      var head = el('tr');
      headers.forEach(function (h) { head.appendChild(el('th', h)); });
      t.appendChild(head);
      rows.forEach(function (r) { t.appendChild(r); });
      return t;
    },
    links: function (name, value) {
      return links.filter(function (l) { return l.param === name; }).map(function (l) {
        return { label: l.label, href: prefix + l.path.replace('{' + name + '}', encodeURIComponent(value)) };
      });
    }
  };
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
    for (const auto& [path, label] : f.nav) {
      out += "<a href=\"" + escape(f.prefix + path) + "\">" + escape(label) + "</a>";
    }
    out += "<span class=\"who\"><span>" + escape(f.user_email) +
           "</span><form method=\"post\" action=\"" + escape(f.prefix) +
           "/logout\"><input type=\"hidden\" name=\"csrf\" value=\"" + escape(f.csrf) +
           "\"><button class=\"small secondary\" type=\"submit\">Sign out</button></form></span>";
  }
  out += "</header><main>";
  out += content;
  out += "</main><script nonce=\"" + f.nonce + "\">";
  out += kScript;
  out += "</script>";
  // Parser-inserted and neither async nor deferred: each runs, in order, before the page's script.
  for (const auto& url : f.script_urls) {
    out += "<script nonce=\"" + f.nonce + "\" src=\"" + escape(url) + "\"></script>";
  }
  if (!f.page_script.empty()) {
    out += "<script nonce=\"" + f.nonce + "\">(function (svc) {\n";
    out += f.page_script;
    out += "\n})(svc);</script>";
  }
  out += "</body></html>\n";
  return out;
}

}  // namespace svc::plugins::dashboard
