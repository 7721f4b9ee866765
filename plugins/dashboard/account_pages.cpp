#include "account_pages.h"

#include "html.h"

#include <svc/sdk/util.h>

#include <ctime>

namespace svc::plugins::dashboard {

namespace {

std::string formatTime(std::int64_t micros) {
  if (micros == 0) return "never";
  std::time_t t = static_cast<std::time_t>(micros / 1000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M UTC", &tm);
  return buffer;
}

}  // namespace

void AccountPages::registerIn(sdk::RouteRegistry& routes) {
  auto add = [&](const char* method, const char* path, const char* summary,
                 Page (AccountPages::*handler)(sdk::Request&, Visitor&)) {
    site_.add(routes, method, path, summary,
              [this, handler](sdk::Request& r, Visitor& v) { return (this->*handler)(r, v); });
  };
  add("GET", "/", "Dashboard home.", &AccountPages::home);
  add("GET", "/keys", "The account's keys.", &AccountPages::keysPage);
  add("POST", "/keys", "Create a management key.", &AccountPages::keysCreate);
  add("POST", "/keys/{id}/revoke", "Revoke a key.", &AccountPages::keysRevoke);
}

Page AccountPages::home(sdk::Request&, Visitor& v) {
  if (!v.user) return site_.signInFirst(site_.prefix() + "/");
  std::string html = "<div class=\"card\"><h1>Hello, " + escape(v.user->name) + "</h1>";
  if (v.user->account_id.empty()) {
    html +=
        "<p>You have no account yet. It is created when you approve your first device "
        "login: run <code>svcctl login</code> (or let your agent start one) and enter the "
        "code it shows.</p>";
  } else {
    html += "<p class=\"muted\">Account <code>" + escape(v.user->account_id) + "</code></p>";
  }
  html += "<div class=\"row\"><a class=\"button\" href=\"" + escape(site_.prefix()) +
          "/device\">Approve a device</a>";
  if (!v.user->account_id.empty()) {
    html += "<a class=\"button secondary\" href=\"" + escape(site_.prefix()) + "/keys\">Keys</a>";
    for (const auto& page : pages_.navigation()) {
      html += "<a class=\"button secondary\" href=\"" + escape(site_.prefix() + page->path) +
              "\">" + escape(page->nav_label) + "</a>";
    }
  }
  html += "</div></div>";
  Page p;
  p.title = "Dashboard";
  p.content = html;
  return p;
}

Page AccountPages::keysPage(sdk::Request& r, Visitor& v) {
  if (!v.user) return site_.signInFirst(site_.prefix() + "/keys");
  if (v.user->account_id.empty()) return site_.noAccount();
  std::string html;
  if (r.queryParam("revoked")) html += "<p class=\"note\" id=\"flash\">The key is revoked.</p>";
  html += "<div class=\"card\"><h1>New management key</h1><form method=\"post\" action=\"" +
          escape(site_.prefix()) + "/keys\">" + Site::hidden("csrf", v.csrf) +
          "<label for=\"label\">Label</label><input type=\"text\" id=\"label\" name=\"label\" "
          "maxlength=\"200\" placeholder=\"what will use it\"><button type=\"submit\" "
          "id=\"create\">Create key</button></form></div>";
  auto keys = site_.accounts().keys(v.user->account_id);
  html += "<div class=\"card\"><h1>Keys</h1>";
  if (keys.empty()) {
    html += "<p class=\"muted\">No keys.</p>";
  } else {
    html += "<table id=\"keys\"><tr><th>Label</th><th>Key</th><th>Last used</th><th></th></tr>";
    for (const auto& k : keys) {
      html += "<tr data-key-id=\"" + escape(k.id) + "\"><td>" +
              escape(k.label.empty() ? "(no label)" : k.label) + "<div class=\"muted\">" +
              escape(k.kind) + (k.identity.empty() ? "" : " · " + escape(k.identity)) +
              "</div></td><td><code>" + escape(k.prefix) + "…</code><div class=\"muted\">" +
              escape(formatTime(k.created_us)) + "</div></td><td>" +
              escape(formatTime(k.last_used_us)) + "</td><td><form method=\"post\" action=\"" +
              escape(site_.prefix()) + "/keys/" + escape(k.id) + "/revoke\">" +
              Site::hidden("csrf", v.csrf) +
              "<button class=\"small danger\" type=\"submit\">Revoke</button></form></td></tr>";
    }
    html += "</table>";
  }
  html += "</div>";
  Page p;
  p.title = "Keys";
  p.content = html;
  return p;
}

Page AccountPages::keysCreate(sdk::Request& r, Visitor& v) {
  if (!v.user) return site_.signInFirst(site_.prefix() + "/keys");
  if (!site_.csrfOk(r, v)) return site_.csrfRefused();
  if (v.user->account_id.empty()) return site_.noAccount();
  try {
    auto [info, key] = site_.accounts().createKey(*v.user, formField(r, "label"), "");
    return site_.message(201, "Your new key",
                         "<p>This is the only time the key is shown. Copy it now and keep it "
                         "secret.</p><p class=\"key\" id=\"new-key\">" +
                             escape(key) +
                             "</p><div class=\"row\"><button type=\"button\" data-copy=\"new-key\" "
                             "id=\"copy\">Copy</button><a class=\"button secondary\" href=\"" +
                             escape(site_.prefix()) + "/keys\">Done</a></div>");
  } catch (const sdk::HttpError& e) {
    return site_.message(e.status(), "Could not create the key",
                         "<p class=\"error\">" + escape(e.detail()) + "</p>");
  }
}

Page AccountPages::keysRevoke(sdk::Request& r, Visitor& v) {
  if (!v.user) return site_.signInFirst(site_.prefix() + "/keys");
  if (!site_.csrfOk(r, v)) return site_.csrfRefused();
  if (!site_.accounts().revokeKey(v.user->account_id, r.params.at("id"))) {
    return site_.message(404, "No such key",
                         "<p>The key is not this account's or is already revoked.</p><a "
                         "class=\"button\" href=\"" +
                             escape(site_.prefix()) + "/keys\">Back to keys</a>");
  }
  return Site::redirect(site_.prefix() + "/keys?revoked=1");
}

}  // namespace svc::plugins::dashboard
