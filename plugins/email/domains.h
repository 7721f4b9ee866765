// Domains: the platform's (from configuration) and accounts' custom ones, which an account adds
// and proves by a DNS TXT record; which domains mail is delivered here for, and which an account
// may give its inboxes addresses on.
#pragma once

#include <svc/sdk/http.h>
#include <svc/sdk/storage.h>

#include <Poco/Data/Session.h>
#include <Poco/JSON/Object.h>
#include <Poco/Tuple.h>

#include <cstdint>
#include <string>
#include <vector>

namespace svc::plugins::email {

/// @param address `local@domain`. @return the domain, lower case.
std::string domainOf(const std::string& address);

/// @param raw a domain as a client writes it (any case, maybe a trailing dot).
/// @return it lower-cased without the dot. @throws HttpError 400 on `name` when it is no domain.
std::string requestedDomain(const std::string& raw);

class Domains {
 public:
  /// @param platform the platform domains, lower case, the default first (never empty).
  /// @param dns_server host:port for verification lookups (empty: the system's resolver).
  Domains(sdk::Database& database, std::vector<std::string> platform, std::string dns_server);

  /// @return the platform domains, the default first.
  const std::vector<std::string>& platform() const { return platform_; }
  /// @return the default domain (the first platform domain).
  const std::string& defaultDomain() const { return platform_.front(); }
  bool isPlatform(const std::string& domain) const;
  /// @return true for a platform domain or a custom domain any account verified: mail to it is
  /// delivered here.
  bool isLocal(Poco::Data::Session& s, const std::string& domain) const;
  /// @return true for a platform domain or one the account verified.
  bool usableBy(Poco::Data::Session& s, const std::string& account,
                const std::string& domain) const;

  // Handlers of /api/domains/.
  sdk::Response list(sdk::Request& r);
  sdk::Response add(sdk::Request& r);
  sdk::Response one(sdk::Request& r);
  sdk::Response remove(sdk::Request& r);
  sdk::Response verify(sdk::Request& r);

 private:
  using Row = Poco::Tuple<std::string, std::string, std::string, Poco::Int64>;
  std::vector<Row> custom(Poco::Data::Session& s, const std::string& account,
                          const std::string& name = "");
  Row own(sdk::Request& r);

  sdk::Database& database_;
  std::vector<std::string> platform_;
  std::string dns_server_;
};

/// @return a domain as the API shows it (a custom one with the TXT record that proves it).
Poco::JSON::Object::Ptr domainJson(const std::string& name, const std::string& kind,
                                   const std::string& status, std::int64_t created_us,
                                   const std::string& token);

}  // namespace svc::plugins::email
