// The pages other plugins add to the dashboard (sdk/include/svc/sdk/dashboard.h): which page a
// path is, and what the navigation lists.
#pragma once

#include <svc/sdk/dashboard.h>

#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

namespace svc::plugins::dashboard {

/// The registry behind kDashboardPagesService. Pages are added in start() and read by request
/// threads, so every method takes the lock.
class PageRegistry : public sdk::DashboardPages {
 public:
  /// The deepest page path: the dashboard routes this many segments to the registry.
  static constexpr std::size_t kMaxSegments = 8;

  /// @param reserved the first path segments the dashboard's own routes use (`login`, ...).
  explicit PageRegistry(std::vector<std::string> reserved);

  void add(sdk::DashboardPage page) override;
  void addScript(sdk::DashboardScript script) override;

  /// A shared script as it is served.
  struct Script {
    std::string name;  ///< `{plugin}/{name}`: what pages name and its path below `scripts/`.
    std::string body;
    std::string version;  ///< A hash of the body: its URL's `?v=`, so a browser may keep it.
    bool webassembly = false;
    bool worker = false;  ///< Started by pages as a Web Worker, not loaded into them.
  };
  /// @param name `{plugin}/{name}`. @return the script added under it, or null.
  std::shared_ptr<const Script> script(const std::string& name) const;

  /// A page and the parameters its path bound.
  struct Match {
    std::shared_ptr<const sdk::DashboardPage> page;
    std::map<std::string, std::string> params;
  };
  /// @param segments a path below the prefix, split and decoded. @return the page it is, static
  /// segments winning over parameters position by position; nullopt when none.
  std::optional<Match> match(const std::vector<std::string>& segments) const;

  /// @return the pages with a navigation entry, by nav_order, then label, then path.
  std::vector<std::shared_ptr<const sdk::DashboardPage>> navigation() const;

  /// A page whose only parameter is `param`, for svc.links().
  struct Link {
    std::string path;   ///< Its pattern (`/identities/{identity}/inbox`).
    std::string param;  ///< Its parameter's name.
    std::string label;  ///< Its title.
  };
  /// @return every such page, by nav_order, then title, then path.
  std::vector<Link> links() const;

 private:
  struct Entry {
    std::shared_ptr<const sdk::DashboardPage> page;
    std::vector<std::string> segments;  ///< `{name}` for a parameter.
  };
  std::vector<std::string> reserved_;
  mutable std::shared_mutex mutex_;
  std::vector<Entry> entries_;
  std::map<std::string, std::shared_ptr<const Script>> scripts_;
};

}  // namespace svc::plugins::dashboard
