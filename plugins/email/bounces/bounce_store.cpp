#include "bounces/bounce_store.h"

#include "bounces/verp.h"
#include "domains.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/JSON/Array.h>
#include <Poco/Tuple.h>

#include <set>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

BounceStore::BounceStore(MailStore& store, sdk::EventBus& events)
    : store_(store), events_(events) {}

std::string BounceStore::envelopeSender(Poco::Data::Session& tx, const std::string& message_id,
                                        const std::string& sender_address) {
  std::string token = newBounceToken(), id = message_id;
  Poco::Int64 at = sdk::nowMicros();
  tx << "INSERT INTO email_bounce_tokens (token, message_id, created_us) VALUES (?, ?, ?)",
      use(token), use(id), use(at), now;
  return verpAddress(token, domainOf(sender_address));
}

std::optional<MessageRow> BounceStore::messageOfToken(Poco::Data::Session& s,
                                                      const std::string& token) {
  std::vector<std::string> ids;
  std::string t = token;
  s << "SELECT message_id FROM email_bounce_tokens WHERE token = ?", use(t), into(ids), now;
  if (ids.empty()) return std::nullopt;
  return store_.messageHead(s, ids.front());
}

std::optional<MessageRow> BounceStore::outgoingMessage(Poco::Data::Session& s,
                                                       const std::string& inbox_id,
                                                       const std::string& message_id) {
  std::string inbox = inbox_id, key = sdk::sha256Hex(message_id);
  Poco::Data::Statement select =
      (s << std::string(MailStore::messageColumns()) +
                "WHERE inbox_id = ? AND message_key = ? AND direction = 'outgoing'",
       use(inbox), use(key));
  for (auto& row : MailStore::readMessages(select)) {
    if (row.message_id == message_id) return row;  // the key is a hash: compare the id itself
  }
  return std::nullopt;
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
    tx << "INSERT INTO email_bounces (message_id, recipient, status, reason, source, bounced_us) "
          "VALUES (?, ?, ?, ?, ?, ?)",
        use(id), use(recipient), use(status), use(reason), use(source), use(at), now;
    added.push_back(b.recipient);
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

Poco::Dynamic::Var BounceStore::json(Poco::Data::Session& s, const std::string& message_id) {
  const auto list = bounces(s, message_id);
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

}  // namespace svc::plugins::email
