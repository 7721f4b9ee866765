// The service registry: typed interfaces that plugins offer one another.
//
// A service is an abstract interface declared in sdk/ (or in a plugin's own public header) together
// with a ServiceKey: a constant that carries the interface's type and a versioned name, for example
//
//   inline constexpr ServiceKey<IdentityDirectory> kIdentityDirectoryService{
//       "svc.identity-directory.v1"};
//
// One plugin offers it in registerServices(); others find it by the same key. Offering and finding
// are type-checked: the registry keeps, beside each offer, the interface's type tag (its C++ name
// as the compiler spells it, taken from the key's type, never from RTTI, which is unreliable across
// shared libraries loaded with hidden visibility and RTLD_LOCAL). Finding a name offered under
// another interface throws ServiceError naming both; require() also throws, naming what is offered,
// when nothing is. A new, incompatible interface takes a new name (`.v2`), so old and new can be
// offered side by side. Offering a name twice refuses start; a disabled plugin's services are
// simply absent.
//
// When lookups work. The kernel runs configure → migrate → register for each plugin in dependency
// order, so:
//   - in configure(), a plugin finds the services of the plugins it lists in
//     PluginInfo::requires_plugins (they registered before it was configured);
//   - in start() and later (handlers, background work), it finds every service any enabled plugin
//     offers;
//   - a service of a plugin it does not require may be absent in configure() even when that plugin
//     is enabled, and is absent for good when that plugin is disabled: look it up in start() and
//     treat nullptr as "not enabled".
// A found shared_ptr stays valid until the plugin is destroyed; keep it rather than looking it up
// on every request.
//
// Threads. The kernel serves requests on many worker threads at once: route handlers, and every
// service's methods (which handlers of any plugin call), run concurrently and must be thread-safe.
// find() and require() may be called from any thread; offer only from registerServices().
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace svc::sdk {

/// Turns a compiler's function signature (`__PRETTY_FUNCTION__` of a function template of T) into
/// T's name. @param signature the signature. @return the text after `T = `, or the whole signature.
std::string typeNameFromSignature(const char* signature);

}  // namespace svc::sdk

// Outside svc::sdk on purpose: GCC spells T relative to the enclosing namespace, so a template in
// a namespace of its own prints every type fully qualified.
namespace svc_sdk_type_tag {
template <typename T>
const std::string& of() {
  static const std::string tag = svc::sdk::typeNameFromSignature(__PRETTY_FUNCTION__);
  return tag;
}
}  // namespace svc_sdk_type_tag

namespace svc::sdk {

/// The type tag of interface T: its fully qualified name as the compiler spells it
/// (`svc::sdk::PlanService`). Kernel and plugins are built by the same compiler (the ABI handshake
/// checks it), so both sides spell a type alike. @tparam T the interface. @return the tag.
template <typename T>
const std::string& serviceTypeTag() {
  return svc_sdk_type_tag::of<T>();
}

/// The key of a service: the interface it is offered as and its versioned name. Declare one
/// `inline constexpr` constant per service, beside the interface.
/// @tparam T the abstract interface offered under this name.
template <typename T>
struct ServiceKey {
  /// @param versioned_name the name, ending in its interface version (`svc.plans.v1`).
  constexpr explicit ServiceKey(const char* versioned_name) : name(versioned_name) {}
  /// @return the interface's type tag.
  static const std::string& type() { return serviceTypeTag<T>(); }
  const char* name;  ///< The versioned name.
};

/// One offer as the registry holds it.
struct OfferedService {
  std::string name;               ///< The versioned name.
  std::string type;               ///< The type tag of the interface it was offered as.
  std::string owner;              ///< The plugin that offered it (`kernel` for the kernel).
  std::shared_ptr<void> service;  ///< The implementation, as a T (the offered interface).
};

/// A service asked for under the wrong interface, or required and not offered. what() names the
/// requested name and interface and what is offered.
class ServiceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The registry.
class ServiceRegistry {
 public:
  virtual ~ServiceRegistry();
  /// Offers a service on behalf of the calling plugin (registerServices() only). Prefer offer().
  /// @param name its versioned name. @param type the type tag of the interface it implements.
  /// @param service the implementation as that interface (kept by the registry).
  /// @throws std::runtime_error when the name is already offered or the service is null.
  virtual void offerRaw(const std::string& name, const std::string& type,
                        std::shared_ptr<void> service) = 0;
  /// @param name the versioned name. @return the offer, or nullptr when nothing is offered so.
  virtual std::shared_ptr<const OfferedService> findRaw(const std::string& name) const = 0;
  /// @return every offer, by name.
  virtual std::vector<std::shared_ptr<const OfferedService>> offered() const = 0;

  /// Offers a service under its key.
  /// @tparam T the key's interface. @tparam Impl an implementation of it.
  /// @param key the key. @param service the implementation.
  /// @throws std::runtime_error when the key's name is already offered.
  template <typename T, typename Impl>
  void offer(const ServiceKey<T>& key, std::shared_ptr<Impl> service) {
    std::shared_ptr<T> as_interface = std::move(service);  // Impl must be a T
    offerRaw(key.name, key.type(), std::static_pointer_cast<void>(std::move(as_interface)));
  }

  /// Finds an optional service.
  /// @tparam T the key's interface. @param key the key.
  /// @return the implementation, or nullptr when no enabled plugin offers the key's name (see the
  /// top of this header for when a lookup can succeed).
  /// @throws ServiceError when the name is offered as another interface.
  template <typename T>
  std::shared_ptr<T> find(const ServiceKey<T>& key) const {
    auto offer = findRaw(key.name);
    if (!offer) return nullptr;
    if (offer->type != key.type()) throw ServiceError(mismatchMessage(*offer, key.type()));
    return std::static_pointer_cast<T>(offer->service);
  }

  /// Finds a service the caller cannot work without.
  /// @tparam T the key's interface. @param key the key. @return the implementation, never null.
  /// @throws ServiceError when it is not offered (naming what is) or offered as another interface.
  template <typename T>
  std::shared_ptr<T> require(const ServiceKey<T>& key) const {
    auto service = find(key);
    if (!service) throw ServiceError(missingMessage(key.name, key.type()));
    return service;
  }

 protected:
  /// @return "service 'N' was requested as A but plugin 'P' offered it as B".
  static std::string mismatchMessage(const OfferedService& offer, const std::string& requested);
  /// @return "service 'N' (A) is not offered by any enabled plugin; offered: ...".
  std::string missingMessage(const std::string& name, const std::string& type) const;
};

}  // namespace svc::sdk
