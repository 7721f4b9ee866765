// What every dashboard page shares: who is looking (the session or, before sign-in, a CSRF
// cookie), the page a handler answers before the layout is applied, and how it becomes a response
// (layout, navigation, CSP with a fresh nonce, cookies, no caching).
#pragma once

#include "page_registry.h"

#include <svc/sdk/accounts.h>
#include <svc/sdk/routes.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::dashboard {

/// Who is looking at the page.
struct Visitor {
  std::optional<sdk::UserInfo> user;
  std::string session_token;
  std::string csrf;  ///< The token forms must carry.
  bool new_csrf_cookie = false;
};

/// A handler's answer before the layout and headers are applied.
struct Page {
  int status = 200;
  std::string title;
  std::string content;   ///< HTML; empty with a redirect.
  std::string location;  ///< 303 to here when set.
  std::vector<std::string> cookies;
  std::string script;                    ///< A contributed page's script, or empty.
  std::vector<std::string> script_urls;  ///< Shared scripts it loads first (same origin).
  bool webassembly = false;              ///< One of them compiles WebAssembly: the CSP allows it.
  bool workers = false;                  ///< It may start same-origin worker scripts.
};

/// @return a form field of a form-encoded or JSON body, or "".
std::string formField(const sdk::Request& r, const std::string& name);

/// The dashboard's address and the helpers its pages share.
class Site {
 public:
  using Handler = std::function<Page(sdk::Request&, Visitor&)>;

  /// @param dashboard_url dashboard.url (http or https). @param pages the contributed pages, for
  /// the navigation. @throws std::runtime_error when the URL is not http(s).
  Site(const std::string& dashboard_url, std::shared_ptr<PageRegistry> pages);

  /// Sets the auth plugin's service (in start()); every handler needs it.
  void setAccounts(std::shared_ptr<sdk::AccountService> accounts) {
    accounts_ = std::move(accounts);
  }
  sdk::AccountService& accounts() const { return *accounts_; }

  const std::string& url() const { return url_; }        ///< Without a trailing slash.
  const std::string& prefix() const { return prefix_; }  ///< Its path, `/dashboard`.

  /// Registers a dashboard route: prefix + path, public (pages check the session themselves).
  void add(sdk::RouteRegistry& routes, const char* method, const std::string& path,
           const char* summary, Handler handler);

  Visitor visitor(const sdk::Request& r) const;
  sdk::Response render(const Visitor& v, Page p) const;

  std::string cookie(const std::string& name, const std::string& value, const std::string& path,
                     int max_age) const;
  static Page redirect(std::string location);
  Page message(int status, const std::string& title, const std::string& html) const;
  /// @return next when it is a plain path inside the dashboard, else the home page.
  std::string safeNext(const std::string& next) const;
  /// @param here the path to come back to. @return a redirect to the sign-in page.
  Page signInFirst(const std::string& here) const;
  /// Forms must carry the page's CSRF token; a cross-site Origin is refused outright.
  bool csrfOk(const sdk::Request& r, const Visitor& v) const;
  Page csrfRefused() const;
  Page noAccount() const;
  static std::string hidden(const std::string& name, const std::string& value);

 private:
  std::string url_, prefix_, origin_;
  bool secure_ = false;
  std::shared_ptr<PageRegistry> pages_;
  std::shared_ptr<sdk::AccountService> accounts_;
};

}  // namespace svc::plugins::dashboard
