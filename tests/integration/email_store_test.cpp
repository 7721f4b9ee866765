// Where the email plugin keeps mail on disk, and how an upgrade finds what an older svcd left
// one directory deeper.
#include "email_fixture.h"
#include "harness.h"

#include <Poco/File.h>

#include <gtest/gtest.h>

#include <string>

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
  EXPECT_TRUE(Poco::File(email_dir + "/spool/id").exists()) << "the README's data.dir/email/spool";
  EXPECT_TRUE(Poco::File(email_dir + "/blobs").exists());
  EXPECT_FALSE(Poco::File(email_dir + "/email").exists()) << "nothing under data.dir/email/email";

  // The same files as an older svcd laid them out, then an upgrade on the same data and database.
  db_url_ = svcd_->dbUrl();
  ASSERT_EQ(svcd_->terminate(), 0);
  auto older = std::move(svcd_);
  Poco::File(email_dir + "/email").createDirectories();
  for (const char* dir : {"/spool", "/blobs"}) {
    Poco::File(email_dir + dir).renameTo(email_dir + "/email" + dir);
  }
  startSvcd({"--set", "data.dir=" + older->dataDir()});
  EXPECT_NE(svcd_->log().find("SMTP spool " + email_dir + "/spool filed"), std::string::npos)
      << svcd_->log();
  EXPECT_FALSE(Poco::File(email_dir + "/email").exists()) << "moved, and the empty parent removed";

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

}  // namespace
}  // namespace svc::testing
