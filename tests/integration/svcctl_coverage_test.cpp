// Every operation the server describes has a svcctl command (issue 19): a real svcd with every
// bundled plugin serves GET /api/schema/, `svcctl --json commands` lists what each command calls
// and what no command calls on purpose, and the two are held against each other. A plugin added
// later (its library in the bundled directory) is covered without editing this test.
#include "svcctl_run.h"

#include <Poco/File.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>
#include <Poco/String.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <vector>

namespace svc::testing {
namespace {

using Poco::JSON::Object;

// Every bundled plugin's name, from the libraries in the bundled directory.
std::vector<std::string> bundledPlugins() {
  std::vector<std::string> files, names;
  Poco::File(SVC_BUNDLED_PLUGIN_DIR).list(files);
  for (const auto& file : files) {
    const std::string prefix = "svc_plugin_", suffix = ".so";
    if (file.rfind(prefix, 0) != 0 || file.size() <= prefix.size() + suffix.size() ||
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    names.push_back(file.substr(prefix.size(), file.size() - prefix.size() - suffix.size()));
  }
  return names;
}

// An operation `METHOD /path/` as words: the method, then the path's segments (no trailing
// slash, as the description writes paths).
std::vector<std::string> words(const std::string& operation) {
  std::vector<std::string> out;
  std::istringstream in(operation);
  std::string method, path;
  in >> method >> path;
  out.push_back(Poco::toUpper(method));
  std::istringstream segments(path);
  for (std::string segment; std::getline(segments, segment, '/');) {
    if (!segment.empty()) out.push_back(segment);
  }
  return out;
}

bool isParameter(const std::string& segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

// Whether a command's operation is the described one: the same method and segments, a parameter
// written as the route writes it, or with the value the command gives it
// (`{action=greet}` for `{action}`). `*` as the method and a last `*` segment (exclusions
// only) match anything.
bool matches(const std::vector<std::string>& named, const std::vector<std::string>& described) {
  if (named[0] != "*" && named[0] != described[0]) return false;
  for (std::size_t i = 1; i < named.size(); ++i) {
    if (named[i] == "*" && i + 1 == named.size()) return described.size() >= i;
    if (i >= described.size()) return false;
    std::string segment = named[i];
    const auto eq = segment.find('=');
    if (isParameter(segment) && eq != std::string::npos) segment = segment.substr(0, eq) + "}";
    if (segment != described[i]) return false;
  }
  return named.size() == described.size();
}

// Operator routes are not in the API description; svcd's plugins list has them.
bool isOperator(const std::vector<std::string>& operation) {
  return operation.size() > 1 && (operation[1] == "admin" || operation[1] == "metrics");
}

TEST(SvcctlCoverage, EveryDescribedOperationHasACommandAndEveryCommandCallsOnesThatExist) {
  Svcd::Options options;
  options.plugins = bundledPlugins();
  ASSERT_FALSE(options.plugins.empty());
  Svcd svcd(options);
  ASSERT_TRUE(svcd.start()) << svcd.log();

  // What the server describes.
  auto schema = svcd.get("/api/schema/");
  ASSERT_EQ(schema.status, 200) << schema.body;
  std::map<std::string, std::vector<std::string>> described;  // "GET /api/x" -> words
  auto paths = schema.json()->getObject("paths");
  for (const auto& [path, item] : *paths) {
    for (const auto& [method, operation] : *item.extract<Object::Ptr>()) {
      const std::string upper = Poco::toUpper(method);
      if (upper != "GET" && upper != "POST" && upper != "PUT" && upper != "PATCH" &&
          upper != "DELETE") {
        continue;
      }
      described[upper + " " + path] = words(upper + " " + path);
    }
  }
  ASSERT_GT(described.size(), 20u);
  // The operator routes, which the description leaves out: the plugins' and the kernel's own.
  std::vector<std::vector<std::string>> operator_routes = {words("GET /metrics"),
                                                           words("GET /admin/plugins")};
  auto plugins = runSvcctl(svcd, "", "--json plugins", true);
  ASSERT_EQ(plugins.first, 0) << plugins.second;
  auto loaded = Poco::JSON::Parser().parse(plugins.second).extract<Object::Ptr>();
  for (std::size_t i = 0; i < loaded->getArray("plugins")->size(); ++i) {
    auto routes = loaded->getArray("plugins")->getObject(i)->getArray("routes");
    for (std::size_t r = 0; routes && r < routes->size(); ++r) {
      auto route = words(routes->getElement<std::string>(r));
      if (isOperator(route)) operator_routes.push_back(route);
    }
  }

  // What svcctl calls, with the plugins' commands from the same bundled directory.
  auto listed =
      runSvcctl(svcd, "", "--plugins-dir '" SVC_BUNDLED_PLUGIN_DIR "' --json commands", true);
  ASSERT_EQ(listed.first, 0) << listed.second;
  auto listing = Poco::JSON::Parser().parse(listed.second).extract<Object::Ptr>();
  std::set<std::string> covered;
  auto commands = listing->getArray("commands");
  ASSERT_GT(commands->size(), 20u);
  for (std::size_t i = 0; i < commands->size(); ++i) {
    auto command = commands->getObject(i);
    const std::string name = command->getValue<std::string>("command");
    auto operations = command->getArray("operations");
    // Only the listing itself calls nothing: a command that forgets to say what it calls fails.
    if (name != "commands") {
      EXPECT_GT(operations->size(), 0u) << "'svcctl " << name << "' declares no operation";
    }
    for (std::size_t o = 0; o < operations->size(); ++o) {
      const std::string operation = operations->getElement<std::string>(o);
      const auto named = words(operation);
      EXPECT_EQ(operation.find('?'), std::string::npos) << name << ": " << operation;
      bool exists = false;
      if (isOperator(named)) {
        exists = std::any_of(operator_routes.begin(), operator_routes.end(),
                             [&](const auto& route) { return matches(named, route); });
      }
      for (const auto& [key, route] : described) {
        if (matches(named, route)) {
          exists = true;
          covered.insert(key);
        }
      }
      EXPECT_TRUE(exists) << "'svcctl " << name << "' calls " << operation
                          << ", which this server does not have";
    }
  }

  // What no command calls on purpose: each entry has a reason and still names something.
  auto excluded = listing->getArray("excluded");
  for (std::size_t i = 0; i < excluded->size(); ++i) {
    auto entry = excluded->getObject(i);
    const auto named = words(entry->getValue<std::string>("operation"));
    EXPECT_FALSE(entry->getValue<std::string>("reason").empty());
    bool names_one = false;
    for (const auto& [key, route] : described) {
      if (!matches(named, route)) continue;
      names_one = true;
      EXPECT_EQ(covered.count(key), 0u) << key << " is excluded, yet a command calls it";
      covered.insert(key);
    }
    EXPECT_TRUE(names_one) << "the exclusion " << entry->getValue<std::string>("operation")
                           << " names no described operation";
  }
  for (const auto& [key, route] : described) {
    EXPECT_EQ(covered.count(key), 1u) << "no svcctl command calls " << key;
  }
}

}  // namespace
}  // namespace svc::testing
