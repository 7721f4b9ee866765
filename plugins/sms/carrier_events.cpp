#include "carrier_events.h"

#include "phone_text.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/util.h>

#include <Poco/Exception.h>

namespace svc::plugins::sms {

bool StoredCarrierEvents::ownsNumber(const std::string& e164) {
  Poco::Data::Session s = store_.database().session();
  return store_.phoneByNumber(s, e164).has_value();
}

std::optional<SmsRow> StoredCarrierEvents::receive(const InboundSms& sms) {
  Poco::Data::Session s = store_.database().session();
  auto to = sdk::normalizeE164(sms.to);
  auto phone = to ? store_.phoneByNumber(s, *to) : std::nullopt;
  if (!phone) return std::nullopt;
  // A sender a carrier shows as a short code or a name is kept as it came (bounded).
  const std::string from = sdk::normalizeE164(sms.from).value_or(sdk::truncateUtf8(sms.from, 32));
  // A carrier's text as it came, except what cannot be stored: bytes that are not UTF-8 (shown
  // as U+FFFD) and anything past 16 KB (carriers stop at 1,600 characters).
  const std::string body = sdk::truncateUtf8(
      sdk::isValidUtf8(sms.body) ? sms.body : sdk::safeForTerminal(sms.body), 16384);
  SmsRow m = newMessage("incoming", *phone, from, body);
  if (!sms.ref.empty()) m.carrier_ref = sdk::truncateUtf8(sms.ref, 80);
  try {
    store_.database().transaction(
        [&](Poco::Data::Session& tx) { store_.insertMessage(tx, m, false); });
  } catch (const Poco::Exception&) {
    if (store_.messageByRef(s, m.carrier_ref)) return std::nullopt;  // reported twice
    throw;
  }
  return m;
}

bool StoredCarrierEvents::delivery(const Delivery& report) {
  bool found = false;
  store_.database().transaction([&](Poco::Data::Session& tx) {
    auto m = store_.messageByRef(tx, report.ref);
    if (!m && !report.message_id.empty()) {
      // A report that overtook the carrier's answer: the message does not carry its ref yet.
      m = store_.message(tx, report.message_id);
      if (m && m->carrier_ref != "local:" + m->id) m.reset();
    }
    if (!m || m->direction != "outgoing") return;
    found = true;
    store_.applyDelivery(tx, *m, report, false);
  });
  return found;
}

CallAnswer StoredCarrierEvents::incomingCall(const IncomingCall& call) {
  Poco::Data::Session s = store_.database().session();
  auto to = sdk::normalizeE164(call.to);
  auto phone = to ? store_.phoneByNumber(s, *to) : std::nullopt;
  if (!phone) return {};
  try {
    store_.database().transaction(
        [&](Poco::Data::Session& tx) { store_.insertCall(tx, *phone, call); });
  } catch (const Poco::Exception&) {
    // Reported twice (its id is unique): answered the same, recorded once.
    if (call.ref.empty()) throw;
  }
  if (!voice_) return {};
  auto agent = voice_->voiceAgent(phone->identity_uuid);
  if (!agent || !agent->enabled || agent->response_url.empty()) return {};
  return {agent->response_url};
}

}  // namespace svc::plugins::sms
