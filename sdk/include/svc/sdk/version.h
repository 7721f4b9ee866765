// The SDK's version and the binary-compatibility handshake.
//
// A plugin is a shared library built against these headers. Before the kernel calls any plugin code
// it reads the plugin's AbiInfo (exported as `svc_plugin_abi`) and compares it with its own. Both
// must be equal:
//   - the SDK version, major AND minor. Plugins and the kernel exchange C++ objects by value
//     (Route, Response, PluginInfo, Migration): a field added in a minor version would make an
//     older plugin's objects too small, and a newer plugin's too big, for the other side. So, as
//     nginx and Envoy do, a plugin is rebuilt for every SDK release; sdk/CHANGELOG.md says what
//     each changed.
//   - the build signature: compiler and its major.minor, the C++ standard library and its ABI flag,
//     the standard library's debug mode where it changes container layouts (_GLIBCXX_DEBUG does;
//     _GLIBCXX_ASSERTIONS does not, so it is left out and may differ), pointer size, and Poco's
//     major.minor (its patch releases keep the ABI, so the patch level is left out).
// The version numbers come from sdk/CMakeLists.txt (project(SvcSdk VERSION ...)), through the
// generated <svc/sdk/sdk_version.h>.
#pragma once

#include <svc/sdk/sdk_version.h>

#include <Poco/Version.h>

#include <cstddef>
#include <cstdint>
#include <string>

#if defined(__clang__)
#define SVC_SDK_COMPILER_ARGS 2, __clang_major__, __clang_minor__
#elif defined(__GNUC__)
#define SVC_SDK_COMPILER_ARGS 1, __GNUC__, __GNUC_MINOR__
#else
#define SVC_SDK_COMPILER_ARGS 0, 0, 0
#endif

#if defined(_LIBCPP_VERSION)
#if defined(_LIBCPP_ENABLE_DEBUG_MODE) || defined(_LIBCPP_DEBUG)
#define SVC_SDK_STDLIB_ARGS 2, _LIBCPP_ABI_VERSION, 1
#else
#define SVC_SDK_STDLIB_ARGS 2, _LIBCPP_ABI_VERSION, 0
#endif
#elif defined(__GLIBCXX__)
#if defined(_GLIBCXX_DEBUG)  // std::vector, std::map... become std::__debug ones, with other
                             // layouts
#define SVC_SDK_STDLIB_ARGS 1, _GLIBCXX_USE_CXX11_ABI, 1
#else
#define SVC_SDK_STDLIB_ARGS 1, _GLIBCXX_USE_CXX11_ABI, 0
#endif
#else
#define SVC_SDK_STDLIB_ARGS 0, 0, 0
#endif

/// The build signature of the translation unit that expands it, a NUL-terminated string such as
/// `compiler=gcc-12.2;stdlib=libstdc++;cxx11abi=1;debug=0;ptr=8;poco=1.11`. Every input is a
/// template argument, so code built with other settings gets another instantiation, never the
/// kernel's.
#define SVC_SDK_BUILD_SIGNATURE                                                                \
  (::svc::sdk::abi_detail::Signature<SVC_SDK_COMPILER_ARGS, SVC_SDK_STDLIB_ARGS,               \
                                     __SIZEOF_POINTER__, (POCO_VERSION >> 16) & 0xFFFF>::value \
       .chars)

namespace svc::sdk {

namespace abi_detail {

struct Text {
  char chars[160];
};

constexpr void append(Text& t, std::size_t& n, const char* s) {
  while (*s != '\0' && n + 1 < sizeof t.chars) t.chars[n++] = *s++;
}

constexpr void append(Text& t, std::size_t& n, unsigned long v) {
  char digits[24] = {};
  std::size_t k = 0;
  do {
    digits[k++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (k != 0 && n + 1 < sizeof t.chars) t.chars[n++] = digits[--k];
}

constexpr Text render(int compiler, int compiler_major, int compiler_minor, int stdlib,
                      int stdlib_abi, int debug, int pointer, unsigned long poco) {
  Text t{};
  std::size_t n = 0;
  append(t, n, "compiler=");
  append(t, n, compiler == 2 ? "clang-" : compiler == 1 ? "gcc-" : "unknown-");
  append(t, n, static_cast<unsigned long>(compiler_major));
  append(t, n, ".");
  append(t, n, static_cast<unsigned long>(compiler_minor));
  append(t, n,
         stdlib == 2   ? ";stdlib=libc++;abi="
         : stdlib == 1 ? ";stdlib=libstdc++;cxx11abi="
                       : ";stdlib=unknown;abi=");
  append(t, n, static_cast<unsigned long>(stdlib_abi));
  append(t, n, ";debug=");
  append(t, n, static_cast<unsigned long>(debug));
  append(t, n, ";ptr=");
  append(t, n, static_cast<unsigned long>(pointer));
  append(t, n, ";poco=");
  append(t, n, poco >> 8);
  append(t, n, ".");
  append(t, n, poco & 0xFF);
  return t;
}

template <int Compiler, int CompilerMajor, int CompilerMinor, int Stdlib, int StdlibAbi, int Debug,
          int Pointer, unsigned long Poco>
struct Signature {
  static constexpr Text value =
      render(Compiler, CompilerMajor, CompilerMinor, Stdlib, StdlibAbi, Debug, Pointer, Poco);
};

}  // namespace abi_detail

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
/// @param label what to call the plugin in the sentence (its file, say).
/// @return an empty string when compatible, else one sentence: the cause, what the plugin was
/// built with and what the kernel needs.
std::string abiMismatch(const AbiInfo& plugin, const std::string& label = "the plugin");

/// Compares a plugin's AbiInfo with a given kernel side (the rule itself, for tests).
/// @param plugin the plugin's. @param kernel the kernel's. @param label what to call the plugin.
/// @return as abiMismatch(plugin, label).
std::string abiMismatch(const AbiInfo& plugin, const AbiInfo& kernel, const std::string& label);

}  // namespace svc::sdk
