// What the request pipeline needs from the rest of the kernel, gathered in one place.
#pragma once

#include "access_log.h"
#include "access_watch.h"
#include "database.h"
#include "metrics.h"
#include "router.h"
#include "services.h"
#include "stream_hub.h"

#include <Poco/Logger.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace svc::kernel {

struct PipelineLimits {
  std::size_t max_body_bytes = 1 << 20;
};

struct Runtime {
  Router* router = nullptr;
  ServiceTable* services = nullptr;
  StreamHub* hub = nullptr;
  AccessWatch* access = nullptr;  ///< ends held requests whose access is revoked (null: none)
  Metrics* metrics = nullptr;
  PipelineLimits limits;
  std::string base_url;
  std::string operator_token;       ///< what kOperator routes need (the admin listener's runtime)
  AccessLog* access_log = nullptr;  ///< null when log.level is above information
  Poco::Logger* error_log = nullptr;
  bool check_responses = false;  ///< server.check_responses (response_check.h)
  /// Path prefixes of installed plugins that are not enabled, with their names.
  std::vector<std::pair<std::string, std::string>> dormant_paths;
};

}  // namespace svc::kernel
