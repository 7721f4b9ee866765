#include "loopback_provider.h"

namespace svc::plugins::sms {

LoopbackProvider::LoopbackProvider(std::vector<NumberRange> ranges, CarrierEvents& events)
    : ranges_(std::move(ranges)), events_(events) {}

std::optional<Number> LoopbackProvider::acquire(
    const std::string& country, const std::function<bool(const std::string&)>& taken) {
  for (const auto& r : ranges_) {
    if (r.country != country) continue;
    for (std::uint64_t i = 0; i < r.size; ++i) {
      std::string n = r.at(i);
      if (!taken(n)) return Number{n, ""};
    }
  }
  return std::nullopt;
}

std::optional<std::set<std::string>> LoopbackProvider::countries() const {
  std::set<std::string> out;
  for (const auto& r : ranges_) out.insert(r.country);
  return out;
}

Delivery LoopbackProvider::send(const std::string& message_id, const std::string& from,
                                const std::string& to, const std::string& body) {
  if (events_.received({from, to, body, "loopback-in:" + message_id})) {
    return {"delivered", "loopback:" + message_id, "", ""};
  }
  return {"undelivered", "loopback:" + message_id, "loopback_unreachable",
          "The loopback provider delivers only to numbers of this server; " + to +
              " is not one (configure sms.provider=twilio or pool to reach real phones)."};
}

}  // namespace svc::plugins::sms
