#include "sign_in.h"

#include "html.h"

#include <svc/sdk/util.h>

#include <Poco/URI.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::dashboard {

namespace {

constexpr const char* kOidcCookie = "svc_oidc";
constexpr std::int64_t kOidcLoginUs = 600LL * 1000000;

}  // namespace

SignIn::SignIn(Site& site, sdk::PluginContext& context) : site_(site), context_(context) {
  const auto& c = context.config();
  const std::string issuer = c.getString("auth.oidc.issuer");
  if (!issuer.empty()) {
    const std::string client_id = c.getString("auth.oidc.client_id");
    if (client_id.empty()) throw std::runtime_error("auth.oidc.issuer needs auth.oidc.client_id");
    oidc_ = std::make_unique<OidcClient>(issuer, client_id, c.getString("auth.oidc.client_secret"),
                                         site.url() + "/login/callback");
    provider_name_ = Poco::URI(issuer).getHost();
  }
  sign_in_failures_ =
      std::make_unique<sdk::RateLimiter>(c.getInt("dashboard.rate.sign_in_failures_per_minute"));
}

sdk::Migration SignIn::migration() {
  return sdk::Migration::portable(
      1, "sign-ins in progress at the OpenID Connect provider",
      {"CREATE TABLE dashboard_oidc_logins (state_hash CHAR(64) NOT NULL PRIMARY KEY, "
       "nonce VARCHAR(128) NOT NULL, verifier VARCHAR(128) NOT NULL, "
       "next_url VARCHAR(1024) NOT NULL, created_us BIGINT NOT NULL)"});
}

void SignIn::registerIn(sdk::RouteRegistry& routes) {
  auto add = [&](const char* method, const char* path, const char* summary,
                 Page (SignIn::*handler)(sdk::Request&, Visitor&)) {
    site_.add(routes, method, path, summary,
              [this, handler](sdk::Request& r, Visitor& v) { return (this->*handler)(r, v); });
  };
  add("GET", "/login", "Sign-in page.", &SignIn::loginPage);
  add("POST", "/login", "Sign in with a local password.", &SignIn::loginLocal);
  add("GET", "/login/oidc", "Start signing in at the OpenID Connect provider.", &SignIn::loginOidc);
  add("GET", "/login/callback", "Finish signing in at the OpenID Connect provider.",
      &SignIn::loginCallback);
  add("POST", "/logout", "Sign out.", &SignIn::logout);
}

Page SignIn::loginForm(const Visitor& v, const std::string& next, const std::string& error,
                       int status, const std::string& email) {
  std::string html = "<div class=\"card\"><h1>Sign in</h1>";
  if (!error.empty()) html += "<p class=\"error\" role=\"alert\">" + escape(error) + "</p>";
  if (oidc_) {
    html += "<a class=\"button\" id=\"oidc\" href=\"" + escape(site_.prefix()) +
            "/login/oidc?next=" + escape(urlEncode(next)) + "\">Sign in with " +
            escape(provider_name_) + "</a>";
  }
  if (site_.accounts().localUsersEnabled()) {
    if (oidc_) html += "<p class=\"muted\">or with a local account:</p>";
    html += "<form method=\"post\" action=\"" + escape(site_.prefix()) + "/login\">" +
            Site::hidden("csrf", v.csrf) + Site::hidden("next", next) +
            "<label for=\"email\">Email</label><input type=\"email\" id=\"email\" "
            "name=\"email\" autocomplete=\"username\" required value=\"" +
            escape(email) +
            "\"><label for=\"password\">Password</label><input type=\"password\" "
            "id=\"password\" name=\"password\" autocomplete=\"current-password\" required>"
            "<button type=\"submit\">Sign in</button></form>";
  }
  if (!oidc_ && !site_.accounts().localUsersEnabled()) {
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

Page SignIn::loginPage(sdk::Request& r, Visitor& v) {
  const std::string next = site_.safeNext(r.queryParam("next").value_or(""));
  if (v.user) return Site::redirect(next);
  return loginForm(v, next, "", 200);
}

Page SignIn::signedIn(const sdk::UserInfo& user, const std::string& next) {
  Page p = Site::redirect(next);
  p.cookies.push_back(site_.cookie(sdk::kSessionCookie, site_.accounts().startSession(user.id), "/",
                                   site_.accounts().sessionSeconds()));
  return p;
}

Page SignIn::loginLocal(sdk::Request& r, Visitor& v) {
  const std::string next = site_.safeNext(formField(r, "next"));
  if (!site_.csrfOk(r, v)) return site_.csrfRefused();
  if (!site_.accounts().localUsersEnabled()) {
    return loginForm(v, next, "Local sign-in is turned off on this server.", 403);
  }
  if (int wait = sign_in_failures_->peek(r.client_address)) {
    return loginForm(v, next,
                     "Too many failed sign-ins; try again in " + std::to_string(wait) + " s.", 429);
  }
  const std::string email = formField(r, "email");
  auto user = site_.accounts().checkPassword(email, formField(r, "password"));
  if (!user) {
    sign_in_failures_->take(r.client_address);
    return loginForm(v, next, "Wrong email or password.", 401, email);
  }
  return signedIn(*user, next);
}

Page SignIn::loginOidc(sdk::Request& r, Visitor& v) {
  const std::string next = site_.safeNext(r.queryParam("next").value_or(""));
  if (!oidc_)
    return site_.message(404, "Not configured", "<p>No sign-in provider is configured.</p>");
  if (v.user) return Site::redirect(next);
  const std::string state = sdk::randomToken(32), nonce = sdk::randomToken(32),
                    verifier = sdk::randomToken(48);
  std::string url;
  try {
    url = oidc_->authorizationUrl(state, nonce, OidcClient::codeChallenge(verifier));
  } catch (const OidcError& e) {
    return site_.message(502, "Sign-in unavailable",
                         "<p class=\"error\">" + escape(e.what()) + "</p>");
  }
  context_.database().transaction([&](Poco::Data::Session& s) {
    std::string hash = sdk::sha256Hex(state), n = nonce, ver = verifier, to = next;
    Poco::Int64 at = sdk::nowMicros(), stale = at - kOidcLoginUs;
    s << "DELETE FROM dashboard_oidc_logins WHERE created_us < ?", use(stale), now;
    s << "INSERT INTO dashboard_oidc_logins (state_hash, nonce, verifier, next_url, created_us) "
         "VALUES (?, ?, ?, ?, ?)",
        use(hash), use(n), use(ver), use(to), use(at), now;
  });
  Page p = Site::redirect(url);
  // Binds the sign-in to this browser: a callback carrying another browser's state fails.
  p.cookies.push_back(site_.cookie(kOidcCookie, state, site_.prefix() + "/login", 600));
  return p;
}

Page SignIn::loginFailed(int status, const std::string& why) {
  Page p = site_.message(status, "Sign-in failed",
                         "<p class=\"error\" role=\"alert\">" + escape(why) +
                             "</p><a class=\"button\" href=\"" + escape(site_.prefix()) +
                             "/login\">Try again</a>");
  p.cookies.push_back(site_.cookie(kOidcCookie, "", site_.prefix() + "/login", 0));
  return p;
}

Page SignIn::loginCallback(sdk::Request& r, Visitor&) {
  if (!oidc_)
    return site_.message(404, "Not configured", "<p>No sign-in provider is configured.</p>");
  const std::string state = r.queryParam("state").value_or("");
  const std::string cookie_state = r.cookie(kOidcCookie).value_or("");
  if (state.empty() || state.size() > 200 || !sdk::constantTimeEquals(state, cookie_state)) {
    return loginFailed(400, "This sign-in was not started in this browser, or it expired.");
  }
  // Each sign-in is used once: take it out of the table before anything else.
  std::string nonce, verifier, next;
  Poco::Int64 created = 0;
  context_.database().transaction([&](Poco::Data::Session& s) {
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
    sdk::UserInfo user = site_.accounts().externalUser(
        oidc_->issuer(), claims.subject, claims.email, claims.name, claims.email_verified);
    Page p = signedIn(user, site_.safeNext(next));
    p.cookies.push_back(site_.cookie(kOidcCookie, "", site_.prefix() + "/login", 0));
    return p;
  } catch (const OidcError& e) {
    context_.logger().warning(std::string("OpenID Connect sign-in refused: ") + e.what());
    return loginFailed(401, e.what());
  } catch (const sdk::HttpError& e) {
    return loginFailed(e.status(), e.detail());
  }
}

Page SignIn::logout(sdk::Request& r, Visitor& v) {
  if (!site_.csrfOk(r, v)) return site_.csrfRefused();
  if (!v.session_token.empty()) site_.accounts().endSession(v.session_token);
  Page p = Site::redirect(site_.prefix() + "/login");
  p.cookies.push_back(site_.cookie(sdk::kSessionCookie, "", "/", 0));
  return p;
}

}  // namespace svc::plugins::dashboard
