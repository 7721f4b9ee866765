// The service registry and the in-process event bus handed to plugins.
#pragma once

#include <svc/sdk/events.h>
#include <svc/sdk/services.h>

#include <atomic>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>

namespace svc::kernel {

/// Holds every offered service. Plugins see it through an OwnedServices view.
class ServiceTable {
 public:
  /// @throws std::runtime_error when name is already offered.
  void offer(const std::string& name, const std::string& owner, std::shared_ptr<void> service);
  std::shared_ptr<void> find(const std::string& name) const;
  /// @return name → owning plugin.
  std::map<std::string, std::string> owners() const;
  /// Drops every service (at shutdown, before plugin objects are destroyed).
  void clear();

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, std::pair<std::string, std::shared_ptr<void>>> services_;
};

/// One plugin's view of the table: offers are recorded under its name.
class OwnedServices : public sdk::ServiceRegistry {
 public:
  OwnedServices(ServiceTable& table, std::string owner) : table_(table), owner_(std::move(owner)) {}
  void offerRaw(const std::string& name, std::shared_ptr<void> service) override {
    table_.offer(name, owner_, std::move(service));
  }
  std::shared_ptr<void> findRaw(const std::string& name) const override {
    return table_.find(name);
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
