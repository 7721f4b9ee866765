// Where the email plugin keeps mail on disk (and how an upgrade finds what an older svcd left
// one directory deeper), what an upgrade makes of messages stored before codes were found, and how
// message lists count in a mailbox too big to count on every poll.
#include "email_fixture.h"
#include "harness.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Session.h>
#include <Poco/File.h>
#include <Poco/URI.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace svc::testing {
namespace {

const std::string kWithAttachment =
    "From: a@example.com\r\nTo: sink@agents.test\r\nSubject: before the upgrade\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n"
    "--b\r\nContent-Type: application/octet-stream; name=\"kept.bin\"\r\n\r\nbytes\r\n--b--";

TEST_F(Email, SpoolIsInDataDirEmailSpoolAndAnOlderLayoutIsAdopted) {
  Ident sink = identity("Sink", "sink");
  ASSERT_NE(smtp(envelope("a@example.com", "sink@agents.test", kWithAttachment))
                .find("250 2.0.0 Ok: stored"),
            std::string::npos);
  const std::string email_dir = svcd_->dataDir() + "/email";
  EXPECT_TRUE(Poco::File(email_dir + "/spool/id").exists())
      << "data.dir/email/spool, where plugins/email/README.md says it is";
  // Attachment bytes are files on SQLite; on MariaDB, which several svcd may share, rows.
  const bool blob_files = databaseKind() == "sqlite";
  EXPECT_EQ(Poco::File(email_dir + "/blobs").exists(), blob_files);
  EXPECT_FALSE(Poco::File(email_dir + "/email").exists()) << "nothing under data.dir/email/email";

  // The same files as an older svcd laid them out, then an upgrade on the same data and database.
  db_url_ = svcd_->dbUrl();
  ASSERT_EQ(svcd_->terminate(), 0);
  auto older = std::move(svcd_);
  Poco::File(email_dir + "/email").createDirectories();
  for (const char* dir : {"/spool", "/blobs"}) {
    if (Poco::File(email_dir + dir).exists()) {
      Poco::File(email_dir + dir).renameTo(email_dir + "/email" + dir);
    }
  }
  if (!blob_files) {
    // An older svcd on MariaDB kept the attachment as a file, and the database has no rows of it.
    const std::string sha = sdk::sha256Hex("bytes");
    const std::string shard = email_dir + "/email/blobs/" + sha.substr(0, 2);
    Poco::File(shard).createDirectories();
    std::ofstream(shard + "/" + sha, std::ios::binary) << "bytes";
    runSql(db_url_, {"DELETE FROM email_blob_chunks", "DELETE FROM email_blobs"});
  }
  startSvcd({"--set", "data.dir=" + older->dataDir()});
  EXPECT_NE(svcd_->log().find("SMTP spool " + email_dir + "/spool filed"), std::string::npos)
      << svcd_->log();
  EXPECT_FALSE(Poco::File(email_dir + "/email").exists()) << "moved, and the empty parent removed";
  if (!blob_files) {
    EXPECT_NE(svcd_->log().find("moved 1 attachment files"), std::string::npos) << svcd_->log();
    EXPECT_FALSE(Poco::File(email_dir + "/blobs").exists()) << "moved into the database";
  }

  // What was filed is there once, its attachment bytes still readable; new mail is filed too.
  ASSERT_NE(smtp(envelope("a@example.com", "sink@agents.test", "Subject: after\r\n\r\nx"))
                .find("250 2.0.0 Ok: stored"),
            std::string::npos);
  auto list = messages("identity=" + sink.uuid);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ(list->getObject(0)->getValue<std::string>("subject"), "before the upgrade");
  EXPECT_EQ(list->getObject(1)->getValue<std::string>("subject"), "after");
  auto attachments =
      message(list->getObject(0)->getValue<std::string>("id"))->getArray("attachments");
  ASSERT_EQ(attachments->size(), 1u);
  auto bytes =
      call("GET", "/api/email-attachments/" +
                      attachments->getObject(0)->getValue<std::string>("uuid") + "/download/");
  EXPECT_EQ(bytes.status, 200);
  EXPECT_EQ(bytes.body, "bytes");
}

TEST_F(Email, MessagesStoredBeforeCodesWereFoundHaveNone) {
  Ident sink = identity("Sink", "sink");
  const std::string code_mail = "Subject: Your code\r\n\r\nYour verification code is 482913.";
  ASSERT_NE(smtp(envelope("a@example.com", "sink@agents.test", code_mail)).find("250 2.0.0"),
            std::string::npos);
  // Back to the schema before migration 3, then an upgrade on the same data and database.
  db_url_ = svcd_->dbUrl();
  ASSERT_EQ(svcd_->terminate(), 0);
  auto older = std::move(svcd_);
  runSql(db_url_, {"ALTER TABLE email_messages DROP COLUMN extracted_code",
                   "DELETE FROM svc_migrations WHERE plugin = 'email' AND version = 3"});
  if (HasFatalFailure()) return;
  startSvcd({"--set", "data.dir=" + older->dataDir()});
  ASSERT_NE(smtp(envelope("a@example.com", "sink@agents.test", code_mail)).find("250 2.0.0"),
            std::string::npos);
  auto list = messagesOnce("identity=" + sink.uuid, 2);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_TRUE(list->getObject(0)->isNull("extracted_code")) << "no backfill";
  EXPECT_EQ(list->getObject(1)->getValue<std::string>("extracted_code"), "482913");
}

TEST_F(Email, StartRefusesWhenBothTheOldAndTheNewSpoolExist) {
  const std::string email_dir = svcd_->dataDir() + "/email";
  db_url_ = svcd_->dbUrl();
  ASSERT_EQ(svcd_->terminate(), 0);
  Poco::File(email_dir + "/email/spool").createDirectories();
  Svcd::Options o;
  o.plugins = {"auth", "identities", "email"};
  o.db_url = db_url_;
  o.args = {"--set", "data.dir=" + svcd_->dataDir()};
  Svcd upgraded(o);
  EXPECT_NE(upgraded.startExpectingFailure(), 0);
  EXPECT_NE(upgraded.log().find("svcd will not choose"), std::string::npos) << upgraded.log();
  EXPECT_TRUE(Poco::File(email_dir + "/spool").exists()) << "neither is touched";
  EXPECT_TRUE(Poco::File(email_dir + "/email/spool").exists());
}

TEST_F(Email, MessageCountIsExactUpToTheLimitThenALowerBound) {
  svcd_.reset();
  key_.clear();
  startSvcd({"--set", "email.messages.exact_count=3"});
  Ident a = identity("Alice", "alice");
  Ident b = identity("Bob", "bob");
  composeMany(a, "bob@agents.test", 5);
  if (HasFatalFailure()) return;
  auto list = [&](const std::string& query) {
    auto r = call("GET", "/api/email-messages/?identity=" + b.uuid + "&" + query);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  };
  // Five newer than the cursor, three counted: at least three, and a next page.
  auto capped = list("limit=1");
  EXPECT_EQ(capped->getValue<int>("count"), 3);
  EXPECT_FALSE(capped->getValue<bool>("count_is_exact"));
  EXPECT_FALSE(capped->isNull("next"));
  // A page reaching past the limit is counted far enough to say whether another follows it.
  auto deep = list("limit=2&offset=2");
  EXPECT_EQ(deep->getValue<int>("count"), 5);
  EXPECT_TRUE(deep->getValue<bool>("count_is_exact"));
  EXPECT_FALSE(deep->isNull("next"));
  auto last = list("limit=2&offset=4");
  EXPECT_TRUE(last->isNull("next"));
  // A poller's cursor near the end counts exactly.
  const std::string t2 = list("limit=1&offset=2")
                             ->getArray("results")
                             ->getObject(0)
                             ->getValue<std::string>("created_dt");
  auto newer = list("limit=1&created_after=" + t2);
  EXPECT_EQ(newer->getValue<int>("count"), 2);
  EXPECT_TRUE(newer->getValue<bool>("count_is_exact"));
}

}  // namespace
}  // namespace svc::testing
