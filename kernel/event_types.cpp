#include "event_types.h"

#include <stdexcept>

namespace svc::kernel {

bool validEventTypeName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  bool segment_start = true, dotted = false;
  for (char c : name) {
    if (c == '.') {
      if (segment_start) return false;  // empty segment
      segment_start = true;
      dotted = true;
      continue;
    }
    const bool letter = c >= 'a' && c <= 'z';
    const bool other = (c >= '0' && c <= '9') || c == '_';
    if (segment_start ? !letter : !(letter || other)) return false;
    segment_start = false;
  }
  return dotted && !segment_start;
}

EventTypeRegistry::EventTypeRegistry() {
  declare(kKernel, {"stream.truncated",
                    "The resume point is older than the log keeps; the stream restarts at the "
                    "oldest kept event.",
                    {}});
}

void EventTypeRegistry::declare(const std::string& owner, const sdk::EventType& type) {
  if (!validEventTypeName(type.name)) {
    throw std::invalid_argument("event type '" + type.name.substr(0, 80) +
                                "' is not of the form noun.verb (lower-case letters, digits and "
                                "_, dot-separated, at most 64 characters)");
  }
  auto [it, added] = types_.try_emplace(type.name, Entry{owner, type});
  if (!added) {
    throw std::invalid_argument("event type '" + type.name + "' is already declared by " +
                                (it->second.owner == kKernel
                                     ? std::string("the kernel")
                                     : "plugin '" + it->second.owner + "'"));
  }
}

const sdk::EventType* EventTypeRegistry::find(const std::string& name) const {
  auto it = types_.find(name);
  return it == types_.end() ? nullptr : &it->second.type;
}

std::string EventTypeRegistry::owner(const std::string& name) const {
  auto it = types_.find(name);
  return it == types_.end() ? std::string() : it->second.owner;
}

std::vector<std::string> EventTypeRegistry::names() const {
  std::vector<std::string> out;
  out.reserve(types_.size());
  for (auto& [name, entry] : types_) out.push_back(name);
  return out;
}

bool EventTypeRegistry::checkPublished(const std::string& name, Poco::Logger& log) {
  if (known(name)) return true;
  {
    std::lock_guard lock(reported_mutex_);
    if (!reported_.insert(name).second) return false;
  }
  log.error("event type '" + name.substr(0, 64) +
            "' was published but no loaded plugin declares it (add it to PluginInfo::events); "
            "it is stored and sent to unfiltered streams, but ?types= cannot select it");
  return false;
}

}  // namespace svc::kernel
