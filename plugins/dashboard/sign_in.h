// Signing in and out: the sign-in page, local passwords (rate-limited failures), OpenID Connect
// (state bound to the browser by a cookie, kept hashed in dashboard_oidc_logins, used once).
#pragma once

#include "oidc.h"
#include "site.h"

#include <svc/sdk/plugin.h>
#include <svc/sdk/rate_limit.h>

#include <memory>
#include <string>

namespace svc::plugins::dashboard {

class SignIn {
 public:
  /// @param site the dashboard. @param context the plugin's context (configuration, database,
  /// logger). @throws std::runtime_error when the OpenID Connect settings are incomplete.
  SignIn(Site& site, sdk::PluginContext& context);

  /// @return the migration of dashboard_oidc_logins.
  static sdk::Migration migration();
  /// Registers /login, /login/oidc, /login/callback and /logout.
  void registerIn(sdk::RouteRegistry& routes);

 private:
  Page loginForm(const Visitor& v, const std::string& next, const std::string& error, int status,
                 const std::string& email = "");
  Page loginPage(sdk::Request& r, Visitor& v);
  Page signedIn(const sdk::UserInfo& user, const std::string& next);
  Page loginLocal(sdk::Request& r, Visitor& v);
  Page loginOidc(sdk::Request& r, Visitor& v);
  Page loginFailed(int status, const std::string& why);
  Page loginCallback(sdk::Request& r, Visitor& v);
  Page logout(sdk::Request& r, Visitor& v);

  Site& site_;
  sdk::PluginContext& context_;
  std::unique_ptr<OidcClient> oidc_;
  std::string provider_name_;
  std::unique_ptr<sdk::RateLimiter> sign_in_failures_;
};

}  // namespace svc::plugins::dashboard
