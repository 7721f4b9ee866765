#include "mail_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/util.h>
#include <svc/sdk/verification_code.h>

#include <Poco/Data/Statement.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>
#include <Poco/String.h>
#include <Poco/Tuple.h>

#include <algorithm>
#include <set>
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

std::string preview(const std::string& content) {
  std::string flat;
  bool space = false;
  for (char c : content) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !flat.empty();
      continue;
    }
    if (space) flat += ' ';
    space = false;
    flat += c;
    if (flat.size() >= 200) break;
  }
  // Do not cut a UTF-8 sequence in half.
  while (!flat.empty() && (static_cast<unsigned char>(flat.back()) & 0xC0) == 0x80) {
    std::size_t start = flat.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(flat[start]) & 0xC0) == 0x80) --start;
    std::size_t need = (static_cast<unsigned char>(flat[start]) >> 5) == 6    ? 2
                       : (static_cast<unsigned char>(flat[start]) >> 4) == 14 ? 3
                                                                              : 4;
    if (flat.size() - start == need) break;
    flat.resize(start);
  }
  return flat;
}

Poco::JSON::Array::Ptr array(const std::vector<std::string>& list) {
  Poco::JSON::Array::Ptr a = new Poco::JSON::Array;
  for (const auto& s : list) a->add(s);
  return a;
}

Poco::Dynamic::Var nullable(const std::string& s) {
  return s.empty() ? Poco::Dynamic::Var() : Poco::Dynamic::Var(s);
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

std::string normalizedSubject(const std::string& subject) {
  std::string s = Poco::toLower(Poco::trim(subject));
  static const char* prefixes[] = {"re", "fwd", "fw", "aw", "sv", "wg", "tr", "antw"};
  bool again = true;
  while (again) {
    again = false;
    for (const char* p : prefixes) {
      std::size_t n = std::strlen(p);
      if (s.compare(0, n, p) != 0) continue;
      std::size_t i = n;
      if (i < s.size() && s[i] == '[') {  // "Re[2]:"
        std::size_t close = s.find(']', i);
        if (close == std::string::npos) continue;
        i = close + 1;
      }
      while (i < s.size() && s[i] == ' ') ++i;
      if (i < s.size() && s[i] == ':') {
        s = Poco::trim(s.substr(i + 1));
        again = true;
        break;
      }
    }
  }
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

MailStore::MailStore(sdk::Database& db, sdk::EventBus& events, BlobStore& blobs)
    : db_(db), events_(events), blobs_(blobs) {}

std::vector<sdk::Migration> MailStore::migrations() {
  auto both = [](const std::string& sql) {
    std::string sqlite = sql, mysql = sql;
    for (std::string* s : {&sqlite, &mysql}) {
      std::size_t pos;
      while ((pos = s->find("LONGTEXT_")) != std::string::npos) {
        s->replace(pos, 9, s == &sqlite ? "TEXT" : "LONGTEXT");
      }
    }
    return std::make_pair(sqlite, mysql);
  };
  const std::vector<std::string> statements = {
      "CREATE TABLE email_domains (name VARCHAR(253) NOT NULL, account_id CHAR(36) NOT NULL, "
      "status VARCHAR(16) NOT NULL, token VARCHAR(64) NOT NULL, created_us BIGINT NOT NULL, "
      "verified_us BIGINT NOT NULL, PRIMARY KEY (name, account_id))",
      "CREATE INDEX email_domains_account ON email_domains (account_id, created_us)",
      "CREATE TABLE email_inboxes (id CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) NOT "
      "NULL, identity_uuid CHAR(36) NOT NULL, address VARCHAR(254) NOT NULL, is_primary SMALLINT "
      "NOT NULL, created_us BIGINT NOT NULL)",
      "CREATE UNIQUE INDEX email_inboxes_address ON email_inboxes (address)",
      "CREATE INDEX email_inboxes_identity ON email_inboxes (identity_uuid, is_primary)",
      "CREATE INDEX email_inboxes_account ON email_inboxes (account_id, created_us)",
      "CREATE TABLE email_threads (id CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) NOT "
      "NULL, identity_uuid CHAR(36) NOT NULL, inbox_id CHAR(36) NOT NULL, subject TEXT NOT NULL, "
      "preview TEXT NOT NULL, message_count INTEGER NOT NULL, unread_count INTEGER NOT NULL, "
      "attachment_names TEXT NOT NULL, participants TEXT NOT NULL, latest_us BIGINT NOT "
      "NULL, created_us BIGINT NOT NULL)",
      "CREATE INDEX email_threads_account ON email_threads (account_id, latest_us)",
      "CREATE INDEX email_threads_identity ON email_threads (identity_uuid, latest_us)",
      "CREATE TABLE email_thread_keys (inbox_id CHAR(36) NOT NULL, subject_key CHAR(64) NOT NULL, "
      "address VARCHAR(254) NOT NULL, thread_id CHAR(36) NOT NULL, PRIMARY KEY (inbox_id, "
      "subject_key, address))",
      "CREATE TABLE email_messages (id CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) NOT "
      "NULL, identity_uuid CHAR(36) NOT NULL, inbox_id CHAR(36) NOT NULL, thread_id CHAR(36) NOT "
      "NULL, direction VARCHAR(8) NOT NULL, from_email VARCHAR(254) NOT NULL, to_json TEXT "
      "NOT NULL, cc_json TEXT NOT NULL, bcc_json TEXT NOT NULL, reply_to_json TEXT "
      "NOT NULL, references_json TEXT NOT NULL, subject TEXT NOT NULL, content LONGTEXT_ NOT "
      "NULL, html LONGTEXT_ NOT NULL, message_id TEXT NOT NULL, message_key CHAR(64) NOT NULL, "
      "in_reply_to TEXT NOT NULL, status VARCHAR(8) NOT NULL, is_read SMALLINT NOT NULL, "
      "created_us BIGINT NOT NULL, updated_us BIGINT NOT NULL)",
      "CREATE INDEX email_messages_identity ON email_messages (identity_uuid, created_us, id)",
      "CREATE INDEX email_messages_account ON email_messages (account_id, created_us, id)",
      "CREATE INDEX email_messages_thread ON email_messages (thread_id, created_us)",
      "CREATE INDEX email_messages_key ON email_messages (inbox_id, message_key)",
      "CREATE TABLE email_attachments (uuid CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) "
      "NOT NULL, identity_uuid CHAR(36) NOT NULL, filename TEXT NOT NULL, content_type "
      "VARCHAR(128) NOT NULL, size BIGINT NOT NULL, sha256 CHAR(64) NOT NULL, created_us BIGINT "
      "NOT NULL)",
      "CREATE TABLE email_message_attachments (message_id CHAR(36) NOT NULL, position INTEGER NOT "
      "NULL, attachment_uuid CHAR(36) NOT NULL, PRIMARY KEY (message_id, position))",
      "CREATE TABLE email_outbox (message_id CHAR(36) NOT NULL PRIMARY KEY, sender VARCHAR(254) "
      "NOT NULL, recipients TEXT NOT NULL, raw LONGTEXT_ NOT NULL, attempts INTEGER NOT NULL, "
      "next_attempt_us BIGINT NOT NULL, last_error TEXT NOT NULL, created_us BIGINT NOT NULL)",
      "CREATE INDEX email_outbox_due ON email_outbox (next_attempt_us)",
  };
  sdk::Migration m;
  m.version = 1;
  m.description = "domains, inboxes, threads, messages, attachments, outbox";
  for (const auto& sql : statements) {
    auto [sqlite, mysql] = both(sql);
    // Mail is full of four-byte UTF-8 (emoji): MySQL's "utf8" cannot store it.
    if (mysql.rfind("CREATE TABLE", 0) == 0)
      mysql += " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
    m.sqlite.push_back(sqlite);
    m.mysql.push_back(mysql);
  }
  // How far each svcd's SMTP spool has been filed (recorded with the messages it filed).
  sdk::Migration spool = sdk::Migration::portable(
      2, "SMTP spool positions",
      {"CREATE TABLE email_spool_positions (spool_id CHAR(36) NOT NULL PRIMARY KEY, segment "
       "BIGINT NOT NULL, offset_bytes BIGINT NOT NULL)"});
  // The code each message carries, found when it is filed. Messages filed before this have none
  // (no backfill: the code of an old message is of no use to anyone).
  sdk::Migration codes = sdk::Migration::portable(
      3, "verification codes of messages",
      {"ALTER TABLE email_messages ADD COLUMN extracted_code VARCHAR(64) NOT NULL DEFAULT ''"});
  return {m, spool, codes};
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

std::string MailStore::findThread(Poco::Data::Session& tx, const Inbox& inbox, const NewMessage& m,
                                  const std::string& subject_key,
                                  std::map<std::string, std::string>& keys_seen) {
  // 1. This very message filed here before (a copy sent to oneself), then the parent by
  // In-Reply-To, then by References (newest first), within this inbox.
  std::vector<std::string> ids;
  if (!m.message_id.empty()) ids.push_back(m.message_id);
  if (!m.in_reply_to.empty()) ids.push_back(m.in_reply_to);
  for (auto it = m.references.rbegin(); it != m.references.rend(); ++it) ids.push_back(*it);
  for (const auto& id : ids) {
    std::vector<std::string> found;
    std::string inbox_id = inbox.id, key = sdk::sha256Hex(id);
    tx << "SELECT thread_id FROM email_messages WHERE inbox_id = ? AND message_key = ? LIMIT 1",
        use(inbox_id), use(key), into(found), now;
    if (!found.empty()) return found.front();
  }
  // 2. The same normalized subject with the same correspondent (incoming mail only: what this
  // inbox sends starts a thread unless it is a reply).
  if (m.direction == "incoming" && !normalizedSubject(m.subject).empty()) {
    std::vector<std::string> found;
    std::string inbox_id = inbox.id, key = subject_key, address = Poco::toLower(m.from.address);
    tx << "SELECT thread_id FROM email_thread_keys WHERE inbox_id = ? AND subject_key = ? AND "
          "address = ?",
        use(inbox_id), use(key), use(address), into(found), now;
    keys_seen[address] = found.empty() ? std::string() : found.front();
    if (!found.empty()) return found.front();
  }
  return {};
}

MessageRow MailStore::file(Poco::Data::Session& tx, const Inbox& inbox, NewMessage m) {
  const bool mysql = db_.dialect() == sdk::Dialect::kMysql;
  if (m.created_us == 0) m.created_us = sdk::nowMicros();
  const std::string subject_key = sdk::sha256Hex(normalizedSubject(m.subject));
  std::map<std::string, std::string> keys_seen;
  std::string thread_id =
      m.thread_id.empty() ? findThread(tx, inbox, m, subject_key, keys_seen) : m.thread_id;

  // Everyone on the message but this inbox itself, as the thread lists them.
  std::vector<std::string> people;
  auto addPerson = [&](const std::string& a) {
    std::string l = Poco::toLower(a);
    if (l.empty() || l == inbox.address) return;
    if (std::find(people.begin(), people.end(), l) == people.end()) people.push_back(l);
  };
  addPerson(m.from.address);
  for (const auto& a : m.to) addPerson(a);
  for (const auto& a : m.cc) addPerson(a);

  std::vector<std::string> names;
  for (const auto& a : m.attachments) names.push_back(a.filename);
  const std::string text_preview = preview(m.content);
  const int unread = m.is_read ? 0 : 1;

  bool existing = false;
  if (!thread_id.empty()) {
    using ThreadTuple = Poco::Tuple<std::string, std::string, Poco::Int64>;
    std::vector<ThreadTuple> rows;
    std::string id = thread_id;
    tx << std::string(
              "SELECT attachment_names, participants, latest_us FROM email_threads "
              "WHERE id = ?") +
              (mysql ? " FOR UPDATE" : ""),
        use(id), into(rows), now;
    if (!rows.empty()) {
      existing = true;
      auto all_names = parseJsonList(rows.front().get<0>());
      all_names.insert(all_names.end(), names.begin(), names.end());
      auto all_people = parseJsonList(rows.front().get<1>());
      for (const auto& p : people) {
        if (std::find(all_people.begin(), all_people.end(), p) == all_people.end())
          all_people.push_back(p);
      }
      std::string names_json = jsonList(all_names), people_json = jsonList(all_people);
      Poco::Int64 latest = std::max<Poco::Int64>(rows.front().get<2>(), m.created_us);
      const bool newest = m.created_us >= rows.front().get<2>();
      std::string pv = text_preview;
      int u = unread;
      if (newest) {
        tx << "UPDATE email_threads SET message_count = message_count + 1, unread_count = "
              "unread_count + ?, attachment_names = ?, participants = ?, latest_us = ?, preview = "
              "? WHERE id = ?",
            use(u), use(names_json), use(people_json), use(latest), use(pv), use(id), now;
      } else {
        tx << "UPDATE email_threads SET message_count = message_count + 1, unread_count = "
              "unread_count + ?, attachment_names = ?, participants = ? WHERE id = ?",
            use(u), use(names_json), use(people_json), use(id), now;
      }
    }
  }
  if (!existing) {
    thread_id = sdk::newUuid();
    std::string account = inbox.account_id, identity = inbox.identity_uuid, inbox_id = inbox.id,
                subject = m.subject, pv = text_preview, names_json = jsonList(names),
                people_json = jsonList(people);
    int u = unread;
    Poco::Int64 at = m.created_us;
    tx << "INSERT INTO email_threads (id, account_id, identity_uuid, inbox_id, subject, preview, "
          "message_count, unread_count, attachment_names, participants, latest_us, created_us) "
          "VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)",
        use(thread_id), use(account), use(identity), use(inbox_id), use(subject), use(pv), use(u),
        use(names_json), use(people_json), use(at), bind(m.created_us), now;
  }
  // Remember (subject, correspondent) -> thread for replies that carry no In-Reply-To.
  if (!normalizedSubject(m.subject).empty()) {
    for (const auto& p : people) {
      if (p.size() > 254) continue;
      std::string inbox_id = inbox.id, key = subject_key, address = p, thread = thread_id;
      // Look first: MySQL counts an UPDATE that changes nothing as no row at all.
      std::vector<std::string> current;
      if (auto seen = keys_seen.find(p); seen != keys_seen.end()) {
        if (!seen->second.empty()) current.push_back(seen->second);
      } else {
        tx << "SELECT thread_id FROM email_thread_keys WHERE inbox_id = ? AND subject_key = ? "
              "AND address = ?",
            use(inbox_id), use(key), use(address), into(current), now;
      }
      if (current.empty()) {
        tx << "INSERT INTO email_thread_keys (inbox_id, subject_key, address, thread_id) VALUES "
              "(?, ?, ?, ?)",
            use(inbox_id), use(key), use(address), use(thread), now;
      } else if (current.front() != thread) {
        tx << "UPDATE email_thread_keys SET thread_id = ? WHERE inbox_id = ? AND subject_key = ? "
              "AND address = ?",
            use(thread), use(inbox_id), use(key), use(address), now;
      }
    }
  }

  MessageRow row;
  row.id = sdk::newUuid();
  row.account_id = inbox.account_id;
  row.identity_uuid = inbox.identity_uuid;
  row.inbox_id = inbox.id;
  row.thread_id = thread_id;
  row.direction = m.direction;
  row.from_email = m.from.address.size() > 254 ? m.from.address.substr(0, 254) : m.from.address;
  row.to = m.to;
  row.cc = m.cc;
  row.bcc = m.bcc;
  row.reply_to = m.reply_to;
  row.references = m.references;
  row.subject = m.subject;
  row.content = m.content;
  row.html = m.html;
  row.message_id = m.message_id;
  row.in_reply_to = m.in_reply_to;
  row.status = m.status;
  // content is the text part, or the text of the HTML part when there is none.
  row.extracted_code = sdk::extractVerificationCode(m.subject, m.content).value_or("");
  row.is_read = m.is_read;
  row.created_us = row.updated_us = m.created_us;
  {
    std::string to = jsonList(row.to), cc = jsonList(row.cc), bcc = jsonList(row.bcc),
                reply_to = jsonList(row.reply_to), refs = jsonList(row.references),
                key = sdk::sha256Hex(row.message_id);
    int read = row.is_read ? 1 : 0;
    Poco::Int64 at = row.created_us;
    tx << "INSERT INTO email_messages (id, account_id, identity_uuid, inbox_id, thread_id, "
          "direction, from_email, to_json, cc_json, bcc_json, reply_to_json, references_json, "
          "subject, content, html, message_id, message_key, in_reply_to, status, extracted_code, "
          "is_read, created_us, updated_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
          "?, ?, ?, ?, ?, ?, ?, ?)",
        use(row.id), use(row.account_id), use(row.identity_uuid), use(row.inbox_id),
        use(row.thread_id), use(row.direction), use(row.from_email), use(to), use(cc), use(bcc),
        use(reply_to), use(refs), use(row.subject), use(row.content), use(row.html),
        use(row.message_id), use(key), use(row.in_reply_to), use(row.status),
        use(row.extracted_code), use(read), use(at), bind(row.created_us), now;
  }
  int position = 0;
  for (const auto& a : m.attachments) {
    std::string id = row.id, uuid = a.uuid;
    int p = position++;
    tx << "INSERT INTO email_message_attachments (message_id, position, attachment_uuid) VALUES "
          "(?, ?, ?)",
        use(id), use(p), use(uuid), now;
  }
  events_.publish(m.direction == "incoming" ? "email.received" : "email.sent", row.account_id,
                  row.identity_uuid, messageJson(tx, row, false), &tx);
  return row;
}

const char* MailStore::messageColumns() {
  // The bodies are read by loadBodies(), only where a message is shown whole.
  return "SELECT id, account_id, identity_uuid, inbox_id, thread_id, direction, from_email, "
         "to_json, cc_json, bcc_json, extracted_code, reply_to_json, references_json, subject, "
         "'', '', "
         "message_id, in_reply_to, status, is_read, created_us, updated_us FROM email_messages ";
}

std::vector<MessageRow> MailStore::readMessages(Poco::Data::Statement& select) {
  // Poco's tuples stop at 20 columns: two extractions read consecutive columns of one row.
  using Head =
      Poco::Tuple<std::string, std::string, std::string, std::string, std::string, std::string,
                  std::string, std::string, std::string, std::string, std::string>;
  using Tail = Poco::Tuple<std::string, std::string, std::string, std::string, std::string,
                           std::string, std::string, std::string, int, Poco::Int64, Poco::Int64>;
  std::vector<Head> heads;
  std::vector<Tail> tails;
  select, into(heads), into(tails), now;
  std::vector<MessageRow> out;
  out.reserve(heads.size());
  for (std::size_t i = 0; i < heads.size() && i < tails.size(); ++i) {
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

MessageRow MailStore::setRead(Poco::Data::Session& tx, MessageRow row, bool is_read) {
  if (row.is_read == is_read) return row;
  row.is_read = is_read;
  row.updated_us = sdk::nowMicros();
  int read = is_read ? 1 : 0, delta = is_read ? -1 : 1;
  Poco::Int64 at = row.updated_us;
  tx << "UPDATE email_messages SET is_read = ?, updated_us = ? WHERE id = ?", use(read), use(at),
      use(row.id), now;
  tx << "UPDATE email_threads SET unread_count = unread_count + ? WHERE id = ?", use(delta),
      use(row.thread_id), now;
  events_.publish("email.updated", row.account_id, row.identity_uuid, messageJson(tx, row, false),
                  &tx);
  return row;
}

void MailStore::setStatus(Poco::Data::Session& tx, const std::string& message_id,
                          const std::string& status) {
  auto row = messageHead(tx, message_id);  // the event carries no bodies
  if (!row || row->status == status) return;
  row->status = status;
  row->updated_us = sdk::nowMicros();
  Poco::Int64 at = row->updated_us;
  tx << "UPDATE email_messages SET status = ?, updated_us = ? WHERE id = ?", use(row->status),
      use(at), use(row->id), now;
  events_.publish("email.updated", row->account_id, row->identity_uuid,
                  messageJson(tx, *row, false), &tx);
}

Poco::JSON::Object::Ptr MailStore::messageJson(Poco::Data::Session& s, const MessageRow& m,
                                               bool full) {
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
  o->set("created_dt", sdk::isoTimestamp(m.created_us));
  o->set("updated_dt", sdk::isoTimestamp(m.updated_us));
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
