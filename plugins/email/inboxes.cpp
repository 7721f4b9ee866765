#include "inboxes.h"

#include "mime.h"
#include "request_scope.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/JSON/Array.h>
#include <Poco/String.h>
#include <Poco/Tuple.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

bool isValidInboxLocalPart(std::string_view local) {
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

const char* const kLocalPartRule =
    "the local part must be 1-64 of a-z 0-9 . _ -, starting and ending with a letter or digit, "
    "with no two dots in a row";

namespace {

// An inbox's address must be one SMTP accepts, which caps the whole address (RFC 5321 4.5.3.1).
constexpr const char* kTooLong = "the address must be at most 254 characters";

}  // namespace

std::string addressSlug(const std::string& name) {
  std::string slug;
  for (unsigned char c : Poco::toLower(name)) {
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      slug += static_cast<char>(c);
    } else if (!slug.empty() && slug.back() != '-') {
      slug += '-';
    }
    if (slug.size() >= 40) break;
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "agent" : slug;
}

std::string requestedAddress(const std::string& field, const std::string& raw,
                             const std::string& default_domain) {
  std::string value = Poco::toLower(Poco::trim(raw));
  if (sdk::hasControlCharacter(value))
    throw sdk::HttpError::invalid(field, "must not contain control characters");
  std::size_t at = value.find('@');
  std::string local = at == std::string::npos ? value : value.substr(0, at);
  std::string domain = at == std::string::npos ? default_domain : value.substr(at + 1);
  if (!isValidInboxLocalPart(local)) throw sdk::HttpError::invalid(field, kLocalPartRule);
  if (!sdk::isValidDomain(domain)) throw sdk::HttpError::invalid(field, "not a valid domain");
  if (!sdk::isValidEmailAddress(local + "@" + domain))
    throw sdk::HttpError::invalid(field, kTooLong);
  return local + "@" + domain;
}

Inboxes::Inboxes(sdk::PluginContext& context, MailStore& store, const Domains& domains)
    : context_(context), store_(store), domains_(domains) {}

void Inboxes::start() {
  plans_ = context_.services().find(sdk::kPlanService);
}

InboxAddress Inboxes::provisionPrimary(Poco::Data::Session& tx, const std::string& account_id,
                                       const std::string& identity_uuid, const std::string& name,
                                       const std::string& local_part,
                                       const std::string& domain_in) {
  std::string domain = domain_in.empty() ? domains_.defaultDomain() : Poco::toLower(domain_in);
  if (!domains_.usableBy(tx, account_id, domain)) {
    throw sdk::HttpError::invalid("domain", "'" + domain_in +
                                                "' is neither a platform domain nor a verified "
                                                "domain of this account");
  }
  Inbox inbox;
  inbox.id = sdk::newUuid();
  inbox.account_id = account_id;
  inbox.identity_uuid = identity_uuid;
  inbox.is_primary = true;
  inbox.created_us = sdk::nowMicros();
  if (!local_part.empty()) {
    // The service checks what any caller asks for, not only what the identities plugin sends.
    const std::string local = Poco::toLower(local_part);
    if (!isValidInboxLocalPart(local)) {
      throw sdk::HttpError::invalid("email_identifier", kLocalPartRule);
    }
    inbox.address = local + "@" + domain;
    if (!sdk::isValidEmailAddress(inbox.address))
      throw sdk::HttpError::invalid("email_identifier", kTooLong);
    if (store_.inboxByAddress(tx, inbox.address)) throw emailTaken(inbox.address);
  } else {
    inbox.address = generatedAddress(tx, name, domain);
  }
  try {
    store_.insertInbox(tx, inbox);
  } catch (const Poco::Exception&) {
    throw emailTaken(inbox.address);  // another writer took it between the check and here
  }
  return {inbox.id, inbox.address};
}

std::map<std::string, InboxAddress> Inboxes::primaries(const std::vector<std::string>& identities) {
  std::map<std::string, InboxAddress> out;
  if (identities.empty()) return out;
  Poco::Data::Session s = context_.database().session();
  for (const auto& id : identities) {
    if (auto inbox = store_.primaryInbox(s, id)) out[id] = {inbox->id, inbox->address};
  }
  return out;
}

// A readable local part from the identity's name (`support-bot-k7m2`), unique.
std::string Inboxes::generatedAddress(Poco::Data::Session& s, const std::string& name,
                                      const std::string& domain) {
  const std::string slug = addressSlug(name);
  static const char* alphabet = "abcdefghjkmnpqrstuvwxyz23456789";
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::string token = sdk::randomToken(8);
    std::string suffix;
    for (int i = 0; i < 4; ++i) suffix += alphabet[static_cast<unsigned char>(token[i]) % 31];
    std::string address = slug + "-" + suffix + "@" + domain;
    if (!store_.inboxByAddress(s, address)) return address;
  }
  // Twenty random suffixes all taken: a passing streak of bad luck, not a full namespace.
  throw sdk::HttpError(503, "service_unavailable",
                       "No free address could be generated this time; retry, or ask for an "
                       "address of your own with `email`.")
      .header("Retry-After", "1");
}

sdk::Response Inboxes::list(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  Poco::Data::Session s = context_.database().session();
  std::string account = r.principal.account_id, identity = sdk::scopeIdentity(r);
  std::string where =
      "WHERE account_id = ?" + std::string(identity.empty() ? "" : " AND identity_uuid = ?");
  long count = 0;
  {
    Poco::Data::Statement q = (s << "SELECT COUNT(*) FROM email_inboxes " + where, use(account));
    if (!identity.empty()) q, use(identity);
    q, into(count), now;
  }
  using T = Poco::Tuple<std::string, std::string, std::string, std::string, int, Poco::Int64>;
  std::vector<T> rows;
  int limit = page.limit, offset = page.offset;
  Poco::Data::Statement q =
      (s << "SELECT id, account_id, identity_uuid, address, is_primary, created_us FROM "
            "email_inboxes " +
                where + " ORDER BY created_us DESC, id LIMIT ? OFFSET ?",
       use(account));
  if (!identity.empty()) q, use(identity);
  q, use(limit), use(offset), into(rows), now;
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (const auto& t : rows) {
    results->add(MailStore::inboxJson(
        {t.get<0>(), t.get<1>(), t.get<2>(), t.get<3>(), t.get<4>() != 0, t.get<5>()}));
  }
  return sdk::Response::json(200, sdk::pageBody(r, page, count, results));
}

sdk::Response Inboxes::availability(sdk::Request& r) {
  std::string address =
      requestedAddress("email", r.queryParam("email").value_or(""), domains_.defaultDomain());
  Poco::Data::Session s = context_.database().session();
  bool available = domains_.usableBy(s, r.principal.account_id, domainOf(address)) &&
                   !store_.inboxByAddress(s, address);
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("available", available);
  o->set("email", address);
  return sdk::Response::json(200, o);
}

sdk::Response Inboxes::create(sdk::Request& r) {
  std::string identity = sdk::scopeIdentity(r);
  if (auto from_body = r.stringField("identity")) {
    std::string named = Poco::toLower(*from_body);
    if (!identity.empty() && named != identity) {
      if (r.principal.kind == sdk::PrincipalKind::kIdentity) {
        throw sdk::HttpError(403, "permission_denied",
                             "This identity key is bound to another identity.");
      }
      throw sdk::HttpError::invalid("identity", "disagrees with the identity the request names");
    }
    identity = named;
  }
  if (identity.empty()) {
    throw sdk::HttpError(400, "identity_required",
                         "Name the identity: in the body, with ?identity=<uuid>, or by using "
                         "an identity key.");
  }
  if (!r.identity) {  // named only in the body: fence it like the kernel fences identity=
    auto directory = context_.services().find(sdk::kIdentityDirectoryService);
    if (!directory || !directory->find(r.principal.account_id, identity)) {
      throw sdk::HttpError::notFound("identity");
    }
  }
  if (!plans_ || !plans_->isActive(r.principal.account_id)) {
    throw sdk::HttpError(402, "subscription_required",
                         "An active subscription is required. The account's plan is set by "
                         "this server's operator (svcctl accounts plan ACCOUNT_ID active): ask "
                         "them to activate it, then retry.");
  }
  Inbox inbox;
  inbox.id = sdk::newUuid();
  inbox.account_id = r.principal.account_id;
  inbox.identity_uuid = identity;
  inbox.created_us = sdk::nowMicros();
  context_.database().transaction([&](Poco::Data::Session& tx) {
    if (auto raw = r.stringField("email")) {
      inbox.address = requestedAddress("email", *raw, domains_.defaultDomain());
      if (!domains_.usableBy(tx, inbox.account_id, domainOf(inbox.address))) {
        throw sdk::HttpError::invalid("email",
                                      "the domain is neither a platform domain nor a "
                                      "verified domain of this account");
      }
      if (store_.inboxByAddress(tx, inbox.address)) throw emailTaken(inbox.address);
    } else {
      auto directory = context_.services().find(sdk::kIdentityDirectoryService);
      auto ref = directory ? directory->find(inbox.account_id, identity) : std::nullopt;
      inbox.address =
          generatedAddress(tx, ref ? ref->name : std::string(), domains_.defaultDomain());
    }
    inbox.is_primary = !store_.primaryInbox(tx, identity).has_value();
    try {
      store_.insertInbox(tx, inbox);
    } catch (const Poco::Exception&) {
      throw emailTaken(inbox.address);
    }
  });
  return sdk::Response::json(201, MailStore::inboxJson(inbox));
}

Inbox Inboxes::visibleInbox(const sdk::Request& r, const std::string& id) {
  Poco::Data::Session s = context_.database().session();
  auto inbox = store_.inboxById(s, id);
  if (!inbox || !sdk::visibleTo(r, inbox->account_id, inbox->identity_uuid)) {
    throw sdk::HttpError::notFound("inbox");
  }
  return *inbox;
}

sdk::Response Inboxes::one(sdk::Request& r) {
  return sdk::Response::json(200, MailStore::inboxJson(visibleInbox(r, r.params.at("id"))));
}

}  // namespace svc::plugins::email
