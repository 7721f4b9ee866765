// The build signature as a translation unit built with _GLIBCXX_ASSERTIONS computes it.
#ifndef _GLIBCXX_ASSERTIONS
#define _GLIBCXX_ASSERTIONS 1
#endif
#include <svc/sdk/version.h>

namespace svc::sdk {
const char* signatureWithGlibcxxAssertions() {
  return SVC_SDK_BUILD_SIGNATURE;
}
}  // namespace svc::sdk
