// The loader against deliberately broken plugins (built in tests/plugins).
#include "plugin_host.h"

#include <gtest/gtest.h>

namespace svc::kernel {
namespace {

std::string fixture(const std::string& name) {
  return std::string(SVC_TEST_PLUGIN_DIR) + "/svc_plugin_" + name + ".so";
}

std::string kernelVersion() {
  return std::to_string(SVC_SDK_VERSION_MAJOR) + "." + std::to_string(SVC_SDK_VERSION_MINOR);
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
  EXPECT_NE(why.find("kernel needs SDK " + kernelVersion()), std::string::npos) << why;
}

// Each refusal is one line: the plugin, the cause, its file, what it was built with (version and
// signature) and what the kernel needs.
void expectHandshakeRefusal(const std::string& why, const std::string& name,
                            const std::string& cause, const std::string& built_with) {
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  EXPECT_EQ(why.rfind("plugin '" + name + "': " + cause, 0), 0u) << why;
  EXPECT_NE(why.find(fixture(name) + " was built with " + built_with), std::string::npos) << why;
  EXPECT_NE(why.find("this kernel needs SDK " + kernelVersion() + " (" +
                     sdk::kernelAbi().signature + ")"),
            std::string::npos)
      << why;
}

TEST(PluginLoader, RefusesAPluginBuiltForANewerMinorVersion) {
  expectHandshakeRefusal(
      loadError("newerminor"), "newerminor", "SDK minor version mismatch (built for a newer SDK",
      "SDK " + std::to_string(SVC_SDK_VERSION_MAJOR) + "." +
          std::to_string(SVC_SDK_VERSION_MINOR + 1) + " (" + sdk::kernelAbi().signature + ")");
}

TEST(PluginLoader, RefusesAPluginBuiltForAnOlderMinorVersion) {
  // alpha is built for this SDK; a kernel one minor version ahead must refuse it.
  sdk::AbiInfo ahead = sdk::kernelAbi();
  ahead.sdk_minor += 1;
  std::string why;
  try {
    loadPluginFileAgainstForTest(fixture("alpha"), "alpha", ahead);
  } catch (const PluginError& e) {
    why = e.what();
  }
  EXPECT_EQ(why.rfind("plugin 'alpha': SDK minor version mismatch (built for an older SDK", 0), 0u)
      << why;
  EXPECT_NE(why.find(fixture("alpha") + " was built with SDK " + kernelVersion() + " ("),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("this kernel needs SDK " + std::to_string(ahead.sdk_major) + "." +
                     std::to_string(ahead.sdk_minor)),
            std::string::npos)
      << why;
}

TEST(PluginLoader, RefusesAPluginWhoseBuildSignatureDiffers) {
  std::string signature = sdk::kernelAbi().signature;
  signature.replace(signature.find("debug=0"), 7, "debug=1");
  expectHandshakeRefusal(loadError("debugstdlib"), "debugstdlib",
                         "build signature mismatch (differs in debug)",
                         "SDK " + kernelVersion() + " (" + signature + ")");
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

// A plugin that declares the keys it is given, for the checks of declared keys.
class Declaring : public sdk::Plugin {
 public:
  Declaring(std::string name, std::vector<std::string> keys) {
    info_.name = std::move(name);
    for (auto& k : keys) info_.config.push_back({k, "", "a key", false});
  }
  const sdk::PluginInfo& info() const override { return info_; }
  void configure(sdk::PluginContext&) override {}
  std::vector<sdk::Migration> migrations() const override { return {}; }
  void registerRoutes(sdk::RouteRegistry&) override {}
  void registerServices(sdk::ServiceRegistry&) override {}
  void start() override {}
  void stop() override {}

 private:
  sdk::PluginInfo info_;
};

std::string keysError(std::vector<std::pair<std::string, std::vector<std::string>>> plugins) {
  std::vector<std::unique_ptr<LoadedPlugin>> loaded;
  for (auto& [name, keys] : plugins) {
    loaded.push_back(adoptPlugin(std::make_unique<Declaring>(name, keys)));
  }
  try {
    checkDeclaredKeys(loaded);
  } catch (const PluginError& e) {
    return e.what();
  }
  return "";
}

TEST(DeclaredKeys, APluginCannotDeclareItsWayToAnotherComponentsKeys) {
  EXPECT_EQ(keysError({{"notes", {"notes.dir"}}, {"dash", {"auth.oidc.issuer"}}}), "");
  EXPECT_NE(keysError({{"notes", {"admin.token"}}}).find("'admin.token', a key of svcd's own"),
            std::string::npos);
  EXPECT_NE(keysError({{"notes", {"db.other"}}}).find("a key of svcd's own"), std::string::npos);
  EXPECT_NE(keysError({{"admin", {"admin.x"}}}).find("namespace of svcd's own keys"),
            std::string::npos);
  // Declaring another plugin's key (its relay password, say) would make it readable: refused.
  std::string twice =
      keysError({{"mail", {"mail.relay.password"}}, {"notes", {"mail.relay.password"}}});
  EXPECT_NE(twice.find("which plugin 'mail' declares too"), std::string::npos) << twice;
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
