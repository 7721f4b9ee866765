// Serves the pages other plugins add (PageRegistry): the dashboard routes every GET below its
// prefix that none of its own routes takes (up to PageRegistry::kMaxSegments segments) here,
// because plugins add pages in start(), after routes are registered. A path no page matches is
// answered 404 exactly as the kernel answers a path no route matches. It also serves the shared
// scripts plugins add (`prefix/scripts/{plugin}/{name}`), which pages load before their own or
// start as Web Workers.
#pragma once

#include "page_registry.h"
#include "site.h"

#include <memory>

namespace svc::plugins::dashboard {

class ContributedPages {
 public:
  ContributedPages(Site& site, std::shared_ptr<const PageRegistry> pages)
      : site_(site), pages_(std::move(pages)) {}
  /// The first path segment of the shared scripts, which pages may not take.
  static constexpr const char* kScriptsSegment = "scripts";

  /// Registers GET prefix/{s1}, prefix/{s1}/{s2}, ... (static routes win in the kernel's router)
  /// and GET prefix/scripts/{plugin}/{name}.
  void registerIn(sdk::RouteRegistry& routes);

 private:
  Page serve(sdk::Request& r, Visitor& v);
  sdk::Response script(sdk::Request& r) const;

  Site& site_;
  std::shared_ptr<const PageRegistry> pages_;
};

}  // namespace svc::plugins::dashboard
