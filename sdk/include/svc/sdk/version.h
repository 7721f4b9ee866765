// The SDK's version and the binary-compatibility handshake.
//
// A plugin is a shared library built against these headers. Before the kernel calls any plugin code
// it reads the plugin's AbiInfo (exported as `svc_plugin_abi`) and compares it with its own: the
// SDK major version must be equal, the plugin's minor version must not be newer than the kernel's,
// and the build signature (compiler, C++ library ABI, pointer size, Poco version) must be
// identical, because the SDK passes C++ objects (std::string, std::function, Poco types) across the
// boundary.
#pragma once

#include <Poco/Version.h>

#include <cstdint>
#include <string>

/// SDK major version: a plugin built for another major version is refused.
#define SVC_SDK_VERSION_MAJOR 1
/// SDK minor version: interfaces only grow at the end within a major version.
#define SVC_SDK_VERSION_MINOR 1

#define SVC_SDK_STR2(x) #x
#define SVC_SDK_STR(x) SVC_SDK_STR2(x)

#if defined(__clang__)
#define SVC_SDK_COMPILER "clang-" SVC_SDK_STR(__clang_major__) "." SVC_SDK_STR(__clang_minor__)
#elif defined(__GNUC__)
#define SVC_SDK_COMPILER "gcc-" SVC_SDK_STR(__GNUC__) "." SVC_SDK_STR(__GNUC_MINOR__)
#else
#define SVC_SDK_COMPILER "unknown"
#endif

#if defined(_GLIBCXX_USE_CXX11_ABI)
#define SVC_SDK_CXXABI "cxx11abi=" SVC_SDK_STR(_GLIBCXX_USE_CXX11_ABI)
#else
#define SVC_SDK_CXXABI "cxx11abi=none"
#endif

/// The build signature compiled into both sides of the handshake.
#define SVC_SDK_BUILD_SIGNATURE       \
  SVC_SDK_COMPILER ";" SVC_SDK_CXXABI \
                   ";ptr=" SVC_SDK_STR(__SIZEOF_POINTER__) ";poco=" SVC_SDK_STR(POCO_VERSION)

namespace svc::sdk {

/// What a plugin says about its build; a plain C layout so the kernel can read it from any plugin,
/// even one built with another compiler, before trusting anything else in it.
struct AbiInfo {
  std::uint32_t sdk_major;  ///< SVC_SDK_VERSION_MAJOR the plugin was built with.
  std::uint32_t sdk_minor;  ///< SVC_SDK_VERSION_MINOR the plugin was built with.
  const char* signature;    ///< SVC_SDK_BUILD_SIGNATURE the plugin was built with.
};

/// The kernel's own side of the handshake.
/// @return the AbiInfo of the SDK library the kernel is linked with.
const AbiInfo& kernelAbi();

/// Compares a plugin's AbiInfo with the kernel's.
/// @param plugin the plugin's AbiInfo.
/// @return an empty string when compatible, else a sentence naming both sides.
std::string abiMismatch(const AbiInfo& plugin);

}  // namespace svc::sdk
