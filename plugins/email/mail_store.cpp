// MailStore's filing and changes: threading a message into its inbox's thread, counting it there,
// and the updates of read state and delivery status (see mail_store.h).
#include "mail_store.h"

#include <svc/sdk/util.h>
#include <svc/sdk/verification_code.h>

#include <Poco/Data/Statement.h>
#include <Poco/String.h>
#include <Poco/Tuple.h>

#include <algorithm>
#include <cstring>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

namespace {

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

}  // namespace

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
    // Never into a quarantined message's hidden thread: a planted quarantined message with a
    // predictable Message-ID would otherwise swallow genuine replies.
    tx << "SELECT thread_id FROM email_messages WHERE inbox_id = ? AND message_key = ? AND "
          "quarantined = 0 LIMIT 1",
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
  // Quarantined mail gets a thread of its own, hidden as it is (its subject and preview stay out
  // of the thread list), and no later message is threaded into it by subject.
  std::string thread_id = m.quarantined         ? std::string()
                          : m.thread_id.empty() ? findThread(tx, inbox, m, subject_key, keys_seen)
                                                : m.thread_id;

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
    int u = unread, quarantined = m.quarantined ? 1 : 0;
    Poco::Int64 at = m.created_us;
    tx << "INSERT INTO email_threads (id, account_id, identity_uuid, inbox_id, subject, preview, "
          "message_count, unread_count, attachment_names, participants, latest_us, created_us, "
          "quarantined) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)",
        use(thread_id), use(account), use(identity), use(inbox_id), use(subject), use(pv), use(u),
        use(names_json), use(people_json), use(at), bind(m.created_us), use(quarantined), now;
  }
  // Remember (subject, correspondent) -> thread for replies that carry no In-Reply-To.
  if (!m.quarantined && !normalizedSubject(m.subject).empty()) {
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
  row.authentication = m.authentication;
  row.auth_verdict = m.auth_verdict;
  row.quarantined = m.quarantined;
  {
    std::string to = jsonList(row.to), cc = jsonList(row.cc), bcc = jsonList(row.bcc),
                reply_to = jsonList(row.reply_to), refs = jsonList(row.references),
                key = sdk::sha256Hex(row.message_id);
    int read = row.is_read ? 1 : 0, quarantined = row.quarantined ? 1 : 0;
    Poco::Int64 at = row.created_us;
    tx << "INSERT INTO email_messages (id, account_id, identity_uuid, inbox_id, thread_id, "
          "direction, from_email, to_json, cc_json, bcc_json, reply_to_json, references_json, "
          "subject, content, html, message_id, message_key, in_reply_to, status, extracted_code, "
          "is_read, created_us, updated_us, authentication, auth_verdict, quarantined) VALUES (?, "
          "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        use(row.id), use(row.account_id), use(row.identity_uuid), use(row.inbox_id),
        use(row.thread_id), use(row.direction), use(row.from_email), use(to), use(cc), use(bcc),
        use(reply_to), use(refs), use(row.subject), use(row.content), use(row.html),
        use(row.message_id), use(key), use(row.in_reply_to), use(row.status),
        use(row.extracted_code), use(read), use(at), bind(row.created_us), use(row.authentication),
        use(row.auth_verdict), use(quarantined), now;
  }
  int position = 0;
  for (const auto& a : m.attachments) {
    std::string id = row.id, uuid = a.uuid;
    int p = position++;
    tx << "INSERT INTO email_message_attachments (message_id, position, attachment_uuid) VALUES "
          "(?, ?, ?)",
        use(id), use(p), use(uuid), now;
  }
  // Quarantined mail is news of its own: never email.received, which agents act on.
  const char* type = m.direction != "incoming" ? "email.sent"
                     : m.quarantined           ? "email.quarantined"
                                               : "email.received";
  events_.publish(type, row.account_id, row.identity_uuid, eventJson(tx, row), &tx);
  return row;
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
  events_.publish("email.updated", row.account_id, row.identity_uuid, eventJson(tx, row), &tx);
  return row;
}

void MailStore::setStatus(Poco::Data::Session& tx, const std::string& message_id,
                          const std::string& status) {
  auto row = messageHead(tx, message_id);  // the event carries no bodies
  // A bounce is news the relay's later outcomes (the other recipients') must not hide.
  if (!row || row->status == status || row->status == "bounced") return;
  row->status = status;
  row->updated_us = sdk::nowMicros();
  Poco::Int64 at = row->updated_us;
  tx << "UPDATE email_messages SET status = ?, updated_us = ? WHERE id = ?", use(row->status),
      use(at), use(row->id), now;
  events_.publish("email.updated", row->account_id, row->identity_uuid, eventJson(tx, *row), &tx);
}

}  // namespace svc::plugins::email
