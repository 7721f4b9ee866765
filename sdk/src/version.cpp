#include <svc/sdk/version.h>

#include <Poco/StringTokenizer.h>

#include <cstring>
#include <map>
#include <string>

namespace svc::sdk {

namespace {

std::string version(const AbiInfo& a) {
  return std::to_string(a.sdk_major) + "." + std::to_string(a.sdk_minor);
}

std::string signatureOf(const AbiInfo& a) {
  return a.signature != nullptr ? a.signature : "(no signature)";
}

// "compiler=gcc-12.2;poco=1.11" → {compiler: gcc-12.2, poco: 1.11}.
std::map<std::string, std::string> fields(const std::string& signature) {
  std::map<std::string, std::string> out;
  Poco::StringTokenizer parts(signature, ";", Poco::StringTokenizer::TOK_IGNORE_EMPTY);
  for (const auto& part : parts) {
    auto eq = part.find('=');
    out[part.substr(0, eq)] = eq == std::string::npos ? "" : part.substr(eq + 1);
  }
  return out;
}

// The names of the fields that differ, or "" when the signatures share no field names at all.
std::string differingFields(const std::string& mine, const std::string& theirs) {
  auto a = fields(mine), b = fields(theirs);
  std::string out;
  for (const auto& [key, value] : a) {
    auto it = b.find(key);
    if (it == b.end() || it->second != value) out += (out.empty() ? "" : ", ") + key;
  }
  for (const auto& [key, value] : b) {
    if (!a.count(key)) out += (out.empty() ? "" : ", ") + key;
  }
  return out;
}

}  // namespace

const AbiInfo& kernelAbi() {
  static const AbiInfo info{SVC_SDK_VERSION_MAJOR, SVC_SDK_VERSION_MINOR, SVC_SDK_BUILD_SIGNATURE};
  return info;
}

std::string abiMismatch(const AbiInfo& plugin, const std::string& label) {
  return abiMismatch(plugin, kernelAbi(), label);
}

std::string abiMismatch(const AbiInfo& plugin, const AbiInfo& kernel, const std::string& label) {
  std::string cause;
  if (plugin.sdk_major != kernel.sdk_major) {
    cause = "SDK major version mismatch";
  } else if (plugin.sdk_minor < kernel.sdk_minor) {
    cause = "SDK minor version mismatch (built for an older SDK: rebuild it against SDK " +
            version(kernel) + ")";
  } else if (plugin.sdk_minor > kernel.sdk_minor) {
    cause = "SDK minor version mismatch (built for a newer SDK: it needs a newer svcd)";
  } else if (plugin.signature == nullptr || std::strcmp(plugin.signature, kernel.signature) != 0) {
    cause = "build signature mismatch (differs in " +
            differingFields(signatureOf(kernel), signatureOf(plugin)) + ")";
  } else {
    return {};
  }
  return cause + ": " + label + " was built with SDK " + version(plugin) + " (" +
         signatureOf(plugin) + "), this kernel needs SDK " + version(kernel) + " (" +
         signatureOf(kernel) + ")";
}

}  // namespace svc::sdk
