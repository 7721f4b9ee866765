#include "device_pages.h"

#include "html.h"

#include <svc/sdk/util.h>

#include <algorithm>

namespace svc::plugins::dashboard {

DevicePages::DevicePages(Site& site, const Poco::Util::AbstractConfiguration& config)
    : site_(site),
      // RFC 8628 §5.1: a person who enters wrong codes is slowed to a few per code lifetime.
      wrong_codes_(
          std::make_unique<sdk::RateLimiter>(config.getInt("dashboard.rate.wrong_codes"),
                                             config.getInt("auth.device.expires_seconds", 600))) {}

void DevicePages::registerIn(sdk::RouteRegistry& routes) {
  site_.add(routes, "GET", "/device", "Enter or confirm a device code.",
            [this](sdk::Request& r, Visitor& v) { return devicePage(r, v); });
  site_.add(routes, "POST", "/device", "Approve or deny a device code.",
            [this](sdk::Request& r, Visitor& v) { return deviceDecide(r, v); });
}

Page DevicePages::deviceEntry(const Visitor& v, const std::string& error, int status,
                              const std::string& typed) {
  std::string html = "<div class=\"card\"><h1>Approve a device</h1>";
  if (!error.empty()) html += "<p class=\"error\" role=\"alert\">" + escape(error) + "</p>";
  html += "<form method=\"post\" action=\"" + escape(site_.prefix()) + "/device\">" +
          Site::hidden("csrf", v.csrf) +
          "<label for=\"user_code\">Enter the code your agent shows</label>"
          "<input type=\"text\" id=\"user_code\" name=\"user_code\" autocomplete=\"off\" "
          "autocapitalize=\"characters\" spellcheck=\"false\" maxlength=\"16\" "
          "placeholder=\"XXXX-XXXX\" required value=\"" +
          escape(typed) + "\"><button type=\"submit\">Continue</button></form></div>";
  Page p;
  p.status = status;
  p.title = "Approve a device";
  p.content = html;
  return p;
}

Page DevicePages::tooManyCodes(const Visitor& v, int wait) {
  return deviceEntry(
      v, "Too many wrong codes. Try again in " + std::to_string((wait + 59) / 60) + " min.", 429);
}

Page DevicePages::deviceConfirm(const Visitor& v, const sdk::DeviceRequest& d) {
  const std::int64_t minutes =
      std::max<std::int64_t>(1, (d.expires_us - sdk::nowMicros()) / 60000000);
  std::string who = d.client_id.empty() ? "An agent" : "“" + escape(d.client_id) + "”";
  std::string html = "<div class=\"card\"><h1>Approve this device?</h1><p>" + who +
                     " asks to act for your account" +
                     (v.user->account_id.empty() ? " (approving creates your account)" : "") +
                     ". Check that the code matches the one it shows:</p><p class=\"code\" "
                     "id=\"code\">" +
                     escape(d.user_code) + "</p><p class=\"muted\">The code expires in " +
                     std::to_string(minutes) + " min.</p><form method=\"post\" action=\"" +
                     escape(site_.prefix()) + "/device\">" + Site::hidden("csrf", v.csrf) +
                     Site::hidden("user_code", d.user_code) +
                     "<div class=\"row\"><button type=\"submit\" name=\"decision\" "
                     "value=\"approve\" id=\"approve\">Approve</button><button type=\"submit\" "
                     "name=\"decision\" value=\"deny\" class=\"danger\" "
                     "id=\"deny\">Deny</button></div></form></div>";
  Page p;
  p.title = "Approve this device?";
  p.content = html;
  return p;
}

Page DevicePages::devicePage(sdk::Request& r, Visitor& v) {
  auto code = r.queryParam("user_code");
  if (!v.user) {
    return site_.signInFirst(site_.prefix() + "/device" +
                             (code ? "?user_code=" + urlEncode(code->substr(0, 32)) : ""));
  }
  if (!code || code->empty()) return deviceEntry(v, "", 200);
  if (int wait = wrong_codes_->peek(v.user->id)) return tooManyCodes(v, wait);
  if (auto d = site_.accounts().pendingDevice(code->substr(0, 32))) return deviceConfirm(v, *d);
  wrong_codes_->take(v.user->id);
  return deviceEntry(v, "This code is unknown or has expired. Check it and try again.", 404,
                     code->substr(0, 16));
}

Page DevicePages::deviceDecide(sdk::Request& r, Visitor& v) {
  if (!v.user) return site_.signInFirst(site_.prefix() + "/device");
  if (!site_.csrfOk(r, v)) return site_.csrfRefused();
  const std::string code = formField(r, "user_code").substr(0, 32);
  const std::string decision = formField(r, "decision");
  if (int wait = wrong_codes_->peek(v.user->id)) return tooManyCodes(v, wait);
  if (decision.empty()) {
    auto d = site_.accounts().pendingDevice(code);
    if (d) return deviceConfirm(v, *d);
  } else if (decision == "approve" || decision == "deny") {
    const bool approve = decision == "approve";
    if (site_.accounts().decideDevice(code, v.user->id, approve) == sdk::DeviceDecision::kDone) {
      return site_.message(200, approve ? "Device approved" : "Device denied",
                           approve ? "<p class=\"note\" id=\"result\">Approved. The agent now has "
                                     "its key; you can close this window.</p>"
                                   : "<p class=\"note\" id=\"result\">Denied. The agent gets no "
                                     "access.</p>");
    }
  } else {
    return deviceEntry(v, "Choose approve or deny.", 400, code);
  }
  wrong_codes_->take(v.user->id);
  return deviceEntry(v, "This code is unknown or has expired. Check it and try again.", 404,
                     code.substr(0, 16));
}

}  // namespace svc::plugins::dashboard
