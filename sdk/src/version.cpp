#include <svc/sdk/version.h>

#include <cstring>
#include <string>

namespace svc::sdk {

const AbiInfo& kernelAbi() {
  static const AbiInfo info{SVC_SDK_VERSION_MAJOR, SVC_SDK_VERSION_MINOR, SVC_SDK_BUILD_SIGNATURE};
  return info;
}

std::string abiMismatch(const AbiInfo& plugin) {
  const AbiInfo& kernel = kernelAbi();
  auto version = [](const AbiInfo& a) {
    return std::to_string(a.sdk_major) + "." + std::to_string(a.sdk_minor);
  };
  if (plugin.sdk_major != kernel.sdk_major) {
    return "SDK major version mismatch: plugin built for SDK " + version(plugin) +
           ", kernel provides SDK " + version(kernel);
  }
  if (plugin.sdk_minor > kernel.sdk_minor) {
    return "plugin needs a newer SDK: plugin built for SDK " + version(plugin) +
           ", kernel provides SDK " + version(kernel);
  }
  const char* theirs = plugin.signature != nullptr ? plugin.signature : "(none)";
  if (std::strcmp(theirs, kernel.signature) != 0) {
    return std::string("build signature mismatch: plugin '") + theirs + "', kernel '" +
           kernel.signature + "'";
  }
  return {};
}

}  // namespace svc::sdk
