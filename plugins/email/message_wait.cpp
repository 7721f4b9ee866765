#include "message_wait.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

#include <string>

using Poco::Data::Keywords::use;

namespace svc::plugins::email {

namespace {

constexpr int kMaxTimeoutSeconds = 120;
constexpr int kBatch = 50;
constexpr int kMaxScanned = 2000;  // messages looked at per check, oldest first

bool contains(const std::string& text, const std::string& lower_needle) {
  return lower_needle.empty() || Poco::toLower(text).find(lower_needle) != std::string::npos;
}

}  // namespace

bool isWanted(const MessageRow& m, const MessageWanted& wanted) {
  return m.direction == "incoming" && contains(m.from_email, wanted.from) &&
         contains(m.subject, wanted.subject) &&
         (wanted.body.empty() || contains(m.content, wanted.body) || contains(m.html, wanted.body));
}

MessageWait::MessageWait(sdk::Database& db, MailStore& store, sdk::EventBus& events)
    : db_(db), store_(store), waits_(events, {"email.received"}) {}

sdk::Route MessageWait::route() {
  using sdk::Schema;
  const auto text = [] { return Schema::string().minLength(1).maxLength(256); };
  sdk::Route r{"GET",
               "/api/email-messages/wait/",
               sdk::AuthNeed::kIdentity,
               sdk::BodyKind::kJson,
               0,
               "Wait for the next incoming message (with its extracted_code): answers at once "
               "when one is there, else when it arrives, or 204 after timeout.",
               [this](sdk::Request& req) { return wait(req); }};
  r.query = std::vector<sdk::Param>{
      {"created_after", Schema::string().format("date-time"), false,
       "Only a message received after this time (default: now). Pass the time you triggered "
       "the message to catch one that arrived before this call."},
      {"from", text(), false, "Part of the sender's address (any case)."},
      {"subject", text(), false, "Part of the subject (any case)."},
      {"body", text(), false, "Part of the text or HTML body (any case)."},
      {"timeout", Schema::integer().minimum(1).maximum(kMaxTimeoutSeconds), false,
       "Seconds to wait at most (default 30)."}};
  r.responses = {{200, Schema::any().describe("The message, as GET /api/email-messages/{id}/ "
                                              "shows it.")},
                 {204, Schema::any()}};
  return r;
}

sdk::Response MessageWait::wait(sdk::Request& r) {
  MessageWanted wanted;
  wanted.account = r.principal.account_id;
  wanted.identity = sdk::scopeIdentity(r);
  wanted.after_us = sdk::nowMicros();
  if (auto raw = r.queryParam("created_after")) {
    auto at = sdk::parseIsoMicros(*raw);
    if (!at) throw sdk::HttpError::invalid("created_after", "must be an ISO 8601 time");
    wanted.after_us = *at;
  }
  wanted.from = Poco::toLower(Poco::trim(r.queryParam("from").value_or("")));
  wanted.subject = Poco::toLower(r.queryParam("subject").value_or(""));
  wanted.body = Poco::toLower(r.queryParam("body").value_or(""));
  // The declaration bounds it to 1-120.
  const int timeout = std::stoi(r.queryParam("timeout").value_or("30"));
  return waits_.hold(wanted.account, wanted.identity, std::chrono::seconds(timeout),
                     [this, wanted] { return find(wanted); });
}

std::optional<sdk::Response> MessageWait::find(const MessageWanted& wanted) {
  Poco::Data::Session s = db_.session();
  std::int64_t after = wanted.after_us;
  std::string after_id = "~";  // after every id: strictly newer than after_us at first
  for (int scanned = 0; scanned < kMaxScanned; scanned += kBatch) {
    std::string identity = wanted.identity, account = wanted.account;
    int limit = kBatch;
    Poco::Data::Statement q =
        (s << std::string(MailStore::messageColumns()) +
                  "WHERE identity_uuid = ? AND account_id = ? AND direction = 'incoming' AND "
                  "(created_us > ? OR (created_us = ? AND id > ?)) ORDER BY created_us, id "
                  "LIMIT ?",
         use(identity), use(account), use(after), use(after), use(after_id), use(limit));
    auto rows = MailStore::readMessages(q);
    for (auto& m : rows) {
      if (!wanted.body.empty()) store_.loadBodies(s, m);
      if (isWanted(m, wanted)) {
        if (wanted.body.empty()) store_.loadBodies(s, m);
        return sdk::Response::json(200, store_.messageJson(s, m, true));
      }
    }
    if (static_cast<int>(rows.size()) < kBatch) break;
    after = rows.back().created_us;
    after_id = rows.back().id;
  }
  return std::nullopt;
}

}  // namespace svc::plugins::email
