// The service registry handed to plugins: one table, and each plugin's view of it.
#pragma once

#include <svc/sdk/plugin.h>
#include <svc/sdk/services.h>

#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

namespace svc::kernel {

/// Holds every offered service, with the interface each was offered as. Plugins see it through an
/// OwnedServices view; the kernel finds services on it directly (typed, as plugins do).
class ServiceTable : public sdk::ServiceRegistry {
 public:
  using sdk::ServiceRegistry::offer;
  /// @throws std::runtime_error when name is already offered or service is null.
  void offer(const std::string& name, const std::string& type, const std::string& owner,
             std::shared_ptr<void> service);
  /// Offers on the kernel's own behalf.
  void offerRaw(const std::string& name, const std::string& type,
                std::shared_ptr<void> service) override {
    offer(name, type, "kernel", std::move(service));
  }
  std::shared_ptr<const sdk::OfferedService> findRaw(const std::string& name) const override;
  std::vector<std::shared_ptr<const sdk::OfferedService>> offered() const override;
  /// @return name → owning plugin.
  std::map<std::string, std::string> owners() const;
  /// Drops every service (at shutdown, before plugin objects are destroyed).
  void clear();

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, std::shared_ptr<const sdk::OfferedService>> services_;
};

/// One plugin's view of the table: offers are recorded under its name and held to its
/// declarations. Offering a service the plugin does not list in PluginInfo::offers_services is
/// refused (a programming error found at its first start); looking up one it lists in neither
/// uses_services nor offers_services still works but is logged once per name, so the
/// declarations `svcctl plugins` shows stay true.
class OwnedServices : public sdk::ServiceRegistry {
 public:
  /// @param declared the plugin's declarations, or nullptr to hold it to none (kernel tests).
  OwnedServices(ServiceTable& table, std::string owner, const sdk::PluginInfo* declared = nullptr);
  void offerRaw(const std::string& name, const std::string& type,
                std::shared_ptr<void> service) override;
  std::shared_ptr<const sdk::OfferedService> findRaw(const std::string& name) const override;
  std::vector<std::shared_ptr<const sdk::OfferedService>> offered() const override {
    return table_.offered();
  }

 private:
  ServiceTable& table_;
  std::string owner_;
  const sdk::PluginInfo* declared_;
  mutable std::mutex reported_mutex_;
  mutable std::set<std::string> reported_;
};

}  // namespace svc::kernel
