#include "site.h"

#include "html.h"

#include <svc/sdk/util.h>

#include <Poco/URI.h>

namespace svc::plugins::dashboard {

namespace {

constexpr const char* kCsrfCookie = "svc_csrf";

}  // namespace

std::string formField(const sdk::Request& r, const std::string& name) {
  auto it = r.form.find(name);
  if (it != r.form.end()) return it->second;
  if (r.json && r.json->has(name) && r.json->get(name).isString()) {
    return r.json->getValue<std::string>(name);
  }
  return "";
}

Site::Site(const std::string& dashboard_url, std::shared_ptr<PageRegistry> pages)
    : url_(dashboard_url), pages_(std::move(pages)) {
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
  Poco::URI uri(url_);
  if (uri.getScheme() != "http" && uri.getScheme() != "https") {
    throw std::runtime_error("dashboard.url must be an http or https URL");
  }
  prefix_ = uri.getPath();
  while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
  origin_ = uri.getScheme() + "://" + uri.getAuthority();
  secure_ = uri.getScheme() == "https";
}

void Site::add(sdk::RouteRegistry& routes, const char* method, const std::string& path,
               const char* summary, Handler handler) {
  sdk::Route route{method,
                   prefix_ + path,
                   sdk::AuthNeed::kNone,
                   sdk::BodyKind::kJsonOrForm,
                   64 * 1024,
                   summary,
                   [this, handler = std::move(handler)](sdk::Request& r) {
                     Visitor v = visitor(r);
                     return render(v, handler(r, v));
                   }};
  route.described = false;  // a page for a person's browser, not the API
  routes.add(std::move(route));
}

Visitor Site::visitor(const sdk::Request& r) const {
  Visitor v;
  if (auto token = r.cookie(sdk::kSessionCookie); token && !token->empty()) {
    v.user = accounts_->session(*token);
    if (v.user) {
      v.session_token = *token;
      // Bound to the session: a page of one session cannot be replayed into another.
      v.csrf = sdk::sessionCsrf(*token);
      return v;
    }
  }
  // Before sign-in, forms carry a double-submitted random token (the cookie and the field).
  auto cookie = r.cookie(kCsrfCookie);
  if (cookie && cookie->size() == 43) {
    v.csrf = *cookie;
  } else {
    v.csrf = sdk::randomToken(32);
    v.new_csrf_cookie = true;
  }
  return v;
}

std::string Site::cookie(const std::string& name, const std::string& value, const std::string& path,
                         int max_age) const {
  std::string c = name + "=" + value + "; Path=" + (path.empty() ? "/" : path) +
                  "; HttpOnly; SameSite=Lax; Max-Age=" + std::to_string(max_age);
  if (secure_) c += "; Secure";
  return c;
}

sdk::Response Site::render(const Visitor& v, Page p) const {
  sdk::Response out;
  if (!p.location.empty()) {
    out.status = 303;
    out.content_type = "text/plain; charset=utf-8";
    out.body = "See " + p.location + "\n";
    out.headers.emplace_back("Location", p.location);
  } else {
    const std::string nonce = sdk::randomToken(16);
    PageFrame frame{p.title,  prefix_,      v.user ? v.user->email : "", v.csrf, nonce, {},
                    p.script, p.script_urls};
    if (v.user) {
      for (const auto& page : pages_->navigation())
        frame.nav.emplace_back(page->path, page->nav_label);
    }
    out.status = p.status;
    out.content_type = "text/html; charset=utf-8";
    out.body = page(frame, p.content);
    out.headers.emplace_back("Content-Security-Policy",
                             "default-src 'none'; style-src 'nonce-" + nonce +
                                 "'; script-src 'nonce-" + nonce +
                                 (p.webassembly ? "' 'wasm-unsafe-eval" : "") + "'; " +
                                 (p.workers ? "worker-src 'self'; " : "") +
                                 "img-src 'self'; connect-src 'self'; form-action 'self'; "
                                 "frame-ancestors 'none'; base-uri 'none'");
  }
  if (v.new_csrf_cookie && !v.user) {
    out.headers.emplace_back("Set-Cookie", cookie(kCsrfCookie, v.csrf, prefix_, 86400));
  }
  for (auto& c : p.cookies) out.headers.emplace_back("Set-Cookie", c);
  out.headers.emplace_back("Cache-Control", "no-store");
  out.headers.emplace_back("X-Frame-Options", "DENY");
  out.headers.emplace_back("X-Content-Type-Options", "nosniff");
  out.headers.emplace_back("Referrer-Policy", "no-referrer");
  return out;
}

Page Site::redirect(std::string location) {
  Page p;
  p.location = std::move(location);
  return p;
}

Page Site::message(int status, const std::string& title, const std::string& html) const {
  Page p;
  p.status = status;
  p.title = title;
  p.content = "<div class=\"card\"><h1>" + escape(title) + "</h1>" + html + "</div>";
  return p;
}

// A return URL is honoured only when it is a plain path inside the dashboard; anything else
// (another host, a scheme, `//`, backslashes, encoded dots, control characters) goes home.
std::string Site::safeNext(const std::string& next) const {
  const std::string home = prefix_ + "/";
  if (next.empty() || next.size() > 1000) return home;
  const std::string path = next.substr(0, next.find('?'));
  if (path != prefix_ && path.rfind(prefix_ + "/", 0) != 0) return home;
  if (path.find("//") != std::string::npos || path.find("/.") != std::string::npos ||
      path.find('%') != std::string::npos) {
    return home;
  }
  for (unsigned char c : next) {
    if (c <= 0x20 || c == 0x7f || c == '\\' || c == '"' || c == '<' || c == '>') return home;
  }
  return next;
}

Page Site::signInFirst(const std::string& here) const {
  return redirect(prefix_ + "/login?next=" + urlEncode(here));
}

bool Site::csrfOk(const sdk::Request& r, const Visitor& v) const {
  if (auto origin = r.header("origin"); origin && *origin != "null" && *origin != origin_) {
    return false;
  }
  if (v.csrf.empty()) return false;
  if (!v.user && v.new_csrf_cookie) return false;  // no cookie came with the form
  return sdk::constantTimeEquals(formField(r, "csrf"), v.csrf);
}

Page Site::csrfRefused() const {
  return message(403, "Form expired",
                 "<p class=\"error\">This form expired or came from another site. Go back, "
                 "reload the page and try again.</p>");
}

Page Site::noAccount() const {
  return message(403, "No account yet",
                 "<p>Your account is created when you approve your first device login.</p>"
                 "<a class=\"button\" href=\"" +
                     escape(prefix_) + "/device\">Approve a device</a>");
}

std::string Site::hidden(const std::string& name, const std::string& value) {
  return "<input type=\"hidden\" name=\"" + escape(name) + "\" value=\"" + escape(value) + "\">";
}

}  // namespace svc::plugins::dashboard
