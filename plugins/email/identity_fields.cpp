#include "identity_fields.h"

#include <Poco/JSON/Object.h>
#include <Poco/String.h>

namespace svc::plugins::email {

namespace {

Poco::Dynamic::Var member(const InboxAddress& inbox) {
  Poco::JSON::Object::Ptr e = new Poco::JSON::Object;
  e->set("id", inbox.id);
  e->set("address", inbox.address);
  return e;
}

}  // namespace

EmailIdentityExtension::EmailIdentityExtension(Inboxes& inboxes)
    : capability_(sdk::contractIdentityCapabilities().front()), inboxes_(inboxes) {}

void EmailIdentityExtension::validate(const sdk::Request& r) {
  auto identifier = r.stringField("email_identifier");
  if (identifier && !isValidInboxLocalPart(*identifier)) {
    throw sdk::HttpError::invalid("email_identifier",
                                  "1-64 of a-z 0-9 . _ -, starting and ending with a letter or "
                                  "digit, no two dots in a row");
  }
  r.stringField("domain");  // a domain that is not a string is 400 before anything is written
}

Poco::Dynamic::Var EmailIdentityExtension::provision(Poco::Data::Session& tx,
                                                     const sdk::IdentityInfo& identity,
                                                     const sdk::Request& r) {
  const std::string identifier = r.stringField("email_identifier").value_or("");
  const std::string domain = Poco::toLower(Poco::trim(r.stringField("domain").value_or("")));
  return member(inboxes_.provisionPrimary(tx, identity.account_id, identity.uuid, identity.name,
                                          identifier, domain));
}

std::map<std::string, Poco::Dynamic::Var> EmailIdentityExtension::describe(
    const std::vector<std::string>& identity_uuids) {
  std::map<std::string, Poco::Dynamic::Var> out;
  for (const auto& [uuid, inbox] : inboxes_.primaries(identity_uuids)) {
    out[uuid] = member(inbox);
  }
  return out;
}

sdk::Response EmailIdentityExtension::act(const std::string&, const sdk::IdentityInfo&,
                                          sdk::Request&) {
  throw sdk::HttpError::notFound("action");
}

}  // namespace svc::plugins::email
