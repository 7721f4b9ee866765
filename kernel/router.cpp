#include "router.h"

#include <svc/sdk/util.h>

#include <stdexcept>

namespace svc::kernel {

struct Router::Node {
  std::map<std::string, std::unique_ptr<Node>, std::less<>> statics;
  std::unique_ptr<Node> param;
  std::string param_name;
  std::map<std::string, const RouteEntry*> methods;
};

Router::Router() : root_(std::make_unique<Node>()) {}
Router::~Router() = default;

bool Router::split(std::string_view path, std::vector<std::string_view>& out) {
  out.clear();
  if (path.empty() || path.front() != '/') return false;
  path.remove_prefix(1);
  if (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) return true;
  std::size_t start = 0;
  while (true) {
    std::size_t slash = path.find('/', start);
    std::string_view seg =
        path.substr(start, slash == std::string_view::npos ? path.npos : slash - start);
    if (seg.empty()) return false;
    out.push_back(seg);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return true;
}

void Router::add(sdk::Route route, const std::string& plugin) {
  static const char* kMethods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
  bool known = false;
  for (const char* m : kMethods) known = known || route.method == m;
  if (!known) throw std::invalid_argument("unsupported method '" + route.method + "'");
  if (!route.handler) throw std::invalid_argument("route " + route.pattern + " has no handler");
  std::vector<std::string_view> segs;
  if (!split(route.pattern, segs)) {
    throw std::invalid_argument("malformed route pattern '" + route.pattern + "'");
  }
  Node* node = root_.get();
  for (std::string_view seg : segs) {
    if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}') {
      std::string name(seg.substr(1, seg.size() - 2));
      if (name.empty()) throw std::invalid_argument("empty parameter in '" + route.pattern + "'");
      if (!node->param) {
        node->param = std::make_unique<Node>();
        node->param_name = name;
      } else if (node->param_name != name) {
        throw std::invalid_argument("route '" + route.pattern + "' names parameter {" + name +
                                    "} where another route names {" + node->param_name + "}");
      }
      node = node->param.get();
    } else {
      if (seg.find_first_of("{}") != std::string_view::npos) {
        throw std::invalid_argument("malformed route pattern '" + route.pattern + "'");
      }
      auto it = node->statics.find(seg);
      if (it == node->statics.end()) {
        it = node->statics.emplace(std::string(seg), std::make_unique<Node>()).first;
      }
      node = it->second.get();
    }
  }
  if (node->methods.count(route.method)) {
    throw std::invalid_argument("route " + route.method + " " + route.pattern +
                                " is registered twice (second time by plugin '" + plugin + "')");
  }
  auto entry = std::make_unique<RouteEntry>();
  entry->route = std::move(route);
  entry->plugin = plugin;
  entries_.push_back(std::move(entry));
  node->methods[entries_.back()->route.method] = entries_.back().get();
}

namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes one path segment. A parameter must stay one segment and name nothing relative:
// an encoded slash, a NUL or other control character, invalid UTF-8, "." or ".." are refused.
bool decodeSegment(std::string_view in, std::string& out, std::string& problem) {
  out.clear();
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) {
        problem = "truncated percent-encoding";
        return false;
      }
      int hi = hexValue(in[i + 1]);
      int lo = hexValue(in[i + 2]);
      if (hi < 0 || lo < 0) {
        problem = "malformed percent-encoding";
        return false;
      }
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    }
    if (c == '/' || c == '\\') {
      problem = "a path segment must not contain a slash";
      return false;
    }
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      problem = "a path segment must not contain control characters";
      return false;
    }
    out.push_back(c);
  }
  if (out == "." || out == "..") {
    problem = "relative path segments are not allowed";
    return false;
  }
  if (!sdk::isValidUtf8(out)) {
    problem = "a path segment must be valid UTF-8";
    return false;
  }
  return true;
}

}  // namespace

RouteMatch Router::match(std::string_view method, std::string_view raw_path) const {
  RouteMatch result;
  std::vector<std::string_view> segs;
  if (!split(raw_path, segs)) return result;  // "//x" and the like name nothing: 404.

  // Depth-first: static child first, then the parameter child, so the most specific route wins
  // and a parameter still matches where a static prefix dead-ends.
  std::vector<std::pair<std::string, std::string_view>> bound;  // (param name, raw value)
  const Node* found = nullptr;
  std::vector<std::pair<std::string, std::string_view>> found_bound;

  struct Walker {
    const std::vector<std::string_view>& segs;
    std::vector<std::pair<std::string, std::string_view>>& bound;
    const Node*& found;
    std::vector<std::pair<std::string, std::string_view>>& found_bound;
    std::string_view method;
    bool walk(const Node* node, std::size_t depth) {
      if (depth == segs.size()) {
        if (node->methods.empty()) return false;
        // Prefer a node that has the method; otherwise remember the first that exists (405).
        if (!found || (!found->methods.count(std::string(method)) &&
                       node->methods.count(std::string(method)))) {
          found = node;
          found_bound = bound;
        }
        return node->methods.count(std::string(method)) > 0;
      }
      auto it = node->statics.find(segs[depth]);
      if (it != node->statics.end()) {
        const Node* before = found;
        if (walk(it->second.get(), depth + 1)) return true;
        // A route names this path with a static segment here but not for this method: 405 with
        // its methods, rather than a parameter route taking the segment as a value.
        if (found != before) return false;
      }
      if (node->param) {
        bound.emplace_back(node->param_name, segs[depth]);
        bool ok = walk(node->param.get(), depth + 1);
        if (ok) return true;
        bound.pop_back();
      }
      return false;
    }
  } walker{segs, bound, found, found_bound, method};
  walker.walk(root_.get(), 0);

  if (!found) return result;
  for (auto& [name, raw] : found_bound) {
    std::string value, problem;
    if (!decodeSegment(raw, value, problem)) {
      result.status = RouteMatch::Status::kBadPath;
      result.problem = name + ": " + problem;
      return result;
    }
    result.params[name] = std::move(value);
  }
  auto m = found->methods.find(std::string(method));
  if (m == found->methods.end()) {
    result.status = RouteMatch::Status::kMethodNotAllowed;
    for (auto& [name, entry] : found->methods) result.allowed.push_back(name);
    return result;
  }
  result.status = RouteMatch::Status::kFound;
  result.entry = m->second;
  return result;
}

}  // namespace svc::kernel
