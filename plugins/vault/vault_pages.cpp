#include "vault_pages.h"

#include <svc/sdk/vault.h>

namespace svc::plugins::vault {

namespace {

constexpr std::string_view kPlugin = "vault";

// libsodium.js and then `own`, as one script named `full` (`vault/<name>`).
sdk::DashboardScript withLibsodium(std::string_view full, std::string_view own) {
  sdk::DashboardScript script;
  script.plugin = std::string(kPlugin);
  script.name = std::string(full.substr(kPlugin.size() + 1));
  for (std::string_view part : {web::libsodiumSumo(), web::libsodiumWrappers(), own}) {
    script.body.append(part.data(), part.size());
    script.body += '\n';
  }
  // Argon2id at 64 MiB takes about a second in WebAssembly and over half a minute in
  // libsodium.js's JavaScript fallback, which is what a page without 'wasm-unsafe-eval' gets.
  script.webassembly = true;
  return script;
}

}  // namespace

sdk::DashboardScript dashboardScript() {
  return withLibsodium(sdk::kVaultDashboardScript, web::vaultScript());
}

sdk::DashboardScript workerScript() {
  sdk::DashboardScript script = withLibsodium(sdk::kVaultWorkerScript, web::workerScript());
  script.worker = true;
  return script;
}

sdk::DashboardPage dashboardPage() {
  sdk::DashboardPage page;
  page.path = "/vault";
  page.title = page.nav_label = "Vault";
  page.nav_order = 150;  // after Identities
  page.scripts = {sdk::kVaultDashboardScript, sdk::kVaultWorkerScript};
  page.script = "svcVault.vaultPage(svc);";
  return page;
}

}  // namespace svc::plugins::vault
