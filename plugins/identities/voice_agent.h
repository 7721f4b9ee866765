// An identity's voice-agent settings: where its calls' speech goes (response_url) and whether
// the agent answers, with the URL checks that keep svcd from being aimed at private networks.
#pragma once

#include "identity_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/identity_extensions.h>
#include <svc/sdk/storage.h>

#include <Poco/Net/IPAddress.h>

#include <string>

namespace svc::plugins::identities {

/// @return true for addresses a server-side fetch must not reach unless allowed: loopback,
/// private (RFC 1918, RFC 4193), link-local, carrier-grade NAT, unspecified, multicast.
bool internalAddress(const Poco::Net::IPAddress& address);

/// @param raw a requested response_url. @param allow_private whether internal addresses may be
/// named. @return it. @throws HttpError 400 naming `response_url`: not http(s), credentials,
/// unresolvable, or (unless allowed) resolving to an internal address.
std::string checkedResponseUrl(const std::string& raw, bool allow_private);

class VoiceAgents : public sdk::VoiceAgentDirectory {
 public:
  VoiceAgents(sdk::Database& db, bool allow_private_urls)
      : db_(db), allow_private_urls_(allow_private_urls) {}
  /// GET, PUT or PATCH /api/identities/{uuid}/voice-agent/ for identity i.
  sdk::Response serve(const Identity& i, sdk::Request& r);
  std::optional<sdk::VoiceAgentSettings> voiceAgent(const std::string& identity_uuid) override;

 private:
  sdk::Database& db_;
  const bool allow_private_urls_;
};

}  // namespace svc::plugins::identities
