#include "voice_agent.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/Tuple.h>

#include <optional>
#include <vector>

using namespace Poco::Data::Keywords;

namespace svc::plugins::identities {

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
    if (new_url) {
      sdk::checkedPublicUrl(*new_url, "response_url", allow_private_urls_,
                            kVoiceAllowPrivateUrlsKey);
      url = *new_url;
    }
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
