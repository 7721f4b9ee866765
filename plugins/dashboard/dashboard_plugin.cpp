// dashboard: the pages a person uses: sign in (OpenID Connect or a local password), approve or
// deny an agent's device login, and manage the account's keys. Plain server-rendered HTML; it
// acts for the person through the auth plugin's AccountService.
#include "html.h"
#include "oidc.h"

#include <svc/sdk/accounts.h>
#include <svc/sdk/plugin.h>
#include <svc/sdk/rate_limit.h>
#include <svc/sdk/util.h>

#include <Poco/String.h>
#include <Poco/URI.h>

#include <openssl/hmac.h>

#include <chrono>
#include <ctime>

using namespace Poco::Data::Keywords;

namespace svc::plugins::dashboard {

namespace {

constexpr const char* kCsrfCookie = "svc_csrf";
constexpr const char* kOidcCookie = "svc_oidc";
constexpr std::int64_t kOidcLoginUs = 600LL * 1000000;

std::string formField(const sdk::Request& r, const std::string& name) {
  auto it = r.form.find(name);
  if (it != r.form.end()) return it->second;
  if (r.json && r.json->has(name) && r.json->get(name).isString()) {
    return r.json->getValue<std::string>(name);
  }
  return "";
}

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

class DashboardPlugin : public sdk::Plugin {
 public:
  DashboardPlugin() {
    info_.name = "dashboard";
    info_.version = "0.1.0";
    info_.description = "Web pages for people: sign-in, device approval, keys.";
    info_.requires_plugins = {"auth"};
    info_.uses_services = {sdk::kAccountService.name};
    info_.config = {
        {"dashboard.url", "${public.base_url}/dashboard", "the dashboard's public URL", false,
         true},
        // The dashboard is the OpenID Connect client that signs people in; the names keep the
        // auth. prefix operators know.
        {"auth.oidc.issuer", "", "OpenID Connect provider for human sign-in", false},
        {"auth.oidc.client_id", "", "OpenID Connect client id", false},
        {"auth.oidc.client_secret", "", "OpenID Connect client secret", true},
        {"dashboard.rate.sign_in_failures_per_minute", "10",
         "failed password sign-ins one address may make a minute", false},
        {"dashboard.rate.wrong_codes", "5",
         "wrong device codes one person may enter within a code's lifetime", false},
    };
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    const auto& c = context.config();
    dashboard_url_ = c.getString("dashboard.url");
    while (!dashboard_url_.empty() && dashboard_url_.back() == '/') dashboard_url_.pop_back();
    Poco::URI uri(dashboard_url_);
    if (uri.getScheme() != "http" && uri.getScheme() != "https") {
      throw std::runtime_error("dashboard.url must be an http or https URL");
    }
    prefix_ = uri.getPath();
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
    origin_ = uri.getScheme() + "://" + uri.getAuthority();
    secure_ = uri.getScheme() == "https";
    const std::string issuer = c.getString("auth.oidc.issuer", "");
    if (!issuer.empty()) {
      const std::string client_id = c.getString("auth.oidc.client_id", "");
      if (client_id.empty()) throw std::runtime_error("auth.oidc.issuer needs auth.oidc.client_id");
      oidc_ = std::make_unique<OidcClient>(issuer, client_id,
                                           c.getString("auth.oidc.client_secret", ""),
                                           dashboard_url_ + "/login/callback");
      provider_name_ = Poco::URI(issuer).getHost();
    }
    sign_in_failures_ =
        std::make_unique<sdk::RateLimiter>(c.getInt("dashboard.rate.sign_in_failures_per_minute"));
    // RFC 8628 §5.1: a person who enters wrong codes is slowed to a few per code lifetime.
    wrong_codes_ = std::make_unique<sdk::RateLimiter>(c.getInt("dashboard.rate.wrong_codes"),
                                                      c.getInt("auth.device.expires_seconds", 600));
  }

  std::vector<sdk::Migration> migrations() const override {
    return {sdk::Migration::portable(
        1, "sign-ins in progress at the OpenID Connect provider",
        {"CREATE TABLE dashboard_oidc_logins (state_hash CHAR(64) NOT NULL PRIMARY KEY, "
         "nonce VARCHAR(128) NOT NULL, verifier VARCHAR(128) NOT NULL, "
         "next_url VARCHAR(1024) NOT NULL, created_us BIGINT NOT NULL)"})};
  }

  void registerRoutes(sdk::RouteRegistry& routes) override {
    using sdk::AuthNeed;
    using sdk::BodyKind;
    auto add = [&](const char* method, const std::string& path, const char* summary,
                   Page (DashboardPlugin::*handler)(sdk::Request&, Visitor&)) {
      routes.add({method, prefix_ + path, AuthNeed::kNone, BodyKind::kJsonOrForm, 64 * 1024,
                  summary, [this, handler](sdk::Request& r) {
                    Visitor v = visitor(r);
                    return render(r, v, (this->*handler)(r, v));
                  }});
    };
    add("GET", "/", "Dashboard home.", &DashboardPlugin::home);
    add("GET", "/login", "Sign-in page.", &DashboardPlugin::loginPage);
    add("POST", "/login", "Sign in with a local password.", &DashboardPlugin::loginLocal);
    add("GET", "/login/oidc", "Start signing in at the OpenID Connect provider.",
        &DashboardPlugin::loginOidc);
    add("GET", "/login/callback", "Finish signing in at the OpenID Connect provider.",
        &DashboardPlugin::loginCallback);
    add("POST", "/logout", "Sign out.", &DashboardPlugin::logout);
    add("GET", "/device", "Enter or confirm a device code.", &DashboardPlugin::devicePage);
    add("POST", "/device", "Approve or deny a device code.", &DashboardPlugin::deviceDecide);
    add("GET", "/keys", "The account's keys.", &DashboardPlugin::keysPage);
    add("POST", "/keys", "Create a management key.", &DashboardPlugin::keysCreate);
    add("POST", "/keys/{id}/revoke", "Revoke a key.", &DashboardPlugin::keysRevoke);
    add("GET", "/identities", "The account's identities.", &DashboardPlugin::identitiesPage);
    add("GET", "/identities/{uuid}/inbox", "An identity's inbox.", &DashboardPlugin::inboxPage);
    add("GET", "/identities/{uuid}/threads/{thread}", "A thread, read in full.",
        &DashboardPlugin::threadPage);
  }

  void registerServices(sdk::ServiceRegistry&) override {}

  void start() override {
    // auth is a declared requirement, so its service is there (or start is refused, naming it).
    accounts_ = context_->services().require(sdk::kAccountService);
  }

  void stop() override {}

 private:
  // Who is looking at the page.
  struct Visitor {
    std::optional<sdk::UserInfo> user;
    std::string session_token;
    std::string csrf;  // the token forms must carry
    bool new_csrf_cookie = false;
  };

  // A handler's answer before the layout and headers are applied.
  struct Page {
    int status = 200;
    std::string title;
    std::string content;   // HTML; empty with a redirect
    std::string location;  // 303 to here when set
    std::vector<std::string> cookies;
  };

  Visitor visitor(const sdk::Request& r) {
    Visitor v;
    if (auto token = r.cookie(sdk::kSessionCookie); token && !token->empty()) {
      v.user = accounts_->session(*token);
      if (v.user) {
        v.session_token = *token;
        v.csrf = sessionCsrf(*token);
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

  // Bound to the session: a page of one session cannot be replayed into another.
  static std::string sessionCsrf(const std::string& session_token) {
    unsigned char mac[32];
    unsigned int length = 0;
    const std::string label = "svc dashboard csrf";
    HMAC(EVP_sha256(), session_token.data(), static_cast<int>(session_token.size()),
         reinterpret_cast<const unsigned char*>(label.data()), label.size(), mac, &length);
    return sdk::base64url(std::string(reinterpret_cast<char*>(mac), length));
  }

  std::string cookie(const std::string& name, const std::string& value, const std::string& path,
                     int max_age) const {
    std::string c = name + "=" + value + "; Path=" + (path.empty() ? "/" : path) +
                    "; HttpOnly; SameSite=Lax; Max-Age=" + std::to_string(max_age);
    if (secure_) c += "; Secure";
    return c;
  }

  sdk::Response render(const sdk::Request&, const Visitor& v, Page p) {
    sdk::Response out;
    if (!p.location.empty()) {
      out.status = 303;
      out.content_type = "text/plain; charset=utf-8";
      out.body = "See " + p.location + "\n";
      out.headers.emplace_back("Location", p.location);
    } else {
      const std::string nonce = sdk::randomToken(16);
      PageFrame frame{p.title, prefix_, v.user ? v.user->email : "", v.csrf, nonce};
      out.status = p.status;
      out.content_type = "text/html; charset=utf-8";
      out.body = page(frame, p.content);
      out.headers.emplace_back("Content-Security-Policy",
                               "default-src 'none'; style-src 'nonce-" + nonce +
                                   "'; script-src 'nonce-" + nonce +
                                   "'; img-src 'self'; connect-src 'self'; form-action 'self'; "
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

  static Page redirect(std::string location) {
    Page p;
    p.location = std::move(location);
    return p;
  }

  Page message(int status, const std::string& title, const std::string& html) {
    Page p;
    p.status = status;
    p.title = title;
    p.content = "<div class=\"card\"><h1>" + escape(title) + "</h1>" + html + "</div>";
    return p;
  }

  // A return URL is honoured only when it is a plain path inside the dashboard; anything else
  // (another host, a scheme, `//`, backslashes, encoded dots, control characters) goes home.
  std::string safeNext(const std::string& next) const {
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

  Page signInFirst(const std::string& here) {
    return redirect(prefix_ + "/login?next=" + urlEncode(here));
  }

  // Forms must carry the page's CSRF token; a cross-site Origin is refused outright.
  bool csrfOk(const sdk::Request& r, const Visitor& v) const {
    if (auto origin = r.header("origin"); origin && *origin != "null" && *origin != origin_) {
      return false;
    }
    if (v.csrf.empty()) return false;
    if (!v.user && v.new_csrf_cookie) return false;  // no cookie came with the form
    return sdk::constantTimeEquals(formField(r, "csrf"), v.csrf);
  }

  Page csrfRefused() {
    return message(403, "Form expired",
                   "<p class=\"error\">This form expired or came from another site. Go back, "
                   "reload the page and try again.</p>");
  }

  std::string hidden(const std::string& name, const std::string& value) {
    return "<input type=\"hidden\" name=\"" + escape(name) + "\" value=\"" + escape(value) + "\">";
  }

  // --- pages -------------------------------------------------------------------------------

  Page home(sdk::Request&, Visitor& v) {
    if (!v.user) return signInFirst(prefix_ + "/");
    std::string html = "<div class=\"card\"><h1>Hello, " + escape(v.user->name) + "</h1>";
    if (v.user->account_id.empty()) {
      html +=
          "<p>You have no account yet. It is created when you approve your first device "
          "login: run <code>svcctl login</code> (or let your agent start one) and enter the "
          "code it shows.</p>";
    } else {
      html += "<p class=\"muted\">Account <code>" + escape(v.user->account_id) + "</code></p>";
    }
    html += "<div class=\"row\"><a class=\"button\" href=\"" + escape(prefix_) +
            "/device\">Approve a device</a>";
    if (!v.user->account_id.empty()) {
      html += "<a class=\"button secondary\" href=\"" + escape(prefix_) + "/keys\">Keys</a>";
      html += "<a class=\"button secondary\" href=\"" + escape(prefix_) +
              "/identities\">Identities and mail</a>";
    }
    html += "</div></div>";
    Page p;
    p.title = "Dashboard";
    p.content = html;
    return p;
  }

  Page loginForm(const Visitor& v, const std::string& next, const std::string& error, int status,
                 const std::string& email = "") {
    std::string html = "<div class=\"card\"><h1>Sign in</h1>";
    if (!error.empty()) html += "<p class=\"error\" role=\"alert\">" + escape(error) + "</p>";
    if (oidc_) {
      html += "<a class=\"button\" id=\"oidc\" href=\"" + escape(prefix_) +
              "/login/oidc?next=" + escape(urlEncode(next)) + "\">Sign in with " +
              escape(provider_name_) + "</a>";
    }
    if (accounts_->localUsersEnabled()) {
      if (oidc_) html += "<p class=\"muted\">or with a local account:</p>";
      html += "<form method=\"post\" action=\"" + escape(prefix_) + "/login\">" +
              hidden("csrf", v.csrf) + hidden("next", next) +
              "<label for=\"email\">Email</label><input type=\"email\" id=\"email\" "
              "name=\"email\" autocomplete=\"username\" required value=\"" +
              escape(email) +
              "\"><label for=\"password\">Password</label><input type=\"password\" "
              "id=\"password\" name=\"password\" autocomplete=\"current-password\" required>"
              "<button type=\"submit\">Sign in</button></form>";
    }
    if (!oidc_ && !accounts_->localUsersEnabled()) {
      html +=
          "<p class=\"error\">No sign-in method is configured: the operator sets "
          "<code>auth.oidc.issuer</code> or <code>auth.local_users</code>.</p>";
    }
    html += "</div>";
    Page p;
    p.status = status;
    p.title = "Sign in";
    p.content = html;
    return p;
  }

  Page loginPage(sdk::Request& r, Visitor& v) {
    const std::string next = safeNext(r.queryParam("next").value_or(""));
    if (v.user) return redirect(next);
    return loginForm(v, next, "", 200);
  }

  Page signedIn(const sdk::UserInfo& user, const std::string& next) {
    Page p = redirect(next);
    p.cookies.push_back(cookie(sdk::kSessionCookie, accounts_->startSession(user.id), "/",
                               accounts_->sessionSeconds()));
    return p;
  }

  Page loginLocal(sdk::Request& r, Visitor& v) {
    const std::string next = safeNext(formField(r, "next"));
    if (!csrfOk(r, v)) return csrfRefused();
    if (!accounts_->localUsersEnabled()) {
      return loginForm(v, next, "Local sign-in is turned off on this server.", 403);
    }
    if (int wait = sign_in_failures_->peek(r.client_address)) {
      return loginForm(
          v, next, "Too many failed sign-ins; try again in " + std::to_string(wait) + " s.", 429);
    }
    const std::string email = formField(r, "email");
    auto user = accounts_->checkPassword(email, formField(r, "password"));
    if (!user) {
      sign_in_failures_->take(r.client_address);
      return loginForm(v, next, "Wrong email or password.", 401, email);
    }
    return signedIn(*user, next);
  }

  Page loginOidc(sdk::Request& r, Visitor& v) {
    const std::string next = safeNext(r.queryParam("next").value_or(""));
    if (!oidc_) return message(404, "Not configured", "<p>No sign-in provider is configured.</p>");
    if (v.user) return redirect(next);
    const std::string state = sdk::randomToken(32), nonce = sdk::randomToken(32),
                      verifier = sdk::randomToken(48);
    std::string url;
    try {
      url = oidc_->authorizationUrl(state, nonce, OidcClient::codeChallenge(verifier));
    } catch (const OidcError& e) {
      return message(502, "Sign-in unavailable", "<p class=\"error\">" + escape(e.what()) + "</p>");
    }
    context_->database().transaction([&](Poco::Data::Session& s) {
      std::string hash = sdk::sha256Hex(state), n = nonce, ver = verifier, to = next;
      Poco::Int64 at = sdk::nowMicros(), stale = at - kOidcLoginUs;
      s << "DELETE FROM dashboard_oidc_logins WHERE created_us < ?", use(stale), now;
      s << "INSERT INTO dashboard_oidc_logins (state_hash, nonce, verifier, next_url, created_us) "
           "VALUES (?, ?, ?, ?, ?)",
          use(hash), use(n), use(ver), use(to), use(at), now;
    });
    Page p = redirect(url);
    // Binds the sign-in to this browser: a callback carrying another browser's state fails.
    p.cookies.push_back(cookie(kOidcCookie, state, prefix_ + "/login", 600));
    return p;
  }

  Page loginFailed(int status, const std::string& why) {
    Page p =
        message(status, "Sign-in failed",
                "<p class=\"error\" role=\"alert\">" + escape(why) +
                    "</p><a class=\"button\" href=\"" + escape(prefix_) + "/login\">Try again</a>");
    p.cookies.push_back(cookie(kOidcCookie, "", prefix_ + "/login", 0));
    return p;
  }

  Page loginCallback(sdk::Request& r, Visitor&) {
    if (!oidc_) return message(404, "Not configured", "<p>No sign-in provider is configured.</p>");
    const std::string state = r.queryParam("state").value_or("");
    const std::string cookie_state = r.cookie(kOidcCookie).value_or("");
    if (state.empty() || state.size() > 200 || !sdk::constantTimeEquals(state, cookie_state)) {
      return loginFailed(400, "This sign-in was not started in this browser, or it expired.");
    }
    // Each sign-in is used once: take it out of the table before anything else.
    std::string nonce, verifier, next;
    Poco::Int64 created = 0;
    context_->database().transaction([&](Poco::Data::Session& s) {
      std::string hash = sdk::sha256Hex(state);
      std::vector<Poco::Tuple<std::string, std::string, std::string, Poco::Int64>> rows;
      s << "SELECT nonce, verifier, next_url, created_us FROM dashboard_oidc_logins WHERE "
           "state_hash = ?",
          use(hash), into(rows), now;
      if (rows.empty()) return;
      s << "DELETE FROM dashboard_oidc_logins WHERE state_hash = ?", use(hash), now;
      nonce = rows.front().get<0>();
      verifier = rows.front().get<1>();
      next = rows.front().get<2>();
      created = rows.front().get<3>();
    });
    if (nonce.empty() || sdk::nowMicros() - created > kOidcLoginUs) {
      return loginFailed(400, "This sign-in expired or was already used; start again.");
    }
    if (auto error = r.queryParam("error")) {
      std::string description = r.queryParam("error_description").value_or("");
      return loginFailed(401,
                         "The provider refused the sign-in: " + error->substr(0, 100) +
                             (description.empty() ? "" : " (" + description.substr(0, 300) + ")"));
    }
    const std::string code = r.queryParam("code").value_or("");
    if (code.empty() || code.size() > 2048) return loginFailed(400, "The provider sent no code.");
    try {
      OidcClaims claims = oidc_->finish(code, verifier, nonce);
      sdk::UserInfo user = accounts_->externalUser(oidc_->issuer(), claims.subject, claims.email,
                                                   claims.name, claims.email_verified);
      Page p = signedIn(user, safeNext(next));
      p.cookies.push_back(cookie(kOidcCookie, "", prefix_ + "/login", 0));
      return p;
    } catch (const OidcError& e) {
      context_->logger().warning(std::string("OpenID Connect sign-in refused: ") + e.what());
      return loginFailed(401, e.what());
    } catch (const sdk::HttpError& e) {
      return loginFailed(e.status(), e.detail());
    }
  }

  Page logout(sdk::Request& r, Visitor& v) {
    if (!csrfOk(r, v)) return csrfRefused();
    if (!v.session_token.empty()) accounts_->endSession(v.session_token);
    Page p = redirect(prefix_ + "/login");
    p.cookies.push_back(cookie(sdk::kSessionCookie, "", "/", 0));
    return p;
  }

  Page deviceEntry(const Visitor& v, const std::string& error, int status,
                   const std::string& typed = "") {
    std::string html = "<div class=\"card\"><h1>Approve a device</h1>";
    if (!error.empty()) html += "<p class=\"error\" role=\"alert\">" + escape(error) + "</p>";
    html += "<form method=\"post\" action=\"" + escape(prefix_) + "/device\">" +
            hidden("csrf", v.csrf) +
            "<label for=\"user_code\">Enter the code your agent shows</label>"
            "<input type=\"text\" id=\"user_code\" name=\"user_code\" autocomplete=\"off\" "
            "autocapitalize=\"characters\" spellcheck=\"false\" maxlength=\"16\" "
            "placeholder=\"XXXX-XXXX\" required value=\"" +
            escape(typed) + "\"><button type=\"submit\">Continue</button></form></div>";
    Page p;
    p.status = status;
    p.title = "Approve a device";
    p.content = html;
    return p;
  }

  Page tooManyCodes(const Visitor& v, int wait) {
    return deviceEntry(
        v, "Too many wrong codes. Try again in " + std::to_string((wait + 59) / 60) + " min.", 429);
  }

  Page deviceConfirm(const Visitor& v, const sdk::DeviceRequest& d) {
    const std::int64_t minutes =
        std::max<std::int64_t>(1, (d.expires_us - sdk::nowMicros()) / 60000000);
    std::string who = d.client_id.empty() ? "An agent" : "“" + escape(d.client_id) + "”";
    std::string html = "<div class=\"card\"><h1>Approve this device?</h1><p>" + who +
                       " asks to act for your account" +
                       (v.user->account_id.empty() ? " (approving creates your account)" : "") +
                       ". Check that the code matches the one it shows:</p><p class=\"code\" "
                       "id=\"code\">" +
                       escape(d.user_code) + "</p><p class=\"muted\">The code expires in " +
                       std::to_string(minutes) + " min.</p><form method=\"post\" action=\"" +
                       escape(prefix_) + "/device\">" + hidden("csrf", v.csrf) +
                       hidden("user_code", d.user_code) +
                       "<div class=\"row\"><button type=\"submit\" name=\"decision\" "
                       "value=\"approve\" id=\"approve\">Approve</button><button type=\"submit\" "
                       "name=\"decision\" value=\"deny\" class=\"danger\" "
                       "id=\"deny\">Deny</button></div></form></div>";
    Page p;
    p.title = "Approve this device?";
    p.content = html;
    return p;
  }

  Page devicePage(sdk::Request& r, Visitor& v) {
    auto code = r.queryParam("user_code");
    if (!v.user) {
      return signInFirst(prefix_ + "/device" +
                         (code ? "?user_code=" + urlEncode(code->substr(0, 32)) : ""));
    }
    if (!code || code->empty()) return deviceEntry(v, "", 200);
    if (int wait = wrong_codes_->peek(v.user->id)) return tooManyCodes(v, wait);
    if (auto d = accounts_->pendingDevice(code->substr(0, 32))) return deviceConfirm(v, *d);
    wrong_codes_->take(v.user->id);
    return deviceEntry(v, "This code is unknown or has expired. Check it and try again.", 404,
                       code->substr(0, 16));
  }

  Page deviceDecide(sdk::Request& r, Visitor& v) {
    if (!v.user) return signInFirst(prefix_ + "/device");
    if (!csrfOk(r, v)) return csrfRefused();
    const std::string code = formField(r, "user_code").substr(0, 32);
    const std::string decision = formField(r, "decision");
    if (int wait = wrong_codes_->peek(v.user->id)) return tooManyCodes(v, wait);
    if (decision.empty()) {
      auto d = accounts_->pendingDevice(code);
      if (d) return deviceConfirm(v, *d);
    } else if (decision == "approve" || decision == "deny") {
      const bool approve = decision == "approve";
      if (accounts_->decideDevice(code, v.user->id, approve) == sdk::DeviceDecision::kDone) {
        return message(200, approve ? "Device approved" : "Device denied",
                       approve ? "<p class=\"note\" id=\"result\">Approved. The agent now has "
                                 "its key; you can close this window.</p>"
                               : "<p class=\"note\" id=\"result\">Denied. The agent gets no "
                                 "access.</p>");
      }
    } else {
      return deviceEntry(v, "Choose approve or deny.", 400, code);
    }
    wrong_codes_->take(v.user->id);
    return deviceEntry(v, "This code is unknown or has expired. Check it and try again.", 404,
                       code.substr(0, 16));
  }

  Page noAccount() {
    return message(403, "No account yet",
                   "<p>Your account is created when you approve your first device login.</p>"
                   "<a class=\"button\" href=\"" +
                       escape(prefix_) + "/device\">Approve a device</a>");
  }

  Page keysPage(sdk::Request& r, Visitor& v) {
    if (!v.user) return signInFirst(prefix_ + "/keys");
    if (v.user->account_id.empty()) return noAccount();
    std::string html;
    if (r.queryParam("revoked")) html += "<p class=\"note\" id=\"flash\">The key is revoked.</p>";
    html += "<div class=\"card\"><h1>New management key</h1><form method=\"post\" action=\"" +
            escape(prefix_) + "/keys\">" + hidden("csrf", v.csrf) +
            "<label for=\"label\">Label</label><input type=\"text\" id=\"label\" name=\"label\" "
            "maxlength=\"200\" placeholder=\"what will use it\"><button type=\"submit\" "
            "id=\"create\">Create key</button></form></div>";
    auto keys = accounts_->keys(v.user->account_id);
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
                escape(prefix_) + "/keys/" + escape(k.id) + "/revoke\">" + hidden("csrf", v.csrf) +
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

  Page keysCreate(sdk::Request& r, Visitor& v) {
    if (!v.user) return signInFirst(prefix_ + "/keys");
    if (!csrfOk(r, v)) return csrfRefused();
    if (v.user->account_id.empty()) return noAccount();
    try {
      auto [info, key] = accounts_->createKey(*v.user, formField(r, "label"), "");
      return message(201, "Your new key",
                     "<p>This is the only time the key is shown. Copy it now and keep it "
                     "secret.</p><p class=\"key\" id=\"new-key\">" +
                         escape(key) +
                         "</p><div class=\"row\"><button type=\"button\" data-copy=\"new-key\" "
                         "id=\"copy\">Copy</button><a class=\"button secondary\" href=\"" +
                         escape(prefix_) + "/keys\">Done</a></div>");
    } catch (const sdk::HttpError& e) {
      return message(e.status(), "Could not create the key",
                     "<p class=\"error\">" + escape(e.detail()) + "</p>");
    }
  }

  Page keysRevoke(sdk::Request& r, Visitor& v) {
    if (!v.user) return signInFirst(prefix_ + "/keys");
    if (!csrfOk(r, v)) return csrfRefused();
    if (!accounts_->revokeKey(v.user->account_id, r.params.at("id"))) {
      return message(404, "No such key",
                     "<p>The key is not this account's or is already revoked.</p><a "
                     "class=\"button\" href=\"" +
                         escape(prefix_) + "/keys\">Back to keys</a>");
    }
    return redirect(prefix_ + "/keys?revoked=1");
  }

  // The mail pages are shells: the page's script reads the API with the signed-in session's
  // cookie (GET only), so the dashboard shows exactly what the API lets this person see and
  // needs no access to the identities' or the email plugin's tables.
  Page mailView(const std::string& title, const std::string& view, const std::string& identity,
                const std::string& thread, const std::string& back_href,
                const std::string& back_label) {
    std::string html = "<div class=\"card\">";
    if (!back_href.empty()) {
      html += "<p><a href=\"" + escape(back_href) + "\">&larr; " + escape(back_label) + "</a></p>";
    }
    html += "<h1 id=\"view-title\">" + escape(title) + "</h1><div id=\"view\" data-view=\"" +
            escape(view) + "\" data-prefix=\"" + escape(prefix_) + "\" data-identity=\"" +
            escape(identity) + "\" data-thread=\"" + escape(thread) +
            "\"><p class=\"muted\">Loading…</p></div></div>";
    Page p;
    p.title = title;
    p.content = html;
    return p;
  }

  Page identitiesPage(sdk::Request&, Visitor& v) {
    if (!v.user) return signInFirst(prefix_ + "/identities");
    if (v.user->account_id.empty()) return noAccount();
    return mailView("Identities", "identities", "", "", "", "");
  }

  Page inboxPage(sdk::Request& r, Visitor& v) {
    const std::string uuid = Poco::toLower(r.params.at("uuid"));
    if (!v.user) return signInFirst(prefix_ + "/identities/" + urlEncode(uuid) + "/inbox");
    if (v.user->account_id.empty()) return noAccount();
    if (!sdk::isUuid(uuid)) return message(404, "No such identity", "");
    return mailView("Inbox", "inbox", uuid, "", prefix_ + "/identities", "Identities");
  }

  Page threadPage(sdk::Request& r, Visitor& v) {
    const std::string uuid = Poco::toLower(r.params.at("uuid"));
    const std::string thread = Poco::toLower(r.params.at("thread"));
    if (!v.user) {
      return signInFirst(prefix_ + "/identities/" + urlEncode(uuid) + "/threads/" +
                         urlEncode(thread));
    }
    if (v.user->account_id.empty()) return noAccount();
    if (!sdk::isUuid(uuid) || !sdk::isUuid(thread)) return message(404, "No such thread", "");
    return mailView("Thread", "thread", uuid, thread, prefix_ + "/identities/" + uuid + "/inbox",
                    "Inbox");
  }

  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  std::string dashboard_url_, prefix_, origin_, provider_name_;
  bool secure_ = false;
  std::unique_ptr<OidcClient> oidc_;
  std::shared_ptr<sdk::AccountService> accounts_;
  std::unique_ptr<sdk::RateLimiter> sign_in_failures_;
  std::unique_ptr<sdk::RateLimiter> wrong_codes_;
};

}  // namespace svc::plugins::dashboard

SVC_PLUGIN(svc::plugins::dashboard::DashboardPlugin)
