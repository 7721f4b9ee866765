#include "bounces/bounce_store.h"

#include "bounces/verp.h"
#include "domains.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/JSON/Array.h>
#include <Poco/Tuple.h>

#include <Poco/String.h>

#include <algorithm>
#include <set>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

std::vector<Envelope> envelopesByToken(const std::string& sender,
                                       const std::vector<std::string>& recipients,
                                       const std::map<std::string, std::string>& token_of) {
  std::vector<Envelope> out;
  for (const auto& r : recipients) {
    auto token = token_of.find(Poco::toLower(r));
    // Without a token (pruned, or never made), the row's own sender.
    const std::string from =
        token == token_of.end() ? sender : envelopeAddress(token->second, sender);
    auto same =
        std::find_if(out.begin(), out.end(), [&](const Envelope& e) { return e.sender == from; });
    if (same == out.end()) {
      out.push_back({from, {r}});
    } else {
      same->recipients.push_back(r);
    }
  }
  return out;
}

BounceStore::BounceStore(MailStore& store, sdk::EventBus& events)
    : store_(store), events_(events) {}

void BounceStore::makeTokens(Poco::Data::Session& tx, const std::string& message_id,
                             const std::vector<std::string>& relayed_to) {
  std::set<std::string> made;
  for (const auto& r : relayed_to) {
    const std::string lower = Poco::toLower(r);
    if (!made.insert(lower).second) continue;
    std::string token = newBounceToken(), id = message_id, recipients = jsonList({lower});
    Poco::Int64 at = sdk::nowMicros();
    tx << "INSERT INTO email_bounce_tokens (token, message_id, recipients, created_us) VALUES "
          "(?, ?, ?, ?)",
        use(token), use(id), use(recipients), use(at), now;
  }
}

std::vector<Envelope> BounceStore::envelopes(Poco::Data::Session& s, const std::string& message_id,
                                             const std::string& sender,
                                             const std::vector<std::string>& recipients,
                                             bool verp) {
  if (!verp) return {{sender, recipients}};
  using Row = Poco::Tuple<std::string, std::string>;
  std::vector<Row> rows;
  std::string id = message_id;
  s << "SELECT token, recipients FROM email_bounce_tokens WHERE message_id = ?", use(id),
      into(rows), now;
  std::map<std::string, std::string> token_of;  // recipient -> token
  for (const auto& row : rows) {
    for (const auto& r : parseJsonList(row.get<1>())) token_of.emplace(r, row.get<0>());
  }
  return envelopesByToken(sender, recipients, token_of);
}

namespace {

// Every token row of a message holds the recipients its token may bounce: one row by token,
// all of a message's rows by its id.
std::optional<Relayed> relayed(MailStore& store, Poco::Data::Session& s, const std::string& column,
                               const std::string& value, std::int64_t now_us) {
  using Row = Poco::Tuple<std::string, std::string>;
  std::vector<Row> rows;
  std::string v = value;
  Poco::Int64 oldest = now_us - kTokenLifetimeUs;
  s << "SELECT message_id, recipients FROM email_bounce_tokens WHERE " + column +
           " = ? AND created_us >= ?",
      use(v), use(oldest), into(rows), now;
  if (rows.empty()) return std::nullopt;
  auto message = store.messageHead(s, rows.front().get<0>());
  if (!message || message->direction != "outgoing") return std::nullopt;
  Relayed out{*message, {}};
  for (const auto& row : rows) {
    for (auto& r : parseJsonList(row.get<1>())) {
      if (std::find(out.recipients.begin(), out.recipients.end(), r) == out.recipients.end())
        out.recipients.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace

std::optional<Relayed> BounceStore::byToken(Poco::Data::Session& s, const std::string& token,
                                            std::int64_t now_us) {
  return relayed(store_, s, "token", token, now_us);
}

std::optional<Relayed> BounceStore::byMessageId(Poco::Data::Session& s, const std::string& inbox_id,
                                                const std::string& message_id,
                                                std::int64_t now_us) {
  std::string inbox = inbox_id, key = sdk::sha256Hex(message_id);
  Poco::Data::Statement select =
      (s << std::string(MailStore::messageColumns()) +
                "WHERE inbox_id = ? AND message_key = ? AND direction = 'outgoing'",
       use(inbox), use(key));
  for (auto& row : MailStore::readMessages(select)) {
    // The key is a hash: compare the id itself.
    if (row.message_id == message_id) return relayed(store_, s, "message_id", row.id, now_us);
  }
  return std::nullopt;
}

std::size_t BounceStore::prune(std::int64_t now_us) {
  Poco::Data::Session s = store_.db().session();
  Poco::Int64 oldest = now_us - kTokenLifetimeUs;
  Poco::Data::Statement del =
      (s << "DELETE FROM email_bounce_tokens WHERE created_us < ?", use(oldest));
  return del.execute();
}

std::vector<std::string> BounceStore::record(Poco::Data::Session& tx, const std::string& message_id,
                                             const std::vector<Bounce>& list) {
  std::vector<std::string> added;
  auto row = store_.messageHead(tx, message_id);
  if (!row || row->direction != "outgoing") return added;
  std::set<std::string> known;
  for (const auto& b : bounces(tx, message_id)) known.insert(b.recipient);
  for (const auto& b : list) {
    if (b.recipient.empty() || !known.insert(b.recipient).second) continue;
    std::string id = message_id, recipient = b.recipient, status = b.status, reason = b.reason,
                source = b.source;
    Poco::Int64 at = b.bounced_us ? b.bounced_us : sdk::nowMicros();
    // Another process may have recorded it since the read: the first bounce stays.
    const std::string insert = store_.db().dialect() == sdk::Dialect::kMysql
                                   ? "INSERT IGNORE INTO email_bounces"
                                   : "INSERT OR IGNORE INTO email_bounces";
    Poco::Data::Statement ins =
        (tx << insert +
                   " (message_id, recipient, status, reason, source, bounced_us) VALUES (?, ?, "
                   "?, ?, ?, ?)",
         use(id), use(recipient), use(status), use(reason), use(source), use(at));
    if (ins.execute() == 1) added.push_back(b.recipient);
  }
  if (added.empty()) return added;
  // Bounced whichever recipients did get it: the sender learns which did not from `bounce`.
  row->status = "bounced";
  row->updated_us = sdk::nowMicros();
  Poco::Int64 at = row->updated_us;
  tx << "UPDATE email_messages SET status = ?, updated_us = ? WHERE id = ?", use(row->status),
      use(at), use(row->id), now;
  events_.publish("email.bounced", row->account_id, row->identity_uuid,
                  store_.messageJson(tx, *row, false), &tx);
  return added;
}

std::vector<Bounce> BounceStore::bounces(Poco::Data::Session& s, const std::string& message_id) {
  using Row = Poco::Tuple<std::string, std::string, std::string, std::string, Poco::Int64>;
  std::vector<Row> rows;
  std::string id = message_id;
  s << "SELECT recipient, status, reason, source, bounced_us FROM email_bounces WHERE "
       "message_id = ? ORDER BY bounced_us, recipient",
      use(id), into(rows), now;
  std::vector<Bounce> out;
  for (const auto& r : rows) {
    out.push_back({r.get<0>(), r.get<1>(), r.get<2>(), r.get<3>(), r.get<4>()});
  }
  return out;
}

namespace {

Poco::Dynamic::Var bounceJson(const std::vector<Bounce>& list) {
  if (list.empty()) return {};
  Poco::JSON::Array::Ptr recipients = new Poco::JSON::Array;
  for (const auto& b : list) {
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("recipient", b.recipient);
    o->set("status", b.status);
    o->set("reason", b.reason);
    o->set("source", b.source);
    o->set("bounced_dt", sdk::isoTimestamp(b.bounced_us));
    recipients->add(o);
  }
  Poco::JSON::Object::Ptr bounce = new Poco::JSON::Object;
  bounce->set("recipients", recipients);
  bounce->set("bounced_dt", sdk::isoTimestamp(list.front().bounced_us));
  return bounce;
}

}  // namespace

Poco::Dynamic::Var BounceStore::json(Poco::Data::Session& s, const std::string& message_id) {
  return bounceJson(bounces(s, message_id));
}

std::map<std::string, Poco::Dynamic::Var> BounceStore::json(Poco::Data::Session& s,
                                                            const std::vector<std::string>& ids) {
  std::map<std::string, Poco::Dynamic::Var> out;
  if (ids.empty()) return out;
  using Row =
      Poco::Tuple<std::string, std::string, std::string, std::string, std::string, Poco::Int64>;
  std::vector<Row> rows;
  std::string marks;
  for (std::size_t i = 0; i < ids.size(); ++i) marks += i ? ", ?" : "?";
  std::vector<std::string> bound = ids;
  Poco::Data::Statement q =
      (s << "SELECT message_id, recipient, status, reason, source, bounced_us FROM email_bounces "
            "WHERE message_id IN (" +
                marks + ") ORDER BY message_id, bounced_us, recipient");
  for (auto& id : bound) q, use(id);
  q, into(rows), now;
  std::map<std::string, std::vector<Bounce>> by_message;
  for (const auto& r : rows) {
    by_message[r.get<0>()].push_back({r.get<1>(), r.get<2>(), r.get<3>(), r.get<4>(), r.get<5>()});
  }
  for (const auto& [id, list] : by_message) out[id] = bounceJson(list);
  return out;
}

}  // namespace svc::plugins::email
