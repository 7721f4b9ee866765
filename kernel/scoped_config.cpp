#include "scoped_config.h"

#include <Poco/Exception.h>

namespace svc::kernel {

ScopedConfiguration::ScopedConfiguration(const Poco::Util::AbstractConfiguration& all,
                                         std::string plugin, std::set<std::string> readable)
    : all_(all), plugin_(std::move(plugin)), readable_(std::move(readable)) {}

ScopedConfiguration::~ScopedConfiguration() = default;

bool ScopedConfiguration::readable(const std::string& key) const {
  if (key == plugin_ || key.compare(0, plugin_.size() + 1, plugin_ + ".") == 0) return true;
  return readable_.count(key) > 0;
}

bool ScopedConfiguration::readableUnder(const std::string& path) const {
  if (path.empty() || readable(path)) return true;
  const std::string prefix = path + ".";
  if (plugin_.compare(0, prefix.size(), prefix) == 0) return true;  // its namespace is below
  auto it = readable_.lower_bound(prefix);
  return it != readable_.end() && it->compare(0, prefix.size(), prefix) == 0;
}

bool ScopedConfiguration::getRaw(const std::string& key, std::string& value) const {
  if (!readable(key) || !all_.has(key)) return false;
  value = all_.getString(key);  // expanded with the whole configuration in view
  return true;
}

void ScopedConfiguration::setRaw(const std::string& key, const std::string&) {
  throw Poco::InvalidAccessException("a plugin's configuration is read-only", key);
}

void ScopedConfiguration::removeRaw(const std::string& key) {
  throw Poco::InvalidAccessException("a plugin's configuration is read-only", key);
}

void ScopedConfiguration::enumerate(const std::string& key, Keys& range) const {
  Keys all;
  all_.keys(key, all);
  for (const auto& child : all) {
    if (readableUnder(key.empty() ? child : key + "." + child)) range.push_back(child);
  }
}

std::set<std::string> readableKeys(const std::vector<sdk::ConfigKey>& own,
                                   const std::vector<const std::vector<sdk::ConfigKey>*>& sources) {
  std::set<std::string> keys;
  for (const auto& k : own) keys.insert(k.key);
  for (const auto* source : sources) {
    for (const auto& k : *source) {
      if (k.shared && !k.secret) keys.insert(k.key);
    }
  }
  return keys;
}

}  // namespace svc::kernel
