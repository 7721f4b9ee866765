// Inbox provisioning: how the identities plugin gives a new identity its email inbox.
//
// The email plugin owns inboxes and offers this service. Creating an identity creates its primary
// inbox in the same database transaction, so an identity never exists without its address and a
// taken address leaves nothing behind. When no plugin offers it, identities have no email.
#pragma once

#include <svc/sdk/services.h>

#include <Poco/Data/Session.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::sdk {

/// An identity's inbox as the identity resource shows it (`email: {id, address}`).
struct InboxAddress {
  std::string id;       ///< The inbox's id.
  std::string address;  ///< Its full address, lower-case.
};

/// Offered as kInboxProvisioningService.
class InboxProvisioning {
 public:
  virtual ~InboxProvisioning();
  /// Creates an identity's primary inbox inside the caller's transaction.
  /// @param transaction the session of the transaction creating the identity.
  /// @param account_id the account. @param identity_uuid the new identity.
  /// @param identity_name its name (a generated address is made readable from it).
  /// @param local_part the requested local part, or empty. @param domain the domain, or empty.
  /// @return the inbox. @throws HttpError 400 naming `email_identifier` (not
  /// isValidInboxLocalPart, or too long an address) or `domain`, 409
  /// `email_taken` (also when another writer took the address first); the caller rolls back.
  virtual InboxAddress createPrimary(Poco::Data::Session& transaction,
                                     const std::string& account_id,
                                     const std::string& identity_uuid,
                                     const std::string& identity_name,
                                     const std::string& local_part, const std::string& domain) = 0;
  /// @param identity_uuids identities. @return the primary inbox of each that has one.
  virtual std::map<std::string, InboxAddress> primaryInboxes(
      const std::vector<std::string>& identity_uuids) = 0;
};

/// The one rule for the local part of an inbox's address, wherever one is named (identity
/// creation, extra inboxes, availability checks, SMTP recipients): 1-64 of `a-z 0-9 . _ -`,
/// starting and ending with a letter or digit, no two dots in a row. It is a strict subset of an
/// RFC 5321 dot-atom, so every inbox it allows is one that mail can reach. Inline, so plugins
/// share it without a new symbol in the SDK library.
/// @param local a candidate local part (already lower-cased where the caller folds case).
/// @return whether an inbox may have it.
inline bool isValidInboxLocalPart(std::string_view local) {
  if (local.empty() || local.size() > 64) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(local.front()) || !alnum(local.back())) return false;
  for (std::size_t i = 0; i < local.size(); ++i) {
    const char c = local[i];
    if (c == '.' && local[i - 1] == '.') return false;  // i > 0: the first is a letter or digit
    if (!alnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

/// The key of the InboxProvisioning service.
inline constexpr ServiceKey<InboxProvisioning> kInboxProvisioningService{
    "svc.inbox-provisioning.v1"};

}  // namespace svc::sdk
