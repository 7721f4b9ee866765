#include "services.h"

#include <svc/sdk/util.h>

#include <stdexcept>
#include <vector>

namespace svc::kernel {

void ServiceTable::offer(const std::string& name, const std::string& type, const std::string& owner,
                         std::shared_ptr<void> service) {
  std::unique_lock lock(mutex_);
  auto it = services_.find(name);
  if (it != services_.end()) {
    throw std::runtime_error("service '" + name + "' is already offered by plugin '" +
                             it->second->owner + "'");
  }
  if (!service) throw std::runtime_error("service '" + name + "' offered as null");
  services_.emplace(name, std::make_shared<const sdk::OfferedService>(
                              sdk::OfferedService{name, type, owner, std::move(service)}));
}

std::shared_ptr<const sdk::OfferedService> ServiceTable::findRaw(const std::string& name) const {
  std::shared_lock lock(mutex_);
  auto it = services_.find(name);
  return it == services_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const sdk::OfferedService>> ServiceTable::offered() const {
  std::shared_lock lock(mutex_);
  std::vector<std::shared_ptr<const sdk::OfferedService>> out;
  for (auto& [name, offer] : services_) out.push_back(offer);
  return out;
}

std::map<std::string, std::string> ServiceTable::owners() const {
  std::shared_lock lock(mutex_);
  std::map<std::string, std::string> out;
  for (auto& [name, offer] : services_) out[name] = offer->owner;
  return out;
}

void ServiceTable::clear() {
  std::unique_lock lock(mutex_);
  services_.clear();
}

sdk::Event InProcessEventBus::publish(const std::string& type, const std::string& account,
                                      const std::string& identity, Poco::JSON::Object::Ptr object,
                                      Poco::Data::Session* /*transaction*/) {
  sdk::Event event;
  event.sequence = ++sequence_;
  event.id = sdk::newUuid();
  event.type = type;
  event.created_us = sdk::nowMicros();
  event.account = account;
  event.identity = identity;
  event.object = object ? object : Poco::JSON::Object::Ptr(new Poco::JSON::Object);
  std::vector<std::function<void(const sdk::Event&)>> targets;
  {
    std::lock_guard lock(mutex_);
    for (auto& [token, fn] : subscribers_) targets.push_back(fn);
  }
  for (auto& fn : targets) fn(event);
  return event;
}

std::uint64_t InProcessEventBus::subscribe(std::function<void(const sdk::Event&)> fn) {
  std::lock_guard lock(mutex_);
  std::uint64_t token = next_token_++;
  subscribers_.emplace(token, std::move(fn));
  return token;
}

void InProcessEventBus::unsubscribe(std::uint64_t token) {
  std::lock_guard lock(mutex_);
  subscribers_.erase(token);
}

}  // namespace svc::kernel
