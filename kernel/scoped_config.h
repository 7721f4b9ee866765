// What one plugin may read of the configuration (SDK 2). A plugin sees:
//   - every key in its own namespace (`<name>.` and below) and every key it declares, its own
//     secrets included;
//   - the keys the kernel and the other plugins declare shared (ConfigKey::shared), unless they
//     are secret (the kernel shares public.base_url, data.dir, server.host and server.port).
// Everything else (admin.token, db.url, another plugin's relay password) is as if unset: has()
// is false, getString() throws NotFoundException, enumerate() leaves it out. Values are expanded
// against the whole configuration first, so a plugin's default may still say `${data.dir}/x`.
// The view is read-only. --check-config still prints everything, redacted.
#pragma once

#include <svc/sdk/plugin.h>

#include <Poco/AutoPtr.h>
#include <Poco/Util/AbstractConfiguration.h>

#include <set>
#include <string>
#include <vector>

namespace svc::kernel {

class ScopedConfiguration : public Poco::Util::AbstractConfiguration {
 public:
  /// @param all the whole configuration (outlives this view). @param plugin the plugin's name.
  /// @param readable the keys outside its namespace that it may read.
  ScopedConfiguration(const Poco::Util::AbstractConfiguration& all, std::string plugin,
                      std::set<std::string> readable);

  /// @return whether the plugin may read key (whether or not it is set).
  bool readable(const std::string& key) const;

 protected:
  bool getRaw(const std::string& key, std::string& value) const override;
  void setRaw(const std::string& key, const std::string& value) override;
  void enumerate(const std::string& key, Keys& range) const override;
  void removeRaw(const std::string& key) override;

  ~ScopedConfiguration() override;

 private:
  /// @return whether some readable key is path or lies below it.
  bool readableUnder(const std::string& path) const;

  const Poco::Util::AbstractConfiguration& all_;
  std::string plugin_;
  std::set<std::string> readable_;
};

/// @param own the keys a plugin declares. @param sources the kernel's keys and every loaded
/// plugin's keys. @return the keys outside its namespace that the plugin may read: its own
/// declared keys and the shared, non-secret ones of all the others.
std::set<std::string> readableKeys(const std::vector<sdk::ConfigKey>& own,
                                   const std::vector<const std::vector<sdk::ConfigKey>*>& sources);

}  // namespace svc::kernel
