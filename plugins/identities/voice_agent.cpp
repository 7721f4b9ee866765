#include "voice_agent.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/Net/DNS.h>
#include <Poco/Tuple.h>
#include <Poco/URI.h>

#include <optional>
#include <vector>

using namespace Poco::Data::Keywords;

namespace svc::plugins::identities {

bool internalAddress(const Poco::Net::IPAddress& a) {
  if (a.isLoopback() || a.isLinkLocal() || a.isSiteLocal() || a.isWildcard() || a.isMulticast() ||
      a.isBroadcast()) {
    return true;
  }
  const auto* bytes = static_cast<const unsigned char*>(a.addr());
  if (a.family() == Poco::Net::IPAddress::IPv4) {
    if (bytes[0] == 0) return true;                               // 0.0.0.0/8
    if (bytes[0] == 100 && (bytes[1] & 0xC0) == 64) return true;  // 100.64.0.0/10
    if (bytes[0] == 169 && bytes[1] == 254) return true;          // link-local
    return false;
  }
  if ((bytes[0] & 0xFE) == 0xFC) return true;  // fc00::/7 unique local
  if (a.isIPv4Mapped() || a.isIPv4Compatible()) {
    return internalAddress(Poco::Net::IPAddress(bytes + 12, 4));
  }
  return false;
}

std::string checkedResponseUrl(const std::string& raw, bool allow_private) {
  if (raw.size() > 2048) throw sdk::HttpError::invalid("response_url", "at most 2048 characters");
  Poco::URI uri;
  try {
    uri = Poco::URI(raw);
  } catch (const Poco::Exception&) {
    throw sdk::HttpError::invalid("response_url", "must be an absolute http or https URL");
  }
  if ((uri.getScheme() != "http" && uri.getScheme() != "https") || uri.getHost().empty()) {
    throw sdk::HttpError::invalid("response_url", "must be an absolute http or https URL");
  }
  if (!uri.getUserInfo().empty()) {
    throw sdk::HttpError::invalid("response_url", "must not carry credentials");
  }
  if (allow_private) return raw;
  std::vector<Poco::Net::IPAddress> addresses;
  Poco::Net::IPAddress literal;
  if (Poco::Net::IPAddress::tryParse(uri.getHost(), literal)) {
    addresses.push_back(literal);
  } else {
    try {
      addresses = Poco::Net::DNS::hostByName(uri.getHost()).addresses();
    } catch (const Poco::Exception&) {
      throw sdk::HttpError::invalid("response_url", "the host name does not resolve");
    }
  }
  if (addresses.empty()) {
    throw sdk::HttpError::invalid("response_url", "the host name does not resolve");
  }
  for (const auto& a : addresses) {
    if (internalAddress(a)) {
      throw sdk::HttpError::invalid("response_url",
                                    "must not point at a loopback, private or link-local "
                                    "address");
    }
  }
  return raw;
}

std::optional<sdk::VoiceAgentSettings> VoiceAgents::voiceAgent(const std::string& identity_uuid) {
  Poco::Data::Session s = db_.session();
  std::vector<Poco::Tuple<std::string, int>> rows;
  std::string uuid = identity_uuid;
  s << "SELECT response_url, enabled FROM identity_voice_agents WHERE identity_uuid = ?", use(uuid),
      into(rows), now;
  if (rows.empty()) return std::nullopt;
  return sdk::VoiceAgentSettings{rows.front().get<0>(), rows.front().get<1>() != 0};
}

sdk::Response VoiceAgents::serve(const Identity& i, sdk::Request& r) {
  Poco::Data::Session s = db_.session();
  using VoiceRow = Poco::Tuple<std::string, int, Poco::Int64>;
  std::vector<VoiceRow> rows;
  std::string uuid = i.uuid;
  s << "SELECT response_url, enabled, updated_us FROM identity_voice_agents WHERE "
       "identity_uuid = ?",
      use(uuid), into(rows), now;
  std::optional<std::string> url;
  bool enabled = false;
  std::int64_t updated = 0;
  if (!rows.empty()) {
    url = rows.front().get<0>();
    enabled = rows.front().get<1>() != 0;
    updated = rows.front().get<2>();
  }
  if (r.method != "GET") {
    // The body fits the route's declaration (PUT: response_url present; both typed).
    auto new_url = r.stringField("response_url");
    auto new_enabled = r.boolField("enabled");
    if (new_url) url = checkedResponseUrl(*new_url, allow_private_urls_);
    if (new_enabled) {
      enabled = *new_enabled;
    } else if (r.method == "PUT") {
      enabled = true;  // setting a URL with PUT turns the agent on unless told otherwise
    }
    if (!url) throw sdk::HttpError::invalid("response_url", "set a response_url first");
    updated = sdk::nowMicros();
    db_.transaction([&](Poco::Data::Session& t) {
      std::string address = *url;
      int on = enabled ? 1 : 0;
      Poco::Int64 at = updated;
      Poco::Data::Statement update =
          (t << "UPDATE identity_voice_agents SET response_url = ?, enabled = ?, updated_us = "
                "? WHERE identity_uuid = ?",
           use(address), use(on), use(at), use(uuid));
      if (update.execute() == 0) {
        t << "INSERT INTO identity_voice_agents (identity_uuid, response_url, enabled, "
             "created_us, updated_us) VALUES (?, ?, ?, ?, ?)",
            use(uuid), use(address), use(on), use(at), bind(at), now;
      }
    });
  }
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("response_url", url ? Poco::Dynamic::Var(*url) : Poco::Dynamic::Var());
  o->set("enabled", enabled);
  o->set("updated_dt",
         updated ? Poco::Dynamic::Var(sdk::isoTimestamp(updated)) : Poco::Dynamic::Var());
  return sdk::Response::json(200, o);
}

}  // namespace svc::plugins::identities
