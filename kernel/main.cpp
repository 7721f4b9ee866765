#include "memory_release.h"
#include "stop_signals.h"
#include "svcd_app.h"

int main(int argc, char** argv) {
  svc::kernel::stop_signals::install();  // before any thread starts
  svc::kernel::limitMallocArenas();
  svc::kernel::SvcdApp app;
  return app.run(argc, argv);
}
