#include "vault_pages.h"

#include <svc/sdk/vault.h>

#include <initializer_list>

namespace svc::plugins::vault {

namespace {

constexpr std::string_view kPlugin = "vault";

// `vault/<name>` of this plugin, its body `parts` in order, each followed by a line break.
sdk::DashboardScript script(std::string_view full, std::initializer_list<std::string_view> parts) {
  sdk::DashboardScript out;
  out.plugin = std::string(kPlugin);
  out.name = std::string(full.substr(kPlugin.size() + 1));
  for (std::string_view part : parts) {
    out.body.append(part.data(), part.size());
    out.body += '\n';
  }
  return out;
}

}  // namespace

sdk::DashboardScript dashboardScript() {
  // No cryptography in the page: the worker does it all.
  return script(sdk::kVaultDashboardScript, {web::vaultScript()});
}

sdk::DashboardScript workerScript() {
  sdk::DashboardScript out =
      script(sdk::kVaultWorkerScript,
             {web::libsodiumSumo(), web::libsodiumWrappers(), web::workerScript()});
  // Argon2id at 64 MiB takes about a second in WebAssembly and over half a minute in
  // libsodium.js's JavaScript fallback, which is what a worker whose policy forbids compiling
  // WebAssembly gets.
  out.webassembly = true;
  out.worker = true;
  return out;
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
