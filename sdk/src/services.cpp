// The registry's type tags and its two messages.
#include <svc/sdk/services.h>

#include <cstring>

namespace svc::sdk {

std::string typeNameFromSignature(const char* signature) {
  // GCC: "... serviceTypeTag() [with T = ns::Type; std::string = ...]"; Clang: "... [T =
  // ns::Type]".
  const char* start = std::strstr(signature, "T = ");
  if (start == nullptr) return signature;
  start += 4;
  int depth = 0;
  const char* end = start;
  for (; *end != '\0'; ++end) {
    if (*end == '<' || *end == '(' || *end == '[') ++depth;
    if (*end == '>' || *end == ')') --depth;
    if (*end == ']' && depth-- == 0) break;
    if (*end == ';' && depth == 0) break;
  }
  return std::string(start, end);
}

std::string ServiceRegistry::mismatchMessage(const OfferedService& offer,
                                             const std::string& requested) {
  return "service '" + offer.name + "' was requested as " + requested + " but plugin '" +
         offer.owner + "' offered it as " + offer.type;
}

std::string ServiceRegistry::missingMessage(const std::string& name,
                                            const std::string& type) const {
  std::string list;
  for (const auto& offer : offered()) {
    if (!list.empty()) list += ", ";
    list += "'" + offer->name + "' (" + offer->type + ", by plugin '" + offer->owner + "')";
  }
  return "service '" + name + "' (" + type + ") is not offered by any enabled plugin; offered: " +
         (list.empty() ? std::string("none") : list);
}

}  // namespace svc::sdk
