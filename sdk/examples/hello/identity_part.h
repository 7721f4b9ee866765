// hello's part of every identity (svc/sdk/identity_extensions.h): a `hello` member with the
// identity's greeting, the create field `hello_greeting` that sets it, and the action
// `POST /api/identities/{uuid}/greet/` that greets the identity and publishes hello.greeted.
#pragma once

#include <svc/sdk/identity_extensions.h>
#include <svc/sdk/plugin.h>

#include <string>

namespace hello {

class HelloIdentityPart : public svc::sdk::IdentityExtension {
 public:
  HelloIdentityPart(svc::sdk::PluginContext& context, std::string default_greeting);
  const svc::sdk::IdentityCapability& capability() const override { return capability_; }
  void validate(const svc::sdk::Request& request) override;
  Poco::Dynamic::Var provision(Poco::Data::Session& transaction,
                               const svc::sdk::IdentityInfo& identity,
                               const svc::sdk::Request& request) override;
  std::map<std::string, Poco::Dynamic::Var> describe(
      const std::vector<std::string>& identity_uuids) override;
  svc::sdk::Response act(const std::string& action, const svc::sdk::IdentityInfo& identity,
                         svc::sdk::Request& request) override;

 private:
  Poco::Dynamic::Var member(const std::string& greeting) const;

  svc::sdk::PluginContext& context_;
  const std::string default_greeting_;
  const svc::sdk::IdentityCapability capability_{
      "hello", {{"hello_greeting", svc::sdk::IdentityField::Type::kString}}, {"greet"}};
};

}  // namespace hello
