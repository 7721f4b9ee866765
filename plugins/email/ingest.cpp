#include "ingest.h"

#include "auth/own_results.h"
#include "bounces/verp.h"
#include "inboxes.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/File.h>
#include <Poco/String.h>
#include <Poco/StringTokenizer.h>
#include <Poco/Tuple.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <stdexcept>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

namespace {

// Filing waits out a burst while the backlog is under half its bound (the other half is left
// for the burst to go on while filing catches up).
Spool::Options spoolOptions(std::uint64_t max_backlog_bytes) {
  Spool::Options o;
  o.defer_below_bytes = max_backlog_bytes / 2;
  return o;
}
constexpr std::string_view kAuthLine = "SVC-AUTH ";
constexpr std::string_view kPending = "later ";  // in place of a verdict: see pendingVerdict

// A mailbox as a block rule sees it: lower-case, a quoted local part unquoted, a trailing dot of
// its domain dropped (`"ceo"@evil.example.` is ceo@evil.example).
std::string ruleMailbox(const std::string& address) {
  std::string a = Poco::toLower(address);
  a.erase(std::remove(a.begin(), a.end(), '"'), a.end());
  while (!a.empty() && a.back() == '.') a.pop_back();
  return a;
}

// The From the sender rules judge: the author DMARC judges (when valid), and every mailbox of
// every From field.
Author ruleAuthor(const std::vector<std::pair<std::string, std::string>>& headers) {
  Author author;
  const std::string from = Poco::toLower(authorAddress(headers));
  if (sdk::isValidEmailAddress(from)) author.address = from;
  for (const auto& [name, value] : headers) {
    if (Poco::icompare(name, "from") != 0) continue;
    for (const auto& box : parseAddressList(value)) {
      author.mailboxes.push_back(ruleMailbox(box.address));
    }
  }
  return author;
}

}  // namespace

std::string spoolPayload(const std::string& mail_from, const std::vector<std::string>& recipients,
                         std::string_view data, const SpooledVerdict* verdict,
                         std::string_view prefix) {
  std::string payload;
  payload.reserve(data.size() + prefix.size() + 256 +
                  (verdict ? verdict->authentication.size() : 0));
  if (verdict && verdict->later) {
    payload.append(kAuthLine);
    payload.append(kPending);
    payload += verdict->later->text() + "\n";
  } else if (verdict) {
    payload.append(kAuthLine);
    payload += verdict->verdict + (verdict->quarantined ? " 1 " : " 0 ");
    payload += verdict->authentication + "\n";
  }
  payload += mail_from + "\n";
  for (std::size_t i = 0; i < recipients.size(); ++i) payload += (i ? "," : "") + recipients[i];
  payload += "\n";
  payload.append(prefix);
  payload.append(data);
  return payload;
}

SpooledVerdict spooledVerdict(const Authentication& a, bool quarantine) {
  return {authenticationText(a), a.verdict, quarantine, std::nullopt};
}

SpooledVerdict pendingVerdict(DeferredChecks later) {
  return {"", "", false, std::move(later)};
}

std::optional<SpooledMail> readSpoolPayload(std::string_view payload) {
  SpooledMail m;
  if (payload.substr(0, kAuthLine.size()) == kAuthLine) {
    const std::size_t eol = payload.find('\n');
    if (eol == std::string_view::npos) return std::nullopt;
    std::string_view line = payload.substr(kAuthLine.size(), eol - kAuthLine.size());
    payload = payload.substr(eol + 1);
    if (line.substr(0, kPending.size()) == kPending) {
      m.later = DeferredChecks::parse(line.substr(kPending.size()));
      m.checks_unreadable = !m.later;
    } else {
      const std::size_t sp1 = line.find(' ');
      const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
      if (sp2 == std::string_view::npos) return std::nullopt;
      m.verdict = std::string(line.substr(0, sp1));
      m.quarantined = line.substr(sp1 + 1, sp2 - sp1 - 1) == "1";
      m.authentication = std::string(line.substr(sp2 + 1));
    }
  }
  std::size_t a = payload.find('\n');
  std::size_t b = a == std::string_view::npos ? a : payload.find('\n', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
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
  /// The data with its header, when its checks were done at filing (mail.data views it; on the
  /// heap, it stays where it is when the item moves).
  std::unique_ptr<std::string> completed;
  ParsedMessage parsed;
  std::vector<std::string> blobs;
  Spool::Position end;
  const std::string* payload;
};

Ingest::Ingest(sdk::PluginContext& context, MailStore& store, BlobStore& blobs, RuleCache& rules,
               BounceIntake& bounces, const std::string& data_dir, std::string hostname,
               std::uint64_t max_backlog_bytes, Authenticator& auth)
    : context_(context),
      store_(store),
      blobs_(blobs),
      bounces_(bounces),
      spool_dir_(data_dir + "spool"),
      unfiled_dir_(data_dir + "unfiled"),
      hostname_(std::move(hostname)),
      max_backlog_bytes_(max_backlog_bytes),
      rules_(rules),
      auth_(auth),
      spool_(std::make_unique<Spool>(
          spool_dir_,
          [this](const std::vector<Spool::Record>& records, const Spool::Position& end) {
            fileSpooled(records, end);
          },
          spoolOptions(max_backlog_bytes))) {}

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
    if (known_inboxes_.count(address)) return true;
  }
  Poco::Data::Session s = context_.database().session();
  auto inbox = store_.inboxByAddress(s, address);
  if (!inbox) return false;
  std::lock_guard lock(known_mutex_);
  if (known_inboxes_.size() > 100000) known_inboxes_.clear();
  known_inboxes_.emplace(address, std::move(*inbox));
  return true;
}

std::optional<Inbox> Ingest::recipientInbox(const std::string& address) {
  if (verpToken(address)) {  // tokens expire: never kept with the inboxes
    Poco::Data::Session s = context_.database().session();
    return bounces_.verpInbox(s, address);
  }
  {
    std::lock_guard lock(known_mutex_);
    if (auto it = known_inboxes_.find(address); it != known_inboxes_.end()) return it->second;
  }
  Poco::Data::Session s = context_.database().session();
  return store_.inboxByAddress(s, address);
}

// The recipient's inbox is known by now (acceptsRecipient found it); its rules come from the
// rule cache, so a busy RCPT reads neither from the database. Mail to a VERP address is judged
// by the rules of the inbox that sent the message it names: unless it is a report consumed as a
// bounce, it is filed there as that inbox's mail.
std::optional<std::string> Ingest::refusesSender(const std::string& mail_from,
                                                 const std::string& address) {
  if (mail_from.empty()) return std::nullopt;  // bounces and reports: judged by their From
  const std::optional<Inbox> inbox = recipientInbox(address);
  if (!inbox) return std::nullopt;  // acceptsRecipient decides about unknown addresses
  const SenderVerdict verdict = rules_.judge(inbox->account_id, inbox->identity_uuid, mail_from);
  if (verdict.accepted) return std::nullopt;
  return verdict.reason;
}

std::vector<std::string> Ingest::judgedRecipients(const std::string& mail_from,
                                                  const std::vector<std::string>& recipients,
                                                  const std::string& data) {
  // Mostly no recipient's account has a rule: then every From is accepted, and the headers are
  // not even read (parsing the From costs more than the rest of the checks with them off).
  // A VERP address's inbox is a database query: it is read only once the message is known to
  // be no delivery report (which is judged when filed).
  std::vector<std::optional<Inbox>> inboxes(recipients.size());
  bool judged = false;
  for (std::size_t i = 0; i < recipients.size(); ++i) {
    if (verpToken(recipients[i])) {
      judged = true;
      continue;
    }
    inboxes[i] = recipientInbox(recipients[i]);
    if (!judged && inboxes[i] && rules_.hasRules(inboxes[i]->account_id)) judged = true;
  }
  if (!judged) return recipients;
  const auto headers = topHeaders(data);
  // A report may be a bounce of our own mail, which is not judged (it is not shown as mail);
  // whether it is one is known when it is filed, where one that is not is judged.
  if (claimsDeliveryReport(headers)) return recipients;
  for (std::size_t i = 0; i < recipients.size(); ++i) {
    if (verpToken(recipients[i])) inboxes[i] = recipientInbox(recipients[i]);
  }
  const Author from = ruleAuthor(headers);
  std::vector<std::string> kept;
  std::string refusal;
  for (std::size_t i = 0; i < recipients.size(); ++i) {
    const std::string& rcpt = recipients[i];
    const std::optional<Inbox>& inbox = inboxes[i];
    const SenderVerdict verdict =
        inbox ? rules_.judgeAuthor(inbox->account_id, inbox->identity_uuid, from)
              : SenderVerdict{};  // gone since RCPT: the filer finds no inbox
    if (verdict.accepted) {
      kept.push_back(rcpt);
      continue;
    }
    context_.logger().information(
        "SMTP from <%s> (From %s) to %s refused: %s", mail_from,
        from.address.empty() ? std::string("not one valid address") : from.address, rcpt,
        verdict.reason);
    if (refusal.empty()) refusal = "550 5.7.1 <" + rcpt + ">: " + verdict.reason;
  }
  if (kept.empty() && !refusal.empty()) throw SmtpRefusal(refusal);
  return kept;
}

bool Ingest::refusedWhenFiled(const Inbox& target, const Item& item) {
  const SenderVerdict verdict =
      rules_.judgeAuthor(target.account_id, target.identity_uuid, ruleAuthor(item.parsed.headers));
  if (verdict.accepted) return false;
  context_.logger().information("mail from <%s> for %s was not filed: %s", item.mail.mail_from,
                                target.address, verdict.reason);
  return true;
}

// SMTP: the message is checked (SPF, DKIM, DMARC), then acknowledged once it is in the spool
// (fsynced) with its verdict, or with the checks left for filing and the DNS answers they need
// (Authenticator::check), so a crash after the 250 still files it as it was judged. When the
// ingester is idle the session also waits (briefly) for it to be filed, so a lone message is
// readable over the API by the time its 250 arrives; under a burst, acknowledging does not wait
// for the database, and the spool's backlog is bounded (451 beyond it).
void Ingest::deliver(const SmtpClient& client, const std::string& mail_from,
                     const std::vector<std::string>& recipients, const std::string& data) {
  const std::size_t backlog = spool_->backlog();
  Spool::Position at = spool_->append(*checkedRecord(client, mail_from, recipients, data));
  if (backlog == 0) spool_->waitFiled(at, 2000);
}

// The checks may wait on DNS, and the listener's threads must never wait: a message (not a
// large one) whose DNS answers are all cached (the usual case: senders write again within their
// records' TTL), or any with the checks off, is checked right here; under a burst it is then
// handed to the spool's writer, which answers the session once it is on disk, while a lone one
// goes to a checking thread, which also waits until it is filed. Any other is checked on the
// authenticator's threads. Handing every message to another thread and back cost more than its
// check: a futex wake-up and a context switch or two per message, contended locks on the queue.
void Ingest::deliverAsync(const SmtpClient& client, const std::string& mail_from,
                          const std::vector<std::string>& recipients, std::string data,
                          Stored stored) {
  // A large message's checks (its body hashed per signature) would hold the listener's thread,
  // which serves every session, as long as its client likes: a checking thread takes it, in
  // that client's turn.
  constexpr std::size_t kCheckedHereBytes = 256 * 1024;
  std::optional<std::string> checked;
  try {
    if (data.size() <= kCheckedHereBytes) {
      checked = checkedRecord(client, mail_from, recipients, data, true);
    }
  } catch (const std::exception& e) {
    return stored(e.what());
  } catch (...) {  // every session must be answered, whatever a library threw
    return stored("the authentication checks failed");
  }
  if (checked) {
    if (spool_->backlog() > 0) return spool(std::move(*checked), std::move(stored), false);
    // A lone message waits until it is filed: not on this thread.
    const std::size_t bytes = checked->size();
    auto job = [this, record = std::move(*checked), stored]() mutable {
      spool(std::move(record), stored, true);
    };
    if (!auth_.post(client.ip, std::move(job), bytes)) {
      stored("too many messages are waiting to be stored");
    }
    return;
  }
  const std::size_t bytes = data.size();
  auto job = [this, client, mail_from, recipients, data = std::move(data), stored]() {
    std::string record;
    try {
      record = *checkedRecord(client, mail_from, recipients, data);
    } catch (const std::exception& e) {
      return stored(e.what());
    } catch (...) {  // every session must be answered, whatever a library threw
      return stored("the authentication checks failed");
    }
    spool(std::move(record), stored, true);
  };
  if (!auth_.post(client.ip, std::move(job), bytes)) {
    stored("too many messages are waiting for their authentication checks");
  }
}

void Ingest::spool(std::string record, Stored stored, bool may_wait) {
  if (may_wait && spool_->backlog() == 0) {  // a lone message: filed before its 250
    std::string error;
    try {
      Spool::Position at = spool_->append(record);
      spool_->waitFiled(at, 2000);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "delivery failed";
    }
    return stored(error);
  }
  spool_->appendAsync(std::move(record),
                      [stored = std::move(stored)](const Spool::Position&,
                                                   const std::string& error) { stored(error); });
}

// A checked message's spool record. @throws SmtpRefusal when DMARC says reject or defer
// (enforced), and std::runtime_error when the spool's backlog is at its bound.
std::optional<std::string> Ingest::checkedRecord(const SmtpClient& client,
                                                 const std::string& mail_from,
                                                 const std::vector<std::string>& recipients,
                                                 const std::string& data, bool cached_only) {
  if (const std::uint64_t bytes = spool_->backlogBytes(); bytes >= max_backlog_bytes_) {
    throw std::runtime_error("the spool holds " + std::to_string(spool_->backlog()) +
                             " messages (" + std::to_string(bytes) + " bytes) not yet filed");
  }
  // Checked as it arrived; stored without Authentication-Results fields claiming to be ours.
  // Such a message is checked before its answer: left for filing, its checks would see it
  // without them.
  const std::optional<std::string> cleaned = withoutOwnResults(data, hostname_);
  const bool may_defer = !cleaned;
  const std::optional<Authenticator::Decision> decided =
      cached_only
          ? auth_.checkCached(client, mail_from, data, may_defer)
          : std::optional<Authenticator::Decision>(auth_.check(client, mail_from, data, may_defer));
  if (!decided) return std::nullopt;
  const Authenticator::Decision& d = *decided;
  if (d.action == PolicyAction::kReject || d.action == PolicyAction::kDefer) {
    context_.logger().information("SMTP from %s (%s): %s", client.ip, mail_from, d.refusal);
    throw SmtpRefusal(d.refusal);
  }
  // Only the recipients whose rules accept the From get it.
  const std::vector<std::string> accepted = judgedRecipients(mail_from, recipients, data);
  if (d.later) {
    const SpooledVerdict pending = pendingVerdict(*d.later);
    return spoolPayload(mail_from, accepted, data, &pending);
  }
  const SpooledVerdict verdict =
      spooledVerdict(d.authentication, d.action == PolicyAction::kQuarantine);
  if (cleaned) {
    context_.logger().information(
        "SMTP from %s (%s): removed Authentication-Results naming this server (%s), which it "
        "did not write",
        client.ip, mail_from, hostname_);
  }
  return spoolPayload(mail_from, accepted, cleaned ? *cleaned : data, &verdict,
                      foldHeader(d.authentication.header));
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
  items.reserve(records.size());
  for (const auto& r : records) {
    auto mail = readSpoolPayload(r.payload);
    if (!mail) continue;  // not one of ours: nothing to file
    Item& it = items.emplace_back();
    it.payload = &r.payload;
    it.end = r.end;
    it.mail = std::move(*mail);
    if (it.mail.later || it.mail.checks_unreadable) completeChecks(it);
    it.parsed = parseMessage(it.mail.data);
    for (const auto& p : it.parsed.problems) context_.logger().debug("incoming mail: %s", p);
    // Attachment bytes are stored (and fsynced) before the rows that name them commit.
    for (const auto& att : it.parsed.attachments) it.blobs.push_back(blobs_.put(att.data));
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

void Ingest::completeChecks(Item& item) {
  Authenticator::Decision d;
  std::string failure = "what the spool held for them could not be read";
  if (item.mail.later) {
    try {
      d = auth_.complete(*item.mail.later, item.mail.data);
      failure.clear();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (!failure.empty()) {
    // Acknowledged already: filed unjudged (quarantined when enforcing) rather than lost or
    // held up, and the spool with it.
    context_.logger().error(
        "the checks of a message from <%s> could not be completed when it "
        "was filed: %s",
        item.mail.mail_from, failure);
    d = auth_.incomplete(item.mail.later ? &*item.mail.later : nullptr, item.mail.data);
  }
  item.mail.later.reset();
  item.mail.authentication = authenticationText(d.authentication);
  item.mail.verdict = d.authentication.verdict;
  item.mail.quarantined = d.action == PolicyAction::kQuarantine;
  item.completed = std::make_unique<std::string>(foldHeader(d.authentication.header));
  item.completed->append(item.mail.data);
  item.mail.data = *item.completed;
}

void Ingest::fileIncoming(Poco::Data::Session& tx, const Item& item, InboxCache& inboxes) {
  NewMessage m = incomingMessage(item.parsed, item.mail.mail_from, hostname_);
  m.authentication = item.mail.authentication;
  m.auth_verdict = item.mail.verdict;
  m.quarantined = item.mail.quarantined;
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
    // What was not consumed is mail, judged again on the headers its views will show: the end
    // of DATA left reports to this point, and read the data without the Authentication-Results
    // field now above it (which a first line that begins with a space would have joined).
    if (refusedWhenFiled(target, item)) continue;
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
