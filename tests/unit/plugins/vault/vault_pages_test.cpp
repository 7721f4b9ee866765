// The vault's dashboard script and page: the built-in files are web/'s byte for byte (libsodium.js
// as vendored from npm; tests/browser checks those against the npm package), and the script is
// them in the order that lets the wrappers take hold of libsodium.
#include "vault_pages.h"

#include <svc/sdk/vault.h>

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

namespace svc::plugins::vault {
namespace {

std::string webFile(const std::string& name) {
  std::ifstream in(std::string(SVC_UNIT_TEST_DATA_DIR) + "/../../plugins/vault/web/" + name,
                   std::ios::binary);
  EXPECT_TRUE(in) << name;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(VaultPages, TheBuiltInFilesAreWebsByteForByte) {
  EXPECT_EQ(web::libsodiumSumo(), webFile("libsodium-sumo.js"));
  EXPECT_EQ(web::libsodiumWrappers(), webFile("libsodium-wrappers.js"));
  EXPECT_EQ(web::vaultScript(), webFile("vault.js"));
  EXPECT_EQ(web::workerScript(), webFile("vault-worker.js"));
  EXPECT_GT(web::libsodiumSumo().size(), 1000000u);
}

// The page's script holds no cryptography: libsodium (and WebAssembly) is the worker's alone.
TEST(VaultPages, ThePageScriptIsTheVaultsAloneWithoutLibsodium) {
  const sdk::DashboardScript script = dashboardScript();
  EXPECT_EQ(script.plugin + "/" + script.name, sdk::kVaultDashboardScript);
  EXPECT_EQ(script.plugin, "vault");
  EXPECT_FALSE(script.webassembly);
  EXPECT_FALSE(script.worker);
  EXPECT_EQ(script.body, webFile("vault.js") + "\n");
  for (const char* call : {" sodium.", "(sodium.", "sodium.ready", "sodium.crypto_"}) {
    EXPECT_EQ(web::vaultScript().find(call), std::string::npos) << call;
  }
}

TEST(VaultPages, TheWorkerIsLibsodiumThenItsWrappersThenTheWorkersOwn) {
  const sdk::DashboardScript script = workerScript();
  EXPECT_EQ(script.plugin + "/" + script.name, sdk::kVaultWorkerScript);
  EXPECT_TRUE(script.webassembly);
  EXPECT_TRUE(script.worker);
  EXPECT_EQ(script.body, webFile("libsodium-sumo.js") + "\n" + webFile("libsodium-wrappers.js") +
                             "\n" + webFile("vault-worker.js") + "\n");
}

TEST(VaultPages, TheVaultsScriptKeepsNothingAndWritesNoHtml) {
  const std::string vault = std::string(web::vaultScript()) + std::string(web::workerScript());
  for (const char* banned : {"innerHTML", "outerHTML", "localStorage.", "sessionStorage.",
                             "indexedDB", "document.cookie", "eval("}) {
    EXPECT_EQ(vault.find(banned), std::string::npos) << banned;
  }
  // The contract's derivation for a new vault: Argon2id, t 3, 64 MiB, p 1.
  EXPECT_NE(vault.find("{ alg: 'argon2id', t: 3, m: 65536, p: 1 }"), std::string::npos);
}

TEST(VaultPages, ThePageLoadsTheScriptAndIsInTheNavigation) {
  const sdk::DashboardPage page = dashboardPage();
  EXPECT_EQ(page.path, "/vault");
  EXPECT_EQ(page.nav_label, "Vault");
  EXPECT_EQ(page.scripts,
            (std::vector<std::string>{sdk::kVaultDashboardScript, sdk::kVaultWorkerScript}));
  EXPECT_NE(page.script.find("svcVault.vaultPage(svc)"), std::string::npos);
}

}  // namespace
}  // namespace svc::plugins::vault
