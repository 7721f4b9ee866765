// The event-type registry: what `?types=` accepts, built from what the loaded plugins declare
// (PluginInfo::events) plus the kernel's own `stream.truncated`. The kernel knows no product's
// event types: a plugin, bundled or third-party, brings its own.
//
// Filled single-threaded while plugins load; read-only afterwards, except for the set of
// undeclared types already reported (guarded by its own mutex).
#pragma once

#include <svc/sdk/plugin.h>

#include <Poco/Logger.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace svc::kernel {

class EventTypeRegistry {
 public:
  /// The owner the kernel's own types are declared under.
  static constexpr const char* kKernel = "kernel";

  /// Starts with the kernel's own type, `stream.truncated`.
  EventTypeRegistry();

  /// Declares one type. @param owner the declaring plugin's name.
  /// @throws std::invalid_argument when the name is malformed (`<noun>.<verb>`: lower-case
  /// letters, digits and `_`, dot-separated, at most 64 characters) or already declared, naming
  /// who declared it first.
  void declare(const std::string& owner, const sdk::EventType& type);
  /// @return whether a type is declared.
  bool known(const std::string& name) const { return types_.count(name) > 0; }
  /// @return the declaration, or nullptr.
  const sdk::EventType* find(const std::string& name) const;
  /// @return the declaring plugin, or "".
  std::string owner(const std::string& name) const;
  /// @return every declared type's name, sorted.
  std::vector<std::string> names() const;
  /// Called for each publish. @return true when the type is declared; otherwise logs an error
  /// (once per type for the life of the process) and returns false.
  bool checkPublished(const std::string& name, Poco::Logger& log);

 private:
  struct Entry {
    std::string owner;
    sdk::EventType type;
  };
  std::map<std::string, Entry> types_;
  std::mutex reported_mutex_;
  std::set<std::string> reported_;
};

/// @return whether a string is a well-formed event type name.
bool validEventTypeName(const std::string& name);

}  // namespace svc::kernel
