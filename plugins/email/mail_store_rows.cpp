// MailStore's rows: reading and inserting inboxes, attachments and messages, and their JSON
// (see mail_store.h).
#include "mail_store.h"

#include "bounces/bounce_store.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>
#include <Poco/String.h>
#include <Poco/Tuple.h>

#include <sstream>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

namespace {

using InboxTuple =
    Poco::Tuple<std::string, std::string, std::string, std::string, int, Poco::Int64>;
constexpr const char* kInboxColumns =
    "SELECT id, account_id, identity_uuid, address, is_primary, created_us FROM email_inboxes ";

Inbox toInbox(const InboxTuple& t) {
  return {t.get<0>(), t.get<1>(), t.get<2>(), t.get<3>(), t.get<4>() != 0, t.get<5>()};
}

std::optional<Inbox> oneInbox(Poco::Data::Session& s, const std::string& where,
                              const std::string& value) {
  std::vector<InboxTuple> rows;
  std::string v = value;
  s << std::string(kInboxColumns) + where, use(v), into(rows), now;
  if (rows.empty()) return std::nullopt;
  return toInbox(rows.front());
}

using AttachmentTuple = Poco::Tuple<std::string, std::string, std::string, std::string, std::string,
                                    std::string, Poco::Int64, Poco::Int64>;
constexpr const char* kAttachmentColumns =
    "SELECT a.uuid, a.account_id, a.identity_uuid, a.filename, a.content_type, a.sha256, a.size, "
    "a.created_us FROM email_attachments a ";

AttachmentRecord toAttachment(const AttachmentTuple& t) {
  return {t.get<0>(), t.get<1>(), t.get<2>(), t.get<3>(),
          t.get<4>(), t.get<5>(), t.get<6>(), t.get<7>()};
}

Poco::JSON::Array::Ptr array(const std::vector<std::string>& list) {
  Poco::JSON::Array::Ptr a = new Poco::JSON::Array;
  for (const auto& s : list) a->add(s);
  return a;
}

Poco::Dynamic::Var nullable(const std::string& s) {
  return s.empty() ? Poco::Dynamic::Var() : Poco::Dynamic::Var(s);
}

// The stored checks as JSON, or null (outgoing mail, and mail filed before they existed).
Poco::Dynamic::Var authenticationValue(const std::string& text) {
  if (text.empty()) return Poco::Dynamic::Var();
  try {
    Poco::JSON::Parser parser;
    return parser.parse(text).extract<Poco::JSON::Object::Ptr>();
  } catch (const Poco::Exception&) {
    return Poco::Dynamic::Var();
  }
}

}  // namespace

std::string jsonList(const std::vector<std::string>& list) {
  // What does not fit in 16 KB is dropped: a TEXT column holds 64 KB, and an event carries
  // several lists. Mail with thousands of recipients keeps the first few hundred.
  std::vector<std::string> kept;
  std::size_t size = 2;
  for (const auto& s : list) {
    size += s.size() + 4;
    if (size > 16384) break;
    kept.push_back(s);
  }
  std::ostringstream out;
  array(kept)->stringify(out);
  return out.str();
}

std::string readLongText(Poco::Data::Session& s, sdk::Dialect dialect, const std::string& table,
                         const std::string& column, const std::string& key_column,
                         const std::string& key) {
  std::string k = key;
  if (dialect == sdk::Dialect::kSqlite) {
    std::vector<std::string> rows;
    s << "SELECT " + column + " FROM " + table + " WHERE " + key_column + " = ?", use(k),
        into(rows), now;
    return rows.empty() ? std::string() : rows.front();
  }
  // Poco's MySQL connector gives each result column a buffer of the column's declared size
  // (and crashes on LONGTEXT): read the value in pieces whose declared size is small.
  constexpr int kChunk = 8192;  // characters
  long length = 0;
  s << "SELECT CHAR_LENGTH(" + column + ") FROM " + table + " WHERE " + key_column + " = ?", use(k),
      into(length), now;
  std::string out;
  for (long start = 1; start <= length; start += kChunk) {
    std::vector<std::string> piece;
    Poco::Int64 from = start;
    s << "SELECT SUBSTRING(" + column + ", ?, " + std::to_string(kChunk) + ") FROM " + table +
             " WHERE " + key_column + " = ?",
        use(from), use(k), into(piece), now;
    if (piece.empty()) break;
    out += piece.front();
  }
  return out;
}

std::vector<std::string> parseJsonList(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  try {
    Poco::JSON::Parser parser;
    auto parsed = parser.parse(text);
    auto a = parsed.extract<Poco::JSON::Array::Ptr>();
    for (std::size_t i = 0; i < a->size(); ++i) out.push_back(a->getElement<std::string>(i));
  } catch (const Poco::Exception&) {
  }
  return out;
}

std::optional<Inbox> MailStore::inboxById(Poco::Data::Session& s, const std::string& id) {
  if (!sdk::isUuid(id)) return std::nullopt;
  return oneInbox(s, "WHERE id = ?", Poco::toLower(id));
}

std::optional<Inbox> MailStore::inboxByAddress(Poco::Data::Session& s, const std::string& address) {
  return oneInbox(s, "WHERE address = ?", Poco::toLower(address));
}

std::optional<Inbox> MailStore::primaryInbox(Poco::Data::Session& s,
                                             const std::string& identity_uuid) {
  return oneInbox(s, "WHERE identity_uuid = ? ORDER BY is_primary DESC, created_us LIMIT 1",
                  identity_uuid);
}

void MailStore::insertInbox(Poco::Data::Session& s, const Inbox& inbox) {
  std::string id = inbox.id, account = inbox.account_id, identity = inbox.identity_uuid,
              address = inbox.address;
  int primary = inbox.is_primary ? 1 : 0;
  Poco::Int64 at = inbox.created_us;
  s << "INSERT INTO email_inboxes (id, account_id, identity_uuid, address, is_primary, "
       "created_us) VALUES (?, ?, ?, ?, ?, ?)",
      use(id), use(account), use(identity), use(address), use(primary), use(at), now;
}

Poco::JSON::Object::Ptr MailStore::inboxJson(const Inbox& inbox) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", inbox.id);
  o->set("address", inbox.address);
  o->set("identity", inbox.identity_uuid);
  o->set("is_primary", inbox.is_primary);
  o->set("created_dt", sdk::isoTimestamp(inbox.created_us));
  return o;
}

AttachmentRecord MailStore::insertAttachment(Poco::Data::Session& tx, const std::string& account_id,
                                             const std::string& identity_uuid,
                                             const std::string& filename,
                                             const std::string& content_type, std::int64_t size,
                                             const std::string& sha256) {
  AttachmentRecord a{sdk::newUuid(), account_id, identity_uuid, filename,
                     content_type,   sha256,     size,          sdk::nowMicros()};
  Poco::Int64 sz = a.size, at = a.created_us;
  tx << "INSERT INTO email_attachments (uuid, account_id, identity_uuid, filename, "
        "content_type, size, sha256, created_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      use(a.uuid), use(a.account_id), use(a.identity_uuid), use(a.filename), use(a.content_type),
      use(sz), use(a.sha256), use(at), now;
  return a;
}

AttachmentRecord MailStore::saveAttachment(const std::string& account_id,
                                           const std::string& identity_uuid,
                                           const std::string& filename,
                                           const std::string& content_type, std::string_view data) {
  const std::string sha = blobs_.put(data);  // the bytes first, then the row that names them
  AttachmentRecord a;
  db_.transaction([&](Poco::Data::Session& tx) {
    a = insertAttachment(tx, account_id, identity_uuid, filename, content_type,
                         static_cast<std::int64_t>(data.size()), sha);
  });
  return a;
}

std::optional<AttachmentRecord> MailStore::attachment(Poco::Data::Session& s,
                                                      const std::string& uuid) {
  if (!sdk::isUuid(uuid)) return std::nullopt;
  std::vector<AttachmentTuple> rows;
  std::string u = Poco::toLower(uuid);
  s << std::string(kAttachmentColumns) + "WHERE a.uuid = ?", use(u), into(rows), now;
  if (rows.empty()) return std::nullopt;
  return toAttachment(rows.front());
}

std::vector<AttachmentRecord> MailStore::messageAttachments(Poco::Data::Session& s,
                                                            const std::string& message_id) {
  std::vector<AttachmentTuple> rows;
  std::string id = message_id;
  s << std::string(kAttachmentColumns) +
           "JOIN email_message_attachments m ON m.attachment_uuid = a.uuid WHERE m.message_id = ? "
           "ORDER BY m.position",
      use(id), into(rows), now;
  std::vector<AttachmentRecord> out;
  for (const auto& r : rows) out.push_back(toAttachment(r));
  return out;
}

Poco::JSON::Object::Ptr MailStore::attachmentJson(const AttachmentRecord& a) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("uuid", a.uuid);
  o->set("filename", a.filename);
  o->set("content_type", a.content_type);
  o->set("size", a.size);
  return o;
}

const char* MailStore::messageColumns() {
  // The bodies are read by loadBodies(), only where a message is shown whole.
  return "SELECT id, account_id, identity_uuid, inbox_id, thread_id, direction, from_email, "
         "to_json, cc_json, bcc_json, extracted_code, reply_to_json, references_json, subject, "
         "'', '', "
         "message_id, in_reply_to, status, is_read, created_us, updated_us, authentication, "
         "auth_verdict, quarantined FROM email_messages ";
}

std::vector<MessageRow> MailStore::readMessages(Poco::Data::Statement& select) {
  // Poco's tuples stop at 20 columns: two extractions read consecutive columns of one row.
  using Head =
      Poco::Tuple<std::string, std::string, std::string, std::string, std::string, std::string,
                  std::string, std::string, std::string, std::string, std::string>;
  using Tail = Poco::Tuple<std::string, std::string, std::string, std::string, std::string,
                           std::string, std::string, std::string, int, Poco::Int64, Poco::Int64>;
  using Auth = Poco::Tuple<std::string, std::string, int>;
  std::vector<Head> heads;
  std::vector<Tail> tails;
  std::vector<Auth> auths;
  select, into(heads), into(tails), into(auths), now;
  std::vector<MessageRow> out;
  out.reserve(heads.size());
  for (std::size_t i = 0; i < heads.size() && i < tails.size() && i < auths.size(); ++i) {
    const Head& h = heads[i];
    const Tail& t = tails[i];
    MessageRow m;
    m.id = h.get<0>();
    m.account_id = h.get<1>();
    m.identity_uuid = h.get<2>();
    m.inbox_id = h.get<3>();
    m.thread_id = h.get<4>();
    m.direction = h.get<5>();
    m.from_email = h.get<6>();
    m.to = parseJsonList(h.get<7>());
    m.cc = parseJsonList(h.get<8>());
    m.bcc = parseJsonList(h.get<9>());
    m.extracted_code = h.get<10>();
    m.reply_to = parseJsonList(t.get<0>());
    m.references = parseJsonList(t.get<1>());
    m.subject = t.get<2>();
    m.content = t.get<3>();
    m.html = t.get<4>();
    m.message_id = t.get<5>();
    m.in_reply_to = t.get<6>();
    m.status = t.get<7>();
    m.is_read = t.get<8>() != 0;
    m.created_us = t.get<9>();
    m.updated_us = t.get<10>();
    m.authentication = auths[i].get<0>();
    m.auth_verdict = auths[i].get<1>();
    m.quarantined = auths[i].get<2>() != 0;
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<MessageRow> MailStore::messageHead(Poco::Data::Session& s, const std::string& id) {
  if (!sdk::isUuid(id)) return std::nullopt;
  std::string u = Poco::toLower(id);
  Poco::Data::Statement select = (s << std::string(messageColumns()) + "WHERE id = ?", use(u));
  auto rows = readMessages(select);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::optional<MessageRow> MailStore::message(Poco::Data::Session& s, const std::string& id) {
  auto row = messageHead(s, id);
  if (row) loadBodies(s, *row);
  return row;
}

void MailStore::loadBodies(Poco::Data::Session& s, MessageRow& m) {
  m.content = readLongText(s, db_.dialect(), "email_messages", "content", "id", m.id);
  m.html = readLongText(s, db_.dialect(), "email_messages", "html", "id", m.id);
}

Poco::JSON::Object::Ptr MailStore::eventJson(Poco::Data::Session& s, const MessageRow& m) {
  Poco::JSON::Object::Ptr o = messageJson(s, m, false);
  if (m.quarantined) {
    // Streams and webhooks feed automation that acts on codes: nothing the message says, its
    // subject included ("123456 is your code"), goes out with it. GET still shows it all.
    o->set("extracted_code", Poco::Dynamic::Var());
    o->set("subject", "");
  }
  return o;
}

Poco::JSON::Object::Ptr MailStore::messageJson(
    Poco::Data::Session& s, const MessageRow& m, bool full,
    const std::map<std::string, Poco::Dynamic::Var>* bounces) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", m.id);
  o->set("thread_id", m.thread_id);
  o->set("inbox", m.inbox_id);
  o->set("identity", m.identity_uuid);
  o->set("direction", m.direction);
  o->set("from_email", m.from_email);
  o->set("to_email", array(m.to));
  o->set("cc", array(m.cc));
  if (m.direction == "outgoing") o->set("bcc", array(m.bcc));
  o->set("subject", m.subject);
  o->set("extracted_code", nullable(m.extracted_code));
  o->set("message_id", m.message_id);
  o->set("in_reply_to", nullable(m.in_reply_to));
  o->set("is_read", m.is_read);
  o->set("status", nullable(m.status));
  // Only a bounced message has bounce rows: the others are not looked up.
  Poco::Dynamic::Var bounce;
  if (m.status == "bounced") {
    if (!bounces) {
      bounce = BounceStore::json(s, m.id);
    } else if (auto found = bounces->find(m.id); found != bounces->end()) {
      bounce = found->second;
    }
  }
  o->set("bounce", bounce);
  o->set("created_dt", sdk::isoTimestamp(m.created_us));
  o->set("updated_dt", sdk::isoTimestamp(m.updated_us));
  o->set("authentication", authenticationValue(m.authentication));
  o->set("quarantined", m.quarantined);
  if (full) {
    o->set("content", m.content);
    o->set("html", nullable(m.html));
    o->set("reply_to", array(m.reply_to));
    o->set("references", array(m.references));
    Poco::JSON::Array::Ptr attachments = new Poco::JSON::Array;
    for (const auto& a : messageAttachments(s, m.id)) attachments->add(attachmentJson(a));
    o->set("attachments", attachments);
  }
  return o;
}

}  // namespace svc::plugins::email
