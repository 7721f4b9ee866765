// The signed-in person's own pages: home (with the navigation's pages as buttons) and the
// account's keys (create a management key, shown once; revoke).
#pragma once

#include "site.h"

namespace svc::plugins::dashboard {

class AccountPages {
 public:
  /// @param site the dashboard. @param pages the contributed pages, for home's buttons.
  AccountPages(Site& site, const PageRegistry& pages) : site_(site), pages_(pages) {}
  /// Registers /, /keys and /keys/{id}/revoke.
  void registerIn(sdk::RouteRegistry& routes);

 private:
  Page home(sdk::Request& r, Visitor& v);
  Page keysPage(sdk::Request& r, Visitor& v);
  Page keysCreate(sdk::Request& r, Visitor& v);
  Page keysRevoke(sdk::Request& r, Visitor& v);

  Site& site_;
  const PageRegistry& pages_;
};

}  // namespace svc::plugins::dashboard
