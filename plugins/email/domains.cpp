#include "domains.h"

#include "dns_txt.h"
#include "mime.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/JSON/Array.h>
#include <Poco/String.h>

#include <algorithm>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

std::string domainOf(const std::string& address) {
  return Poco::toLower(address.substr(address.rfind('@') + 1));
}

std::string requestedDomain(const std::string& raw) {
  std::string name = Poco::toLower(Poco::trim(raw));
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (!sdk::isValidDomain(name)) throw sdk::HttpError::invalid("name", "not a valid domain name");
  return name;
}

Poco::JSON::Object::Ptr domainJson(const std::string& name, const std::string& kind,
                                   const std::string& status, std::int64_t created_us,
                                   const std::string& token) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("name", name);
  o->set("kind", kind);
  o->set("status", status);
  o->set("created_dt",
         created_us ? Poco::Dynamic::Var(sdk::isoTimestamp(created_us)) : Poco::Dynamic::Var());
  if (kind == "custom") {
    Poco::JSON::Object::Ptr record = new Poco::JSON::Object;
    record->set("type", "TXT");
    record->set("name", "_svc-verification." + name);
    record->set("value", "svc-verification=" + token);
    o->set("dns_record", record);
  }
  return o;
}

Domains::Domains(sdk::Database& database, std::vector<std::string> platform, std::string dns_server)
    : database_(database), platform_(std::move(platform)), dns_server_(std::move(dns_server)) {}

bool Domains::isPlatform(const std::string& domain) const {
  return std::find(platform_.begin(), platform_.end(), domain) != platform_.end();
}

bool Domains::isLocal(Poco::Data::Session& s, const std::string& domain) const {
  if (isPlatform(domain)) return true;
  long n = 0;
  std::string d = domain;
  s << "SELECT COUNT(*) FROM email_domains WHERE name = ? AND status = 'verified'", use(d), into(n),
      now;
  return n > 0;
}

bool Domains::usableBy(Poco::Data::Session& s, const std::string& account,
                       const std::string& domain) const {
  if (isPlatform(domain)) return true;
  long n = 0;
  std::string d = domain, a = account;
  s << "SELECT COUNT(*) FROM email_domains WHERE name = ? AND account_id = ? AND status = "
       "'verified'",
      use(d), use(a), into(n), now;
  return n > 0;
}

std::vector<Domains::Row> Domains::custom(Poco::Data::Session& s, const std::string& account,
                                          const std::string& name) {
  std::vector<Row> rows;
  std::string a = account, n = name;
  if (name.empty()) {
    s << "SELECT name, status, token, created_us FROM email_domains WHERE account_id = ? "
         "ORDER BY created_us, name",
        use(a), into(rows), now;
  } else {
    s << "SELECT name, status, token, created_us FROM email_domains WHERE account_id = ? AND "
         "name = ?",
        use(a), use(n), into(rows), now;
  }
  return rows;
}

sdk::Response Domains::list(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  std::vector<Poco::JSON::Object::Ptr> all;
  for (const auto& d : platform_) all.push_back(domainJson(d, "platform", "verified", 0, ""));
  Poco::Data::Session s = database_.session();
  for (const auto& row : custom(s, r.principal.account_id)) {
    all.push_back(domainJson(row.get<0>(), "custom", row.get<1>(), row.get<3>(), row.get<2>()));
  }
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (std::size_t i = page.offset;
       i < all.size() && results->size() < static_cast<std::size_t>(page.limit); ++i)
    results->add(all[i]);
  return sdk::Response::json(200, sdk::pageBody(r, page, static_cast<long>(all.size()), results));
}

sdk::Response Domains::add(sdk::Request& r) {
  std::string name = requestedDomain(r.requiredString("name"));
  if (isPlatform(name)) {
    throw sdk::HttpError(409, "conflict", name + " is a platform domain of this server.");
  }
  Poco::Data::Session s = database_.session();
  if (!custom(s, r.principal.account_id, name).empty()) {
    throw sdk::HttpError(409, "conflict", "This account already added " + name + ".");
  }
  std::string token = sdk::randomToken(24);
  std::int64_t at = sdk::nowMicros();
  database_.transaction([&](Poco::Data::Session& tx) {
    std::string account = r.principal.account_id;
    Poco::Int64 created = at, zero = 0;
    tx << "INSERT INTO email_domains (name, account_id, status, token, created_us, verified_us) "
          "VALUES (?, ?, 'pending', ?, ?, ?)",
        use(name), use(account), use(token), use(created), use(zero), now;
  });
  return sdk::Response::json(201, domainJson(name, "custom", "pending", at, token));
}

Domains::Row Domains::own(sdk::Request& r) {
  std::string name = Poco::toLower(r.params.at("name"));
  Poco::Data::Session s = database_.session();
  auto rows = custom(s, r.principal.account_id, name);
  if (rows.empty()) throw sdk::HttpError::notFound("domain");
  return rows.front();
}

sdk::Response Domains::one(sdk::Request& r) {
  std::string name = Poco::toLower(r.params.at("name"));
  if (isPlatform(name)) {
    return sdk::Response::json(200, domainJson(name, "platform", "verified", 0, ""));
  }
  auto d = own(r);
  return sdk::Response::json(200,
                             domainJson(d.get<0>(), "custom", d.get<1>(), d.get<3>(), d.get<2>()));
}

sdk::Response Domains::remove(sdk::Request& r) {
  auto d = own(r);
  std::string name = d.get<0>(), account = r.principal.account_id;
  database_.transaction([&](Poco::Data::Session& tx) {
    long inboxes = 0;
    std::string pattern = "%@" + name;
    tx << "SELECT COUNT(*) FROM email_inboxes WHERE account_id = ? AND address LIKE ?",
        use(account), use(pattern), into(inboxes), now;
    if (inboxes > 0) {
      throw sdk::HttpError(409, "conflict",
                           "Inboxes still use " + name + "; they keep their addresses.");
    }
    tx << "DELETE FROM email_domains WHERE account_id = ? AND name = ?", use(account), use(name),
        now;
  });
  return sdk::Response::noContent();
}

sdk::Response Domains::verify(sdk::Request& r) {
  auto d = own(r);
  std::string name = d.get<0>(), token = d.get<2>();
  if (d.get<1>() == "verified") {
    return sdk::Response::json(200, domainJson(name, "custom", "verified", d.get<3>(), token));
  }
  const std::string record = "_svc-verification." + name;
  const std::string expected = "svc-verification=" + token;
  std::vector<std::string> found;
  try {
    found = lookupTxt(record, dns_server_);
  } catch (const std::exception& e) {
    throw sdk::HttpError(503, "service_unavailable",
                         std::string("The DNS lookup failed: ") + e.what() + ". Try again.")
        .header("Retry-After", "30");
  }
  if (std::find(found.begin(), found.end(), expected) == found.end()) {
    throw sdk::HttpError(400, "invalid",
                         "The TXT record " + record + " with the value " + expected +
                             " was not found. Publish it, wait for DNS to update, and verify "
                             "again.")
        .field("dns_record", "TXT " + record + " not found or has another value");
  }
  // The first account to prove the domain owns it; another account's claim stays pending.
  std::string account = r.principal.account_id;
  database_.transaction([&](Poco::Data::Session& tx) {
    long others = 0;
    tx << "SELECT COUNT(*) FROM email_domains WHERE name = ? AND status = 'verified' AND "
          "account_id <> ?",
        use(name), use(account), into(others), now;
    if (others > 0) {
      throw sdk::HttpError(409, "conflict", name + " is verified by another account.");
    }
    Poco::Int64 at = sdk::nowMicros();
    tx << "UPDATE email_domains SET status = 'verified', verified_us = ? WHERE name = ? AND "
          "account_id = ?",
        use(at), use(name), use(account), now;
  });
  return sdk::Response::json(200, domainJson(name, "custom", "verified", d.get<3>(), token));
}

}  // namespace svc::plugins::email
