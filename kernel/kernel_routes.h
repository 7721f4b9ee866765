// The kernel's own routes: on the API listener the event stream and health, on the operator
// listener /metrics, the loaded plugins and (tests only) the clock. Plugins add theirs beside.
#pragma once

#include "database.h"
#include "event_log.h"
#include "event_types.h"
#include "metrics.h"
#include "openapi.h"
#include "plugin_host.h"
#include "router.h"

namespace svc::kernel {

/// Adds GET /api/events/stream/, GET /api/health/ and GET /api/schema/ (the API description of
/// every route the router holds when it is first asked) to the API router. Everything passed must
/// outlive the router's use.
void addKernelRoutes(Router& router, EventLog& events, EventTypeRegistry& event_types,
                     PluginHost& host, SqlDatabase& db, const ApiInfo& info);

/// Adds GET /metrics, GET /admin/plugins and, when testing_clock, POST /admin/clock/ to the
/// operator listener's router.
void addOperatorRoutes(Router& router, Metrics& metrics, PluginHost& host, bool testing_clock);

}  // namespace svc::kernel
