#include "sms_wait.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

#include <string>

using Poco::Data::Keywords::use;

namespace svc::plugins::sms {

namespace {

constexpr int kMaxTimeoutSeconds = 120;
constexpr int kBatch = 50;
constexpr int kMaxScanned = 2000;  // messages looked at per check, oldest first

std::string digits(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c >= '0' && c <= '9') out += c;
  }
  return out;
}

}  // namespace

bool isWanted(const SmsRow& m, const SmsWanted& wanted) {
  return m.direction == "incoming" &&
         (wanted.from.empty() || digits(m.from_number).find(wanted.from) != std::string::npos) &&
         (wanted.body.empty() || Poco::toLower(m.body).find(wanted.body) != std::string::npos);
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
  r.query = std::vector<sdk::Param>{
      {"created_after", Schema::string().format("date-time"), false,
       "Only a message received after this time (default: now). Pass the time you triggered "
       "the message to catch one that arrived before this call."},
      {"from", Schema::string().pattern("^[+0-9 ().-]{1,32}$", "must be (part of) a number"), false,
       "Part of the sender's number (its digits)."},
      {"body", Schema::string().minLength(1).maxLength(256), false, "Part of the text (any case)."},
      {"timeout", Schema::integer().minimum(1).maximum(kMaxTimeoutSeconds), false,
       "Seconds to wait at most (default 30)."}};
  r.responses = {{200, Schema::any().describe("The message, as GET /api/messages/{id}/ shows it.")},
                 {204, Schema::any()}};
  return r;
}

sdk::Response SmsWait::wait(sdk::Request& r) {
  SmsWanted wanted;
  wanted.account = r.principal.account_id;
  wanted.identity = sdk::scopeIdentity(r);
  wanted.after_us = sdk::nowMicros();
  if (auto raw = r.queryParam("created_after")) {
    auto at = sdk::parseIsoMicros(*raw);
    if (!at) throw sdk::HttpError::invalid("created_after", "must be an ISO 8601 time");
    wanted.after_us = *at;
  }
  wanted.from = digits(r.queryParam("from").value_or(""));
  wanted.body = Poco::toLower(r.queryParam("body").value_or(""));
  // The declaration bounds it to 1-120.
  const int timeout = std::stoi(r.queryParam("timeout").value_or("30"));
  return waits_.hold(wanted.account, wanted.identity, std::chrono::seconds(timeout),
                     [this, wanted] { return find(wanted); });
}

std::optional<sdk::Response> SmsWait::find(const SmsWanted& wanted) {
  Poco::Data::Session s = store_.database().session();
  std::int64_t after = wanted.after_us;
  std::string after_id = "~";  // after every id: strictly newer than after_us at first
  for (int scanned = 0; scanned < kMaxScanned; scanned += kBatch) {
    std::string identity = wanted.identity, account = wanted.account;
    int limit = kBatch;
    Poco::Data::Statement q =
        (s << std::string(SmsStore::messageColumns()) +
                  "WHERE identity_uuid = ? AND account_id = ? AND direction = 'incoming' AND "
                  "(created_us > ? OR (created_us = ? AND id > ?)) ORDER BY created_us, id "
                  "LIMIT ?",
         use(identity), use(account), use(after), use(after), use(after_id), use(limit));
    const auto rows = SmsStore::readMessages(q);
    for (const auto& m : rows) {
      if (isWanted(m, wanted)) return sdk::Response::json(200, SmsStore::messageJson(m, true));
    }
    if (static_cast<int>(rows.size()) < kBatch) break;
    after = rows.back().created_us;
    after_id = rows.back().id;
  }
  return std::nullopt;
}

}  // namespace svc::plugins::sms
