#include "sms_wait.h"

#include "sms_schemas.h"

#include <Poco/String.h>

#include <string>

using Poco::Data::Keywords::use;

namespace svc::plugins::sms {

namespace {

std::string digits(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c >= '0' && c <= '9') out += c;
  }
  return out;
}

}  // namespace

bool isWanted(const SmsRow& m, const SmsWanted& wanted) {
  if (m.direction != "incoming") return false;
  if (!wanted.from.empty()) {
    // The tail of the number: a national form (5550100) matches its international one.
    const std::string sender = digits(m.from_number);
    if (sender.size() < wanted.from.size() ||
        sender.compare(sender.size() - wanted.from.size(), wanted.from.size(), wanted.from) != 0) {
      return false;
    }
  }
  return wanted.body.empty() || Poco::toLower(m.body).find(wanted.body) != std::string::npos;
}

SmsWait::SmsWait(SmsStore& store, sdk::EventBus& events)
    : store_(store), waits_(events, {"sms.received"}) {}

sdk::Route SmsWait::route() {
  using sdk::Schema;
  sdk::Route r{"GET",
               "/api/messages/wait/",
               sdk::AuthNeed::kIdentity,
               sdk::BodyKind::kJson,
               0,
               "Wait for the next incoming SMS (with its extracted_code): answers at once when one "
               "is there, else when it arrives, or 204 after timeout.",
               [this](sdk::Request& req) { return wait(req); }};
  r.query = sdk::waitWindowParams();
  r.query->push_back({"from",
                      Schema::string().pattern("^[+ ().-]*([0-9][ ().-]*){4,15}$",
                                               "must be a number or its last digits (4 or more)"),
                      false, "The sender's number, or its last digits (4 or more)."});
  r.query->push_back({"body", Schema::string().minLength(1).maxLength(256), false,
                      "Part of the text (any case)."});
  r.responses = {{200, smsMessageSchema()}, {204, Schema::any()}};
  r.errors = sdk::waitErrors();
  return r;
}

sdk::Response SmsWait::wait(sdk::Request& r) {
  const sdk::WaitPage<SmsRow> page =
      [this, account = r.principal.account_id, identity = sdk::scopeIdentity(r)](
          std::int64_t after, const std::string& after_id, int limit) {
        Poco::Data::Session s = store_.database().session();
        std::string a = account, i = identity, id = after_id;
        Poco::Data::Statement q =
            (s << std::string(SmsStore::messageColumns()) +
                      "WHERE identity_uuid = ? AND account_id = ? AND direction = 'incoming' AND "
                      "(created_us > ? OR (created_us = ? AND id > ?)) ORDER BY created_us, id "
                      "LIMIT ?",
             use(i), use(a), use(after), use(after), use(id), use(limit));
        return SmsStore::readMessages(q);
      };
  const sdk::WaitWindow window = sdk::waitWindow(r, page);
  SmsWanted wanted;
  wanted.from = digits(r.queryParam("from").value_or(""));
  wanted.body = Poco::toLower(r.queryParam("body").value_or(""));
  return waits_.hold(window, [this, window, wanted, page](const sdk::Event* event) {
    if (event) return offer(*event, window, wanted);
    auto found =
        sdk::findInWindow<SmsRow>(window, page, [&](SmsRow& m) { return isWanted(m, wanted); });
    if (!found) return std::optional<sdk::Response>();
    return std::optional(sdk::Response::json(200, SmsStore::messageJson(*found, true)));
  });
}

std::optional<sdk::Response> SmsWait::offer(const sdk::Event& event, const sdk::WaitWindow& window,
                                            const SmsWanted& wanted) {
  auto offered = offered_.get(event, [&]() -> std::optional<Offered> {
    Poco::Data::Session s = store_.database().session();
    auto m = store_.message(s, event.object ? event.object->optValue<std::string>("id", "") : "");
    if (!m) return std::nullopt;
    auto answer = sdk::Response::json(200, SmsStore::messageJson(*m, true));
    return Offered{std::move(*m), std::move(answer)};
  });
  if (!offered) return std::nullopt;
  const SmsRow& m = offered->row;
  if (m.account_id != window.account || m.identity_uuid != window.identity ||
      !window.admits(m.created_us, m.id) || !isWanted(m, wanted)) {
    return std::nullopt;
  }
  return offered->answer;
}

}  // namespace svc::plugins::sms
