#include "message_wait.h"

#include "email_schemas.h"

#include <Poco/String.h>

#include <string>

using Poco::Data::Keywords::use;

namespace svc::plugins::email {

namespace {

bool contains(const std::string& text, const std::string& lower_needle) {
  return lower_needle.empty() || Poco::toLower(text).find(lower_needle) != std::string::npos;
}

bool endsWith(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() &&
         text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

bool senderMatches(const std::string& from_email, const std::string& from) {
  if (from.empty()) return true;
  const std::string sender = Poco::toLower(from_email);
  if (from.find('@') != std::string::npos && from.front() != '@') return sender == from;
  const std::string domain = from.front() == '@' ? from.substr(1) : from;
  return endsWith(sender, "@" + domain) || endsWith(sender, "." + domain);
}

bool isWanted(const MessageRow& m, const MessageWanted& wanted) {
  // Quarantined mail is never waited for: an agent that waits acts on what it gets.
  return m.direction == "incoming" && !m.quarantined &&
         (!wanted.authenticated || m.auth_verdict == "pass") &&
         senderMatches(m.from_email, wanted.from) && contains(m.subject, wanted.subject) &&
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
  r.query = sdk::waitWindowParams();
  r.query->push_back(
      {"from", Schema::string().pattern("^[!-~]{1,254}$", "must be an address or domain"), false,
       "The sender's address, or its domain (`acme.example` also matches "
       "`mail.acme.example`); any case."});
  r.query->push_back({"subject", text(), false, "Part of the subject (any case)."});
  r.query->push_back({"body", text(), false, "Part of the text or HTML body (any case)."});
  r.query->push_back({"authenticated", Schema::boolean(), false,
                      "true: only mail whose authentication verdict is pass. Quarantined mail "
                      "is never returned."});
  r.responses = {{200, messageSchema()}, {204, Schema::any()}};
  r.errors = sdk::waitErrors();
  return r;
}

sdk::Response MessageWait::wait(sdk::Request& r) {
  const sdk::WaitPage<MessageRow> page =
      [this, account = r.principal.account_id, identity = sdk::scopeIdentity(r)](
          std::int64_t after, const std::string& after_id, int limit) {
        Poco::Data::Session s = db_.session();
        std::string a = account, i = identity, id = after_id;
        Poco::Data::Statement q =
            (s << std::string(MailStore::messageColumns()) +
                      "WHERE identity_uuid = ? AND account_id = ? AND direction = 'incoming' AND "
                      "(created_us > ? OR (created_us = ? AND id > ?)) ORDER BY created_us, id "
                      "LIMIT ?",
             use(i), use(a), use(after), use(after), use(id), use(limit));
        return MailStore::readMessages(q);
      };
  const sdk::WaitWindow window = sdk::waitWindow(r, page);
  MessageWanted wanted;
  wanted.from = Poco::toLower(r.queryParam("from").value_or(""));
  wanted.subject = Poco::toLower(r.queryParam("subject").value_or(""));
  wanted.body = Poco::toLower(r.queryParam("body").value_or(""));
  wanted.authenticated = r.boolQuery("authenticated").value_or(false);
  return waits_.hold(window, [this, window, wanted, page](const sdk::Event* event) {
    if (event) return offer(*event, window, wanted);
    // One database session at a time (page() takes its own): a thousand waits arriving on every
    // worker must not need two sessions each from the pool.
    auto found = sdk::findInWindow<MessageRow>(window, page, [&](MessageRow& m) {
      // Bodies are read one message at a time, and only for one that passes the rest.
      if (!wanted.body.empty() &&
          isWanted(m, {wanted.from, wanted.subject, "", wanted.authenticated})) {
        Poco::Data::Session s = db_.session();
        store_.loadBodies(s, m);
      }
      return isWanted(m, wanted);
    });
    if (!found) return std::optional<sdk::Response>();
    Poco::Data::Session s = db_.session();
    if (wanted.body.empty()) store_.loadBodies(s, *found);
    return std::optional(sdk::Response::json(200, store_.messageJson(s, *found, true)));
  });
}

std::optional<sdk::Response> MessageWait::offer(const sdk::Event& event,
                                                const sdk::WaitWindow& window,
                                                const MessageWanted& wanted) {
  auto offered = offered_.get(event, [&]() -> std::optional<Offered> {
    Poco::Data::Session s = db_.session();
    auto m = store_.message(s, event.object ? event.object->optValue<std::string>("id", "") : "");
    if (!m) return std::nullopt;
    auto answer = sdk::Response::json(200, store_.messageJson(s, *m, true));
    return Offered{std::move(*m), std::move(answer)};
  });
  if (!offered) return std::nullopt;
  const MessageRow& m = offered->row;
  if (m.account_id != window.account || m.identity_uuid != window.identity ||
      !window.admits(m.created_us, m.id) || !isWanted(m, wanted)) {
    return std::nullopt;
  }
  return offered->answer;
}

}  // namespace svc::plugins::email
