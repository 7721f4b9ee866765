// The loader against deliberately broken plugins (built in tests/plugins).
#include "plugin_host.h"

#include <gtest/gtest.h>

namespace svc::kernel {
namespace {

std::string fixture(const std::string& name) {
  return std::string(SVC_TEST_PLUGIN_DIR) + "/svc_plugin_" + name + ".so";
}

std::string loadError(const std::string& name) {
  try {
    loadPluginFile(fixture(name), name);
  } catch (const PluginError& e) {
    return e.what();
  }
  return "";
}

TEST(PluginLoader, LoadsAGoodPluginAndReadsItsInfo) {
  auto p = loadPluginFile(fixture("alpha"), "alpha");
  EXPECT_EQ(p->name, "alpha");
  EXPECT_EQ(p->plugin->info().version, "0.0.1");
}

TEST(PluginLoader, RefusesAMissingFileNamingIt) {
  std::string why = loadError("doesnotexist");
  EXPECT_NE(why.find("plugin 'doesnotexist'"), std::string::npos) << why;
  EXPECT_NE(why.find("not found"), std::string::npos) << why;
}

TEST(PluginLoader, RefusesAWrongAbiNamingBothSides) {
  std::string why = loadError("wrongabi");
  EXPECT_NE(why.find("plugin 'wrongabi'"), std::string::npos) << why;
  EXPECT_NE(why.find("SDK 999.0"), std::string::npos) << why;
  EXPECT_NE(why.find("kernel provides SDK 1."), std::string::npos) << why;
}

TEST(PluginLoader, RefusesAMissingFactoryExport) {
  std::string why = loadError("nocreate");
  EXPECT_NE(why.find("missing export svc_plugin_create"), std::string::npos) << why;
}

TEST(PluginLoader, RefusesAFileThatIsNotALibrary) {
  std::string why;
  try {
    loadPluginFile("/etc/hostname", "hostname");
  } catch (const PluginError& e) {
    why = e.what();
  }
  EXPECT_NE(why.find("cannot load"), std::string::npos) << why;
}

TEST(PluginLoader, RefusesAFileHoldingAnotherName) {
  std::string why;
  try {
    loadPluginFile(fixture("alphacopy"), "alphacopy");
  } catch (const PluginError& e) {
    why = e.what();
  }
  EXPECT_NE(why.find("holds plugin 'alpha'"), std::string::npos) << why;
}

std::vector<std::unique_ptr<LoadedPlugin>> loadAll(std::vector<std::string> names) {
  std::vector<std::unique_ptr<LoadedPlugin>> out;
  for (auto& n : names) out.push_back(loadPluginFile(fixture(n), n));
  return out;
}

TEST(DependencyOrder, DependenciesComeFirst) {
  auto plugins = loadAll({"beta", "alpha"});
  orderByDependency(plugins);
  EXPECT_EQ(plugins[0]->name, "alpha");
  EXPECT_EQ(plugins[1]->name, "beta");
}

TEST(DependencyOrder, MissingDependencyIsNamed) {
  auto plugins = loadAll({"beta"});
  try {
    orderByDependency(plugins);
    FAIL() << "expected a PluginError";
  } catch (const PluginError& e) {
    EXPECT_EQ(std::string(e.what()),
              "plugin 'beta': requires plugin 'alpha', which is not enabled");
  }
}

TEST(DependencyOrder, CycleIsNamed) {
  auto plugins = loadAll({"cyclea", "cycleb"});
  try {
    orderByDependency(plugins);
    FAIL() << "expected a PluginError";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("dependency cycle: cyclea -> cycleb -> cyclea"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace svc::kernel
