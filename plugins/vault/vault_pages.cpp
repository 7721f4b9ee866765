#include "vault_pages.h"

#include <svc/sdk/vault.h>

namespace svc::plugins::vault {

sdk::DashboardScript dashboardScript() {
  sdk::DashboardScript script;
  script.name = sdk::kVaultDashboardScript;
  for (std::string_view part :
       {web::libsodiumSumo(), web::libsodiumWrappers(), web::vaultScript()}) {
    script.body.append(part.data(), part.size());
    script.body += '\n';
  }
  // Argon2id at 64 MiB takes about a second in WebAssembly and over half a minute in
  // libsodium.js's JavaScript fallback, which is what a page without 'wasm-unsafe-eval' gets.
  script.webassembly = true;
  return script;
}

sdk::DashboardPage dashboardPage() {
  sdk::DashboardPage page;
  page.path = "/vault";
  page.title = page.nav_label = "Vault";
  page.nav_order = 150;  // after Identities
  page.scripts = {sdk::kVaultDashboardScript};
  page.script = "svcVault.vaultPage(svc);";
  return page;
}

}  // namespace svc::plugins::vault
