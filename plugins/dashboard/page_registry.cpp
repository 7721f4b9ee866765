#include "page_registry.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <stdexcept>
#include <tuple>

namespace svc::plugins::dashboard {

namespace {

bool isParam(const std::string& segment) {
  return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

std::string paramName(const std::string& segment) {
  return segment.substr(1, segment.size() - 2);
}

bool validName(const std::string& name) {
  if (name.empty() || name.size() > 40 || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Static text a browser sends as it is: no encoding, nothing relative, nothing a query starts.
bool validStatic(const std::string& segment) {
  if (segment == "." || segment == "..") return false;
  return std::all_of(segment.begin(), segment.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~';
  });
}

// Splits and checks a page path. @throws std::invalid_argument naming what is wrong.
std::vector<std::string> parsePath(const std::string& path) {
  auto refuse = [&](const std::string& why) {
    throw std::invalid_argument("dashboard page path '" + path + "': " + why);
  };
  if (path.size() < 2 || path.front() != '/') refuse("must start with '/' and name something");
  std::vector<std::string> segments;
  std::set<std::string> names;
  std::size_t start = 1;
  while (true) {
    const std::size_t slash = path.find('/', start);
    std::string segment = path.substr(start, slash == std::string::npos ? slash : slash - start);
    if (segment.empty()) refuse("has an empty segment");
    if (isParam(segment)) {
      const std::string name = paramName(segment);
      if (!validName(name))
        refuse("parameter {" + name + "} must be lower-case letters, digits, _");
      if (!names.insert(name).second) refuse("names {" + name + "} twice");
    } else if (!validStatic(segment)) {
      refuse("segment '" + segment + "' must be letters, digits, '-', '_', '.' or '~'");
    }
    segments.push_back(std::move(segment));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (segments.size() > PageRegistry::kMaxSegments) refuse("has more than eight segments");
  if (isParam(segments.front())) refuse("must start with a static segment");
  return segments;
}

// Two patterns match the same paths when they agree segment by segment, parameter names aside.
bool sameShape(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (isParam(a[i]) != isParam(b[i])) return false;
    if (!isParam(a[i]) && a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

PageRegistry::PageRegistry(std::vector<std::string> reserved) : reserved_(std::move(reserved)) {}

void PageRegistry::add(sdk::DashboardPage page) {
  std::vector<std::string> segments = parsePath(page.path);
  const bool has_params = std::any_of(segments.begin(), segments.end(), isParam);
  if (std::find(reserved_.begin(), reserved_.end(), segments.front()) != reserved_.end()) {
    throw std::invalid_argument("dashboard page path '" + page.path + "': /" + segments.front() +
                                " is the dashboard's own");
  }
  if (page.title.empty()) {
    throw std::invalid_argument("dashboard page '" + page.path + "' has no title");
  }
  if (has_params && !page.nav_label.empty()) {
    throw std::invalid_argument("dashboard page '" + page.path +
                                "' has parameters, so it cannot be in the navigation");
  }
  // The script goes inside a <script> element: it must not be able to close it.
  if (Poco::toLower(page.script).find("</script") != std::string::npos) {
    throw std::invalid_argument("dashboard page '" + page.path + "': script contains </script");
  }
  std::unique_lock lock(mutex_);
  for (const auto& e : entries_) {
    if (sameShape(e.segments, segments)) {
      throw std::invalid_argument("dashboard page '" + page.path + "' matches the same paths as '" +
                                  e.page->path + "', added before");
    }
  }
  entries_.push_back(
      {std::make_shared<const sdk::DashboardPage>(std::move(page)), std::move(segments)});
}

namespace {

// A plugin's name, as the kernel allows it in PluginInfo::name.
bool isPluginName(const std::string& name) {
  return !name.empty() && name.size() <= 64 && name[0] >= 'a' && name[0] <= 'z' &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
         });
}

}  // namespace

void PageRegistry::addScript(sdk::DashboardScript script) {
  const std::string& name = script.name;
  const bool named =
      name.size() >= 4 && name.size() <= 64 && name.compare(name.size() - 3, 3, ".js") == 0 &&
      name[0] != '.' && name[0] != '_' && name[0] != '-' &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
      });
  if (!named) {
    throw std::invalid_argument("dashboard script '" + name +
                                "': the name must be 1-64 of a-z 0-9 . _ -, starting with a "
                                "letter or digit and ending in .js");
  }
  if (!isPluginName(script.plugin)) {
    throw std::invalid_argument("dashboard script '" + name + "': plugin '" + script.plugin +
                                "' is not a plugin's name (a-z 0-9 _ -, starting with a letter)");
  }
  if (script.body.empty()) {
    throw std::invalid_argument("dashboard script '" + name + "' is empty");
  }
  auto s = std::make_shared<Script>();
  s->name = script.plugin + "/" + name;
  s->version = sdk::sha256Hex(script.body).substr(0, 16);
  s->body = std::move(script.body);
  s->webassembly = script.webassembly;
  s->worker = script.worker;
  std::unique_lock lock(mutex_);
  if (!scripts_.emplace(s->name, s).second) {
    throw std::invalid_argument("dashboard script '" + s->name + "' was added before");
  }
}

std::shared_ptr<const PageRegistry::Script> PageRegistry::script(const std::string& name) const {
  std::shared_lock lock(mutex_);
  auto it = scripts_.find(name);
  return it == scripts_.end() ? nullptr : it->second;
}

std::optional<PageRegistry::Match> PageRegistry::match(
    const std::vector<std::string>& segments) const {
  std::shared_lock lock(mutex_);
  const Entry* best = nullptr;
  for (const auto& e : entries_) {
    if (e.segments.size() != segments.size()) continue;
    bool fits = true;
    for (std::size_t i = 0; fits && i < segments.size(); ++i) {
      fits = isParam(e.segments[i]) || e.segments[i] == segments[i];
    }
    if (!fits) continue;
    // The more specific pattern wins: the first position where they differ is static in it.
    if (best) {
      for (std::size_t i = 0; i < segments.size(); ++i) {
        if (isParam(best->segments[i]) != isParam(e.segments[i])) {
          if (isParam(best->segments[i])) best = &e;
          break;
        }
      }
    } else {
      best = &e;
    }
  }
  if (!best) return std::nullopt;
  Match m;
  m.page = best->page;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    if (isParam(best->segments[i])) m.params[paramName(best->segments[i])] = segments[i];
  }
  return m;
}

std::vector<std::shared_ptr<const sdk::DashboardPage>> PageRegistry::navigation() const {
  std::vector<std::shared_ptr<const sdk::DashboardPage>> out;
  {
    std::shared_lock lock(mutex_);
    for (const auto& e : entries_) {
      if (!e.page->nav_label.empty()) out.push_back(e.page);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a->nav_order, a->nav_label, a->path) <
           std::tie(b->nav_order, b->nav_label, b->path);
  });
  return out;
}

std::vector<PageRegistry::Link> PageRegistry::links() const {
  std::vector<std::pair<std::shared_ptr<const sdk::DashboardPage>, std::string>> found;
  {
    std::shared_lock lock(mutex_);
    for (const auto& e : entries_) {
      std::vector<std::string> params;
      for (const auto& s : e.segments) {
        if (isParam(s)) params.push_back(paramName(s));
      }
      if (params.size() == 1) found.emplace_back(e.page, params.front());
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first->nav_order, a.first->title, a.first->path) <
           std::tie(b.first->nav_order, b.first->title, b.first->path);
  });
  std::vector<Link> out;
  for (const auto& [page, param] : found) out.push_back({page->path, param, page->title});
  return out;
}

}  // namespace svc::plugins::dashboard
