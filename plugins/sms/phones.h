// Phones: provisioning a number for an identity (on create, in the identity's transaction, or by
// the `provision-phone` action), the identity's `phone` member, and /api/phone/.
#pragma once

#include "provider.h"
#include "sms_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/identity_extensions.h>

#include <Poco/Logger.h>

namespace svc::plugins::sms {

/// @return the 409 for an identity that has a number.
sdk::HttpError phoneExists();

class Phones {
 public:
  /// @param logger where a carrier's failures are told in full (callers get a sentence).
  /// @param per_account numbers one account may hold (0: no limit).
  Phones(SmsStore& store, SmsProvider& provider, Poco::Logger& logger, int per_account)
      : store_(store), provider_(provider), logger_(logger), per_account_(per_account) {}

  /// Acquires a number and gives it to the identity inside tx. A number another writer took
  /// meanwhile is given back and the next one tried.
  /// @throws HttpError 409 `phone_exists`, 400 for a malformed country, 503 with Retry-After
  /// when no number can be had.
  PhoneRow provision(Poco::Data::Session& tx, const sdk::IdentityInfo& identity,
                     const std::string& country);

  sdk::Response list(sdk::Request& r);
  sdk::Response one(sdk::Request& r);

 private:
  SmsStore& store_;
  SmsProvider& provider_;
  Poco::Logger& logger_;
  const int per_account_;
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
  Poco::Dynamic::Var provision(Poco::Data::Session& transaction, const sdk::IdentityInfo& identity,
                               const sdk::Request& request) override;
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
};

}  // namespace svc::plugins::sms
