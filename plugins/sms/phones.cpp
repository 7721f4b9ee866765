#include "phones.h"

#include "phone_text.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>
#include <Poco/String.h>

#include <set>

namespace svc::plugins::sms {

namespace {

constexpr int kRetryAfterSeconds = 300;
constexpr int kAttempts = 20;  // numbers taken by concurrent writers before giving up

sdk::HttpError noNumber(const std::string& country, const std::string& why) {
  return sdk::HttpError(503, "service_unavailable",
                        "No phone number can be provisioned in " + country + " now" + why +
                            "; try again later or ask for another country_code.")
      .header("Retry-After", std::to_string(kRetryAfterSeconds));
}

// A country the provider never has numbers in: asking again cannot help, asking for another may.
sdk::HttpError noNumbersIn(const std::string& country, const std::set<std::string>& served) {
  std::string others;
  for (const auto& c : served) others += (others.empty() ? "" : ", ") + c;
  return sdk::HttpError::invalid("country_code",
                                 "this server has no phone numbers in " + country +
                                     (others.empty() ? std::string("; it has none in any country")
                                                     : "; it has numbers in " + others));
}

Poco::JSON::Object::Ptr member(const PhoneRow& p) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", p.id);
  o->set("number", p.number);
  o->set("country_code", p.country_code);
  return o;
}

}  // namespace

sdk::HttpError phoneExists() {
  return sdk::HttpError(409, "phone_exists",
                        "This identity already has a phone number; GET /api/phone/ shows it.");
}

std::string requestedCountry(const sdk::Request& r) {
  const std::string country = Poco::toUpper(r.stringField("country_code").value_or("US"));
  if (!isCountryCode(country)) {
    throw sdk::HttpError::invalid("country_code", "must be an ISO 3166 alpha-2 code such as US");
  }
  return country;
}

void Phones::checkAllowed(Poco::Data::Session& s, const sdk::IdentityInfo& identity) {
  if (store_.phoneOfIdentity(s, identity.uuid)) throw phoneExists();
  if (per_account_ > 0 &&
      store_.countPhones(s, "WHERE account_id = ?", {identity.account_id}) >= per_account_) {
    throw sdk::HttpError(409, "conflict",
                         "This account holds " + std::to_string(per_account_) +
                             " phone numbers, the most this server allows an account "
                             "(sms.phones.per_account).");
  }
}

Number Phones::acquire(Poco::Data::Session& s, const std::string& country,
                       const std::set<std::string>& tried) {
  if (auto served = provider_.countries(); served && served->count(country) == 0) {
    throw noNumbersIn(country, *served);
  }
  std::optional<Number> number;
  try {
    number = provider_.acquire(country, [&](const std::string& n) {
      return tried.count(n) > 0 || store_.phoneByNumber(s, n).has_value();
    });
  } catch (const ProviderError& e) {
    // The carrier's words may name internal hosts: the log has them, the caller a sentence.
    logger_.warning("sms: acquiring a number in %s failed: %s", country, std::string(e.what()));
    throw noNumber(country, " (the carrier could not be reached or refused)");
  }
  if (!number) throw noNumber(country, "");
  if (sdk::normalizeE164(number->e164) != number->e164) {
    logger_.error("sms: the carrier gave a number that is not E.164: %s", number->e164);
    provider_.release(*number);
    throw noNumber(country, " (the carrier answered something unusable)");
  }
  return *number;
}

PhoneRow Phones::provision(Poco::Data::Session& tx, const sdk::IdentityInfo& identity,
                           const std::string& country, std::optional<Number>& held) {
  checkAllowed(tx, identity);
  std::set<std::string> tried;  // numbers another writer took while we were choosing
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (!held) held = acquire(tx, country, tried);
    PhoneRow p;
    p.id = sdk::newUuid();
    p.account_id = identity.account_id;
    p.identity_uuid = identity.uuid;
    p.number = held->e164;
    p.country_code = country;
    p.provider = provider_.name();
    p.provider_ref = held->ref;
    p.created_us = sdk::nowMicros();
    try {
      store_.insertPhone(tx, p);
      return p;
    } catch (const Poco::Exception& e) {
      provider_.release(*held);
      tried.insert(held->e164);
      held.reset();
      // The identity got one meanwhile (a concurrent provisioning: its unique index, named in
      // the error by both databases; a snapshot read would not see the other's row), or the
      // number went to another identity: then try the next.
      const std::string why = e.displayText();
      // MariaDB ends a deadlocked transaction whole: nothing after it may run in it.
      if (why.find("Deadlock") != std::string::npos) {
        throw sdk::HttpError(503, "service_unavailable",
                             "Another change to phone numbers collided with this one; try again.")
            .header("Retry-After", "1");
      }
      if (why.find("sms_phones_identity") != std::string::npos ||       // MariaDB's key name
          why.find("sms_phones.identity_uuid") != std::string::npos ||  // SQLite's column
          store_.phoneOfIdentity(tx, identity.uuid)) {
        throw phoneExists();
      }
    }
  }
  throw noNumber(country, " (every number offered was taken meanwhile)");
}

void Phones::provisionNow(const sdk::IdentityInfo& identity, const std::string& country) {
  // One purchase at a time per identity (in this process): a second request racing the first
  // would buy a number only to give it back.
  {
    std::lock_guard<std::mutex> lock(in_flight_mutex_);
    if (!in_flight_.insert(identity.uuid).second) throw phoneExists();
  }
  struct Done {
    Phones& phones;
    const std::string& uuid;
    ~Done() {
      std::lock_guard<std::mutex> lock(phones.in_flight_mutex_);
      phones.in_flight_.erase(uuid);
    }
  } done{*this, identity.uuid};
  std::optional<Number> held;
  {
    // The carrier is asked outside the transaction: a purchase taking seconds must not hold
    // the database's writers (SQLite has one).
    Poco::Data::Session s = store_.database().session();
    checkAllowed(s, identity);
    held = acquire(s, country, {});
  }
  try {
    store_.database().transaction(
        [&](Poco::Data::Session& tx) { provision(tx, identity, country, held); });
  } catch (...) {
    if (held) provider_.release(*held);  // acquired, then not kept
    throw;
  }
}

sdk::Response Phones::list(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  std::string where = "WHERE account_id = ?";
  std::vector<std::string> binds = {r.principal.account_id};
  if (std::string identity = sdk::scopeIdentity(r); !identity.empty()) {
    where += " AND identity_uuid = ?";
    binds.push_back(identity);
  }
  Poco::Data::Session s = store_.database().session();
  const long count = store_.countPhones(s, where, binds);
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (const auto& p : store_.phones(s, where, binds, page.limit, page.offset)) {
    results->add(SmsStore::phoneJson(p));
  }
  return sdk::Response::json(200, sdk::pageBody(r, page, count, results));
}

sdk::Response Phones::one(sdk::Request& r) {
  Poco::Data::Session s = store_.database().session();
  auto p = store_.phone(s, r.params.at("id"));
  if (!p || !sdk::visibleTo(r, p->account_id, p->identity_uuid)) {
    throw sdk::HttpError::notFound("phone");
  }
  return sdk::Response::json(200, SmsStore::phoneJson(*p));
}

PhoneIdentityExtension::PhoneIdentityExtension(Phones& phones, SmsStore& store)
    : phones_(phones), store_(store) {
  for (const auto& c : sdk::contractIdentityCapabilities()) {
    if (c.name == "phone") capability_ = c;
  }
}

void PhoneIdentityExtension::validate(const sdk::Request& r) {
  r.boolField("provision_phone");  // not a boolean: 400 before anything is written
  if (r.boolField("provision_phone").value_or(false)) requestedCountry(r);
}

void PhoneIdentityExtension::prepare(const sdk::IdentityInfo& identity, const sdk::Request& r) {
  if (!r.boolField("provision_phone").value_or(false)) return;
  std::optional<Number> number;
  {
    Poco::Data::Session s = store_.database().session();
    phones_.checkAllowed(s, identity);
    number = phones_.acquire(s, requestedCountry(r), {});
  }
  std::lock_guard<std::mutex> lock(mutex_);
  held_[identity.uuid] = *number;
}

Poco::Dynamic::Var PhoneIdentityExtension::provision(Poco::Data::Session& tx,
                                                     const sdk::IdentityInfo& identity,
                                                     const sdk::Request& r) {
  if (!r.boolField("provision_phone").value_or(false)) return {};
  std::optional<Number> held;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = held_.find(identity.uuid); it != held_.end()) held = it->second;
  }
  // What is held afterwards (the number kept, or nothing when provision() gave it back) is what
  // finish() gives back on a rollback.
  auto remember = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    if (held) {
      held_[identity.uuid] = *held;
    } else {
      held_.erase(identity.uuid);
    }
  };
  try {
    PhoneRow p = phones_.provision(tx, identity, requestedCountry(r), held);
    remember();
    return member(p);
  } catch (...) {
    remember();
    throw;
  }
}

void PhoneIdentityExtension::finish(const sdk::IdentityInfo& identity, const sdk::Request&,
                                    bool created) {
  std::optional<Number> held;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = held_.find(identity.uuid);
    if (it == held_.end()) return;
    held = it->second;
    held_.erase(it);
  }
  if (!created) phones_.release(*held);
}

std::map<std::string, Poco::Dynamic::Var> PhoneIdentityExtension::describe(
    const std::vector<std::string>& identity_uuids) {
  std::map<std::string, Poco::Dynamic::Var> out;
  if (identity_uuids.empty()) return out;
  Poco::Data::Session s = store_.database().session();
  for (const auto& uuid : identity_uuids) {
    if (auto p = store_.phoneOfIdentity(s, uuid)) out[uuid] = member(*p);
  }
  return out;
}

sdk::Response PhoneIdentityExtension::act(const std::string& action,
                                          const sdk::IdentityInfo& identity, sdk::Request& r) {
  if (action != "provision-phone") throw sdk::HttpError::notFound("action");
  phones_.provisionNow(identity, requestedCountry(r));
  return sdk::identityView(200);
}

}  // namespace svc::plugins::sms
