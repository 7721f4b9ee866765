// The email plugin's part of every identity (sdk/identity_extensions.h): the `email` member
// (`{id, address}` of its primary inbox), the create fields `email_identifier` and `domain`, and
// the primary inbox made in the identity's own transaction.
#pragma once

#include "inboxes.h"

#include <svc/sdk/identity_extensions.h>

#include <memory>

namespace svc::plugins::email {

class EmailIdentityExtension : public sdk::IdentityExtension {
 public:
  explicit EmailIdentityExtension(Inboxes& inboxes);
  const sdk::IdentityCapability& capability() const override { return capability_; }
  /// `email_identifier`, when given, must follow the inbox local-part rule (400 naming it).
  void validate(const sdk::Request& request) override;
  Poco::Dynamic::Var provision(Poco::Data::Session& transaction, const sdk::IdentityInfo& identity,
                               const sdk::Request& request) override;
  std::map<std::string, Poco::Dynamic::Var> describe(
      const std::vector<std::string>& identity_uuids) override;
  /// Email has no identity actions. @throws HttpError 404.
  sdk::Response act(const std::string& action, const sdk::IdentityInfo& identity,
                    sdk::Request& request) override;

 private:
  sdk::IdentityCapability capability_;
  Inboxes& inboxes_;
};

}  // namespace svc::plugins::email
