// Path matching: a trie of path segments, static segments before `{param}` ones, so
// `/api/notes/search/` wins over `/api/notes/{id}/`. The trailing slash is optional.
#pragma once

#include <svc/sdk/routes.h>

#include <atomic>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace svc::kernel {

/// A registered route plus who registered it.
struct RouteStats;

struct RouteEntry {
  sdk::Route route;
  std::string plugin;
  mutable std::atomic<RouteStats*> stats{nullptr};  ///< set by the pipeline on first use
};

/// The outcome of a lookup.
struct RouteMatch {
  enum class Status { kFound, kNotFound, kMethodNotAllowed, kBadPath } status = Status::kNotFound;
  const RouteEntry* entry = nullptr;
  std::map<std::string, std::string> params;
  std::vector<std::string> allowed;  ///< For kMethodNotAllowed: the methods the path has.
  std::string problem;               ///< For kBadPath: what is wrong.
};

class Router {
 public:
  Router();
  ~Router();
  /// @throws std::invalid_argument for a malformed pattern or a duplicate method+pattern.
  void add(sdk::Route route, const std::string& plugin);
  /// @param method the request method. @param raw_path the path as sent (percent-encoded).
  RouteMatch match(std::string_view method, std::string_view raw_path) const;
  /// Every route, in registration order.
  const std::vector<std::unique_ptr<RouteEntry>>& routes() const { return entries_; }

  /// Splits a pattern or path into segments, dropping the leading and an optional trailing slash.
  /// @return false when the path does not start with '/' or has an empty segment.
  static bool split(std::string_view path, std::vector<std::string_view>& out);

 private:
  struct Node;
  std::unique_ptr<Node> root_;
  std::vector<std::unique_ptr<RouteEntry>> entries_;
};

}  // namespace svc::kernel
