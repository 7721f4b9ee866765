// Phones: provisioning a number for an identity (on create, in the identity's transaction, or by
// the `provision-phone` action), the identity's `phone` member, and /api/phone/.
#pragma once

#include "provider.h"
#include "sms_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/identity_extensions.h>

#include <Poco/Logger.h>

#include <map>
#include <mutex>
#include <optional>
#include <set>

namespace svc::plugins::sms {

/// @return the 409 for an identity that has a number.
sdk::HttpError phoneExists();

class Phones {
 public:
  /// @param logger where a carrier's failures are told in full (callers get a sentence).
  /// @param per_account numbers one account may hold (0: no limit).
  Phones(SmsStore& store, SmsProvider& provider, Poco::Logger& logger, int per_account)
      : store_(store), provider_(provider), logger_(logger), per_account_(per_account) {}

  /// @throws HttpError 409 when the identity has a number (`phone_exists`) or the account its
  /// share (`conflict`).
  void checkAllowed(Poco::Data::Session& s, const sdk::IdentityInfo& identity);
  /// Asks the provider for a number (a carrier's network call: outside any transaction where it
  /// can be). @param tried numbers not to take. @throws HttpError 400 naming country_code for a
  /// country the provider never has numbers in, 503 with Retry-After when none can be had now.
  Number acquire(Poco::Data::Session& s, const std::string& country,
                 const std::set<std::string>& tried);
  /// Gives the identity a number inside tx: `held` when set (acquired beforehand), else one
  /// acquired now. A number another writer took meanwhile is given back and the next one tried.
  /// @param held in: the number to use; out: the number kept (for the caller to give back if the
  /// transaction then fails), or empty. @throws HttpError 409, 503 (with Retry-After).
  PhoneRow provision(Poco::Data::Session& tx, const sdk::IdentityInfo& identity,
                     const std::string& country, std::optional<Number>& held);
  /// Acquires a number, then gives it to the identity in a transaction of its own (giving the
  /// number back when that fails). @throws HttpError 409, 503.
  void provisionNow(const sdk::IdentityInfo& identity, const std::string& country);
  /// Gives back a number acquired but not kept.
  void release(const Number& number) { provider_.release(number); }

  sdk::Response list(sdk::Request& r);
  sdk::Response one(sdk::Request& r);

 private:
  SmsStore& store_;
  SmsProvider& provider_;
  Poco::Logger& logger_;
  const int per_account_;
  std::mutex in_flight_mutex_;
  std::set<std::string> in_flight_;  ///< Identities provisionNow() is buying a number for.
};

/// @param r a request with an optional `country_code` field. @return it upper-cased, `US` when
/// absent. @throws HttpError 400 naming it when it is not two letters.
std::string requestedCountry(const sdk::Request& r);

/// The sms plugin's part of every identity: `phone` (`{id, number, country_code}`), the create
/// field `provision_phone` and the action `provision-phone`.
class PhoneIdentityExtension : public sdk::IdentityExtension {
 public:
  PhoneIdentityExtension(Phones& phones, SmsStore& store);
  const sdk::IdentityCapability& capability() const override { return capability_; }
  void validate(const sdk::Request& request) override;
  /// Acquires the number before the identity's transaction (a carrier's purchase takes seconds).
  void prepare(const sdk::IdentityInfo& identity, const sdk::Request& request) override;
  Poco::Dynamic::Var provision(Poco::Data::Session& transaction, const sdk::IdentityInfo& identity,
                               const sdk::Request& request) override;
  /// Gives the number back when the identity was not created.
  void finish(const sdk::IdentityInfo& identity, const sdk::Request& request,
              bool created) override;
  std::map<std::string, Poco::Dynamic::Var> describe(
      const std::vector<std::string>& identity_uuids) override;
  /// `provision-phone`: 200 with the identity (as the identities plugin shows it, which the
  /// caller fills: see act()'s answer), 409, 503.
  sdk::Response act(const std::string& action, const sdk::IdentityInfo& identity,
                    sdk::Request& request) override;

 private:
  sdk::IdentityCapability capability_;
  Phones& phones_;
  SmsStore& store_;
  std::mutex mutex_;
  std::map<std::string, Number> held_;  ///< By identity: acquired in prepare(), until finish().
};

}  // namespace svc::plugins::sms
