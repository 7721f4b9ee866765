#include "outgoing.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/rate_limit.h>
#include <svc/sdk/util.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::sms {

namespace {

// The number's notation and the body's length were checked against the route's declaration
// (sms_schemas.cpp): the number is only written in E.164 here.
std::string e164Field(const sdk::Request& r, const std::string& field) {
  const std::string raw = r.requiredString(field);
  return sdk::normalizeE164(raw).value_or(raw);
}

}  // namespace

void SmsOutgoing::checkSendingLimit(Poco::Data::Session& s, const std::string& identity) {
  sdk::enforceSendingLimits(config_.per_hour, config_.per_day, "SMS",
                            [&](std::int64_t since_us, int limit) {
                              std::vector<Poco::Int64> times;
                              std::string id = identity;
                              Poco::Int64 since = since_us;
                              s << "SELECT created_us FROM sms_messages WHERE identity_uuid = ? "
                                   "AND direction = 'outgoing' AND created_us > ? ORDER BY "
                                   "created_us DESC LIMIT ?",
                                  use(id), use(since), use(limit), into(times), now;
                              return std::vector<std::int64_t>(times.begin(), times.end());
                            });
}

sdk::Response SmsOutgoing::send(sdk::Request& r) {
  const std::string identity = sdk::scopeIdentity(r);
  const std::string to = e164Field(r, "to_number");
  const std::string body = r.requiredString("body");
  Poco::Data::Session s = store_.database().session();
  auto phone = store_.phoneOfIdentity(s, identity);
  if (!phone) {
    throw sdk::HttpError(404, "no_phone",
                         "This identity has no phone number; provision one with POST "
                         "/api/identities/" +
                             identity + "/provision-phone/ first.");
  }
  SmsRow m = newMessage("outgoing", *phone, to, body);
  // Stored before the carrier sees it: a message the carrier took is never lost to a crash.
  // The limit is counted in the same transaction, so concurrent sends cannot all pass it (SQLite
  // serializes writers; MariaDB is made to by locking the identity's phone row first).
  store_.database().transaction([&](Poco::Data::Session& tx) {
    if (store_.database().dialect() == sdk::Dialect::kMysql) {
      std::string phone_id = phone->id, locked;
      tx << "SELECT id FROM sms_phones WHERE id = ? FOR UPDATE", use(phone_id), into(locked), now;
    }
    checkSendingLimit(tx, identity);
    store_.insertMessage(tx, m, false);
  });
  const Delivery d = provider_.send(m.id, phone->number, to, body);
  store_.database().transaction(
      [&](Poco::Data::Session& tx) { m = store_.applyDelivery(tx, m, d, true); });
  return sdk::Response::json(201, SmsStore::messageJson(m, true));
}

int SmsOutgoing::failUnsent(std::int64_t older_than_us) {
  int n = 0;
  store_.database().transaction([&](Poco::Data::Session& tx) {
    Poco::Int64 before = older_than_us;
    Poco::Data::Statement select =
        (tx << std::string(SmsStore::messageColumns()) +
                   "WHERE carrier_ref >= 'local:' AND carrier_ref < 'local;' AND status = "
                   "'queued' AND direction = 'outgoing' AND created_us < ?",
         use(before));
    for (const auto& m : SmsStore::readMessages(select)) {
      store_.applyDelivery(tx, m,
                           {"failed", "", "not_handed_over",
                            "svcd stopped while handing this message to the carrier, before "
                            "the carrier answered: whether it was sent is unknown. Check with "
                            "the recipient before sending it again."},
                           false);
      ++n;
    }
  });
  return n;
}

sdk::Response SmsOutgoing::inject(sdk::Request& r) {
  const std::string to = e164Field(r, "to");
  const std::string from = e164Field(r, "from");
  const std::string body = r.requiredString("body");
  auto m = carrier_.receive({from, to, body, ""});
  if (!m) {
    throw sdk::HttpError(404, "not_found",
                         "No identity of this server holds " + to +
                             "; GET /api/phone/ lists "
                             "the numbers an account holds.");
  }
  return sdk::Response::json(201, SmsStore::messageJson(*m, true));
}

}  // namespace svc::plugins::sms
