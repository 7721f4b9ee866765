#include "passwords_dashboard.h"

#include <svc/sdk/util.h>
#include <svc/sdk/vault.h>

#include <Poco/String.h>

namespace svc::plugins::passwords {

namespace {

bool identityParam(std::map<std::string, std::string>& params) {
  std::string& identity = params["identity"];
  identity = Poco::toLower(identity);
  return sdk::isUuid(identity);
}

// The page lists entries by domain only; a value is opened, shown, copied or changed only when
// the person asks, in the page (svcVault, the vault's script: it seals before anything is sent
// when the account has end-to-end encryption, after the person unlocks it with the passphrase).
constexpr const char* kEntriesScript = R"JS(
svcVault.records(svc, {
  noun: 'Passwords', one: 'an entry', api: '/api/passwords/', attr: 'data-entry',
  name: { field: 'domain', label: 'Domain' },
  fields: [
    { field: 'username', label: 'Username', copy: true },
    { field: 'password', label: 'Password', secret: true, required: true, copy: true, generate: true },
    { field: 'notes', label: 'Notes', long: true }
  ]
});
)JS";

}  // namespace

std::vector<sdk::DashboardPage> dashboardPages() {
  sdk::DashboardPage entries;
  entries.path = "/identities/{identity}/passwords";
  entries.title = "Passwords";
  entries.script = kEntriesScript;
  entries.accept = identityParam;
  entries.scripts = {sdk::kVaultDashboardScript, sdk::kVaultWorkerScript};
  return {entries};
}

}  // namespace svc::plugins::passwords
