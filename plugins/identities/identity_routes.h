// The identity routes of the contract: list, create (with every extension provisioning in the
// identity's transaction), read and rename, voice-agent settings and extension actions.
#pragma once

#include "extensions.h"
#include "identity_store.h"
#include "voice_agent.h"

#include <svc/sdk/plugin.h>

namespace svc::plugins::identities {

class IdentityRoutes {
 public:
  IdentityRoutes(sdk::PluginContext& context, IdentityStore& store, Directory& directory,
                 Extensions& extensions, VoiceAgents& voice)
      : context_(context),
        store_(store),
        directory_(directory),
        extensions_(extensions),
        voice_(voice) {}
  void registerIn(sdk::RouteRegistry& routes);

  sdk::Response list(sdk::Request& r);
  sdk::Response create(sdk::Request& r);
  sdk::Response one(sdk::Request& r);
  /// Runs the action `name` (a contract action's own route, or the {action} of the generic one)
  /// through the extension that declares it.
  sdk::Response action(sdk::Request& r, const std::string& name);

 private:
  /// The identity a {uuid} route names, fenced like the kernel fences `identity=`: an identity
  /// key reaches only its own (403 otherwise); another account's or a missing one is 404.
  Identity target(const sdk::Request& r);
  Poco::JSON::Object::Ptr json(const Identity& i);
  void publish(Poco::Data::Session& s, const std::string& type, const Identity& i,
               const Poco::JSON::Object::Ptr& body);

  sdk::PluginContext& context_;
  IdentityStore& store_;
  Directory& directory_;
  Extensions& extensions_;
  VoiceAgents& voice_;
};

}  // namespace svc::plugins::identities
