#include "secret_pages.h"

#include <svc/sdk/util.h>
#include <svc/sdk/vault.h>

#include <Poco/String.h>

namespace svc::plugins::secrets {

namespace {

// The page lists secrets by key only; a value is opened, shown, copied or changed only when the
// person asks, in the page (svcVault, the vault's script: it seals before anything is sent when
// the account has end-to-end encryption, after the person unlocks it with the passphrase).
constexpr const char* kSecretsScript = R"JS(
svcVault.records(svc, {
  noun: 'Secrets', one: 'a secret', api: '/api/secrets/', attr: 'data-secret',
  name: { field: 'key', label: 'Key' },
  fields: [
    { field: 'value', label: 'Value', secret: true, required: true, copy: true },
    { field: 'notes', label: 'Notes', long: true }
  ]
});
)JS";

bool identityParam(std::map<std::string, std::string>& params) {
  std::string& identity = params["identity"];
  identity = Poco::toLower(identity);
  return sdk::isUuid(identity);
}

}  // namespace

std::vector<sdk::DashboardPage> dashboardPages() {
  sdk::DashboardPage page;
  page.path = "/identities/{identity}/secrets";
  page.title = "Secrets";
  page.script = kSecretsScript;
  page.accept = identityParam;
  page.scripts = {sdk::kVaultDashboardScript, sdk::kVaultWorkerScript};
  return {page};
}

}  // namespace svc::plugins::secrets
