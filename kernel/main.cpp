#include "memory_release.h"
#include "svcd_app.h"

#include <signal.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // The signals that stop svcd are blocked before any thread starts, so that every thread inherits
  // the mask and only waitForTerminationRequest()'s sigwait takes them. Otherwise one that arrives
  // while svcd starts (or between its ready line and the wait) kills it by the default action, in
  // whichever thread did not block it: exit 143, nothing drained. Now it waits for svcd to be
  // ready, then stops it cleanly. (Poco leaves SIGINT to a debugger when POCO_ENABLE_DEBUGGER is
  // set.)
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGQUIT);
  if (!std::getenv("POCO_ENABLE_DEBUGGER")) sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  svc::kernel::limitMallocArenas();
  svc::kernel::SvcdApp app;
  return app.run(argc, argv);
}
