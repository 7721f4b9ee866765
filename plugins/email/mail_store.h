// The email plugin's tables: inboxes, threads, messages, attachments and the outbox, and the one
// place that files a message into an inbox and its thread (used by SMTP ingest, local delivery and
// sending alike, so a message is threaded and counted the same way whichever way it came).
// Defined by job: mail_store.cpp files and updates messages, mail_store_rows.cpp reads and writes
// the rows and gives their JSON, mail_store_schema.cpp holds the migrations.
#pragma once

#include "blob_store.h"
#include "mime.h"

#include <svc/sdk/events.h>
#include <svc/sdk/storage.h>

#include <Poco/JSON/Object.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::email {

struct Inbox {
  std::string id, account_id, identity_uuid, address;
  bool is_primary = false;
  std::int64_t created_us = 0;
};

struct AttachmentRecord {
  std::string uuid, account_id, identity_uuid, filename, content_type, sha256;
  std::int64_t size = 0, created_us = 0;
};

/// A message about to be filed.
struct NewMessage {
  std::string direction;  ///< `incoming` or `outgoing`.
  Mailbox from;
  std::vector<std::string> to, cc, bcc, reply_to;
  std::string subject, content, html, message_id, in_reply_to;
  std::vector<std::string> references;
  bool is_read = false;
  std::string status;     ///< Outgoing: queued, sent, failed or bounced; incoming: empty.
  std::string thread_id;  ///< Set to file into that thread; empty: found by threading rules.
  std::vector<AttachmentRecord> attachments;
  std::int64_t created_us = 0;
  /// Incoming: the checks' JSON (auth/authentication.h) and their verdict; "" for none.
  std::string authentication, auth_verdict;
  bool quarantined = false;  ///< DMARC asked for quarantine: hidden from lists by default.
};

struct MessageRow {
  std::string id, account_id, identity_uuid, inbox_id, thread_id, direction, from_email;
  std::vector<std::string> to, cc, bcc, reply_to, references;
  std::string subject, content, html, message_id, in_reply_to, status;
  std::string extracted_code;  ///< The one-time code the message carries; "" for none.
  std::string authentication, auth_verdict;  ///< See NewMessage.
  bool quarantined = false;
  bool is_read = false;
  std::int64_t created_us = 0, updated_us = 0;
};

class MailStore {
 public:
  MailStore(sdk::Database& db, sdk::EventBus& events, BlobStore& blobs);

  static std::vector<sdk::Migration> migrations();

  std::optional<Inbox> inboxById(Poco::Data::Session& s, const std::string& id);
  std::optional<Inbox> inboxByAddress(Poco::Data::Session& s, const std::string& address);
  std::optional<Inbox> primaryInbox(Poco::Data::Session& s, const std::string& identity_uuid);
  void insertInbox(Poco::Data::Session& s, const Inbox& inbox);
  static Poco::JSON::Object::Ptr inboxJson(const Inbox& inbox);

  /// Adds an attachment's row for bytes already in the blob store. @return the record.
  AttachmentRecord insertAttachment(Poco::Data::Session& tx, const std::string& account_id,
                                    const std::string& identity_uuid, const std::string& filename,
                                    const std::string& content_type, std::int64_t size,
                                    const std::string& sha256);
  /// Stores the bytes and the attachment's row (the row in its own transaction).
  AttachmentRecord saveAttachment(const std::string& account_id, const std::string& identity_uuid,
                                  const std::string& filename, const std::string& content_type,
                                  std::string_view data);
  std::optional<AttachmentRecord> attachment(Poco::Data::Session& s, const std::string& uuid);
  std::vector<AttachmentRecord> messageAttachments(Poco::Data::Session& s,
                                                   const std::string& message_id);
  BlobStore& blobs() { return blobs_; }
  static Poco::JSON::Object::Ptr attachmentJson(const AttachmentRecord& a);

  /// Files a message into inbox's thread inside the caller's transaction and publishes
  /// `email.received` (`email.quarantined` for quarantined mail) or `email.sent`. Its
  /// verification code is found here, once (from the subject and content). @return the row.
  MessageRow file(Poco::Data::Session& tx, const Inbox& inbox, NewMessage message);

  /// @return the message with its bodies.
  std::optional<MessageRow> message(Poco::Data::Session& s, const std::string& id);
  /// @return the message without its bodies (content and html empty).
  std::optional<MessageRow> messageHead(Poco::Data::Session& s, const std::string& id);
  /// Reads content and html into a row that readMessages() gave without them.
  void loadBodies(Poco::Data::Session& s, MessageRow& m);
  /// Marks read or unread, keeping the thread's unread count, and publishes `email.updated`.
  MessageRow setRead(Poco::Data::Session& tx, MessageRow row, bool is_read);
  /// Records a delivery outcome of an outgoing message and publishes `email.updated`; a bounced
  /// message keeps its status (bounces are recorded by BounceStore).
  void setStatus(Poco::Data::Session& tx, const std::string& message_id, const std::string& status);

  /// The list shape (no content, html or attachments); full adds them.
  /// @param bounces a page's `bounce` objects read at once (BounceStore::json); null: looked up.
  Poco::JSON::Object::Ptr messageJson(
      Poco::Data::Session& s, const MessageRow& m, bool full,
      const std::map<std::string, Poco::Dynamic::Var>* bounces = nullptr);

  /// The object of the message's events: the list shape, with no extracted_code when the
  /// message is quarantined (the event stream and webhooks feed automation that acts on codes;
  /// a quarantined message's code is read only by asking for the message itself).
  Poco::JSON::Object::Ptr eventJson(Poco::Data::Session& s, const MessageRow& m);

  /// Columns of email_messages in the order readMessages() expects (bodies left empty).
  static const char* messageColumns();
  /// Runs a SELECT of messageColumns() (with its bindings already in the statement).
  static std::vector<MessageRow> readMessages(Poco::Data::Statement& select);

  sdk::Database& db() { return db_; }

 private:
  /// @param keys_seen the (subject, correspondent) keys looked up on the way, address -> the
  /// thread found ("" when none), so file() need not look them up again.
  std::string findThread(Poco::Data::Session& tx, const Inbox& inbox, const NewMessage& m,
                         const std::string& subject_key,
                         std::map<std::string, std::string>& keys_seen);

  sdk::Database& db_;
  sdk::EventBus& events_;
  BlobStore& blobs_;
};

/// @param subject a subject line. @return it without Re:/Fwd: prefixes, lower-case, spaces
/// collapsed: what replies without In-Reply-To are threaded by.
std::string normalizedSubject(const std::string& subject);

/// @return the JSON text of a list of strings. @param list the strings.
std::string jsonList(const std::vector<std::string>& list);
/// Reads one large text value (a LONGTEXT on MySQL, in pieces). @return it, or "" if absent.
std::string readLongText(Poco::Data::Session& s, sdk::Dialect dialect, const std::string& table,
                         const std::string& column, const std::string& key_column,
                         const std::string& key);

/// @return the strings of a JSON array text (empty on anything else). @param text the JSON.
std::vector<std::string> parseJsonList(const std::string& text);

}  // namespace svc::plugins::email
