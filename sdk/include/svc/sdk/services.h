// The service registry: typed interfaces that plugins offer one another.
//
// A service is an abstract interface declared in sdk/ with a versioned name (for example
// kAuthenticatorService). One plugin offers it during its register step; any plugin looks it up
// afterwards. Offering a name twice refuses start; a disabled plugin's services are simply absent.
// Lookups are by name, never by RTTI, so they work across shared libraries.
#pragma once

#include <memory>
#include <string>
#include <utility>

namespace svc::sdk {

/// The registry.
class ServiceRegistry {
 public:
  virtual ~ServiceRegistry();
  /// Offers a service on behalf of the calling plugin (register step only).
  /// @param name its versioned name. @param service the implementation (kept by the registry).
  /// @throws std::runtime_error when the name is already offered.
  virtual void offerRaw(const std::string& name, std::shared_ptr<void> service) = 0;
  /// @param name the versioned name. @return the implementation, or nullptr when not offered.
  virtual std::shared_ptr<void> findRaw(const std::string& name) const = 0;

  /// Typed offer. @tparam T the interface declared for that name. @param name the name.
  /// @param service the implementation.
  template <typename T>
  void offer(const std::string& name, std::shared_ptr<T> service) {
    offerRaw(name, std::static_pointer_cast<void>(std::move(service)));
  }

  /// Typed lookup. @tparam T the interface declared for that name. @param name the name.
  /// @return the implementation, or nullptr.
  template <typename T>
  std::shared_ptr<T> find(const std::string& name) const {
    return std::static_pointer_cast<T>(findRaw(name));
  }
};

}  // namespace svc::sdk
