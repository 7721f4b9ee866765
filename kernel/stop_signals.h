// The signals that stop svcd (SIGTERM, SIGINT, SIGQUIT), taken on a thread of their own. install()
// blocks them before any other thread starts, so every thread inherits the mask and no thread is
// killed by their default action. Once svcd has set out to serve, the first one asks it to stop:
// wait() returns, at once if it was asked while svcd was still starting, which then ends cleanly
// as soon as it is ready. A second one (a start or a drain that hangs), or any before svcd set out
// to serve (--check-config, --config-reference), ends the process at once with 128 + its number.
#pragma once

namespace svc::kernel::stop_signals {

/// Call first in main(), before any thread starts.
void install();
/// svcd sets out to serve: from now on the first signal asks it to stop instead of ending it.
void serving();
/// Returns once a stop has been asked for.
void wait();

}  // namespace svc::kernel::stop_signals
