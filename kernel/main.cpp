#include "memory_release.h"
#include "svcd_app.h"

int main(int argc, char** argv) {
  svc::kernel::limitMallocArenas();
  svc::kernel::SvcdApp app;
  return app.run(argc, argv);
}
