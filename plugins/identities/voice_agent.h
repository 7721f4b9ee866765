// An identity's voice-agent settings: where its calls' speech goes (response_url) and whether
// the agent answers. Its URL passes the SDK's public-address rule (sdk::checkedPublicUrl), which
// keeps svcd from being aimed at private networks.
#pragma once

#include "identity_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/identity_extensions.h>
#include <svc/sdk/storage.h>

#include <string>

namespace svc::plugins::identities {

/// The tests-only key that lets response URLs reach internal addresses, named when one is refused.
constexpr const char* kVoiceAllowPrivateUrlsKey = "identities.voice.allow_private_urls";

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
