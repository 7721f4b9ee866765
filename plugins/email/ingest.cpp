#include "ingest.h"

#include "bounces/verp.h"
#include "inboxes.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/File.h>
#include <Poco/StringTokenizer.h>
#include <Poco/Tuple.h>

#include <fstream>
#include <set>
#include <stdexcept>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

std::string spoolPayload(const std::string& mail_from, const std::vector<std::string>& recipients,
                         const std::string& data) {
  std::string payload = mail_from + "\n";
  for (std::size_t i = 0; i < recipients.size(); ++i) payload += (i ? "," : "") + recipients[i];
  payload += "\n" + data;
  return payload;
}

std::optional<SpooledMail> readSpoolPayload(std::string_view payload) {
  std::size_t a = payload.find('\n');
  std::size_t b = a == std::string_view::npos ? a : payload.find('\n', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  SpooledMail m;
  m.mail_from = std::string(payload.substr(0, a));
  for (const auto& rcpt : Poco::StringTokenizer(std::string(payload.substr(a + 1, b - a - 1)), ",",
                                                Poco::StringTokenizer::TOK_IGNORE_EMPTY)) {
    m.recipients.push_back(rcpt);
  }
  m.data = payload.substr(b + 1);
  return m;
}

NewMessage incomingMessage(const ParsedMessage& parsed, const std::string& mail_from,
                           const std::string& hostname) {
  NewMessage m;
  m.direction = "incoming";
  m.from = parsed.from.empty() ? Mailbox{"", mail_from} : parsed.from.front();
  if (m.from.address.empty()) m.from.address = mail_from;
  for (const auto& b : parsed.to) m.to.push_back(b.address);
  for (const auto& b : parsed.cc) m.cc.push_back(b.address);
  for (const auto& b : parsed.reply_to) m.reply_to.push_back(b.address);
  m.subject = parsed.subject;
  m.content = parsed.text;
  m.html = parsed.html;
  m.message_id =
      parsed.message_id.empty() ? "<" + sdk::newUuid() + "@" + hostname + ">" : parsed.message_id;
  m.in_reply_to = parsed.in_reply_to;
  m.references = parsed.references;
  return m;
}

struct Ingest::Item {
  SpooledMail mail;
  ParsedMessage parsed;
  std::vector<std::string> blobs;
  Spool::Position end;
  const std::string* payload;
};

Ingest::Ingest(sdk::PluginContext& context, MailStore& store, BlobStore& blobs,
               BounceIntake& bounces, const std::string& data_dir, std::string hostname,
               std::uint64_t max_backlog_bytes)
    : context_(context),
      store_(store),
      blobs_(blobs),
      bounces_(bounces),
      spool_dir_(data_dir + "spool"),
      unfiled_dir_(data_dir + "unfiled"),
      hostname_(std::move(hostname)),
      max_backlog_bytes_(max_backlog_bytes),
      spool_(std::make_unique<Spool>(
          spool_dir_, [this](const std::vector<Spool::Record>& records,
                             const Spool::Position& end) { fileSpooled(records, end); })) {}

void Ingest::start() {
  Spool::Position filed;
  Poco::Data::Session s = context_.database().session();
  std::string id = spool_->id();
  std::vector<Poco::Tuple<Poco::Int64, Poco::Int64>> rows;
  s << "SELECT segment, offset_bytes FROM email_spool_positions WHERE spool_id = ?", use(id),
      into(rows), now;
  if (!rows.empty()) filed = {rows.front().get<0>(), rows.front().get<1>()};
  spool_->start(filed);  // files what a crash left in the spool first
  context_.logger().information("SMTP spool %s filed up to segment %s offset %s", spool_dir_,
                                std::to_string(filed.segment), std::to_string(filed.offset));
}

void Ingest::stop() {
  spool_->stop();
}

// Inboxes are never deleted, so an address once found stays valid: RCPT checks of busy
// addresses skip the database. Unknown addresses are always asked (one may be created now).
bool Ingest::acceptsRecipient(const std::string& address) {
  if (verpToken(address)) {  // a bounce address: only one that names a message of ours
    Poco::Data::Session s = context_.database().session();
    return bounces_.acceptsVerpAddress(s, address);
  }
  // No inbox can have a local part outside the inbox rule: no need to ask the database.
  if (!isValidInboxLocalPart(std::string_view(address).substr(0, address.rfind('@')))) {
    return false;
  }
  {
    std::lock_guard lock(known_mutex_);
    if (known_addresses_.count(address)) return true;
  }
  Poco::Data::Session s = context_.database().session();
  if (!store_.inboxByAddress(s, address)) return false;
  std::lock_guard lock(known_mutex_);
  if (known_addresses_.size() > 100000) known_addresses_.clear();
  known_addresses_.insert(address);
  return true;
}

// SMTP: the message is acknowledged once it is in the spool (fsynced). When the ingester is
// idle the session also waits (briefly) for it to be filed, so a lone message is readable over
// the API by the time its 250 arrives; under a burst, acknowledging does not wait for the
// database, and the spool's backlog is bounded (451 beyond it).
void Ingest::deliver(const std::string& mail_from, const std::vector<std::string>& recipients,
                     const std::string& data) {
  const std::size_t backlog = spool_->backlog();
  Spool::Position at = spool_->append(spoolRecord(mail_from, recipients, data));
  if (backlog == 0) spool_->waitFiled(at, 2000);
}

// Under a burst (a backlog already), the session is answered by the spool's writer as soon as
// the message is on disk; a lone message takes deliver()'s path and is filed before its 250.
void Ingest::deliverAsync(const std::string& mail_from, const std::vector<std::string>& recipients,
                          std::string data, Stored stored) {
  if (spool_->backlog() == 0) {
    return SmtpDelivery::deliverAsync(mail_from, recipients, std::move(data), std::move(stored));
  }
  std::string record;
  try {
    record = spoolRecord(mail_from, recipients, data);
  } catch (const std::exception& e) {
    return stored(e.what());
  }
  spool_->appendAsync(std::move(record),
                      [stored = std::move(stored)](const Spool::Position&,
                                                   const std::string& error) { stored(error); });
}

// A spooled message: its envelope and data. @throws when the spool's backlog is at its bound.
std::string Ingest::spoolRecord(const std::string& mail_from,
                                const std::vector<std::string>& recipients,
                                const std::string& data) {
  if (const std::uint64_t bytes = spool_->backlogBytes(); bytes >= max_backlog_bytes_) {
    throw std::runtime_error("the spool holds " + std::to_string(spool_->backlog()) +
                             " messages (" + std::to_string(bytes) + " bytes) not yet filed");
  }
  return spoolPayload(mail_from, recipients, data);
}

void Ingest::recordPosition(Poco::Data::Session& tx, const Spool::Position& p) {
  std::string id = spool_->id();
  Poco::Int64 segment = p.segment, offset = p.offset;
  Poco::Data::Statement update = (tx << "UPDATE email_spool_positions SET segment = ?, "
                                        "offset_bytes = ? WHERE spool_id = ?",
                                  use(segment), use(offset), use(id));
  if (update.execute() == 0) {
    tx << "INSERT INTO email_spool_positions (spool_id, segment, offset_bytes) VALUES (?, ?, ?)",
        use(id), use(segment), use(offset), now;
  }
}

// The ingester's filer: a batch of spooled messages and the spool position after them, in one
// transaction. A message that cannot be filed alone is kept in unfiled/ and skipped.
void Ingest::fileSpooled(const std::vector<Spool::Record>& records, const Spool::Position& end) {
  std::vector<Item> items;
  for (const auto& r : records) {
    auto mail = readSpoolPayload(r.payload);
    if (!mail) continue;  // not one of ours: nothing to file
    Item it;
    it.payload = &r.payload;
    it.end = r.end;
    it.mail = std::move(*mail);
    it.parsed = parseMessage(it.mail.data);
    for (const auto& p : it.parsed.problems) context_.logger().debug("incoming mail: %s", p);
    // Attachment bytes are stored (and fsynced) before the rows that name them commit.
    for (const auto& att : it.parsed.attachments) it.blobs.push_back(blobs_.put(att.data));
    items.push_back(std::move(it));
  }
  sdk::Database& db = context_.database();
  try {
    db.transaction([&](Poco::Data::Session& tx) {
      InboxCache inboxes;  // a burst is mostly mail to a few addresses
      for (const auto& it : items) fileIncoming(tx, it, inboxes);
      recordPosition(tx, end);
    });
    return;
  } catch (const std::exception& e) {
    if (!db.ping()) throw;  // the database is away: retry the batch later
    context_.logger().warning("filing %z spooled messages together failed (%s); one by one",
                              items.size(), std::string(e.what()));
  }
  for (const auto& it : items) {
    try {
      db.transaction([&](Poco::Data::Session& tx) {
        InboxCache inboxes;
        fileIncoming(tx, it, inboxes);
        recordPosition(tx, it.end);
      });
    } catch (const std::exception& e) {
      if (!db.ping()) throw;  // the database is away: retry the batch later
      const std::string path = unfiled_dir_ + "/" + std::to_string(it.end.segment) + "-" +
                               std::to_string(it.end.offset) + ".eml";
      Poco::File(unfiled_dir_).createDirectories();
      std::ofstream(path, std::ios::binary) << *it.payload;
      context_.logger().error("a spooled message could not be filed and was kept in %s: %s", path,
                              std::string(e.what()));
      db.transaction([&](Poco::Data::Session& tx) { recordPosition(tx, it.end); });
    }
  }
  db.transaction([&](Poco::Data::Session& tx) { recordPosition(tx, end); });
}

void Ingest::fileIncoming(Poco::Data::Session& tx, const Item& item, InboxCache& inboxes) {
  const NewMessage m = incomingMessage(item.parsed, item.mail.mail_from, hostname_);
  const std::optional<DeliveryReport> report = parseDeliveryReport(item.parsed);
  std::set<std::string> done;
  for (const auto& rcpt : item.mail.recipients) {
    std::optional<Inbox> sender_inbox;
    const std::optional<Inbox>* inbox = &sender_inbox;
    if (verpToken(rcpt)) {
      sender_inbox = bounces_.atVerpAddress(tx, rcpt, report);  // unless consumed
    } else {
      auto cached = inboxes.find(rcpt);
      if (cached == inboxes.end()) {
        cached = inboxes.emplace(rcpt, store_.inboxByAddress(tx, rcpt)).first;
      }
      inbox = &cached->second;
      if (*inbox && report && bounces_.atInbox(tx, **inbox, report, item.mail.mail_from.empty()))
        continue;
    }
    if (!*inbox || !done.insert((*inbox)->id).second) continue;
    const Inbox& target = **inbox;
    NewMessage copy = m;
    for (std::size_t i = 0; i < item.parsed.attachments.size() && i < item.blobs.size(); ++i) {
      const auto& a = item.parsed.attachments[i];
      copy.attachments.push_back(store_.insertAttachment(
          tx, target.account_id, target.identity_uuid, a.filename, a.content_type,
          static_cast<std::int64_t>(a.data.size()), item.blobs[i]));
    }
    store_.file(tx, target, std::move(copy));
  }
}

}  // namespace svc::plugins::email
