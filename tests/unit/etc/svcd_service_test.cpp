// The systemd unit as CMake configures it (build/svcd.service, installed to lib/systemd/system).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

// @return each Name=value line of the unit's [Service] section, in order.
std::vector<std::pair<std::string, std::string>> serviceSettings() {
  std::ifstream in(SVC_TEST_SYSTEMD_UNIT);
  EXPECT_TRUE(in) << SVC_TEST_SYSTEMD_UNIT;
  std::vector<std::pair<std::string, std::string>> settings;
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line;
      continue;
    }
    auto eq = line.find('=');
    if (section == "[Service]" && eq != std::string::npos) {
      settings.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    }
  }
  return settings;
}

TEST(SystemdUnit, TheDynamicUserMayBindLowPortsAndHoldsNoOtherCapability) {
  std::multimap<std::string, std::string> found;
  for (auto& [name, value] : serviceSettings()) {
    if (name == "DynamicUser" || name.find("Capabilit") != std::string::npos) {
      found.emplace(name, value);
    }
  }
  const std::multimap<std::string, std::string> expected = {
      {"DynamicUser", "yes"},
      {"AmbientCapabilities", "CAP_NET_BIND_SERVICE"},
      {"CapabilityBoundingSet", "CAP_NET_BIND_SERVICE"}};
  EXPECT_EQ(found, expected);
}

}  // namespace
