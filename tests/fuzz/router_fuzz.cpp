// Fuzzes the kernel's router: a fixed table shaped like the real one (static segments beside
// named parameters, several methods per path), matched against "METHOD path" from the input
// (method up to the first space, path after it).
//
// A match names the route that fits and parameters that are safe to use as they are: valid
// UTF-8, one segment (no slash), no control characters, not "." or "..". And the match is
// stable: re-encoding the bound parameters into the route's pattern finds the same route with
// the same parameters.
#include "fuzz_check.h"
#include "router.h"

#include <svc/sdk/util.h>

#include <algorithm>
#include <set>

using namespace svc;
using kernel::RouteMatch;

namespace {

const char* const kRoutes[][2] = {
    {"GET", "/api/health/"},
    {"GET", "/api/email/{id}/"},
    {"DELETE", "/api/email/{id}/"},
    {"GET", "/api/email/check-availability/"},
    {"POST", "/api/email-messages/{id}/reply/"},
    {"GET", "/api/things/special/"},
    {"GET", "/api/things/{id}/parts/"},
    {"PUT", "/api/things/{id}/parts/{part}/"},
    {"PATCH", "/api/identities/{identity}/contacts/{contact}/"},
    {"GET", "/api/identities/{identity}/"},
    {"GET", "/"},
};

kernel::Router* makeRouter() {
  auto* router = new kernel::Router;
  for (const auto& [method, pattern] : kRoutes) {
    sdk::Route r;
    r.method = method;
    r.pattern = pattern;
    r.handler = [](sdk::Request&) { return sdk::Response::noContent(); };
    router->add(std::move(r), "fuzz");
  }
  return router;
}

std::string percentEncodeAll(const std::string& value) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    out += '%';
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static kernel::Router* router = makeRouter();
  std::string_view in = fuzz::asView(data, size);
  std::size_t space = in.find(' ');
  std::string_view method = space == in.npos ? std::string_view("GET") : in.substr(0, space);
  std::string_view path = space == in.npos ? in : in.substr(space + 1);

  RouteMatch m = router->match(method, path);
  switch (m.status) {
    case RouteMatch::Status::kNotFound:
      FUZZ_CHECK(!m.entry && m.params.empty(), "a miss that names a route");
      break;
    case RouteMatch::Status::kBadPath:
      FUZZ_CHECK(!m.problem.empty() && !m.entry, "a bad path without a problem");
      FUZZ_CHECK(sdk::isValidUtf8(m.problem), "the problem echoes invalid UTF-8");
      break;
    case RouteMatch::Status::kMethodNotAllowed:
      FUZZ_CHECK(!m.allowed.empty(), "405 without an Allow list");
      FUZZ_CHECK(std::find(m.allowed.begin(), m.allowed.end(), method) == m.allowed.end(),
                 "405 for a method the path allows");
      FUZZ_CHECK(std::is_sorted(m.allowed.begin(), m.allowed.end()), "Allow list out of order");
      break;
    case RouteMatch::Status::kFound: {
      FUZZ_CHECK(m.entry != nullptr, "found without an entry");
      FUZZ_CHECK(m.entry->route.method == method, "found a route of another method");
      std::vector<std::string_view> pattern, segs;
      FUZZ_CHECK(kernel::Router::split(m.entry->route.pattern, pattern), "pattern split");
      FUZZ_CHECK(kernel::Router::split(path, segs), "a matched path that does not split");
      FUZZ_CHECK(pattern.size() == segs.size(), "matched a path of another depth");
      std::set<std::string> names;
      std::string rebuilt;
      for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i].front() == '{') {
          std::string name(pattern[i].substr(1, pattern[i].size() - 2));
          names.insert(name);
          rebuilt += "/" + percentEncodeAll(m.params.at(name));
        } else {
          FUZZ_CHECK(pattern[i] == segs[i], "a static segment matched other text");
          rebuilt += "/" + std::string(pattern[i]);
        }
      }
      if (rebuilt.empty()) rebuilt = "/";
      FUZZ_CHECK(names.size() == m.params.size(), "parameters the pattern does not name");
      for (const auto& [name, value] : m.params) {
        FUZZ_CHECK(sdk::isValidUtf8(value), "a parameter that is not UTF-8");
        FUZZ_CHECK(!value.empty(), "an empty parameter");
        FUZZ_CHECK(value != "." && value != "..", "a relative parameter");
        for (unsigned char c : value) {
          FUZZ_CHECK(c != '/' && c != '\\', "a parameter with a slash");
          FUZZ_CHECK(c >= 0x20 && c != 0x7f, "a parameter with a control character");
        }
      }
      // Fully encoded parameters cannot be mistaken for static segments: same route, same values.
      RouteMatch again = router->match(method, rebuilt);
      FUZZ_CHECK(again.status == RouteMatch::Status::kFound && again.entry == m.entry &&
                     again.params == m.params,
                 "re-encoded parameters matched differently");
      break;
    }
  }
  return 0;
}
