// Inboxes: the /api/email/ routes, addresses (asked for or generated from a name), and the
// provisioning service the identities plugin calls to give a new identity its primary inbox in
// its own transaction.
#pragma once

#include "domains.h"
#include "mail_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/inboxes.h>
#include <svc/sdk/plans.h>
#include <svc/sdk/plugin.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace svc::plugins::email {

/// What an inbox's local part must be (sdk::isValidInboxLocalPart), for error messages.
extern const char* const kLocalPartRule;

/// @param name an identity's name. @return the readable start of a generated local part
/// (`Support Bot!` gives `support-bot`): a-z and 0-9, other runs as one `-`, at most 40
/// characters, `agent` when nothing is left.
std::string addressSlug(const std::string& name);

/// @param field the field named in errors. @param raw a local part (on default_domain) or a
/// full address, any case. @return the address, lower case.
/// @throws HttpError 400 on field when it is not one an inbox may have.
std::string requestedAddress(const std::string& field, const std::string& raw,
                             const std::string& default_domain);

class Inboxes {
 public:
  Inboxes(sdk::PluginContext& context, MailStore& store, const Domains& domains);
  /// Looks up the plan service (offered by a plugin that need not be configured first).
  void start();

  // Handlers of /api/email/.
  sdk::Response list(sdk::Request& r);
  sdk::Response create(sdk::Request& r);
  sdk::Response availability(sdk::Request& r);
  sdk::Response one(sdk::Request& r);

  /// @return the inbox with this id when the request may see it. @throws HttpError 404.
  Inbox visibleInbox(const sdk::Request& r, const std::string& id);

  // sdk::InboxProvisioning, for the identities plugin.
  sdk::InboxAddress provisionPrimary(Poco::Data::Session& tx, const std::string& account_id,
                                     const std::string& identity_uuid, const std::string& name,
                                     const std::string& local_part, const std::string& domain);
  std::map<std::string, sdk::InboxAddress> primaries(const std::vector<std::string>& identities);

 private:
  std::string generatedAddress(Poco::Data::Session& s, const std::string& name,
                               const std::string& domain);

  sdk::PluginContext& context_;
  MailStore& store_;
  const Domains& domains_;
  std::shared_ptr<sdk::PlanService> plans_;
};

/// The service the identities plugin calls.
class Provisioning : public sdk::InboxProvisioning {
 public:
  explicit Provisioning(Inboxes& inboxes) : inboxes_(inboxes) {}
  sdk::InboxAddress createPrimary(Poco::Data::Session& tx, const std::string& account_id,
                                  const std::string& identity_uuid,
                                  const std::string& identity_name, const std::string& local_part,
                                  const std::string& domain) override;
  std::map<std::string, sdk::InboxAddress> primaryInboxes(
      const std::vector<std::string>& identity_uuids) override;

 private:
  Inboxes& inboxes_;
};

}  // namespace svc::plugins::email
