// Inboxes: the /api/email/ routes, addresses (asked for or generated from a name), and each new
// identity's primary inbox, made in the identity's own transaction (identity_fields.h).
#pragma once

#include "domains.h"
#include "mail_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/plans.h>
#include <svc/sdk/plugin.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::email {

/// An identity's primary inbox as the identity resource shows it (`email: {id, address}`).
struct InboxAddress {
  std::string id;       ///< The inbox's id.
  std::string address;  ///< Its full address, lower-case.
};

/// The one rule for the local part of an inbox's address, wherever one is named (identity
/// creation, extra inboxes, availability checks, SMTP recipients): 1-64 of `a-z 0-9 . _ -`,
/// starting and ending with a letter or digit, no two dots in a row. It is a strict subset of an
/// RFC 5321 dot-atom, so every inbox it allows is one that mail can reach.
/// @param local a candidate local part (already lower-cased where the caller folds case).
bool isValidInboxLocalPart(std::string_view local);

/// What an inbox's local part must be (isValidInboxLocalPart), for error messages.
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

  /// Creates an identity's primary inbox inside the identity's transaction tx.
  /// @param local_part the requested local part, or empty. @param domain the domain, or empty.
  /// @throws HttpError 400 naming `email_identifier` or `domain`, 409 `email_taken`.
  InboxAddress provisionPrimary(Poco::Data::Session& tx, const std::string& account_id,
                                const std::string& identity_uuid, const std::string& name,
                                const std::string& local_part, const std::string& domain);
  /// @return the primary inbox of each identity that has one.
  std::map<std::string, InboxAddress> primaries(const std::vector<std::string>& identities);

 private:
  std::string generatedAddress(Poco::Data::Session& s, const std::string& name,
                               const std::string& domain);

  sdk::PluginContext& context_;
  MailStore& store_;
  const Domains& domains_;
  std::shared_ptr<sdk::PlanService> plans_;
};

}  // namespace svc::plugins::email
