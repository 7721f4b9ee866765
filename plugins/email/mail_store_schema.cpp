// MailStore's schema: the email plugin's tables and their migrations.
#include "mail_store.h"

#include <string>
#include <utility>

namespace svc::plugins::email {

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
  // Inbound authentication (SPF, DKIM, DMARC): the checks' JSON, the verdict to filter on, and
  // whether DMARC asked for quarantine. Lists hide quarantined mail by default, so the indexes
  // that serve them lead with it after the owner; the older ones stay for the queries that do
  // not ask (sending limits, the wait's window). Older messages have none (no backfill: the DNS
  // of then cannot be asked now).
  sdk::Migration auth = sdk::Migration::portable(
      4, "authentication of inbound mail",
      {"ALTER TABLE email_messages ADD COLUMN authentication TEXT NOT NULL DEFAULT ''",
       "ALTER TABLE email_messages ADD COLUMN auth_verdict VARCHAR(8) NOT NULL DEFAULT ''",
       "ALTER TABLE email_messages ADD COLUMN quarantined SMALLINT NOT NULL DEFAULT 0",
       "CREATE INDEX email_messages_identity_q ON email_messages (identity_uuid, quarantined, "
       "created_us, id)",
       "CREATE INDEX email_messages_account_q ON email_messages (account_id, quarantined, "
       "created_us, id)",
       // A quarantined message's thread is its own, hidden from the thread list likewise.
       "ALTER TABLE email_threads ADD COLUMN quarantined SMALLINT NOT NULL DEFAULT 0"});
  // Sender rules (rules/sender_rules.h): identity_uuid '' marks an account-wide default (not
  // NULL, so the unique index holds for defaults too: MariaDB lets NULLs repeat).
  sdk::Migration rules = sdk::Migration::portable(
      5, "sender rules",
      {"CREATE TABLE email_rules (id CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) NOT NULL, "
       "identity_uuid VARCHAR(36) NOT NULL, kind VARCHAR(8) NOT NULL, pattern VARCHAR(254) NOT "
       "NULL, created_us BIGINT NOT NULL)",
       "CREATE UNIQUE INDEX email_rules_pattern ON email_rules (account_id, identity_uuid, "
       "pattern)",
       "CREATE INDEX email_rules_account ON email_rules (account_id, created_us)"});
  // Bounces (bounces/bounce_store.h): the token of each relayed message's envelope sender with
  // the recipients it was relayed to (only they can bounce), kept 30 days (reports come within
  // days), and each recipient that bounced.
  sdk::Migration bounces = sdk::Migration::portableUtf8(
      6, "bounce tokens and bounced recipients",
      {"CREATE TABLE email_bounce_tokens (token CHAR(32) NOT NULL PRIMARY KEY, message_id "
       "CHAR(36) NOT NULL, recipients TEXT NOT NULL, created_us BIGINT NOT NULL)",
       "CREATE INDEX email_bounce_tokens_message ON email_bounce_tokens (message_id)",
       "CREATE INDEX email_bounce_tokens_created ON email_bounce_tokens (created_us)",
       "CREATE TABLE email_bounces (message_id CHAR(36) NOT NULL, recipient VARCHAR(254) NOT "
       "NULL, status VARCHAR(16) NOT NULL, reason TEXT NOT NULL, source VARCHAR(8) NOT NULL, "
       "bounced_us BIGINT NOT NULL, PRIMARY KEY (message_id, recipient))"});
  // One row per account that has made sender rules, locked by each new rule's transaction
  // before it counts them: concurrent creates on MariaDB would otherwise all count 999 and all
  // insert, past the cap (rules/rule_rows.h, lockAccount).
  sdk::Migration rule_locks = sdk::Migration::portable(
      7, "a lock row per account for the sender rules' cap",
      {"CREATE TABLE email_rule_accounts (account_id CHAR(36) NOT NULL PRIMARY KEY, locked_us "
       "BIGINT NOT NULL)",
       // Accounts with rules already have their row: their first creates lock it, not a gap.
       "INSERT INTO email_rule_accounts (account_id, locked_us) SELECT DISTINCT account_id, 0 "
       "FROM email_rules"});
  // Attachment bytes in the database (db_blob_store.h), where several svcd share it: each blob's
  // chunks, then its manifest. On SQLite the tables stay empty (blobs are files there). Chunks
  // are kBlobPieceBytes; MEDIUMBLOB holds up to 16 MiB, so a larger chunk would still fit.
  sdk::Migration blobs;
  blobs.version = 8;
  blobs.description = "attachment bytes in the database";
  for (const char* type : {"BLOB", "MEDIUMBLOB"}) {
    auto& list = std::string(type) == "BLOB" ? blobs.sqlite : blobs.mysql;
    list = {
        "CREATE TABLE email_blobs (sha256 CHAR(64) NOT NULL PRIMARY KEY, size BIGINT NOT "
        "NULL, parts INTEGER NOT NULL, created_us BIGINT NOT NULL)",
        "CREATE TABLE email_blob_chunks (sha256 CHAR(64) NOT NULL, part INTEGER NOT NULL, "
        "bytes " +
            std::string(type) + " NOT NULL, PRIMARY KEY (sha256, part))"};
  }
  return {m, spool, codes, auth, rules, bounces, rule_locks, blobs};
}

}  // namespace svc::plugins::email
