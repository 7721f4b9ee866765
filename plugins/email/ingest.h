// Ingest: what the SMTP listener accepts is appended to the spool (acknowledged once it is on
// disk) and filed from there into inboxes in batches, with the spool position in the same
// transaction; a message that cannot be filed is kept in unfiled/ so the rest go on. Delivery
// reports about mail this server sent (bounces/bounce_intake.h) are recorded instead of filed.
#pragma once

#include "auth/authenticator.h"
#include "blob_store.h"
#include "bounces/bounce_intake.h"
#include "mail_store.h"
#include "mime.h"
#include "rules/rule_cache.h"
#include "smtp_server.h"
#include "spool.h"

#include <svc/sdk/plugin.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace svc::plugins::email {

/// A message as the spool holds it: its envelope, its verdict and its data.
struct SpooledMail {
  std::string mail_from;
  std::vector<std::string> recipients;
  std::string_view data;  ///< A view into the payload it was read from.
  /// The checks' JSON and verdict ("" in records older than the checks), and the quarantine.
  std::string authentication, verdict;
  bool quarantined = false;
  /// Set when the checks were left for filing (Authenticator::complete): authentication and
  /// verdict are then empty.
  std::optional<DeferredChecks> later;
  /// The record said the checks were left for filing, but what it held for them is unreadable
  /// (no svcd writes that; a bug could): the message is filed unchecked, not lost.
  bool checks_unreadable = false;
};
/// The checks of a spooled message.
struct SpooledVerdict {
  std::string authentication;  ///< JSON
  std::string verdict;
  bool quarantined = false;
  std::optional<DeferredChecks> later;  ///< See SpooledMail.
};
/// @return the spool payload of a message: `from\nrcpt,rcpt\ndata`, after a first line
/// `SVC-AUTH <verdict> <0|1> <json>` when it was checked, or `SVC-AUTH later <checks>`
/// (DeferredChecks::text) when its checks were left for filing (no envelope sender has a space,
/// so the two never mix up), with `prefix` (its Authentication-Results header) before the data.
std::string spoolPayload(const std::string& mail_from, const std::vector<std::string>& recipients,
                         std::string_view data, const SpooledVerdict* verdict = nullptr,
                         std::string_view prefix = {});
/// @return the message in a spool payload, or nullopt when it is not one spoolPayload wrote.
std::optional<SpooledMail> readSpoolPayload(std::string_view payload);
/// @param parsed a received message. @param mail_from its envelope sender (the From when the
/// message names none). @param hostname for a Message-ID when the message has none.
/// @return the message as it is filed into an inbox (without attachments).
NewMessage incomingMessage(const ParsedMessage& parsed, const std::string& mail_from,
                           const std::string& hostname);
/// @return the outcome of a check, as the spool keeps it (quarantined when `quarantine`).
SpooledVerdict spooledVerdict(const Authentication& a, bool quarantine);
/// @return checks left for filing, as the spool keeps them.
SpooledVerdict pendingVerdict(DeferredChecks later);

class Ingest : public SmtpDelivery {
 public:
  /// @param data_dir the plugin's directory (with a trailing slash): spool/ and unfiled/ live
  /// there. @param hostname this server's SMTP name. @param max_backlog_bytes spooled bytes not
  /// yet filed beyond which new mail is refused (451).
  /// @param rules the sender rules RCPT applies. @param bounces takes delivery reports.
  /// @param auth checks each message first.
  Ingest(sdk::PluginContext& context, MailStore& store, BlobStore& blobs, RuleCache& rules,
         BounceIntake& bounces, const std::string& data_dir, std::string hostname,
         std::uint64_t max_backlog_bytes, Authenticator& auth);

  /// Files what a crash left in the spool, then takes new mail.
  void start();
  void stop();
  Spool& spool() { return *spool_; }

  // SmtpDelivery
  bool acceptsRecipient(const std::string& address) override;
  std::optional<std::string> refusesSender(const std::string& mail_from,
                                           const std::string& address) override;
  void deliver(const SmtpClient& client, const std::string& mail_from,
               const std::vector<std::string>& recipients, const std::string& data) override;
  void deliverAsync(const SmtpClient& client, const std::string& mail_from,
                    const std::vector<std::string>& recipients, std::string data,
                    Stored stored) override;

 private:
  // Inboxes looked up by address within one filing transaction.
  using InboxCache = std::map<std::string, std::optional<Inbox>>;
  struct Item;

  /// @return the inbox mail to address goes to: the inbox of that address, or for a VERP
  /// address the inbox that sent the message it names; nullopt when there is none.
  std::optional<Inbox> recipientInbox(const std::string& address);
  /// The end of DATA: the message's From judged by each recipient's rules (a delivery report is
  /// judged when filed instead, once it is known whether it is one of ours). @return the
  /// recipients whose rules accept it. @throws SmtpRefusal (550 5.7.1) when none does.
  std::vector<std::string> judgedRecipients(const std::string& mail_from,
                                            const std::vector<std::string>& recipients,
                                            const std::string& data);
  /// Finishes the checks a message's spool record left for filing: its verdict, and its data
  /// with the Authentication-Results header above it (kept in item.completed).
  void completeChecks(Item& item);
  /// Filing mail that was not consumed as a bounce: @return true when target's rules refuse its
  /// From as the views will show it (it is then not filed there).
  bool refusedWhenFiled(const Inbox& target, const Item& item);
  /// Checks a message. @param cached_only check it only if no DNS answer it needs is missing
  /// from the cache (Authenticator::checkCached). @return its spool record, or nullopt when
  /// cached_only and an answer was missing. @throws SmtpRefusal for a DMARC reject.
  std::optional<std::string> checkedRecord(const SmtpClient& client, const std::string& mail_from,
                                           const std::vector<std::string>& recipients,
                                           const std::string& data, bool cached_only = false);
  /// Spools a record and answers stored (see deliverAsync in ingest.cpp). @param may_wait the
  /// calling thread may wait for the disk and the filing (not a listener's thread).
  void spool(std::string record, Stored stored, bool may_wait);
  void fileSpooled(const std::vector<Spool::Record>& records, const Spool::Position& end);
  void fileIncoming(Poco::Data::Session& tx, const Item& item, InboxCache& inboxes);
  void recordPosition(Poco::Data::Session& tx, const Spool::Position& p);

  sdk::PluginContext& context_;
  MailStore& store_;
  BlobStore& blobs_;
  BounceIntake& bounces_;
  std::string spool_dir_, unfiled_dir_, hostname_;
  std::uint64_t max_backlog_bytes_;
  RuleCache& rules_;
  Authenticator& auth_;
  std::unique_ptr<Spool> spool_;
  std::mutex known_mutex_;
  std::unordered_map<std::string, Inbox> known_inboxes_;  // by address
};

}  // namespace svc::plugins::email
