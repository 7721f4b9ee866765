#include "sms_store.h"

#include "phone_text.h"

#include <svc/sdk/util.h>
#include <svc/sdk/verification_code.h>

#include <Poco/String.h>
#include <Poco/Tuple.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::sms {

namespace {

// queued, sent, then the final ones (delivered, undelivered, failed; received): a message only
// moves forward.
int statusRank(const std::string& status) {
  if (status == "queued") return 0;
  if (status == "sent") return 1;
  return 2;
}

Poco::Dynamic::Var orNull(const std::string& text) {
  return text.empty() ? Poco::Dynamic::Var() : Poco::Dynamic::Var(text);
}

constexpr const char* kPhoneColumns =
    "SELECT id, account_id, identity_uuid, number, country_code, provider, provider_ref, "
    "created_us FROM sms_phones ";

std::vector<PhoneRow> readPhones(Poco::Data::Statement& select) {
  using T = Poco::Tuple<std::string, std::string, std::string, std::string, std::string,
                        std::string, std::string, Poco::Int64>;
  std::vector<T> rows;
  select, into(rows), now;
  std::vector<PhoneRow> out;
  for (const auto& t : rows) {
    out.push_back({t.get<0>(), t.get<1>(), t.get<2>(), t.get<3>(), t.get<4>(), t.get<5>(),
                   t.get<6>(), t.get<7>()});
  }
  return out;
}

std::optional<PhoneRow> onePhone(Poco::Data::Session& s, const std::string& where,
                                 std::string value) {
  Poco::Data::Statement select = (s << std::string(kPhoneColumns) + where, use(value));
  auto rows = readPhones(select);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

}  // namespace

SmsRow newMessage(const std::string& direction, const PhoneRow& phone, const std::string& other,
                  const std::string& body) {
  SmsRow m;
  m.id = sdk::newUuid();
  m.account_id = phone.account_id;
  m.identity_uuid = phone.identity_uuid;
  m.phone_id = phone.id;
  m.other_number = other;
  m.direction = direction;
  const bool in = direction == "incoming";
  m.from_number = in ? other : phone.number;
  m.to_number = in ? phone.number : other;
  m.body = body;
  const Segments seg = countSegments(body);
  m.segments = seg.count;
  m.encoding = seg.encoding;
  m.status = in ? "received" : "queued";
  m.is_read = !in;  // what an identity sends it has read
  m.carrier_ref = "local:" + m.id;
  m.extracted_code = sdk::extractVerificationCode("", body).value_or("");
  m.created_us = m.updated_us = sdk::nowMicros();
  return m;
}

SmsStore::SmsStore(sdk::Database& database, sdk::EventBus& events)
    : db_(database), events_(events) {}

std::vector<sdk::Migration> SmsStore::migrations() {
  const std::vector<std::string> statements = {
      "CREATE TABLE sms_phones (id CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) NOT NULL, "
      "identity_uuid CHAR(36) NOT NULL, number VARCHAR(16) NOT NULL, country_code CHAR(2) NOT "
      "NULL, provider VARCHAR(16) NOT NULL, provider_ref VARCHAR(64) NOT NULL, created_us BIGINT "
      "NOT NULL)",
      // A number belongs to one identity, and an identity has one number.
      "CREATE UNIQUE INDEX sms_phones_number ON sms_phones (number)",
      "CREATE UNIQUE INDEX sms_phones_identity ON sms_phones (identity_uuid)",
      "CREATE INDEX sms_phones_account ON sms_phones (account_id, created_us)",
      "CREATE TABLE sms_messages (id CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) NOT "
      "NULL, identity_uuid CHAR(36) NOT NULL, phone_id CHAR(36) NOT NULL, other_number "
      "VARCHAR(32) NOT NULL, direction VARCHAR(8) NOT NULL, from_number VARCHAR(32) NOT NULL, "
      "to_number VARCHAR(32) NOT NULL, body TEXT NOT NULL, segments INTEGER NOT NULL, encoding "
      "VARCHAR(8) NOT NULL, status VARCHAR(12) NOT NULL, error_code VARCHAR(32) NOT NULL, "
      "error_message TEXT NOT NULL, carrier_ref VARCHAR(80) NOT NULL, extracted_code "
      "VARCHAR(64) NOT NULL, is_read SMALLINT NOT NULL, created_us BIGINT NOT NULL, updated_us "
      "BIGINT NOT NULL)",
      "CREATE INDEX sms_messages_identity ON sms_messages (identity_uuid, created_us, id)",
      "CREATE INDEX sms_messages_account ON sms_messages (account_id, created_us, id)",
      "CREATE INDEX sms_messages_conversation ON sms_messages (phone_id, other_number, "
      "created_us)",
      // A carrier's id, or `local:<id>`: a message a carrier reports twice is stored once.
      "CREATE UNIQUE INDEX sms_messages_ref ON sms_messages (carrier_ref)",
      "CREATE TABLE sms_conversations (id VARCHAR(80) NOT NULL PRIMARY KEY, account_id CHAR(36) "
      "NOT NULL, identity_uuid CHAR(36) NOT NULL, phone_id CHAR(36) NOT NULL, other_number "
      "VARCHAR(32) NOT NULL, preview TEXT NOT NULL, message_count INTEGER NOT NULL, "
      "unread_count INTEGER NOT NULL, latest_us BIGINT NOT NULL)",
      "CREATE INDEX sms_conversations_account ON sms_conversations (account_id, latest_us)",
      "CREATE INDEX sms_conversations_identity ON sms_conversations (identity_uuid, latest_us)",
      "CREATE TABLE sms_calls (id CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) NOT NULL, "
      "identity_uuid CHAR(36) NOT NULL, phone_id CHAR(36) NOT NULL, from_number VARCHAR(64) NOT "
      "NULL, to_number VARCHAR(32) NOT NULL, carrier_ref VARCHAR(80) NOT NULL, created_us BIGINT "
      "NOT NULL)",
      "CREATE INDEX sms_calls_identity ON sms_calls (identity_uuid, created_us)",
      // A call a carrier reports twice is recorded once.
      "CREATE UNIQUE INDEX sms_calls_ref ON sms_calls (carrier_ref)",
  };
  // Messages carry emoji.
  return {sdk::Migration::portableUtf8(1, "phones, messages, conversations, calls", statements)};
}

std::optional<PhoneRow> SmsStore::phone(Poco::Data::Session& s, const std::string& id) {
  if (!sdk::isUuid(id)) return std::nullopt;
  return onePhone(s, "WHERE id = ?", Poco::toLower(id));
}

std::optional<PhoneRow> SmsStore::phoneByNumber(Poco::Data::Session& s, const std::string& number) {
  return onePhone(s, "WHERE number = ?", number);
}

std::optional<PhoneRow> SmsStore::phoneOfIdentity(Poco::Data::Session& s,
                                                  const std::string& identity) {
  return onePhone(s, "WHERE identity_uuid = ?", identity);
}

std::vector<PhoneRow> SmsStore::phones(Poco::Data::Session& s, const std::string& where,
                                       std::vector<std::string> binds, int limit, int offset) {
  Poco::Data::Statement select =
      (s << std::string(kPhoneColumns) + where + " ORDER BY created_us DESC, id LIMIT ? OFFSET ?");
  for (auto& b : binds) select, use(b);
  select, use(limit), use(offset);
  return readPhones(select);
}

long SmsStore::countPhones(Poco::Data::Session& s, const std::string& where,
                           std::vector<std::string> binds) {
  long n = 0;
  Poco::Data::Statement q = (s << "SELECT COUNT(*) FROM sms_phones " + where);
  for (auto& b : binds) q, use(b);
  q, into(n), now;
  return n;
}

void SmsStore::insertPhone(Poco::Data::Session& tx, const PhoneRow& p) {
  PhoneRow r = p;
  Poco::Int64 at = r.created_us;
  tx << "INSERT INTO sms_phones (id, account_id, identity_uuid, number, country_code, provider, "
        "provider_ref, created_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      use(r.id), use(r.account_id), use(r.identity_uuid), use(r.number), use(r.country_code),
      use(r.provider), use(r.provider_ref), use(at), now;
  events_.publish("phone.provisioned", r.account_id, r.identity_uuid, phoneJson(r), &tx);
}

const char* SmsStore::messageColumns() {
  return "SELECT id, account_id, identity_uuid, phone_id, other_number, direction, from_number, "
         "to_number, body, encoding, status, error_code, error_message, carrier_ref, "
         "extracted_code, segments, is_read, created_us, updated_us FROM sms_messages ";
}

std::vector<SmsRow> SmsStore::readMessages(Poco::Data::Statement& select) {
  // Poco's tuples stop at 20 columns: two extractions read consecutive columns of one row.
  using Head = Poco::Tuple<std::string, std::string, std::string, std::string, std::string,
                           std::string, std::string, std::string, std::string, std::string>;
  using Tail = Poco::Tuple<std::string, std::string, std::string, std::string, std::string, int,
                           int, Poco::Int64, Poco::Int64>;
  std::vector<Head> heads;
  std::vector<Tail> tails;
  select, into(heads), into(tails), now;
  std::vector<SmsRow> out;
  out.reserve(heads.size());
  for (std::size_t i = 0; i < heads.size() && i < tails.size(); ++i) {
    const Head& h = heads[i];
    const Tail& t = tails[i];
    SmsRow m;
    m.id = h.get<0>();
    m.account_id = h.get<1>();
    m.identity_uuid = h.get<2>();
    m.phone_id = h.get<3>();
    m.other_number = h.get<4>();
    m.direction = h.get<5>();
    m.from_number = h.get<6>();
    m.to_number = h.get<7>();
    m.body = h.get<8>();
    m.encoding = h.get<9>();
    m.status = t.get<0>();
    m.error_code = t.get<1>();
    m.error_message = t.get<2>();
    m.carrier_ref = t.get<3>();
    m.extracted_code = t.get<4>();
    m.segments = t.get<5>();
    m.is_read = t.get<6>() != 0;
    m.created_us = t.get<7>();
    m.updated_us = t.get<8>();
    out.push_back(std::move(m));
  }
  return out;
}

void SmsStore::insertMessage(Poco::Data::Session& tx, const SmsRow& row, bool publish_sent) {
  SmsRow m = row;
  int read = m.is_read ? 1 : 0;
  Poco::Int64 created = m.created_us, updated = m.updated_us;
  tx << "INSERT INTO sms_messages (id, account_id, identity_uuid, phone_id, other_number, "
        "direction, from_number, to_number, body, segments, encoding, status, error_code, "
        "error_message, carrier_ref, extracted_code, is_read, created_us, updated_us) VALUES (?, "
        "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      use(m.id), use(m.account_id), use(m.identity_uuid), use(m.phone_id), use(m.other_number),
      use(m.direction), use(m.from_number), use(m.to_number), use(m.body), use(m.segments),
      use(m.encoding), use(m.status), use(m.error_code), use(m.error_message), use(m.carrier_ref),
      use(m.extracted_code), use(read), use(created), use(updated), now;
  // The conversation: one row per (phone, other party), its preview the newest message.
  std::string conversation = m.conversationId(), preview = sdk::truncateUtf8(m.body, 200);
  int unread = m.is_read ? 0 : 1;
  // One statement: two first messages of a conversation at once must not both insert it.
  const std::string upsert =
      db_.dialect() == sdk::Dialect::kMysql
          ? "ON DUPLICATE KEY UPDATE preview = VALUES(preview), message_count = message_count + "
            "1, unread_count = unread_count + VALUES(unread_count), latest_us = "
            "VALUES(latest_us)"
          : "ON CONFLICT(id) DO UPDATE SET preview = excluded.preview, message_count = "
            "message_count + 1, unread_count = unread_count + excluded.unread_count, latest_us "
            "= excluded.latest_us";
  tx << "INSERT INTO sms_conversations (id, account_id, identity_uuid, phone_id, other_number, "
        "preview, message_count, unread_count, latest_us) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) " +
            upsert,
      use(conversation), use(m.account_id), use(m.identity_uuid), use(m.phone_id),
      use(m.other_number), use(preview), use(unread), use(created), now;
  if (m.direction == "incoming" || publish_sent) {
    events_.publish(m.direction == "incoming" ? "sms.received" : "sms.sent", m.account_id,
                    m.identity_uuid, messageJson(m, false), &tx);
  }
}

std::optional<SmsRow> SmsStore::message(Poco::Data::Session& s, const std::string& id) {
  if (!sdk::isUuid(id)) return std::nullopt;
  std::string u = Poco::toLower(id);
  Poco::Data::Statement select = (s << std::string(messageColumns()) + "WHERE id = ?", use(u));
  auto rows = readMessages(select);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::optional<SmsRow> SmsStore::messageByRef(Poco::Data::Session& s, const std::string& ref) {
  if (ref.empty()) return std::nullopt;
  std::string r = ref;
  Poco::Data::Statement select =
      (s << std::string(messageColumns()) + "WHERE carrier_ref = ?", use(r));
  auto rows = readMessages(select);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

SmsRow SmsStore::applyDelivery(Poco::Data::Session& tx, SmsRow m, const Delivery& d, bool as_sent) {
  // The rule is in the UPDATE's condition, not in what was read before: a report and the
  // sender's own update (or two reports) running at once never move a message back.
  std::string status = d.status, carrier_ref = d.ref.empty() ? m.carrier_ref : d.ref;
  std::string from_a = "queued", from_b = statusRank(d.status) == 0 ? "queued" : "sent";
  std::string error_code = d.error_code, error_message = d.error_message, id = m.id;
  Poco::Int64 at = sdk::nowMicros();
  Poco::Data::Statement update =
      (tx << "UPDATE sms_messages SET status = ?, carrier_ref = ?, error_code = ?, "
             "error_message = ?, updated_us = ? WHERE id = ? AND status IN (?, ?)",
       use(status), use(carrier_ref), use(error_code), use(error_message), use(at), use(id),
       use(from_a), use(from_b));
  const bool moved = update.execute() > 0;
  if (moved) {
    m.status = status;
    m.carrier_ref = carrier_ref;
    m.error_code = error_code;
    m.error_message = error_message;
    m.updated_us = at;
  } else if (auto current = message(tx, m.id)) {
    m = *current;  // a later status got there first
  }
  // A sent message is announced once, even when a report overtook the carrier's answer.
  if (moved || as_sent) {
    events_.publish(as_sent ? "sms.sent" : "sms.updated", m.account_id, m.identity_uuid,
                    messageJson(m, false), &tx);
  }
  return m;
}

SmsRow SmsStore::setRead(Poco::Data::Session& tx, SmsRow m, bool is_read) {
  if (m.is_read == is_read) return m;
  m.is_read = is_read;
  m.updated_us = sdk::nowMicros();
  int read = is_read ? 1 : 0, delta = is_read ? -1 : 1;
  Poco::Int64 at = m.updated_us;
  // Only when it changes here: two requests marking it read at once count it down once.
  Poco::Data::Statement update =
      (tx << "UPDATE sms_messages SET is_read = ?, updated_us = ? WHERE id = ? AND is_read <> ?",
       use(read), use(at), use(m.id), bind(read));
  if (update.execute() == 0) return m;
  std::string conversation = m.conversationId();
  tx << "UPDATE sms_conversations SET unread_count = unread_count + ? WHERE id = ?", use(delta),
      use(conversation), now;
  events_.publish("sms.updated", m.account_id, m.identity_uuid, messageJson(m, false), &tx);
  return m;
}

void SmsStore::insertCall(Poco::Data::Session& tx, const PhoneRow& phone, const IncomingCall& c) {
  std::string id = sdk::newUuid(), account = phone.account_id, identity = phone.identity_uuid,
              phone_id = phone.id, from = sdk::truncateUtf8(c.from, 64), to = c.to,
              ref = c.ref.empty() ? "local:" + id : sdk::truncateUtf8(c.ref, 80);
  Poco::Int64 at = sdk::nowMicros();
  tx << "INSERT INTO sms_calls (id, account_id, identity_uuid, phone_id, from_number, to_number, "
        "carrier_ref, created_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      use(id), use(account), use(identity), use(phone_id), use(from), use(to), use(ref), use(at),
      now;
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", id);
  o->set("phone", phone_id);
  o->set("identity", identity);
  o->set("from_number", from);
  o->set("to_number", to);
  o->set("created_dt", sdk::isoTimestamp(at));
  events_.publish("call.received", account, identity, o, &tx);
}

Poco::JSON::Object::Ptr SmsStore::phoneJson(const PhoneRow& p) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", p.id);
  o->set("number", p.number);
  o->set("country_code", p.country_code);
  o->set("identity", p.identity_uuid);
  o->set("created_dt", sdk::isoTimestamp(p.created_us));
  o->set("updated_dt", sdk::isoTimestamp(p.created_us));  // a phone never changes
  return o;
}

Poco::JSON::Object::Ptr SmsStore::messageJson(const SmsRow& m, bool with_body) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", m.id);
  o->set("phone", m.phone_id);
  o->set("identity", m.identity_uuid);
  o->set("conversation_id", m.conversationId());
  o->set("direction", m.direction);
  o->set("from_number", m.from_number);
  o->set("to_number", m.to_number);
  if (with_body) o->set("body", m.body);
  o->set("segments", m.segments);
  o->set("encoding", m.encoding);
  o->set("extracted_code", orNull(m.extracted_code));
  o->set("is_read", m.is_read);
  o->set("status", m.status);
  o->set("error_code", orNull(m.error_code));
  o->set("error_message", orNull(m.error_message));
  o->set("created_dt", sdk::isoTimestamp(m.created_us));
  o->set("updated_dt", sdk::isoTimestamp(m.updated_us));
  return o;
}

}  // namespace svc::plugins::sms
