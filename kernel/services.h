// The service registry handed to plugins: one table, and each plugin's view of it.
#pragma once

#include <svc/sdk/services.h>

#include <map>
#include <mutex>
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

/// One plugin's view of the table: offers are recorded under its name.
class OwnedServices : public sdk::ServiceRegistry {
 public:
  OwnedServices(ServiceTable& table, std::string owner) : table_(table), owner_(std::move(owner)) {}
  void offerRaw(const std::string& name, const std::string& type,
                std::shared_ptr<void> service) override {
    table_.offer(name, type, owner_, std::move(service));
  }
  std::shared_ptr<const sdk::OfferedService> findRaw(const std::string& name) const override {
    return table_.findRaw(name);
  }
  std::vector<std::shared_ptr<const sdk::OfferedService>> offered() const override {
    return table_.offered();
  }

 private:
  ServiceTable& table_;
  std::string owner_;
};

}  // namespace svc::kernel
