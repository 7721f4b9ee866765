// Out-of-line destructors: each interface's vtable and type information live in the SDK library,
// once, instead of in every plugin.
#include <svc/sdk/accounts.h>
#include <svc/sdk/auth.h>
#include <svc/sdk/dashboard.h>
#include <svc/sdk/identity_extensions.h>
#include <svc/sdk/plans.h>
#include <svc/sdk/plugin.h>
#include <svc/sdk/vault.h>

namespace svc::sdk {

RouteRegistry::~RouteRegistry() = default;
Authenticator::~Authenticator() = default;
AccessRevocations::~AccessRevocations() = default;
IdentityDirectory::~IdentityDirectory() = default;
Database::~Database() = default;
EventBus::~EventBus() = default;
std::vector<Event> EventBus::read(std::int64_t, std::size_t) {
  return {};
}
std::vector<std::string> EventBus::declaredTypes() const {
  return {};
}
ServiceRegistry::~ServiceRegistry() = default;
PluginContext::~PluginContext() = default;
Counter::~Counter() = default;
Gauge::~Gauge() = default;
Histogram::~Histogram() = default;
MetricRegistry::~MetricRegistry() = default;
Plugin::~Plugin() = default;
PlanService::~PlanService() = default;
AccountService::~AccountService() = default;
IdentityExtension::~IdentityExtension() = default;
IdentityExtensions::~IdentityExtensions() = default;
void IdentityExtension::prepare(const IdentityInfo&, const Request&) {}
void IdentityExtension::finish(const IdentityInfo&, const Request&, bool) {}
std::optional<Poco::Dynamic::Var> IdentityExtension::update(Poco::Data::Session&,
                                                            const IdentityInfo&, const Request&) {
  return std::nullopt;
}
VoiceAgentDirectory::~VoiceAgentDirectory() = default;
DashboardPages::~DashboardPages() = default;
Vault::~Vault() = default;

const std::vector<IdentityCapability>& contractIdentityCapabilities() {
  using Type = IdentityField::Type;
  static const std::vector<IdentityCapability> capabilities = {
      {"email", {{"email_identifier", Type::kString}, {"domain", Type::kString}}, {}},
      {"phone", {{"provision_phone", Type::kBoolean}}, {"provision-phone"}},
  };
  return capabilities;
}

Migration Migration::portable(int version, std::string description,
                              std::vector<std::string> statements) {
  Migration m;
  m.version = version;
  m.description = std::move(description);
  m.sqlite = statements;
  m.mysql = std::move(statements);
  return m;
}

Migration Migration::portableUtf8(int version, std::string description,
                                  std::vector<std::string> statements) {
  Migration m = portable(version, std::move(description), std::move(statements));
  for (auto& sql : m.mysql) {
    if (sql.rfind("CREATE TABLE", 0) == 0) sql += " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
  }
  return m;
}

}  // namespace svc::sdk
