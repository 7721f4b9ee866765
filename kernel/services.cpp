#include "services.h"

#include <Poco/Logger.h>

#include <algorithm>
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

namespace {

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

OwnedServices::OwnedServices(ServiceTable& table, std::string owner,
                             const sdk::PluginInfo* declared)
    : table_(table), owner_(std::move(owner)), declared_(declared) {}

void OwnedServices::offerRaw(const std::string& name, const std::string& type,
                             std::shared_ptr<void> service) {
  if (declared_ && !listed(declared_->offers_services, name)) {
    throw std::runtime_error("plugin '" + owner_ + "' offers service '" + name +
                             "' without declaring it in PluginInfo::offers_services");
  }
  table_.offer(name, type, owner_, std::move(service));
}

std::shared_ptr<const sdk::OfferedService> OwnedServices::findRaw(const std::string& name) const {
  if (declared_ && !listed(declared_->uses_services, name) &&
      !listed(declared_->offers_services, name)) {
    std::lock_guard lock(reported_mutex_);
    if (reported_.insert(name).second) {
      Poco::Logger::get("svcd").warning(
          "plugin '%s' looks up service '%s' without declaring it in PluginInfo::uses_services",
          owner_, name);
    }
  }
  return table_.findRaw(name);
}

}  // namespace svc::kernel
