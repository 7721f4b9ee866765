// The service registry and the in-process event bus handed to plugins.
#pragma once

#include <svc/sdk/events.h>
#include <svc/sdk/services.h>

#include <atomic>
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

/// Events delivered in-process to subscribers, numbered by a process-wide sequence. The durable,
/// multi-process log replaces the numbering with a stored one behind the same interface.
class InProcessEventBus : public sdk::EventBus {
 public:
  sdk::Event publish(const std::string& type, const std::string& account,
                     const std::string& identity, Poco::JSON::Object::Ptr object,
                     Poco::Data::Session* transaction) override;
  std::uint64_t subscribe(std::function<void(const sdk::Event&)> fn) override;
  void unsubscribe(std::uint64_t token) override;

 private:
  std::atomic<std::int64_t> sequence_{0};
  std::mutex mutex_;
  std::uint64_t next_token_ = 1;
  std::map<std::uint64_t, std::function<void(const sdk::Event&)>> subscribers_;
};

}  // namespace svc::kernel
