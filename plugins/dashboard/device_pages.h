// Device approval (RFC 8628 §3.3): the signed-in person enters or confirms the code an agent
// shows, then approves or denies it. Wrong codes are rate-limited per person.
#pragma once

#include "site.h"

#include <svc/sdk/plugin.h>
#include <svc/sdk/rate_limit.h>

#include <memory>
#include <string>

namespace svc::plugins::dashboard {

class DevicePages {
 public:
  /// @param site the dashboard. @param config the plugin's configuration (the wrong-code limit).
  DevicePages(Site& site, const Poco::Util::AbstractConfiguration& config);
  /// Registers GET and POST /device.
  void registerIn(sdk::RouteRegistry& routes);

 private:
  Page deviceEntry(const Visitor& v, const std::string& error, int status,
                   const std::string& typed = "");
  Page tooManyCodes(const Visitor& v, int wait);
  Page deviceConfirm(const Visitor& v, const sdk::DeviceRequest& d);
  Page devicePage(sdk::Request& r, Visitor& v);
  Page deviceDecide(sdk::Request& r, Visitor& v);

  Site& site_;
  std::unique_ptr<sdk::RateLimiter> wrong_codes_;
};

}  // namespace svc::plugins::dashboard
