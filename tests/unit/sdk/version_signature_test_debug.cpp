// The build signature as a translation unit built with _GLIBCXX_DEBUG computes it. Only a pointer
// leaves this file: no container crosses into the tests built without debug mode.
#ifndef _GLIBCXX_DEBUG
#define _GLIBCXX_DEBUG 1
#endif
#include <svc/sdk/version.h>

namespace svc::sdk {
const char* signatureWithGlibcxxDebug() {
  return SVC_SDK_BUILD_SIGNATURE;
}
}  // namespace svc::sdk
