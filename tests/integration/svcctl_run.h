// Runs the real build/bin/svcctl against a test's svcd, for the svcctl integration tests.
#pragma once

#include "harness.h"

#include <string>
#include <utility>

namespace svc::testing {

/// Runs svcctl with `svcd`'s API and operator addresses, its operator token and `key`, then
/// `args` (shell words). @return its exit code and what it printed (stdout, and stderr too
/// unless `stdout_only`).
inline std::pair<int, std::string> runSvcctl(const Svcd& svcd, const std::string& key,
                                             const std::string& args, bool stdout_only = false) {
  // In a subshell: runCommand sends stderr to stdout after the whole line. Bounded, so a command
  // that waits for ever (a tail whose event never comes) fails its test instead of hanging it.
  return runCommand("(timeout 300 '" + binDir() + "/svcctl' --url http://127.0.0.1:" +
                    std::to_string(svcd.port()) + (key.empty() ? "" : " --key " + key) +
                    " --admin http://127.0.0.1:" + std::to_string(svcd.adminPort()) +
                    " --admin-token " + svcd.adminToken() + " " + args +
                    (stdout_only ? " 2>/dev/null)" : ")"));
}

}  // namespace svc::testing
